//! Every op left that the NNA has no instruction for (Softmax, LRN, Resize, Transpose,
//! global max pool, ...) is wrapped as an NNA host op: the runtime runs it on the CPU
//! between NNA segments. Reshape stays as it is: a view that changes no bytes in
//! NCHW order (the backend decides whether its layout needs a copy).

use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NnaOp, Op};

pub fn mark_host(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        let op = &g.node(id).op;
        if matches!(
            op,
            Op::Input | Op::Constant(_) | Op::Reshape { .. } | Op::Nna(_)
        ) {
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
