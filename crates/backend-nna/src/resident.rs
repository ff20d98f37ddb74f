//! Weights resident in SRAM across frames (docs/ARCHITECTURE.md, "Backend: SRAM
//! placement ..."; docs/ISA.md 2.2).
//!
//! When every parameter buffer (weights, bias, channel tables) fits in SRAM next to
//! the activations' peak, the parameters are *pinned*: each one's SRAM range is live
//! for the whole program, so nothing else is ever placed there, and their loads move
//! to a prologue (all parameter DMAs, then a STOP) that runs once when the program is
//! loaded. The body then only moves inputs, outputs and host-op operands. Everything
//! or nothing: a program that needs spills or split layers (the walk with the empty
//! plan does not fit), or whose pinned parameters do not leave room for the
//! activations, streams its weights every frame as before.

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
    /// Pin all parameters when they fit with the activations; else stream.
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
    let stop_job = move_loads_to_prologue(&mut low);
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

/// Moves every parameter load (in order) before all other jobs and ends them with a
/// STOP; renumbers the host ops' segments (the prologue is segment 0). Returns the
/// STOP's job index.
fn move_loads_to_prologue(low: &mut Lowered) -> usize {
    let mut is_load = vec![false; low.jobs.len()];
    for (_, loads) in &low.sp.param_bufs {
        for &j in loads {
            is_load[j] = true;
        }
    }
    let jobs = std::mem::take(&mut low.jobs);
    let (loads, rest): (Vec<(bool, Job)>, Vec<(bool, Job)>) =
        is_load.into_iter().zip(jobs).partition(|(l, _)| *l);
    low.jobs = loads.into_iter().map(|(_, j)| j).collect();
    let stop_job = low.jobs.len();
    low.jobs.push(Job {
        node: String::new(),
        kind: JobKind::Stop,
    });
    low.jobs.extend(rest.into_iter().map(|(_, j)| j));
    for op in &mut low.host_ops {
        op.segment += 1;
    }
    // Job indices of the walk no longer hold; nothing after this reads them.
    low.sp.param_bufs.clear();
    low.sp.step_start.clear();
    stop_job
}
