//! The decisions the walk follows when the buffers do not fit in SRAM: values
//! spilled to DRAM, layer budgets, prefetch restrictions, weight chunking. Made by
//! [`crate::place::plan::refine`].

use nnac_ir::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// Decisions the walk follows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Values kept in DRAM between layers.
    pub spilled: BTreeSet<NodeId>,
    /// SRAM budget of a layer's working set (default: the whole SRAM).
    pub budget: BTreeMap<NodeId, u64>,
    /// Layers whose buffers must not be live during the previous step.
    pub no_prefetch: BTreeSet<NodeId>,
    /// Load the weights of every dot-product layer with more weight bytes than this
    /// in output-channel chunks of at most this many bytes (one band, each chunk
    /// loaded once), even where the whole layer fits: set for every program whose
    /// weights stream (they do not all fit, or `--resident-weights off`), so that
    /// the streamed ones need little SRAM and partial pinning
    /// ([`crate::place::resident::pin_some`]) can pin chunk by chunk.
    pub weight_chunk: Option<u64>,
    /// Layers (by name) to run with their output channels on the MAC array's rows
    /// where they can (`BackendOptions::channels_on_rows`, `lower/channels_on_rows.rs`).
    pub channels_on_rows: BTreeSet<String>,
}

impl Plan {
    pub(crate) fn budget_of(&self, id: NodeId, sram: u64) -> u64 {
        self.budget.get(&id).copied().unwrap_or(sram)
    }

    /// Whether a layer with `weight_bytes` of weights in weight groups of `block`
    /// bytes loads them in chunks: more than one chunk of the cap (a chunk holds
    /// at least one group).
    pub(crate) fn chunks_weights(&self, weight_bytes: u64, block: u64) -> bool {
        self.weight_chunk
            .is_some_and(|c| weight_bytes > c.max(block))
    }
}
