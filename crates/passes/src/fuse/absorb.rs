//! Absorbs the single-user activation and pooling nodes that follow an NNA compute op
//! into its SIMD epilogue and pooling stage (shared by the fusion passes).
//!
//! A pre-quantized model keeps its roundings: when the file rounds the value a
//! follower would read (`PassCtx::file_rounds`), only a follower that commutes with
//! that rounding is absorbed (ReLU, Clip, max pooling: monotone, and exact at the
//! grid's zero); a sigmoid, hard-sigmoid, average pool, ... then stays its own op
//! and reads the rounded codes, as ONNX Runtime's kernels do.

use crate::lower::pool_unit::pool_stage;
use crate::util::{per_channel_const, single_user};
use crate::PassCtx;
use nnac_ir::{Activation, FusedAct, Graph, NnaOp, NodeId, Op, PoolKind, PoolStage, Value};

enum Stage {
    Act(FusedAct),
    Pool(PoolStage),
}

/// Absorbs followers of NNA node `id` as long as they fit; returns how many.
pub fn absorb_followers(g: &mut Graph, ctx: &mut PassCtx, id: NodeId) -> usize {
    let mut count = 0;
    while let Some((user, stage)) = next_stage(g, ctx, id) {
        let Op::Nna(op) = &mut g.node_mut(id).op else {
            break;
        };
        let simd = match stage {
            Stage::Act(a) => {
                set_act(op, a);
                true
            }
            Stage::Pool(p) => {
                set_pool(op, p);
                false
            }
        };
        let ty = g.node(user).outputs[0].clone();
        g.node_mut(id).outputs[0] = ty;
        let (me, member) = (g.node(id).name.clone(), g.node(user).name.clone());
        g.replace_uses(Value::new(user, 0), Value::new(id, 0));
        g.remove_node(user);
        ctx.absorb(&me, &member, simd);
        ctx.note(&member, format!("fused into '{me}'"));
        count += 1;
    }
    count
}

fn next_stage(g: &Graph, ctx: &PassCtx, id: NodeId) -> Option<(NodeId, Stage)> {
    let Op::Nna(op) = &g.node(id).op else {
        return None;
    };
    let (has_act, pool) = match op {
        NnaOp::Dot(d) => (d.epilogue.act.is_some(), Some(d.pool.is_some())),
        NnaOp::Scale(s) => (s.epilogue.act.is_some(), Some(s.pool.is_some())),
        NnaOp::Eltwise(e) => (e.epilogue.act.is_some(), None),
        _ => return None,
    };
    let v = Value::new(id, 0);
    let user = single_user(g, v)?;
    let shape = &g.value_type(v).shape;
    if pool == Some(true) {
        return None; // nothing follows the pooling unit
    }
    let stage = match &g.node(user).op {
        Op::Act(a) if !has_act => Stage::Act(FusedAct::Act(*a)),
        Op::PRelu if !has_act => {
            let slope = g.node_inputs(user)[1];
            Stage::Act(FusedAct::PRelu(per_channel_const(g, slope, shape)?))
        }
        Op::Pool(p) if pool == Some(false) => Stage::Pool(pool_stage(p, shape)?),
        _ => return None,
    };
    if ctx.file_rounds(ctx.out_name(&g.node(id).name)) && !commutes_with_rounding(&stage) {
        return None;
    }
    Some((user, stage))
}

/// Whether a stage gives the same codes on the rounded value as rounding its result.
fn commutes_with_rounding(stage: &Stage) -> bool {
    match stage {
        Stage::Act(FusedAct::Act(a)) => matches!(a, Activation::Relu | Activation::Clip { .. }),
        Stage::Act(FusedAct::PRelu(_)) => false,
        Stage::Pool(p) => p.kind == PoolKind::Max,
    }
}

fn set_act(op: &mut NnaOp, a: FusedAct) {
    match op {
        NnaOp::Dot(d) => d.epilogue.act = Some(a),
        NnaOp::Scale(s) => s.epilogue.act = Some(a),
        NnaOp::Eltwise(e) => e.epilogue.act = Some(a),
        _ => {}
    }
}

fn set_pool(op: &mut NnaOp, p: PoolStage) {
    match op {
        NnaOp::Dot(d) => d.pool = Some(p),
        NnaOp::Scale(s) => s.pool = Some(p),
        _ => {}
    }
}
