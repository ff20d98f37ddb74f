//! Fuses each dot product with constant weights (2-D Conv, ConvTranspose, normalized
//! Gemm) and the bias, activation and pooling that follow it into one NNA dot op
//! (CONVOLUTION / DECONVOLUTION / INNER-PRODUCT + SIMD program + pooling unit).

use crate::fuse::absorb::absorb_followers;
use crate::util::{add_const, dot_out_channels, is_const_dot};
use crate::{PassCtx, PassError};
use nnac_ir::{DotKind, DotOp, Epilogue, Graph, NnaOp, Op, Tensor};

pub fn fuse_dot(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("fuse_dot", &e.node, e.msg))?;
    for id in order {
        if !g.contains(id) || !is_const_dot(g, id) {
            continue;
        }
        let op = g.node(id).op.clone();
        let ins = g.node_inputs(id);
        let kind = match &op {
            Op::Conv(a) if a.kernel.len() == 2 => DotKind::Conv(a.clone()),
            Op::ConvTranspose(a) if a.kernel.len() == 2 => DotKind::Deconv(a.clone()),
            Op::Gemm(a) if a.trans_b => DotKind::Inner,
            _ => continue,
        };
        let name = g.node(id).name.clone();
        let wshape = g.value_type(ins[1]).shape.clone();
        let m = dot_out_channels(&op, &wshape).expect("dot op");
        let bias = match ins.get(2) {
            Some(&b) => b,
            None => add_const(
                g,
                &name,
                "bias",
                Tensor::f32(vec![m], vec![0.0; m]).expect("m elements"),
            ),
        };
        g.set_node_inputs(id, &[ins[0], ins[1], bias]);
        let epilogue = Epilogue {
            act: None,
            requant: None,
        };
        g.node_mut(id).op = Op::Nna(NnaOp::Dot(DotOp {
            kind,
            epilogue,
            pool: None,
        }));
        let n = absorb_followers(g, ctx, id);
        ctx.note(&name, format!("{} -> nna dot (+{n} fused)", op.mnemonic()));
    }
    Ok(())
}
