//! Weights resident in SRAM across frames (docs/ARCHITECTURE.md, "Backend: SRAM
//! placement ..."; docs/ISA.md 2.2).
//!
//! When every parameter buffer (weights, bias, channel tables) fits in SRAM next to
//! the activations' peak, the parameters are *pinned* ([`try_pin`]): each one's SRAM
//! range is live for the whole program, so nothing else is ever placed there, and
//! their loads move to a prologue (the parameter DMAs, then a STOP) that runs once
//! when the program is loaded. The body then only moves inputs, outputs and host-op
//! operands. When they do not all fit (the walk with the empty plan needs split
//! layers, or the pinned parameters leave no room for the activations), the
//! streaming plan is placed as before, with large layers' weights in chunks of at
//! most 1/32 of the SRAM (`Plan::weight_chunk`), and [`pin_some`] pins what fits
//! beside it, within the SRAM the streaming placement leaves free, spread evenly
//! over the program so that pinned layers compute while streamed chunks load; the
//! rest (and the weights of layers split into row bands) keep streaming every
//! frame.

use crate::base::buffer::Buffer;
use crate::base::buffer::SRAM_ALIGN;
use crate::base::job::{BufId, Job, JobId, JobKind};
use crate::base::spill_state::{ParamBuf, StepStart};
use crate::base::walk::Lowered;
use crate::place::alloc::{self, Placement};
use crate::schedule::bands::{dma_cycles, tile_cycles};
use nnac_isa::HwConfig;
use std::collections::{BTreeMap, BTreeSet};

/// Whether the backend may keep the weights in SRAM across frames
/// (`nnac compile --resident-weights`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResidentWeights {
    /// Pin all parameters when they fit with the activations; else pin as many
    /// as fit beside the streaming plan and stream the rest.
    #[default]
    Auto,
    /// Always stream the weights every frame (no prologue).
    Off,
}

/// What the backend did with the weights.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Residency {
    /// Streamed every frame because `--resident-weights off`.
    #[default]
    Off,
    /// Pinned in SRAM, loaded once by the prologue.
    Pinned {
        buffers: usize,
        bytes: u64,
        /// Instructions of the prologue (its loads and its STOP).
        prologue_instrs: usize,
    },
    /// Some pinned (loaded once by the prologue), the rest streamed every frame
    /// because they do not all fit: `bytes` pinned, `streamed` bytes per frame.
    Partial {
        buffers: usize,
        bytes: u64,
        streamed: u64,
    },
    /// Streamed every frame: they do not all fit (the reason).
    Streamed(NotPinned),
}

/// Why the parameters are not all pinned ([`try_pin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotPinned {
    /// The program has no parameters.
    NoParameters,
    /// Layers must be split to fit the SRAM (their weights stream).
    MustSplit { layers: usize },
    /// Parameters plus activations need more than the SRAM at `layer`.
    NoRoom {
        param_bytes: u64,
        needed: u64,
        layer: String,
        sram: u64,
    },
}

impl std::fmt::Display for NotPinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotPinned::NoParameters => write!(f, "the program has no parameters"),
            NotPinned::MustSplit { layers } => {
                write!(f, "{layers} layer(s) must be split to fit the SRAM")
            }
            NotPinned::NoRoom {
                param_bytes,
                needed,
                layer,
                sram,
            } => write!(
                f,
                "parameters ({param_bytes} bytes) plus activations need {needed} bytes at layer {layer}, the SRAM has {sram}"
            ),
        }
    }
}

impl std::fmt::Display for Residency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Residency::Off => write!(f, "streamed every frame (--resident-weights off)"),
            Residency::Pinned { buffers, bytes, .. } => write!(
                f,
                "resident in SRAM: {buffers} parameter buffers, {bytes} bytes, loaded once by the prologue"
            ),
            Residency::Partial {
                buffers,
                bytes,
                streamed,
            } => write!(
                f,
                "partly resident: {buffers} parameter buffers, {bytes} bytes, loaded once by the prologue; {streamed} bytes streamed every frame (they do not all fit)"
            ),
            Residency::Streamed(why) => write!(f, "streamed every frame ({why})"),
        }
    }
}

/// A walk whose parameters are pinned: the placement, and the index of the
/// prologue's STOP job (the jobs before it are the parameter loads).
pub(crate) struct Pinned {
    pub low: Lowered,
    pub placed: Placement,
    pub stop_job: usize,
    pub residency: Residency,
}

/// Pins every parameter buffer of `low` (a walk without a plan) if they all fit with
/// the activations; otherwise the reason they do not.
pub(crate) fn try_pin(mut low: Lowered, hw: &HwConfig) -> Result<Pinned, NotPinned> {
    if low.sp.param_bufs.is_empty() {
        return Err(NotPinned::NoParameters);
    }
    if !low.sp.splits.is_empty() {
        return Err(NotPinned::MustSplit {
            layers: low.sp.splits.len(),
        });
    }
    let end = low.bufs.iter().map(|b| b.last).max().unwrap_or(0);
    let mut bytes = 0;
    for ParamBuf { buf: b, .. } in &low.sp.param_bufs {
        let buf = &mut low.bufs[*b];
        buf.first = 0;
        buf.last = end;
        bytes += buf.size;
    }
    let placed = match alloc::place(&low.bufs, hw.sram_bytes, SRAM_ALIGN) {
        Ok(p) => p,
        Err(nf) => {
            return Err(NotPinned::NoRoom {
                param_bytes: bytes,
                needed: nf.needed,
                layer: nf.owner,
                sram: hw.sram_bytes,
            })
        }
    };
    let buffers = low.sp.param_bufs.len();
    let all = vec![true; low.bufs.len()];
    let stop_job = move_loads_to_prologue(&mut low, &all);
    Ok(Pinned {
        low,
        placed,
        stop_job,
        residency: Residency::Pinned {
            buffers,
            bytes,
            prologue_instrs: stop_job + 1,
        },
    })
}

/// Moves the loads of the parameter buffers `pin` (in order) before all other jobs
/// and ends them with a STOP; renumbers the host ops' segments (the prologue is
/// segment 0) and the job indices the prefetch pass reads (`param_bufs` of the
/// buffers left streaming, `step_start`). Returns the STOP's job index.
fn move_loads_to_prologue(low: &mut Lowered, pin: &[bool]) -> usize {
    let mut moved = vec![false; low.jobs.len()];
    for ParamBuf { buf: b, loads } in &low.sp.param_bufs {
        if pin[b.index()] {
            loads.iter().for_each(|j| moved[j.index()] = true);
        }
    }
    let stop_job = moved.iter().filter(|&&m| m).count();
    // New index of the first job at or after old index `j` that stays in the body.
    let mut kept_before = vec![0; moved.len() + 1];
    for j in 0..moved.len() {
        kept_before[j + 1] = kept_before[j] + usize::from(!moved[j]);
    }
    let remap = |j: usize| stop_job + 1 + kept_before[j.min(moved.len())];
    let jobs = std::mem::take(&mut low.jobs);
    let mut rest = Vec::with_capacity(jobs.len());
    low.jobs = Vec::new();
    for (m, j) in moved.iter().copied().zip(jobs) {
        if m {
            low.jobs.push(j);
        } else {
            rest.push(j);
        }
    }
    low.jobs.push(Job {
        node: String::new(),
        kind: JobKind::Stop,
    });
    low.jobs.extend(rest);
    for op in &mut low.host_ops {
        op.segment += 1;
    }
    low.sp.param_bufs.retain(|p| !pin[p.buf.index()]);
    for ParamBuf { loads, .. } in &mut low.sp.param_bufs {
        loads
            .iter_mut()
            .for_each(|j| *j = JobId::new(remap(j.index())));
    }
    for StepStart { job: j, .. } in &mut low.sp.step_start {
        *j = JobId::new(remap(j.index()));
    }
    stop_job
}

/// Partial pinning, for a program whose parameters do not all fit: after the
/// streaming plan is placed, pins parameter buffers (not those of layers split into
/// several row bands) spread over the program (`choose_pins`), within a budget of
/// the SRAM the placement leaves free, lowered by 1/16 until the placement with
/// them pinned fits the way that puts the streamed parameters where they can be
/// prefetched furthest (`alloc::place_with`), and moves their loads to the prologue;
/// the other parameters keep streaming (and being prefetched) every frame. `None`
/// when nothing can be pinned.
pub(crate) fn pin_some(low: &mut Lowered, placed: &Placement, hw: &HwConfig) -> Option<PartialPin> {
    // A split layer's weight chunks are reloaded per row band: pinning one load
    // would not save the others. With one band each chunk loads once per frame.
    let split: BTreeSet<&str> = low
        .sp
        .splits
        .iter()
        .filter(|s| s.bands > 1)
        .map(|s| s.layer.as_str())
        .collect();
    let mut cands: Vec<BufId> = low
        .sp
        .param_bufs
        .iter()
        .map(|p| p.buf)
        .filter(|&b| !split.contains(low.bufs[b].owner.as_str()))
        .collect();
    cands.sort_by_key(|&b| (low.bufs[b].first, b));
    // First the layers whose parameters take longer to load than the layer before
    // them computes: their loads are what the MAC array waits for; the others'
    // weights stream in the shadow of the compute before them.
    let bound = dma_bound_layers(low, hw);
    let (first, rest): (Vec<BufId>, Vec<BufId>) = cands
        .iter()
        .partition(|&&b| bound.contains(low.bufs[b].owner.as_str()));
    let end = low.bufs.iter().map(|b| b.last).max().unwrap_or(0);
    let mut budget = hw.sram_bytes.saturating_sub(placed.lower_bound);
    while budget >= MIN_PARTIAL {
        let (pin, bytes) = choose_pins(&low.bufs, [&first, &rest], budget);
        if bytes == 0 {
            return None;
        }
        let mut bufs = low.bufs.clone();
        let mut early = vec![false; bufs.len()];
        for ParamBuf { buf: b, .. } in &low.sp.param_bufs {
            if pin[b.index()] {
                bufs[*b].first = 0;
                bufs[*b].last = end;
            } else {
                early[b.index()] = true;
            }
        }
        // Only the placement that puts the streamed parameters where they can be
        // prefetched furthest: pinning into the room that needs costs more than
        // the pinned loads save.
        let fits = alloc::place_with(&bufs, hw.sram_bytes, SRAM_ALIGN, &early);
        if let Ok(placed) = fits {
            let pinned: Vec<usize> = (0..pin.len()).filter(|&b| pin[b]).collect();
            let bytes = pinned.iter().map(|&b| bufs[b].size).sum();
            let streamed = low
                .sp
                .param_bufs
                .iter()
                .filter(|p| !pin[p.buf.index()])
                .map(|p| bufs[p.buf].size)
                .sum();
            low.bufs = bufs;
            let stop_job = move_loads_to_prologue(low, &pin);
            return Some(PartialPin {
                placed,
                stop_job,
                residency: Residency::Partial {
                    buffers: pinned.len(),
                    bytes,
                    streamed,
                },
            });
        }
        budget -= budget / 16;
    }
    None
}

/// The layers whose parameter buffers take longer to load (`bands::dma_cycles`)
/// than the compute jobs of the layer before them take (`bands::tile_cycles`):
/// what their loads can hide under when streamed (the first layer's under nothing).
fn dma_bound_layers<'a>(low: &'a Lowered, hw: &HwConfig) -> BTreeSet<&'a str> {
    let mut load: BTreeMap<&str, f64> = BTreeMap::new();
    for ParamBuf { buf: b, .. } in &low.sp.param_bufs {
        let buf = &low.bufs[*b];
        *load.entry(buf.owner.as_str()).or_default() += dma_cycles(hw, buf.size);
    }
    // Compute cycles per layer, the layers in the order they first compute.
    let mut order: Vec<(&str, f64)> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for job in &low.jobs {
        let c: f64 = job
            .kind
            .tiles()
            .iter()
            .map(|t| tile_cycles(&job.kind, t, hw.mac_rows))
            .sum();
        if c == 0.0 {
            continue;
        }
        let i = *index.entry(job.node.as_str()).or_insert_with(|| {
            order.push((job.node.as_str(), 0.0));
            order.len() - 1
        });
        order[i].1 += c;
    }
    let before = |layer: &str| -> f64 {
        let i = index.get(layer).copied();
        i.and_then(|i| i.checked_sub(1)).map_or(0.0, |p| order[p].1)
    };
    load.into_iter()
        .filter(|(n, l)| *l > before(n))
        .map(|(n, _)| n)
        .collect()
}

/// Which candidates to pin within `budget` bytes, and their bytes: the tiers in
/// turn, each (in the order the program first uses them) with the budget the
/// tiers before it left. Within a tier the pinned ones are spread evenly over the
/// program: a candidate is pinned while the pinned bytes so far stay within the
/// budget's share of the tier's bytes so far, so the compute of pinned layers
/// (which needs no DMA) falls between the streamed loads and runs while they come
/// in, instead of in one stretch with the DMA queue idle. Whatever budget that
/// leaves is then filled in program order.
fn choose_pins(bufs: &[Buffer], tiers: [&[BufId]; 2], budget: u64) -> (Vec<bool>, u64) {
    let size = |b: BufId| bufs[b].size.div_ceil(SRAM_ALIGN) * SRAM_ALIGN;
    let mut pin = vec![false; bufs.len()];
    let mut bytes = 0u64;
    for cands in tiers {
        let left = budget - bytes;
        let total: u64 = cands.iter().map(|&b| size(b)).sum();
        let (mut seen, mut taken) = (0u64, 0u64);
        for &b in cands {
            seen += size(b);
            // taken + size <= left * seen / total, in integers.
            let fair = u128::from(left) * u128::from(seen) / u128::from(total.max(1));
            if u128::from(taken + size(b)) <= fair {
                pin[b.index()] = true;
                taken += size(b);
            }
        }
        for &b in cands {
            if !pin[b.index()] && taken + size(b) <= left {
                pin[b.index()] = true;
                taken += size(b);
            }
        }
        bytes += taken;
    }
    (pin, bytes)
}

/// Smallest SRAM budget partial pinning tries: below it a prologue saves too little
/// DRAM traffic per frame to be worth the placement attempts.
const MIN_PARTIAL: u64 = 64 << 10;

/// A partial pinning: the new placement, the prologue's STOP job, the residency.
pub(crate) struct PartialPin {
    pub placed: Placement,
    pub stop_job: usize,
    pub residency: Residency,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bufs(n: usize) -> Vec<Buffer> {
        (0..n)
            .map(|i| Buffer {
                owner: format!("l{i}"),
                size: 1024,
                first: i,
                last: i,
            })
            .collect()
    }

    #[test]
    fn pins_spread_over_the_first_tier_then_the_rest() {
        let b = bufs(12);
        let (a, rest): (Vec<BufId>, Vec<BufId>) =
            (0..12).map(BufId::new).partition(|b| b.index() < 8);
        // Half of the first tier: every other one, not the first four.
        let (pin, bytes) = choose_pins(&b, [&a, &rest], 4 * 1024);
        let pinned: Vec<usize> = (0..12).filter(|&i| pin[i]).collect();
        assert_eq!((pinned, bytes), (vec![1, 3, 5, 7], 4096));
        // All of the first tier, then half of the rest, spread.
        let (pin, bytes) = choose_pins(&b, [&a, &rest], 10 * 1024);
        let pinned: Vec<usize> = (0..12).filter(|&i| pin[i]).collect();
        assert_eq!(
            (pinned, bytes),
            (vec![0, 1, 2, 3, 4, 5, 6, 7, 9, 11], 10240)
        );
        let (pin, bytes) = choose_pins(&b, [&a, &[]], 3 * 1024 + 512);
        let pinned: Vec<usize> = (0..12).filter(|&i| pin[i]).collect();
        assert_eq!((pinned, bytes), (vec![2, 4, 6], 3072));
        // A budget the spread leaves unused is filled in program order.
        let mut b = bufs(3);
        b[1].size = 2048;
        let all: Vec<BufId> = (0..3).map(BufId::new).collect();
        let (pin, bytes) = choose_pins(&b, [&all, &[]], 2048);
        assert_eq!((pin, bytes), (vec![true, false, true], 2048));
    }
}
