//! A pool whose input is a channel concatenation that nothing else reads moves in
//! front of the concatenation: `Pool(Concat(x_1 .. x_n)) = Concat(Pool(x_1) ..
//! Pool(x_n))`, exactly, because pooling works channel by channel. Each producer can
//! then run its part of the pool in its own pooling unit, in the shadow of its
//! dot product (`fuse_dot` absorbs it), instead of one SIMD-only pass over the whole
//! concatenated tensor (Inception's pools between stages).
//!
//! Only pools the pooling unit can run are moved (others are `lower_pools`' business),
//! and only when every concat input is read by the concatenation alone, so each part's
//! pool has a producer that can absorb it.

use crate::lower::pool_unit::pool_stage;
use crate::util::single_user;
use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NodeId, Op, Value};

pub fn sink_pool_into_concat(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        if !g.contains(id) {
            continue;
        }
        let Some(cat) = movable_concat(g, id) else {
            continue;
        };
        let pool = g.node(id).op.clone();
        let name = g.node(id).name.clone();
        let parts = g.node_inputs(cat);
        let mut pooled = Vec::with_capacity(parts.len());
        for (i, &x) in parts.iter().enumerate() {
            let part = g.fresh_name(&format!("{name}.part{i}"));
            let node = g
                .add_node(part, pool.clone(), &[x])
                .map_err(|e| PassError::node("sink_pool_into_concat", &name, e.to_string()))?;
            pooled.push(Value::new(node, 0));
        }
        g.set_node_inputs(cat, &pooled);
        g.node_mut(cat).outputs[0] = g.node(id).outputs[0].clone();
        g.replace_uses(Value::new(id, 0), Value::new(cat, 0));
        g.remove_node(id);
        let cat_name = g.node(cat).name.clone();
        ctx.note(
            &name,
            format!(
                "pool moved in front of concat '{cat_name}' ({} parts)",
                parts.len()
            ),
        );
    }
    Ok(())
}

/// The concat node `id` (a pool the pooling unit can run) may move in front of.
fn movable_concat(g: &Graph, id: NodeId) -> Option<NodeId> {
    let Op::Pool(p) = &g.node(id).op else {
        return None;
    };
    let [x] = g.node_inputs(id)[..] else {
        return None;
    };
    let cat = x.node;
    let shape = &g.value_type(x).shape;
    let is_channel_concat = matches!(g.node(cat).op, Op::Concat { axis: 1 });
    if !is_channel_concat || shape.len() != 4 || pool_stage(p, shape).is_none() {
        return None;
    }
    if single_user(g, x) != Some(id) {
        return None;
    }
    let parts = g.node_inputs(cat);
    let owned = parts
        .iter()
        .all(|&v| g.const_of(v).is_none() && single_user(g, v) == Some(cat));
    owned.then_some(cat)
}
