//! Recognizes SiLU (swish) written out as `Mul(x, Sigmoid(x))` (PyTorch's `nn.SiLU`
//! and YOLO / EfficientNet exports), either operand order, and replaces the pair by
//! one `Silu` activation of `x`, which then fuses into the producing op's SIMD program
//! (four fp32 instructions) instead of a standalone sigmoid and an ELTWISE product.
//! The sigmoid must have no other reader.

use crate::util::single_user;
use crate::{PassCtx, PassError};
use nnac_ir::{Activation, BinaryOp, Graph, Op};

pub fn fold_silu(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("fold_silu", &e.node, e.msg))?;
    for id in order {
        if !g.contains(id) || g.node(id).op != Op::Binary(BinaryOp::Mul) {
            continue;
        }
        let ins = g.node_inputs(id);
        let x = [(ins[0], ins[1]), (ins[1], ins[0])]
            .into_iter()
            .find(|&(x, gate)| {
                g.node(gate.node).op == Op::Act(Activation::Sigmoid)
                    && g.node_inputs(gate.node)[0] == x
                    && single_user(g, gate) == Some(id)
            })
            .map(|(x, _)| x);
        let Some(x) = x else {
            continue;
        };
        if crate::util::rounds_inside(g, ctx, x, id) {
            continue;
        }
        g.set_node_inputs(id, &[x]);
        g.node_mut(id).op = Op::Act(Activation::Silu);
        let name = g.node(id).name.clone();
        ctx.note(&name, "x * sigmoid(x) -> silu");
    }
    g.remove_dead();
    Ok(())
}
