//! Partitioning: the nodes the NNA backend could not lower in an earlier attempt
//! (`PassCtx::host_reasons`, filled from `PassOptions::host_nodes`) are wrapped as
//! host ops before fusion, so no fusion pass turns them into an NNA op again. The
//! host runs them as the quantized reference interpreter does (dequantize, float op,
//! quantize: `nnac_interp::host`), so the program stays bit-exact with it.

use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NnaOp, Op};

/// Wraps every node named in `ctx.host_reasons` (that is not already a host op, an
/// input or a constant) as `nna.host`.
pub fn force_host(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    if ctx.host_reasons.is_empty() {
        return Ok(());
    }
    for id in g.node_ids() {
        let name = g.node(id).name.clone();
        let Some(reason) = ctx.host_reasons.get(&name).cloned() else {
            continue;
        };
        let op = &g.node(id).op;
        if matches!(op, Op::Input | Op::Constant(_) | Op::Nna(NnaOp::Host(_))) {
            continue;
        }
        let inner = op.clone();
        g.node_mut(id).op = Op::Nna(NnaOp::Host(Box::new(inner.clone())));
        ctx.note(
            &name,
            format!("{} runs on the host: {reason}", inner.mnemonic()),
        );
    }
    Ok(())
}
