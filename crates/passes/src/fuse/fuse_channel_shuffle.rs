//! Recognizes ShuffleNet's channel shuffle written as data movement,
//! `Reshape [N, C, S...] -> [N, a, b, T...]`, `Transpose perm [0, 2, 1, 3, ...]`,
//! `Reshape -> [N, C, S...]` (with `a * b = C` and the spatial sizes `T` flattening
//! to the same elements as `S`), and replaces it by one
//! `NnaOp::ChannelShuffle { groups: a }`: output channel `j * a + i` is input channel
//! `i * b + j`. Either side may hold the groups (`a = g` is the shuffle, `a = n` its
//! inverse); both are this op. Without it the 5-D reshape and the transpose run on
//! the host, a STOP and a DRAM round trip of the activation; the backend copies the
//! channel planes with SCALE instructions instead.
//!
//! The new node takes the final reshape's name (and node), so calibration statistics
//! and the report find it; the intermediate reshape and transpose must have no other
//! reader (and not be graph outputs).

use crate::util::reshape_transpose_reshape;
use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NnaOp, NodeId, Op, Value};

pub fn fuse_channel_shuffle(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let mut found = false;
    for id in g.node_ids() {
        if !g.contains(id) {
            continue;
        }
        let Some((x, groups)) = match_shuffle(g, id) else {
            continue;
        };
        g.set_node_inputs(id, &[x]);
        g.node_mut(id).op = Op::Nna(NnaOp::ChannelShuffle { groups });
        let name = g.node(id).name.clone();
        let c = g.value_type(x).shape[1];
        ctx.note(
            &name,
            format!(
                "reshape/transpose/reshape -> channel shuffle of {c} channels in {groups} groups"
            ),
        );
        found = true;
    }
    if found {
        g.remove_dead();
    }
    Ok(())
}

/// For the final reshape `r2`: the shuffle's input and its number of groups.
fn match_shuffle(g: &Graph, r2: NodeId) -> Option<(Value, usize)> {
    let chain = reshape_transpose_reshape(g, r2)?;
    let (x, mid, perm) = (chain.x, chain.split, chain.perm);
    let in_shape = &g.value_type(x).shape;
    // [N, C, S...] -> [N, a, b, T...] with the same spatial elements.
    if in_shape.len() < 2 || mid.len() < 3 || chain.out != in_shape.as_slice() {
        return None;
    }
    let (a, b) = (mid[1], mid[2]);
    let spatial = |s: &[usize]| s.iter().product::<usize>();
    if mid[0] != in_shape[0]
        || a == 0
        || b == 0
        || a * b != in_shape[1]
        || spatial(&mid[3..]) != spatial(&in_shape[2..])
    {
        return None;
    }
    // Exactly the two channel axes swapped.
    let swap: Vec<usize> = [0, 2, 1].into_iter().chain(3..mid.len()).collect();
    if perm != swap.as_slice() {
        return None;
    }
    Some((x, a))
}
