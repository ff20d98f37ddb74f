//! The walk's spill/split bookkeeping: DRAM homes of spilled values, spill regions,
//! split layers, parameter buffers and step starts (kept by [`crate::place::spill`],
//! [`crate::place::split`] and read by [`crate::place::prefetch`]).

use crate::base::act::Act;
use crate::base::act::Placed;
use crate::base::buffer::Buffer;
use crate::base::job::{BufId, JobId};
use crate::base::plan::Plan;
use nnac_ir::NodeId;
use std::collections::BTreeMap;

/// Where a DRAM home lies; resolved to an address after the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Base {
    /// Spill region `r`.
    Spill(usize),
    /// I/O descriptor `i` (a graph input).
    Io(usize),
    /// The graph output with this index in `Graph::outputs`.
    Output(usize),
}

/// A spilled activation: its layout (the same pitches as in SRAM) and home.
#[derive(Debug, Clone)]
pub(crate) struct DramAct {
    pub act: Act,
    pub base: Base,
}

/// An activation a layer reads: resident in SRAM or spilled to DRAM.
#[derive(Clone)]
pub(crate) enum Src {
    Sram(Placed),
    Dram(DramAct),
}

impl Src {
    pub(crate) fn act(&self) -> &Act {
        match self {
            Src::Sram(p) => &p.act,
            Src::Dram(d) => &d.act,
        }
    }
}

/// A layer lowered in pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitLayer {
    pub layer: String,
    /// Bands of output rows.
    pub bands: usize,
    /// Groups of output channels whose weights are streamed one after another.
    pub groups: usize,
}

/// The walk's spill/split bookkeeping (part of [`crate::base::walk::Lowered`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct SpillState {
    pub plan: Plan,
    /// DRAM homes of the spilled values.
    pub homes: BTreeMap<NodeId, DramAct>,
    /// Spill regions (size and live steps).
    pub regions: Vec<Buffer>,
    /// `(job, base)`: the job's DMA `dram_addr` is relative to `base`.
    pub fixups: Vec<HomeFixup>,
    pub spill_bytes: u64,
    pub fill_bytes: u64,
    pub splits: Vec<SplitLayer>,
    /// SRAM buffers holding a whole activation, and the value they hold.
    pub value_bufs: BTreeMap<BufId, NodeId>,
    /// Buffers loaded from the DRAM image (parameters): `(buffer, its load jobs)`.
    pub param_bufs: Vec<ParamBuf>,
    /// `(step, index of the step's first job)`, ascending.
    pub step_start: Vec<StepStart>,
    /// Smallest working set of every splittable layer (one row band, one group).
    pub min_ws: BTreeMap<NodeId, u64>,
    /// The spill area in the DRAM image: `(address, bytes)`.
    pub area: SpillArea,
    pub(crate) region_addrs: Vec<u64>,
    /// Whether the current step's parameter buffers may be live from the previous
    /// step (prefetch / double buffering).
    pub overlap: bool,
    /// The current node is a pixel-wise layer running in bands (`split_px.rs`).
    pub px_split: bool,
    /// Spilled values copied into SRAM for the current node.
    pub(crate) temps: Vec<NodeId>,
}

/// A DMA job whose DRAM address is relative to a home ([`Base`]), resolved after
/// the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HomeFixup {
    pub job: JobId,
    pub base: Base,
}

/// A buffer loaded from the DRAM image (parameters) and its load jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamBuf {
    pub buf: BufId,
    /// Its DMA-read jobs.
    pub loads: Vec<JobId>,
}

/// The first job of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StepStart {
    pub step: usize,
    /// The step's first job (`Lowered::jobs.len()` when the step has none yet).
    pub job: JobId,
}

/// The spill area in the DRAM image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SpillArea {
    pub addr: u64,
    pub bytes: u64,
}
