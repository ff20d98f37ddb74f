//! Hybrid precision (`--float-layers`, `--auto-float`): the layers the user names stay
//! in float32 on the host. After fusion a layer is one NNA compute op (a dot product
//! with its epilogue and pooling stage, a SCALE, an ELTWISE); this pass wraps it whole
//! as `nna.host`, with its float weights, so the host computes what the float graph
//! does from the dequantized input codes and quantizes only the layer's output (one
//! rounding instead of the weights', the accumulator's requantization and the
//! epilogue's). The quantized reference interpreter and the simulator run it through
//! the same rule as every host op (`nnac_interp::host::run_host_op`).
//!
//! A name may be the fused layer's own (the names `nnac analyze` and the compile
//! summary print) or of any original node fusion absorbed into it (its ReLU, clip or
//! pooling; a BatchNorm folded into the weights before fusion leaves no name). Names that match no layer, or a layer that does no arithmetic (a
//! concatenation, a reshape), are the user's error, all listed at once.

use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NnaOp, NodeId, Op};

/// The reason the host-op list gives a layer `--float-layers` names.
pub const FLOAT_LAYER_REASON: &str = "kept in float32 (--float-layers)";

/// Wraps every NNA compute layer named in `ctx.float_layers` as a host op.
pub fn float_layers(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    if ctx.float_layers.is_empty() {
        return Ok(());
    }
    let mut unknown = Vec::new();
    let mut chosen: Vec<(NodeId, String)> = Vec::new();
    for (want, reason) in &ctx.float_layers {
        match layer_named(g, ctx, want) {
            Some(id) if !chosen.iter().any(|(c, _)| *c == id) => chosen.push((id, reason.clone())),
            Some(_) => {}
            None => unknown.push(want.clone()),
        }
    }
    if !unknown.is_empty() {
        return Err(PassError::Options(format!(
            "--float-layers: no layer named {} (layers are named as `nnac analyze` and the \
             compile summary print them, or by any node a layer absorbed)",
            unknown
                .iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut no_arith = Vec::new();
    for (id, reason) in chosen {
        match &g.node(id).op {
            Op::Nna(NnaOp::Dot(_) | NnaOp::Scale(_) | NnaOp::Eltwise(_)) => {}
            // Already on the host in float (an op the NNA has no instruction for).
            Op::Nna(NnaOp::Host(_)) => continue,
            op => {
                no_arith.push(format!("'{}' ({})", g.node(id).name, op.mnemonic()));
                continue;
            }
        }
        let name = g.node(id).name.clone();
        let inner = g.node(id).op.clone();
        g.node_mut(id).op = Op::Nna(NnaOp::Host(Box::new(inner.clone())));
        ctx.host_reasons.insert(name.clone(), reason);
        ctx.note(
            &name,
            format!("{} runs on the host in float32", inner.mnemonic()),
        );
    }
    if !no_arith.is_empty() {
        return Err(PassError::Options(format!(
            "--float-layers: {} move(s) codes without arithmetic; only convolutions, inner \
             products, SCALE and ELTWISE layers can be kept in float",
            no_arith.join(", ")
        )));
    }
    Ok(())
}

/// Whether the output of node `n` stays float32 in the quantized graph: `n` is a
/// layer kept in float (`nna.host` of a fused NNA op), its value is not a graph
/// output, and only host ops read it, so no 8-bit rounding is needed between them
/// (a run of float layers computes in float32 throughout, as the float graph does).
pub fn keeps_float(g: &Graph, n: NodeId) -> bool {
    matches!(&g.node(n).op, Op::Nna(NnaOp::Host(inner)) if matches!(**inner, Op::Nna(_)))
        && g.only_host_ops_read(nnac_ir::Value::new(n, 0))
}

/// The layer called `name`, or that absorbed an original node called `name`.
fn layer_named(g: &Graph, ctx: &PassCtx, name: &str) -> Option<NodeId> {
    let own = |n: &str| {
        g.node_ids()
            .into_iter()
            .find(|&id| g.node(id).name == n && !matches!(g.node(id).op, Op::Constant(_)))
    };
    own(name).or_else(|| {
        ctx.fused
            .iter()
            .find(|(_, f)| f.members.iter().any(|m| m == name))
            .and_then(|(layer, _)| own(layer))
    })
}
