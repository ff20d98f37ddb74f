//! Cascading: the compute order after a tensor read from DRAM in bands of rows.
//!
//! `bands.rs` reads a host-op result or a graph input in bands of rows so that its
//! first reader can start on the first band. But the compute queue runs in program
//! order, and the walk emits every tile of a layer before the next layer's: the
//! first reader's last tiles wait for the last band, and every later layer waits
//! behind them, although its first tiles need only rows that are long done. This
//! pass reorders the instructions of such a stretch so that tiles of the later
//! layers fill those waits (Vela calls this cascading).
//!
//! **Where.** In every segment (between STOPs) that holds a banded read: from the
//! segment's first banded `DMA_READ` up to [`WINDOW`] compute instructions later,
//! the segment's end or the first DMA that is not one of the bands, whichever comes
//! first. Everything else keeps its place: around streamed weights and transfers to
//! DRAM the walk's order is already the one that keeps the DMA queue busy, and the
//! estimates below are too rough to improve on it.
//!
//! **Legality.** Two instructions of the stretch whose exact SRAM bytes conflict
//! (one writes what the other reads or writes; `nnac_isa::hazard::footprint`) keep
//! their order, and DMA instructions keep theirs, so every byte is computed from
//! the same values as before and the program's results are unchanged; the flags are
//! assigned afterwards, on the new order (`sync.rs`), and the static hazard checker
//! proves them as for any program. Buffers whose live ranges do not meet may share
//! SRAM (`alloc.rs`); such a pair conflicts here and keeps its order, so the pass
//! never needs more SRAM.
//!
//! **Which order.** A list schedule on estimated times (`bands.rs`' tile and DMA
//! estimates): the DMA queue and the compute queue each run in order; among the
//! instructions whose predecessors are placed, the one that could start earliest
//! goes next (the lowest original index on a tie, so a stretch with nothing to wait
//! for keeps its order).

use crate::base::job::{BufId, Job, Tile};
use crate::schedule::bands::{dma_cycles, tile_cycles, ReadBands};
use crate::schedule::emit::Emitted;
use crate::schedule::sync::{bytes_conflict, sram_footprint};
use nnac_isa::{Class, HwConfig, Instr};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Most compute instructions one stretch reorders (bounds the quadratic
/// dependency search).
const WINDOW: usize = 256;

/// Reorders the stretches after the banded reads of the buffers of `read_bands`
/// (see the module doc).
pub(crate) fn reorder(em: &mut Emitted, jobs: &[Job], read_bands: &ReadBands, hw: &HwConfig) {
    for r in stretches(em, read_bands) {
        let order = schedule(em, r.clone(), jobs, hw);
        permute(em, r.start, &order);
    }
}

/// The stretches to reorder: per segment, from the first DMA_READ into a buffer of
/// `banded_reads` (its keys) to [`WINDOW`] compute instructions later, the
/// segment's end or the first other DMA.
fn stretches<V>(em: &Emitted, banded_reads: &BTreeMap<BufId, V>) -> Vec<std::ops::Range<usize>> {
    let n = em.instrs.len();
    // Whether instruction `i` is a DMA_READ into a buffer of `banded_reads`.
    let banded_read = |i: usize| {
        matches!(em.instrs[i], Instr::DmaRead(_))
            && em.access[i]
                .writes
                .iter()
                .any(|b| banded_reads.contains_key(b))
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        if !banded_read(i) {
            i += 1;
            continue;
        }
        let (start, mut computes) = (i, 0);
        while i < n && computes < WINDOW {
            match em.instrs[i].class() {
                Class::Compute => computes += 1,
                Class::Dma if banded_read(i) => {}
                // Any other DMA (streamed weights, a transfer to DRAM) ends it.
                Class::Dma | Class::Control => break,
            }
            i += 1;
        }
        out.push(start..i);
        // Skip to the next segment: one stretch per segment.
        while i < n && em.instrs[i].class() != Class::Control {
            i += 1;
        }
    }
    out
}

/// The tile of a compute instruction.
fn tile_of(ins: &Instr) -> Option<Tile> {
    let (pix_start, pix_count, c_start, c_count) = match ins {
        Instr::Conv(d) | Instr::Deconv(d) | Instr::InnerProduct(d) => {
            (d.pix_start, d.pix_count, d.oc_start, d.oc_count)
        }
        Instr::Scale(s) => (s.pix_start, s.pix_count, s.c_start, s.c_count),
        Instr::Eltwise(e) => (e.pix_start, e.pix_count, e.c_start, e.c_count),
        _ => return None,
    };
    Some(Tile {
        pix_start,
        pix_count,
        c_start,
        c_count,
    })
}

/// Estimated cycles of instruction `i`.
fn cycles(em: &Emitted, i: usize, jobs: &[Job], hw: &HwConfig) -> f64 {
    let ins = &em.instrs[i];
    match (ins, tile_of(ins)) {
        (Instr::DmaRead(d) | Instr::DmaWrite(d), _) => {
            dma_cycles(hw, u64::from(d.rows) * u64::from(d.row_len))
        }
        (_, Some(t)) => tile_cycles(&jobs[em.job[i]].kind, &t, hw.mac_rows),
        _ => 0.0,
    }
}

/// The new order of the instructions of `r` (their indices), by list scheduling.
fn schedule(em: &Emitted, r: std::ops::Range<usize>, jobs: &[Job], hw: &HwConfig) -> Vec<usize> {
    let n = r.len();
    // The SRAM bytes: `emit` has them for the instructions touching banded buffers.
    let fps: Vec<Cow<_>> = r
        .clone()
        .map(|i| match &em.access[i].bytes {
            Some(b) => Cow::Borrowed(&**b),
            None => Cow::Owned(sram_footprint(&em.instrs[i], hw)),
        })
        .collect();
    let is_dma: Vec<bool> = r
        .clone()
        .map(|i| em.instrs[i].class() == Class::Dma)
        .collect();
    let dur: Vec<f64> = r.clone().map(|i| cycles(em, i, jobs, hw)).collect();
    // Successors and predecessor counts of the dependency graph (local indices).
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut preds = vec![0usize; n];
    let mut last_dma = None;
    for j in 0..n {
        for i in 0..j {
            let same_queue_dma = is_dma[j] && last_dma == Some(i);
            if same_queue_dma || bytes_conflict(&fps[i], &fps[j]) {
                succ[i].push(j);
                preds[j] += 1;
            }
        }
        if is_dma[j] {
            last_dma = Some(j);
        }
    }
    // Simulate: `ready[j]` is when all of j's predecessors finish.
    let mut ready = vec![0f64; n];
    let mut free = [0f64; 2]; // compute queue, DMA queue
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for _ in 0..n {
        let best = (0..n)
            .filter(|&j| !placed[j] && preds[j] == 0)
            .map(|j| (ready[j].max(free[usize::from(is_dma[j])]), j))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .expect("the dependency graph points forwards, so one is always free");
        let (start, j) = best;
        let end = start + dur[j];
        free[usize::from(is_dma[j])] = end;
        placed[j] = true;
        order.push(r.start + j);
        for &s in &succ[j] {
            preds[s] -= 1;
            ready[s] = ready[s].max(end);
        }
    }
    order
}

/// Puts the instructions `order` (indices into `em`) at `start..` in that order.
fn permute(em: &mut Emitted, start: usize, order: &[usize]) {
    let instrs: Vec<Instr> = order.iter().map(|&i| em.instrs[i].clone()).collect();
    let access: Vec<_> = order.iter().map(|&i| em.access[i].clone()).collect();
    let job: Vec<usize> = order.iter().map(|&i| em.job[i]).collect();
    let end = start + order.len();
    em.instrs.splice(start..end, instrs);
    em.access.splice(start..end, access);
    em.job.splice(start..end, job);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::sync::Access;
    use nnac_isa::{Dma, DotProduct};

    fn emitted(instrs: Vec<Instr>, writes: &[&[usize]]) -> Emitted {
        Emitted {
            access: writes
                .iter()
                .map(|w| Access {
                    writes: w.iter().map(|&b| BufId::new(b)).collect(),
                    ..Access::default()
                })
                .collect(),
            job: vec![0; instrs.len()],
            instrs,
        }
    }

    #[test]
    fn a_stretch_runs_from_the_first_band_to_the_first_other_dma() {
        let d = || Instr::DmaRead(Dma::default());
        let c = || Instr::Conv(DotProduct::default());
        let stop = || Instr::Stop(Default::default());
        // Segment 1: a plain load, band, conv, band, conv, weights, conv.
        // Segment 2: band, conv.
        let em = emitted(
            vec![d(), d(), c(), d(), c(), d(), c(), stop(), d(), c()],
            &[&[1], &[7], &[2], &[7], &[2], &[9], &[3], &[], &[8], &[4]],
        );
        let banded: BTreeMap<BufId, ()> = [(BufId::new(7), ()), (BufId::new(8), ())].into();
        assert_eq!(stretches(&em, &banded), vec![1..5, 8..10]);
        assert_eq!(stretches(&em, &BTreeMap::<BufId, ()>::new()), vec![]);
    }
}
