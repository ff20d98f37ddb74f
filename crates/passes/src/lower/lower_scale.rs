//! Per-channel work without a dot product becomes the NNA SCALE op (pure SIMD):
//! `x * c`, `x / c`, `x + c`, `x - c` with per-channel constants (consecutive ones
//! merge), and activations or pooling-unit pools that could not be fused into a
//! producer (identity scale + activation / pool).

use crate::fuse::absorb::absorb_followers;
use crate::lower::pool_unit::pool_stage;
use crate::util::{add_const, bypass, const_f32, per_channel_const, single_user};
use crate::{PassCtx, PassError};
use nnac_ir::{BinaryOp, Epilogue, FusedAct, Graph, NnaOp, NodeId, Op, ScaleOp, Tensor, Value};

pub fn lower_scale(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("lower_scale", &e.node, e.msg))?;
    for id in order {
        if !g.contains(id) {
            continue;
        }
        let ins = g.node_inputs(id);
        // The activation operand (for `const * x` the constant comes first).
        let Some(&x) = ins.iter().find(|&&v| g.const_of(v).is_none()) else {
            continue;
        };
        let shape = g.value_type(x).shape.clone();
        if !(2..=4).contains(&shape.len()) || shape[0] != 1 || g.const_of(x).is_some() {
            continue;
        }
        let c = shape[1];
        let name = g.node(id).name.clone();
        let affine = match &g.node(id).op {
            Op::Binary(k) => affine_of(g, *k, &ins, &shape),
            _ => None,
        };
        if let Some((mul, add)) = affine {
            // A pre-quantized file that rounds `x` keeps it apart from this scale.
            let rounded = ctx.file_rounds(ctx.out_name(&g.node(x.node).name));
            if !rounded && merge_into_scale(g, x, &mul, &add) {
                bypass(g, id, x);
                ctx.absorb(&g.node(x.node).name.clone(), &name, true);
                ctx.note(&name, "merged into the preceding scale");
                absorb_followers(g, ctx, x.node);
                continue;
            }
            make_scale(g, id, x, mul, add, None);
        } else {
            let (act, pool) = match &g.node(id).op {
                Op::Act(a) => (Some(FusedAct::Act(*a)), None),
                Op::PRelu => match per_channel_const(g, ins[1], &shape) {
                    Some(s) => (Some(FusedAct::PRelu(s)), None),
                    None => continue,
                },
                Op::Pool(p) => match pool_stage(p, &shape) {
                    Some(ps) => (None, Some(ps)),
                    None => continue,
                },
                _ => continue,
            };
            make_scale(g, id, x, vec![1.0; c], vec![0.0; c], Some((act, pool)));
        }
        let n = absorb_followers(g, ctx, id);
        ctx.note(
            &name,
            format!("{} -> nna scale (+{n} fused)", g.node(id).op.mnemonic()),
        );
    }
    g.remove_dead();
    Ok(())
}

/// `(mul, add)` per channel for `x (k) const`.
fn affine_of(
    g: &Graph,
    k: BinaryOp,
    ins: &[Value],
    shape: &[usize],
) -> Option<(Vec<f32>, Vec<f32>)> {
    let swapped = g.const_of(ins[0]).is_some();
    let (c, other) = if swapped {
        (ins[0], ins[1])
    } else {
        (ins[1], ins[0])
    };
    if g.value_type(other).shape != shape
        || (swapped && !matches!(k, BinaryOp::Mul | BinaryOp::Add))
    {
        return None;
    }
    let v = per_channel_const(g, c, shape)?;
    let n = v.len();
    match k {
        BinaryOp::Mul => Some((v, vec![0.0; n])),
        BinaryOp::Div if !v.contains(&0.0) => {
            Some((v.iter().map(|s| 1.0 / s).collect(), vec![0.0; n]))
        }
        BinaryOp::Add => Some((vec![1.0; n], v)),
        BinaryOp::Sub => Some((vec![1.0; n], v.iter().map(|s| -s).collect())),
        _ => None,
    }
}

/// Composes `y = x*mul + add` into a single-user scale producing `x` (no act/pool).
fn merge_into_scale(g: &mut Graph, x: Value, mul: &[f32], add: &[f32]) -> bool {
    let p = x.node;
    let plain = matches!(&g.node(p).op, Op::Nna(NnaOp::Scale(s)) if s.epilogue.act.is_none() && s.pool.is_none());
    if !plain || single_user(g, x).is_none() {
        return false;
    }
    let ins = g.node_inputs(p);
    let (Some(w), Some(b)) = (const_f32(g, ins[1]), const_f32(g, ins[2])) else {
        return false;
    };
    let w2: Vec<f32> = w.iter().zip(mul).map(|(w, m)| w * m).collect();
    let b2: Vec<f32> = b
        .iter()
        .zip(mul)
        .zip(add)
        .map(|((b, m), a)| b * m + a)
        .collect();
    let name = g.node(p).name.clone();
    set_wb(g, p, ins[0], &name, w2, b2);
    true
}

fn set_wb(g: &mut Graph, id: NodeId, x: Value, name: &str, w: Vec<f32>, b: Vec<f32>) {
    let c = w.len();
    let wv = add_const(
        g,
        name,
        "scale",
        Tensor::f32(vec![c], w).expect("c elements"),
    );
    let bv = add_const(
        g,
        name,
        "shift",
        Tensor::f32(vec![c], b).expect("c elements"),
    );
    g.set_node_inputs(id, &[x, wv, bv]);
}

type Stages = (Option<FusedAct>, Option<nnac_ir::PoolStage>);

fn make_scale(
    g: &mut Graph,
    id: NodeId,
    x: Value,
    w: Vec<f32>,
    b: Vec<f32>,
    stages: Option<Stages>,
) {
    let name = g.node(id).name.clone();
    let (act, pool) = stages.unwrap_or((None, None));
    set_wb(g, id, x, &name, w, b);
    g.node_mut(id).op = Op::Nna(NnaOp::Scale(ScaleOp {
        epilogue: Epilogue { act, requant: None },
        pool,
    }));
}
