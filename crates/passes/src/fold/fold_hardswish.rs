//! Recognizes hard-swish written out as elementary ops (Paddle / PyTorch exports) and
//! replaces it by one `HardSwish` activation, which then fuses into the producing dot
//! product's SIMD program instead of leaving a two-input Mul for the host:
//! - `Div(Mul(x, Clip[0,6](Add(x, 3))), 6)` (or `Mul(.., 1/6)`), either Mul operand order;
//! - `Mul(x, HardSigmoid{alpha = 1/6, beta = 0.5}(x))`.

use crate::util::{const_f32, rounds_inside, single_user};
use crate::{PassCtx, PassError};
use nnac_ir::{Activation, BinaryOp, Graph, NodeId, Op, Value};

pub fn fold_hardswish(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("fold_hardswish", &e.node, e.msg))?;
    for id in order {
        if !g.contains(id) || g.node(id).op != Op::Binary(BinaryOp::Mul) {
            continue;
        }
        let Some((x, last)) = match_hardswish(g, id) else {
            continue;
        };
        if rounds_inside(g, ctx, x, last) {
            continue;
        }
        g.set_node_inputs(last, &[x]);
        g.node_mut(last).op = Op::Act(Activation::HardSwish);
        let name = g.node(last).name.clone();
        ctx.note(&name, "hard-swish pattern -> hard_swish");
    }
    g.remove_dead();
    Ok(())
}

fn scalar(g: &Graph, v: Value) -> Option<f32> {
    const_f32(g, v).filter(|c| c.len() == 1).map(|c| c[0])
}

fn near(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-5 * b.abs().max(1.0)
}

/// For `Mul` node `m`: the hard-swish input and the node whose value is hard-swish.
fn match_hardswish(g: &Graph, m: NodeId) -> Option<(Value, NodeId)> {
    let ins = g.node_inputs(m);
    for (x, gate) in [(ins[0], ins[1]), (ins[1], ins[0])] {
        if single_user(g, gate).is_none() {
            continue;
        }
        match &g.node(gate.node).op {
            Op::Act(Activation::HardSigmoid { alpha, beta })
                if near(*alpha, 1.0 / 6.0)
                    && near(*beta, 0.5)
                    && g.node_inputs(gate.node)[0] == x =>
            {
                return Some((x, m));
            }
            Op::Act(Activation::Clip { min, max }) if *min == 0.0 && *max == 6.0 => {
                let add = g.node_inputs(gate.node)[0];
                let a = g.node_inputs(add.node);
                let plus3 = g.node(add.node).op == Op::Binary(BinaryOp::Add)
                    && single_user(g, add).is_some()
                    && ((a[0] == x && scalar(g, a[1]).is_some_and(|c| near(c, 3.0)))
                        || (a[1] == x && scalar(g, a[0]).is_some_and(|c| near(c, 3.0))));
                if !plus3 {
                    continue;
                }
                let d = single_user(g, Value::new(m, 0))?;
                let di = g.node_inputs(d);
                let by6 = match g.node(d).op {
                    Op::Binary(BinaryOp::Div) => {
                        di[0].node == m && scalar(g, di[1]).is_some_and(|c| near(c, 6.0))
                    }
                    Op::Binary(BinaryOp::Mul) => {
                        let other = if di[0].node == m { di[1] } else { di[0] };
                        scalar(g, other).is_some_and(|c| near(c, 1.0 / 6.0))
                    }
                    _ => false,
                };
                if by6 {
                    return Some((x, d));
                }
            }
            _ => {}
        }
    }
    None
}
