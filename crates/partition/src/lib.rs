//! Partitioning between the NNA and the host: compile, lower, and when the backend
//! refuses nodes, compile again with those nodes on the host (`nnac_passes`'
//! `force_host`, through [`PassOptions::host_nodes`]) until the program lowers. A
//! graph the float interpreter runs is never refused for an op the NNA cannot lower:
//! that op runs on the host between NNA segments, exactly as the quantized reference
//! interpreter computes it (dequantize, float op, quantize), so the program stays
//! bit-exact with the quantized graph. Errors other than unsupported nodes (SRAM,
//! encoding) stay errors.
//!
//! Depends on the passes and the backend, which do not depend on each other: the
//! one place that drives both.

use nnac_backend_nna::{BackendError, BackendOptions, BackendReport, Refusal, UnsupportedNode};
use nnac_ir::Graph;
use nnac_isa::{HwConfig, Program};
use nnac_passes::{Compiled, Frame, PassError, PassOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Most compile rounds: each moves at least one node to the host.
pub const MAX_ROUNDS: usize = 64;

/// Why partitioning failed.
#[derive(Debug, Clone, PartialEq)]
pub enum PartitionError {
    /// The pass pipeline failed (import-level problems, calibration, ...).
    Passes(PassError),
    /// The backend failed for a reason that is not an unsupported node, or refused
    /// nodes that already run on the host.
    Backend(BackendError),
    /// Partitioning did not settle (a bug).
    Rounds(usize),
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionError::Passes(e) => write!(f, "{e}"),
            PartitionError::Backend(e) => write!(f, "{e}"),
            PartitionError::Rounds(n) => write!(f, "partitioning did not settle in {n} rounds"),
        }
    }
}

impl std::error::Error for PartitionError {}

/// A compiled graph and, if it lowered, its program.
pub struct Partitioned {
    /// The quantized graph of the last round: what the program computes.
    pub compiled: Compiled,
    /// The program and backend report, or why the last round did not lower.
    pub lowered: Result<(Program, BackendReport), PartitionError>,
    /// Compile rounds the partitioning took (1: the backend took every node).
    pub rounds: usize,
    /// Nodes moved to the host by the partitioning, with the backend's reason.
    pub moved: BTreeMap<String, String>,
}

/// Compiles `graph` with `opts`, lowers it, and moves what the backend refuses to
/// the host (see the crate docs). `on_round(round, moved)` is told before each extra
/// round. Only a pass error is returned as `Err`; a backend failure leaves
/// [`Partitioned::lowered`] an error with the graph of the last round.
pub fn compile_and_lower(
    graph: &Graph,
    frames: &[Frame],
    opts: &PassOptions,
    hw: &HwConfig,
    be_opts: &BackendOptions,
    on_round: &dyn Fn(usize, &BTreeMap<String, String>),
) -> Result<Partitioned, PartitionError> {
    // The first round compiles as asked; later rounds reuse its calibration
    // statistics without a report, and a measured report then needs one more
    // compile of the final partition.
    let measure = opts.measure;
    let mut opts = opts.clone();
    let mut round = 1;
    loop {
        let mut compiled = nnac_passes::compile_graph(graph.clone(), frames, &opts)
            .map_err(PartitionError::Passes)?;
        opts.calib_stats = opts.calib_stats.take().or_else(|| compiled.stats.clone());
        if let Some(p) = &opts.progress {
            p.report(nnac_passes::ProgressEvent::Stage {
                name: "lowering to the NNA",
            });
        }
        let lowered = match nnac_backend_nna::lower(&compiled.graph, hw, be_opts) {
            Ok(ok) => Ok(ok),
            Err(BackendError::Unsupported(list)) => {
                let new = next_host_nodes(&compiled.graph, &list, &opts.host_nodes);
                if new.is_empty() || round == MAX_ROUNDS {
                    let e = if new.is_empty() {
                        PartitionError::Backend(BackendError::Unsupported(list))
                    } else {
                        PartitionError::Rounds(round)
                    };
                    Err(e)
                } else {
                    opts.host_nodes.extend(new);
                    opts.measure = false;
                    round += 1;
                    on_round(round, &opts.host_nodes);
                    continue;
                }
            }
            Err(e) => Err(PartitionError::Backend(e)),
        };
        if measure && round > 1 {
            // The same partition, measured: the same quantized graph, with the report.
            let final_opts = PassOptions {
                measure: true,
                calib_stats: None,
                ..opts.clone()
            };
            compiled = nnac_passes::compile_graph(graph.clone(), frames, &final_opts)
                .map_err(PartitionError::Passes)?;
        }
        opts.calib_stats = None;
        return Ok(Partitioned {
            compiled,
            lowered,
            rounds: round,
            moved: opts.host_nodes,
        });
    }
}

/// The refused nodes to move to the host next: those none of whose inputs comes
/// from another refused node (the others often fail only because their input did),
/// or all of them when every one has such an input. A node refused because an
/// operand is not an NNA activation gets a reason naming that operand (a host
/// tensor). Nodes already on the host are left out (the backend refusing a host op
/// is a real error).
pub fn next_host_nodes(
    g: &Graph,
    list: &[UnsupportedNode],
    forced: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let refused: BTreeSet<&str> = list.iter().map(|u| u.node.as_str()).collect();
    let by_name: BTreeMap<&str, nnac_ir::NodeId> = g
        .node_ids()
        .into_iter()
        .map(|id| (g.node(id).name.as_str(), id))
        .collect();
    let input_in = |name: &str, set: &dyn Fn(&str) -> bool| {
        by_name.get(name).and_then(|&id| {
            g.node_inputs(id)
                .into_iter()
                .find(|v| set(g.node(v.node).name.as_str()))
        })
    };
    let is_refused = |n: &str| refused.contains(n);
    let on_host = |n: &str| refused.contains(n) || forced.contains_key(n);
    let fresh: Vec<&UnsupportedNode> = list
        .iter()
        .filter(|u| !forced.contains_key(&u.node) && by_name.contains_key(u.node.as_str()))
        .collect();
    let roots: Vec<&&UnsupportedNode> = fresh
        .iter()
        .filter(|u| input_in(&u.node, &is_refused).is_none())
        .collect();
    let chosen: Vec<&UnsupportedNode> = if roots.is_empty() {
        fresh
    } else {
        roots.into_iter().copied().collect()
    };
    chosen
        .into_iter()
        .map(|u| {
            let why = match input_in(&u.node, &on_host) {
                Some(v) if matches!(u.reason, Refusal::NotActivation { .. }) => format!(
                    "its operand '{}' is a host tensor of shape {:?} that no NNA op reads",
                    g.node(v.node).name,
                    g.value_type(v).shape
                ),
                _ => u.reason.to_string(),
            };
            (u.node.clone(), why)
        })
        .collect()
}
