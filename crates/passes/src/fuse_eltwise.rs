//! Fuses elementwise Add of two activations of the same shape (residual connections)
//! and a following activation into one NNA ELTWISE op.

use crate::absorb::absorb_followers;
use crate::{PassCtx, PassError};
use nnac_ir::{BinaryOp, EltwiseOp, Epilogue, Graph, NnaOp, Op};

pub fn fuse_eltwise(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("fuse_eltwise", &e.node, e.msg))?;
    for id in order {
        if !g.contains(id) || g.node(id).op != Op::Binary(BinaryOp::Add) {
            continue;
        }
        let ins = g.node_inputs(id);
        let same = g.value_type(ins[0]).shape == g.value_type(ins[1]).shape;
        if !same || ins.iter().any(|&v| g.const_of(v).is_some()) {
            continue;
        }
        let epilogue = Epilogue {
            act: None,
            requant: None,
        };
        g.node_mut(id).op = Op::Nna(NnaOp::Eltwise(EltwiseOp {
            epilogue,
            inputs: None,
        }));
        let n = absorb_followers(g, ctx, id);
        let name = g.node(id).name.clone();
        ctx.note(&name, format!("add -> nna eltwise (+{n} fused)"));
    }
    Ok(())
}
