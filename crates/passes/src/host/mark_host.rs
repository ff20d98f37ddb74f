//! Every op left that the NNA has no instruction for (Softmax, LRN, linear Resize,
//! Transpose, global max pool, ...) is wrapped as an NNA host op: the runtime runs it
//! on the CPU between NNA segments. Reshape stays as it is: a view that changes no
//! bytes in NCHW order (the backend decides whether its layout needs a copy); so does
//! a Slice of the channels of a 4-D tensor (ONNX Split / Slice on axis 1): a block of
//! whole channel planes, a view at an offset (`channel_slice`); and a strided slice
//! of the C, H and W axes of a 4-D tensor (the Focus stem's `x[..., ::2, ::2]`),
//! which the backend copies with one SCALE through strided input pitches
//! (`nnac_backend_nna` `lower/strided.rs`; the host when its layout does not allow).

use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NnaOp, NodeId, Op};

pub fn mark_host(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        let op = &g.node(id).op;
        if matches!(
            op,
            Op::Input | Op::Constant(_) | Op::Reshape { .. } | Op::Nna(_)
        ) || channel_slice(g, id)
            || nna_strided_slice(g, id)
        {
            continue;
        }
        let inner = op.clone();
        g.node_mut(id).op = Op::Nna(NnaOp::Host(Box::new(inner.clone())));
        let name = g.node(id).name.clone();
        ctx.note(&name, format!("{} runs on the host", inner.mnemonic()));
    }
    Ok(())
}

/// The host ops of a graph: `(node name, op mnemonic)`, in node order.
pub fn host_ops(g: &Graph) -> Vec<(String, String)> {
    g.node_ids()
        .into_iter()
        .filter_map(|id| match &g.node(id).op {
            Op::Nna(NnaOp::Host(op)) => Some((g.node(id).name.clone(), op.mnemonic().to_string())),
            _ => None,
        })
        .collect()
}

/// Whether node `id` is a Slice of the channels (axis 1, only) of a 4-D tensor.
fn channel_slice(g: &Graph, id: NodeId) -> bool {
    match &g.node(id).op {
        Op::Slice { axes, .. } => {
            axes.as_slice() == [1] && g.value_type(g.node_inputs(id)[0]).shape.len() == 4
        }
        _ => false,
    }
}

/// Whether node `id` is a StridedSlice of only the C, H and W axes of a 4-D tensor.
fn nna_strided_slice(g: &Graph, id: NodeId) -> bool {
    match &g.node(id).op {
        Op::StridedSlice { axes, .. } => {
            g.value_type(g.node_inputs(id)[0]).shape.len() == 4
                && axes.iter().all(|a| (1..4).contains(a))
        }
        _ => false,
    }
}
