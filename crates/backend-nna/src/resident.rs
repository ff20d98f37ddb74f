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
//! streaming plan is placed as before and [`pin_some`] pins what fits beside it:
//! the parameters of layers that are not split, largest first, within the SRAM the
//! streaming placement leaves free; the rest (split layers' weights among them)
//! keep streaming every frame.

use crate::alloc::{self, Placement};
use crate::job::{Job, JobKind};
use crate::lower::{Lowered, Walk};
use crate::{BackendError, SRAM_ALIGN};
use nnac_ir::Graph;
use nnac_isa::HwConfig;

/// Whether the backend may keep the weights in SRAM across frames
/// (`nnac compile --resident-weights`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResidentWeights {
    /// Pin all parameters when they fit with the activations; else pin those of
    /// unsplit layers that fit beside the streaming plan and stream the rest.
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
    Streamed(String),
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
pub struct Pinned {
    pub low: Lowered,
    pub placed: Placement,
    pub stop_job: usize,
    pub residency: Residency,
}

/// Pins every parameter buffer if they all fit with the activations; otherwise the
/// reason they do not.
pub fn try_pin(
    graph: &Graph,
    hw: &HwConfig,
    tp: u32,
) -> Result<Result<Pinned, String>, BackendError> {
    let mut low = Walk::new(graph, hw, tp).run()?;
    if low.sp.param_bufs.is_empty() {
        return Ok(Err("the program has no parameters".into()));
    }
    if !low.sp.splits.is_empty() {
        return Ok(Err(format!(
            "{} layer(s) must be split to fit the SRAM",
            low.sp.splits.len()
        )));
    }
    let end = low.bufs.iter().map(|b| b.last).max().unwrap_or(0);
    let mut bytes = 0;
    for (b, _) in &low.sp.param_bufs {
        let buf = &mut low.bufs[*b];
        buf.first = 0;
        buf.last = end;
        bytes += buf.size;
    }
    let placed = match alloc::place(&low.bufs, hw.sram_bytes, SRAM_ALIGN) {
        Ok(p) => p,
        Err(nf) => {
            return Ok(Err(format!(
                "parameters ({bytes} bytes) plus activations need {} bytes at layer {}, the SRAM has {}",
                nf.needed, nf.owner, hw.sram_bytes
            )))
        }
    };
    let buffers = low.sp.param_bufs.len();
    let all = vec![true; low.bufs.len()];
    let stop_job = move_loads_to_prologue(&mut low, &all);
    Ok(Ok(Pinned {
        low,
        placed,
        stop_job,
        residency: Residency::Pinned {
            buffers,
            bytes,
            prologue_instrs: stop_job + 1,
        },
    }))
}

/// Moves the loads of the parameter buffers `pin` (in order) before all other jobs
/// and ends them with a STOP; renumbers the host ops' segments (the prologue is
/// segment 0) and the job indices the prefetch pass reads (`param_bufs` of the
/// buffers left streaming, `step_start`). Returns the STOP's job index.
fn move_loads_to_prologue(low: &mut Lowered, pin: &[bool]) -> usize {
    let mut moved = vec![false; low.jobs.len()];
    for (b, loads) in &low.sp.param_bufs {
        if pin[*b] {
            loads.iter().for_each(|&j| moved[j] = true);
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
    low.sp.param_bufs.retain(|(b, _)| !pin[*b]);
    for (_, loads) in &mut low.sp.param_bufs {
        loads.iter_mut().for_each(|j| *j = remap(*j));
    }
    for (_, j) in &mut low.sp.step_start {
        *j = remap(*j);
    }
    stop_job
}

/// Partial pinning, for a program whose parameters do not all fit: after the
/// streaming plan is placed, pins the parameter buffers of layers that are not split
/// (largest first, within a budget of the SRAM the placement leaves free, halved
/// until the placement with them pinned fits) and moves their loads to the prologue;
/// the other parameters keep streaming (and being prefetched) every frame. `None`
/// when nothing can be pinned.
pub fn pin_some(low: &mut Lowered, placed: &Placement, hw: &HwConfig) -> Option<PartialPin> {
    let split: std::collections::BTreeSet<&str> =
        low.sp.splits.iter().map(|s| s.layer.as_str()).collect();
    let mut cands: Vec<usize> = low
        .sp
        .param_bufs
        .iter()
        .map(|(b, _)| *b)
        .filter(|&b| !split.contains(low.bufs[b].owner.as_str()))
        .collect();
    cands.sort_by_key(|&b| (std::cmp::Reverse(low.bufs[b].size), b));
    let end = low.bufs.iter().map(|b| b.last).max().unwrap_or(0);
    let mut budget = hw.sram_bytes.saturating_sub(placed.lower_bound);
    while budget >= MIN_PARTIAL {
        let mut pin = vec![false; low.bufs.len()];
        let mut bytes = 0;
        for &b in &cands {
            let size = low.bufs[b].size.div_ceil(SRAM_ALIGN) * SRAM_ALIGN;
            if bytes + size <= budget {
                pin[b] = true;
                bytes += size;
            }
        }
        if bytes == 0 {
            return None;
        }
        let mut bufs = low.bufs.clone();
        let mut early = vec![false; bufs.len()];
        for (b, _) in &low.sp.param_bufs {
            if pin[*b] {
                bufs[*b].first = 0;
                bufs[*b].last = end;
            } else {
                early[*b] = true;
            }
        }
        let fits = alloc::place_with(&bufs, hw.sram_bytes, SRAM_ALIGN, &early)
            .or_else(|_| alloc::place(&bufs, hw.sram_bytes, SRAM_ALIGN));
        if let Ok(placed) = fits {
            let pinned: Vec<usize> = (0..pin.len()).filter(|&b| pin[b]).collect();
            let bytes = pinned.iter().map(|&b| bufs[b].size).sum();
            let streamed = low
                .sp
                .param_bufs
                .iter()
                .filter(|(b, _)| !pin[*b])
                .map(|(b, _)| bufs[*b].size)
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
        budget /= 2;
    }
    None
}

/// Smallest SRAM budget partial pinning tries: below it a prologue saves too little
/// DRAM traffic per frame to be worth the placement attempts.
const MIN_PARTIAL: u64 = 64 << 10;

/// A partial pinning: the new placement, the prologue's STOP job, the residency.
pub struct PartialPin {
    pub placed: Placement,
    pub stop_job: usize,
    pub residency: Residency,
}
