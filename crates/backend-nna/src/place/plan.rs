//! The spill/split plan and its refinement.
//!
//! [`crate::lower::graph::run`] walks the graph with a [`Plan`] (empty at first: every
//! activation stays in SRAM between layers, every layer whose working set fits in
//! SRAM runs whole) and places the buffers. When placement fails at some step,
//! [`refine`] changes the plan by one decision and the walk runs again:
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

use crate::base::job::BufId;
use crate::base::plan::Plan;
use crate::base::walk::Lowered;
use crate::error::BackendError;
use crate::place::alloc::NoFit;
use nnac_ir::{Graph, NodeId};
use std::collections::{BTreeMap, BTreeSet};

/// One more decision after placement failed with `nf`; an error if none is left.
pub(crate) fn refine(
    plan: &mut Plan,
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
        match sp.value_bufs.get(&BufId::new(b)) {
            Some(&v) if !plan.spilled.contains(&v) => {
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
        plan.spilled.insert(v);
        return Ok(());
    }
    let shrink = params
        .iter()
        .filter(|(n, _)| {
            sp.min_ws
                .get(n)
                .is_some_and(|&m| plan.budget_of(**n, sram) > m)
        })
        .max_by_key(|(n, b)| (**b, std::cmp::Reverse(**n)))
        .map(|(n, b)| (*b, *n));
    match (own, shrink) {
        (Some((vs, v)), Some((ps, _))) if vs >= ps => {
            plan.spilled.insert(v);
            return Ok(());
        }
        (Some((_, v)), None) => {
            plan.spilled.insert(v);
            return Ok(());
        }
        (_, Some((_, n))) => {
            let m = sp.min_ws[&n];
            let b = plan.budget_of(n, sram);
            plan.budget.insert(n, (b / 2).max(m));
            return Ok(());
        }
        (None, None) => {}
    }
    if let Some(f) = failing {
        if plan.no_prefetch.insert(f) {
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
