//! Recognizes depth-to-space written as data movement, the form the ONNX importer
//! gives DepthToSpace and PyTorch exports its pixel shuffle in: `Reshape [N, C, H, W]
//! -> [N, b, b, C', H, W]`, `Transpose [0, 3, 4, 1, 5, 2]`, `Reshape -> [N, C', H*b,
//! W*b]` (ONNX mode DCR), or `-> [N, C', b, b, H, W]`, `[0, 1, 4, 2, 5, 3]` (mode CRD,
//! `nn.PixelShuffle`), with `C = C' * b * b`; and replaces it by one
//! `NnaOp::DepthToSpace { block: b, crd }`. Without it the 6-D reshape and transpose
//! run on the host, a STOP and a DRAM round trip of the activation; the backend
//! copies the `b * b` phases with SCALE instructions instead (`lower/depth_to_space.rs`).
//!
//! The new node takes the final reshape's name (and node), so calibration statistics
//! and the report find it; the intermediate reshape and transpose must have no other
//! reader (and not be graph outputs).

use crate::util::reshape_transpose_reshape;
use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NnaOp, NodeId, Op, Value};

pub fn fuse_depth_to_space(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let mut found = false;
    for id in g.node_ids() {
        if !g.contains(id) {
            continue;
        }
        let Some((x, block, crd)) = match_depth_to_space(g, id) else {
            continue;
        };
        g.set_node_inputs(id, &[x]);
        g.node_mut(id).op = Op::Nna(NnaOp::DepthToSpace { block, crd });
        let name = g.node(id).name.clone();
        let mode = if crd { "CRD" } else { "DCR" };
        ctx.note(
            &name,
            format!("reshape/transpose/reshape -> depth-to-space by {block} ({mode})"),
        );
        found = true;
    }
    if found {
        g.remove_dead();
    }
    Ok(())
}

/// For the final reshape `r2`: the depth-to-space's input, block and mode (`crd`).
fn match_depth_to_space(g: &Graph, r2: NodeId) -> Option<(Value, usize, bool)> {
    let chain = reshape_transpose_reshape(g, r2)?;
    let (x, mid) = (chain.x, chain.split);
    let &[n, c, h, w] = g.value_type(x).shape.as_slice() else {
        return None;
    };
    let (dcr, crd) = ([0, 3, 4, 1, 5, 2], [0, 1, 4, 2, 5, 3]);
    let (block, c2, is_crd) = match (mid, chain.perm) {
        (&[_, b, b2, c2, _, _], p) if p == dcr && b == b2 => (b, c2, false),
        (&[_, c2, b, b2, _, _], p) if p == crd && b == b2 => (b, c2, true),
        _ => return None,
    };
    let full = [n, c2, h * block, w * block];
    let split_ok =
        mid[0] == n && mid[4] == h && mid[5] == w && block > 0 && c2 * block * block == c;
    (split_ok && chain.out == full).then_some((x, block, is_crd))
}
