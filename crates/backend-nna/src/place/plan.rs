//! The spill/split plan and its refinement.
//!
//! [`crate::base::walk()`] walks the graph with a [`Plan`] (empty at first: every
//! activation stays in SRAM between layers, every layer whose working set fits in
//! SRAM runs whole) and places the buffers. When placement fails at some step,
//! [`Plan::refine`] changes the plan by one decision and the walk runs again:
//!
//! 1. spill the largest activation live at that step that the failing layer does not
//!    touch (it goes to DRAM between layers; cheapest: one write, one read per use);
//! 2. else spill the largest input/output of the failing layer, or shrink the SRAM
//!    budget of the layer with the most parameter bytes live there (which splits it
//!    into row bands / channel groups), whichever frees more;
//! 3. else stop prefetching into the failing layer's buffers (no double buffering);
//! 4. else give up: [`BackendError::SramFull`] names the layer and its bytes.
//!
//! Every step changes the plan monotonically, so the loop ends.

use crate::base::walk::Lowered;
use crate::error::BackendError;
use crate::place::alloc::NoFit;
use nnac_ir::{Graph, NodeId};
use std::collections::{BTreeMap, BTreeSet};

/// Decisions the walk follows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
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
}

impl Plan {
    pub fn budget_of(&self, id: NodeId, sram: u64) -> u64 {
        self.budget.get(&id).copied().unwrap_or(sram)
    }

    /// Whether a layer with `weight_bytes` of weights in weight groups of `block`
    /// bytes loads them in chunks: more than one chunk of the cap (a chunk holds
    /// at least one group).
    pub fn chunks_weights(&self, weight_bytes: u64, block: u64) -> bool {
        self.weight_chunk
            .is_some_and(|c| weight_bytes > c.max(block))
    }

    /// One more decision after placement failed with `nf`; an error if none is left.
    pub fn refine(
        &mut self,
        g: &Graph,
        low: &Lowered,
        nf: &NoFit,
        sram: u64,
    ) -> Result<(), BackendError> {
        let by_name: BTreeMap<&str, NodeId> = g
            .node_ids()
            .into_iter()
            .map(|n| (g.node(n).name.as_str(), n))
            .collect();
        let failing = by_name.get(nf.owner.as_str()).copied();
        let touched: BTreeSet<NodeId> = failing
            .map(|f| {
                let mut s: BTreeSet<NodeId> = g.node_inputs(f).iter().map(|v| v.node).collect();
                s.insert(f);
                s
            })
            .unwrap_or_default();
        let sp = &low.sp;
        let live = (0..low.bufs.len())
            .filter(|&b| low.bufs[b].first <= nf.step && nf.step <= low.bufs[b].last);
        // Largest live value not touched / touched by the failing layer; parameter
        // bytes live per layer.
        let mut free: Option<(u64, NodeId)> = None;
        let mut own: Option<(u64, NodeId)> = None;
        let mut params: BTreeMap<NodeId, u64> = BTreeMap::new();
        for b in live {
            let size = low.bufs[b].size;
            match sp.value_bufs.get(&b) {
                Some(&v) if !self.spilled.contains(&v) => {
                    let slot = if touched.contains(&v) {
                        &mut own
                    } else {
                        &mut free
                    };
                    if slot.is_none_or(|(s, _)| size > s) {
                        *slot = Some((size, v));
                    }
                }
                Some(_) => {}
                None => {
                    if let Some(&n) = by_name.get(low.bufs[b].owner.as_str()) {
                        *params.entry(n).or_default() += size;
                    }
                }
            }
        }
        if let Some((_, v)) = free {
            self.spilled.insert(v);
            return Ok(());
        }
        let shrink = params
            .iter()
            .filter(|(n, _)| {
                sp.min_ws
                    .get(n)
                    .is_some_and(|&m| self.budget_of(**n, sram) > m)
            })
            .max_by_key(|(n, b)| (**b, std::cmp::Reverse(**n)))
            .map(|(n, b)| (*b, *n));
        match (own, shrink) {
            (Some((vs, v)), Some((ps, _))) if vs >= ps => {
                self.spilled.insert(v);
                return Ok(());
            }
            (Some((_, v)), None) => {
                self.spilled.insert(v);
                return Ok(());
            }
            (_, Some((_, n))) => {
                let m = sp.min_ws[&n];
                let b = self.budget_of(n, sram);
                self.budget.insert(n, (b / 2).max(m));
                return Ok(());
            }
            (None, None) => {}
        }
        if let Some(f) = failing {
            if self.no_prefetch.insert(f) {
                return Ok(());
            }
        }
        let needed = failing
            .and_then(|f| sp.min_ws.get(&f).copied())
            .unwrap_or(0)
            .max(nf.needed);
        Err(BackendError::SramFull {
            node: nf.owner.clone(),
            needed,
            sram,
        })
    }
}
