//! Fuses an elementwise Add, Mul or Max of two activations (residual connections,
//! gates such as `x * sigmoid(x)`, Caffe's Eltwise PROD / MAX) and a following
//! activation into one NNA ELTWISE op. The second operand may be broadcast over the
//! first's pixels (`[N, C, 1, 1]` against `[N, C, H, W]`: the channel weights of a
//! squeeze-and-excitation block); the operands are swapped so that it is `b`. Products
//! with constants are not taken here (`lower_scale` makes them SCALE ops).

use crate::fuse::absorb::absorb_followers;
use crate::{PassCtx, PassError};
use nnac_ir::{eltwise_operand_fits, EltwiseKind, EltwiseOp, Epilogue, Graph, NnaOp, Op};

pub fn fuse_eltwise(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("fuse_eltwise", &e.node, e.msg))?;
    for id in order {
        if !g.contains(id) {
            continue;
        }
        let Op::Binary(op) = g.node(id).op else {
            continue;
        };
        let Some(kind) = EltwiseKind::of(op) else {
            continue;
        };
        let ins = g.node_inputs(id);
        if ins.iter().any(|&v| g.const_of(v).is_some()) {
            continue;
        }
        let out = g.node(id).outputs[0].shape.clone();
        let a = g.value_type(ins[0]).shape.clone();
        let b = g.value_type(ins[1]).shape.clone();
        let swap = if a == out && eltwise_operand_fits(&a, &b) {
            false
        } else if b == out && eltwise_operand_fits(&b, &a) {
            true // Add, Mul and Max commute
        } else {
            continue;
        };
        if swap {
            g.set_node_inputs(id, &[ins[1], ins[0]]);
        }
        let epilogue = Epilogue {
            act: None,
            requant: None,
        };
        g.node_mut(id).op = Op::Nna(NnaOp::Eltwise(EltwiseOp {
            kind,
            epilogue,
            inputs: None,
        }));
        let n = absorb_followers(g, ctx, id);
        let name = g.node(id).name.clone();
        let broadcast = if a == b {
            ""
        } else {
            ", b broadcast over pixels"
        };
        ctx.note(
            &name,
            format!("{} -> nna eltwise{broadcast} (+{n} fused)", op.mnemonic()),
        );
    }
    Ok(())
}
