//! Weight prefetch beyond the previous layer.
//!
//! The walk makes a layer's parameter buffers live from the previous step, so their
//! DMA can overlap the previous layer. After placement the addresses are fixed and
//! this pass looks further back: a parameter buffer whose SRAM range is not used by
//! any other buffer since step `e` can be loaded while step `e` computes. Its load
//! jobs move (in program order) to just after step `e`'s jobs, so the DMA queue
//! reaches them as soon as the last earlier user of the range is done; the flag
//! assignment (`sync.rs`) then makes the load wait for exactly those users. The
//! lookahead window is thus bounded by free SRAM only. Loads keep their relative
//! order (the DMA queue still fetches weights in the order the layers need them),
//! every other job keeps its place, and only constant DRAM is read, so no spill or
//! fill is passed in a way that matters. Deterministic: a pure function of the
//! placement.

use crate::base::buffer::Buffer;
use crate::base::job::{Job, JobId};
use crate::base::spill_state::{ParamBuf, SpillState};
use crate::place::prefetch_est::Estimate;
use nnac_isa::HwConfig;

/// The first step at which `p`'s SRAM range `[a, a + size)` is free of every other
/// buffer that ends before `p` starts.
fn earliest(p: usize, bufs: &[Buffer], addrs: &[u64]) -> usize {
    let (a, e) = (addrs[p], addrs[p] + bufs[p].size);
    bufs.iter()
        .enumerate()
        .filter(|&(b, buf)| {
            b != p && buf.last < bufs[p].first && addrs[b] < e && a < addrs[b] + buf.size
        })
        .map(|(_, buf)| buf.last + 1)
        .max()
        .unwrap_or(0)
}

/// Index of the first job of step `s` or later (`jobs` if none).
fn step_start(sp: &SpillState, s: usize, jobs: usize) -> usize {
    if s == 0 {
        return 0;
    }
    let k = sp.step_start.partition_point(|st| st.step < s);
    sp.step_start.get(k).map_or(jobs, |st| st.job.index())
}

/// The lookahead windows (in layers) to try, furthest first: every load in flight
/// holds a dependency flag until its layer runs, so the window starts at half the
/// flags and halves down to 0 (no move at all; the only window when serialised).
pub(crate) fn windows(flags: u32, serialise: bool) -> Vec<usize> {
    let mut v = Vec::new();
    let mut w = if serialise { 0 } else { flags as usize / 2 };
    while w > 0 {
        v.push(w);
        w /= 2;
    }
    v.push(0);
    v
}

/// The step a job belongs to.
fn step_of(sp: &SpillState, job: usize) -> usize {
    let k = sp.step_start.partition_point(|st| st.job.index() <= job);
    k.checked_sub(1).map_or(0, |k| sp.step_start[k].step)
}

/// Moves parameter loads as early as free SRAM allows (see the module doc), at most
/// `window` layers ahead of the layer that reads them (0: no move), never before job
/// `first_job` (the body's first job after a prologue, `resident.rs`: a load moved
/// into the prologue would run once per load), and extends their buffers' live
/// ranges. Returns how many buffers are now loaded more than one step before they
/// are needed.
///
/// Loads keep their relative order, except that a load whose SRAM range is free
/// before the previous load's position may go ahead of earlier loads where the
/// estimated timeline (`prefetch_est.rs`) says the whole program gets shorter:
/// that fills the DMA queue's idle time under compute-bound layers with a later
/// layer's weights (a fully connected layer's weight group in SRAM free since the
/// first layer loads under the convolutions: `tests/split.rs`
/// `a_later_layers_weights_load_under_compute_bound_layers`) without delaying a
/// load needed sooner.
pub(crate) fn lookahead(
    bufs: &mut [Buffer],
    addrs: &[u64],
    jobs: &mut Vec<Job>,
    sp: &SpillState,
    window: usize,
    first_job: usize,
    hw: &HwConfig,
) -> usize {
    if window == 0 {
        return 0;
    }
    let est = Estimate::new(jobs, sp, hw);
    // Sort key of every job: (position, moved-before-fixed, original index).
    let mut keys: Vec<(usize, u8, usize)> = (0..jobs.len()).map(|j| (j, 1, j)).collect();
    let mut floor = first_job;
    let mut ahead = 0usize;
    // Steps of the layers whose parameters were seen so far, in order.
    let mut layers: Vec<usize> = Vec::new();
    for ParamBuf { buf: p, loads } in &sp.param_bufs {
        let e = earliest(p.index(), bufs, addrs);
        let Some(orig) = loads.first().map(|j| j.index()) else {
            continue;
        };
        let step = step_of(sp, orig);
        if layers.last() != Some(&step) {
            layers.push(step);
        }
        let oldest = layers[layers.len().saturating_sub(window)];
        let e = e.max(oldest.saturating_sub(1));
        let free = step_start(sp, e + 1, jobs.len()).min(orig).max(first_job);
        let mut target = free.max(floor);
        if free < target {
            target = ahead_of_order(&est, &mut keys, loads, free, target, jobs.len());
        }
        floor = floor.max(target);
        if e + 1 < bufs[*p].first {
            ahead += 1;
        }
        bufs[*p].first = bufs[*p].first.min(e);
        for j in loads.iter().map(|j| j.index()) {
            keys[j] = (target, 0, j);
        }
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&j| keys[j]);
    let mut taken: Vec<Option<Job>> = std::mem::take(jobs).into_iter().map(Some).collect();
    *jobs = order
        .into_iter()
        .map(|j| taken[j].take().expect("each job once"))
        .collect();
    ahead
}

/// Most positions tried for one load brought ahead of the load order.
const CANDIDATES: usize = 16;

/// The position in `free..=ordered` (step starts, at most [`CANDIDATES`] of them)
/// at which `loads` give the shortest estimated program; `ordered` unless one is
/// strictly shorter, and the latest of equally short ones (fewer loads in flight).
fn ahead_of_order(
    est: &Estimate,
    keys: &mut [(usize, u8, usize)],
    loads: &[JobId],
    free: usize,
    ordered: usize,
    jobs: usize,
) -> usize {
    let (s0, s1) = (est.step_of(free), est.step_of(ordered));
    let span = s1.saturating_sub(s0);
    let stride = span.div_ceil(CANDIDATES).max(1);
    let mut cands: Vec<usize> = (s0..s1)
        .step_by(stride)
        .map(|s| est.step_start(s, jobs).max(free))
        .filter(|&c| c < ordered)
        .collect();
    cands.dedup();
    let at = |pos: usize, keys: &mut [(usize, u8, usize)]| {
        for j in loads.iter().map(|j| j.index()) {
            keys[j] = (pos, 0, j);
        }
        est.makespan(keys)
    };
    let mut best = (at(ordered, keys), ordered);
    for c in cands.into_iter().rev() {
        let m = at(c, keys);
        if m < best.0 {
            best = (m, c);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(size: u64, first: usize, last: usize) -> Buffer {
        Buffer {
            owner: String::new(),
            size,
            first,
            last,
        }
    }

    #[test]
    fn earliest_is_after_the_last_overlapping_user() {
        // b0 at 0..100 until step 2; b1 at 100..200 until step 5; p at 0..50 from 6.
        let bufs = vec![buf(100, 0, 2), buf(100, 1, 5), buf(50, 6, 7)];
        let addrs = vec![0, 100, 0];
        assert_eq!(earliest(2, &bufs, &addrs), 3);
        let addrs = vec![0, 100, 150];
        assert_eq!(earliest(2, &bufs, &addrs), 6);
    }
}
