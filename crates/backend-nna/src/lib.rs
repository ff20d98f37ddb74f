//! nnac-backend-nna: lowers a quantized nnac graph (the output of `nnac-passes`) to an
//! NNA program ([`nnac_isa::Program`]).
//!
//! Entry: [`lower()`]. The crate is four folders, in pipeline order; each imports
//! only from the ones before it (checked by the `layering` test):
//!
//! - `base/`: the leaf. Activation layouts ([`base::act`]), jobs and the typed ids
//!   `BufId`, `JobId`, `Loc` ([`base::job`]), SRAM buffers ([`base::buffer`]),
//!   parameter tables ([`base::params`]), the walk's state ([`base::plan`],
//!   [`base::spill_state`], [`base::host_state`]) and the walk's small core
//!   ([`base::walk::Walk`]: buffers, values, DRAM image parts, steps).
//! - `schedule/`: jobs become instructions ([`schedule::emit`], one per tile, each
//!   checked with `check_instr`); bands of DRAM reads and writes and the cycle
//!   estimates ([`schedule::bands`]); the cascade that overlaps consecutive layers
//!   ([`schedule::cascade`]); the sequencer's slice rule ([`schedule::seq_rule`],
//!   [`schedule::seq_tiles`]); dependency flags ([`schedule::sync`]: conflict-based,
//!   falling back to full serialisation).
//! - `place/`: where buffers live and when. Liveness-based first fit
//!   ([`place::alloc`]); when the buffers do not fit (docs/ARCHITECTURE.md, "Backend:
//!   SRAM placement, splitting, spill and prefetch"), [`place::plan::refine`] refines
//!   a spill/split plan and the walk runs again; [`place::spill`] keeps spilled
//!   activations in DRAM between layers; [`place::split`] runs a dot-product layer in
//!   bands of output rows and chunks of streamed weight groups, [`place::split_px`]
//!   ELTWISE / SCALE in bands of rows; a layer whose smallest piece does not fit is
//!   [`BackendError::SramFull`]. [`place::resident`] keeps weights in SRAM across
//!   frames (all of them loaded once by a prologue, docs/ISA.md 2.2, or as many as
//!   fit); [`place::prefetch`] moves every parameter load as far ahead as free SRAM
//!   allows.
//! - `lower/`: the graph walk ([`lower::graph::run`]: every node in topological
//!   order) and the op lowerings, functions over the walk: dot products, SCALE and
//!   ELTWISE ([`lower::dot`], fields in [`lower::fields`]), host ops
//!   ([`lower::host`]: ops the NNA has no instruction for run on the host between
//!   segments, operands to DRAM before a STOP), global pooling ([`lower::gap`]),
//!   pooling apart from its producer ([`lower::pool_apart`], [`lower::pool_bands`]),
//!   channel shuffles, upsampling, HWC eltwise, and the SIMD epilogue programs
//!   ([`simd`]: integer FUSED_RELU path and the fp32 path of sigmoid, tanh,
//!   hard-sigmoid/-swish, leaky ReLU and PReLU).
//!
//! Not yet: concatenation other than on axis 1; splitting a concatenation whose
//! output stays in SRAM (its output must fit whole).
//!
//! Layouts (docs/ISA.md section 4): activations planar (CHW: `PP = 1`, `RP = W`,
//! `CP = H*W`, i.e. dense NCHW); weights in groups of `mac_cols` output channels, one contiguous
//! `mac_cols`-byte vector per (ic, ky, kx); int32 bias; 16-byte channel entries
//! `[multiplier, shift, scale, bias]`.

// The module docs are the crate's code map: they link private items, so read them
// with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]
#![warn(unreachable_pub)]

mod base;
mod error;
mod lower;
mod place;

mod schedule;

pub use base::buffer::SRAM_ALIGN;
pub use base::spill_state::SplitLayer;
pub use error::{BackendError, UnsupportedNode};
pub use error::{Limit, Refusal};
pub use lower::simd;
pub use place::resident::{NotPinned, Residency, ResidentWeights};
pub use schedule::seq_rule;

use base::job::BufId;
use base::plan::Plan;
use base::{job, walk};
use place::{alloc, plan, prefetch, resident};
use schedule::{bands, cascade, emit, seq_tiles, sync};

use nnac_ir::{Graph, Op};
use nnac_isa::{DramImage, HwConfig, Instr, Metadata, Program};
use std::collections::BTreeSet;

/// Backend options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendOptions {
    /// Output pixels per tile of unpooled layers; 0 = `mac_rows` (one 96-pixel slice).
    pub tile_pixels: u32,
    /// Run the queues strictly in program order (two hand-over flags) instead of
    /// ordering only conflicting instructions.
    pub serialise: bool,
    /// Skip the static hazard check (`nnac_isa::hazard`) of the emitted program.
    pub skip_hazard_check: bool,
    /// Recorded in the program metadata.
    pub source_model: String,
    /// Recorded in the program metadata.
    pub compiler_version: String,
    /// Refuse a program whose dot-product instructions break the address
    /// sequencer's slice rule (docs/ISA.md 4.1). On by default (the planar layout
    /// and row-aligned tiles meet it); off, the violations are only listed in
    /// [`BackendReport::slice_rule`].
    pub enforce_slice_rule: bool,
    /// Keep the parameters resident in SRAM across frames, loaded once by a
    /// prologue: all of them when they fit with the activations, else as many as
    /// fit beside the streaming plan (`resident.rs`).
    pub resident_weights: ResidentWeights,
    /// Layers (by name) to run with their output channels on the MAC array's rows
    /// and their pixels on its columns, the mapping knob `nnac tune` chooses per layer
    /// (`lower/channels_on_rows.rs`). A named layer that is not a 1x1, stride-1,
    /// unpadded, ungrouped, unpooled convolution over planar tensors, or that needs a
    /// split, keeps the compiler's orientation; [`BackendReport::channels_on_rows`]
    /// lists the layers turned.
    pub channels_on_rows: BTreeSet<String>,
}

impl Default for BackendOptions {
    fn default() -> BackendOptions {
        BackendOptions {
            tile_pixels: 0,
            serialise: false,
            skip_hazard_check: false,
            source_model: String::new(),
            compiler_version: String::new(),
            enforce_slice_rule: true,
            resident_weights: ResidentWeights::Auto,
            channels_on_rows: BTreeSet::new(),
        }
    }
}

/// One lowered layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerReport {
    pub name: String,
    pub instr: String,
    pub tiles: usize,
}

/// What the backend did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BackendReport {
    pub layers: Vec<LayerReport>,
    pub dma_instrs: usize,
    pub compute_instrs: usize,
    /// Highest SRAM byte used + 1 (weights placed to be prefetched early may use
    /// free SRAM above what the buffers live at one time need).
    pub sram_peak: u64,
    /// Largest total size of simultaneously live buffers (lower bound of the peak).
    pub sram_lower_bound: u64,
    pub dram_image_bytes: u64,
    pub flags_used: u32,
    /// Dot-product layers whose accumulator could overflow for *some* 8-bit input
    /// (worst case over all codes, not over calibrated ranges): the passes' bound
    /// should keep this empty; listed, not refused.
    pub acc_overflow_risk: Vec<String>,
    /// Layers lowered with their output channels on the rows
    /// ([`BackendOptions::channels_on_rows`]).
    pub channels_on_rows: Vec<String>,
    /// Layers whose activation packets break the address sequencer's slice rule
    /// (docs/ISA.md 4.1), with their widest slice.
    pub slice_rule: Vec<seq_rule::SliceViolation>,
    /// Activation bytes written to DRAM between layers (spills).
    pub spill_bytes: u64,
    /// Activation bytes read back from DRAM (fills; band halos counted per band).
    pub fill_bytes: u64,
    /// Activations kept in DRAM between layers.
    pub spilled_values: usize,
    /// Layers lowered in row bands and/or streamed weight groups.
    pub splits: Vec<SplitLayer>,
    /// Parameter buffers loaded more than one step before they are needed.
    pub prefetched_early: usize,
    /// Walks the spill/split planner needed (1: everything fitted at once).
    pub plan_rounds: usize,
    /// Whether the weights stay in SRAM across frames (all, some, none), and why not.
    pub residency: Residency,
    /// Wall time per stage in microseconds (lower, alloc, emit, flags, hazard check;
    /// `nnac compile --time-passes`). Not deterministic: never part of a program.
    pub stage_us: Vec<(String, u64)>,
}

fn check_graph(g: &Graph) -> Result<(), BackendError> {
    nnac_ir::verify(g)
        .map_err(|v| BackendError::Invalid(v.iter().map(|e| e.to_string()).collect()))?;
    for id in g.node_ids() {
        let n = g.node(id);
        if matches!(n.op, Op::Constant(_)) {
            continue;
        }
        for t in &n.outputs {
            if t.quant.is_none() && !host_float(g, id) {
                return Err(BackendError::NotQuantized {
                    node: n.name.clone(),
                    detail: format!("output {t} has no quantization"),
                });
            }
        }
    }
    Ok(())
}

/// Whether node `id` is a host op whose float32 result only host ops read (a run of
/// layers kept in float, `--float-layers`): it stays in DRAM as float32, unquantized.
fn host_float(g: &Graph, id: nnac_ir::NodeId) -> bool {
    matches!(g.node(id).op, Op::Nna(nnac_ir::NnaOp::Host(_)))
        && g.node(id).outputs[0].dtype == nnac_ir::DType::F32
        && g.only_host_ops_read(nnac_ir::Value::new(id, 0))
}

/// Lowers a quantized graph to a program for `hw`. Refuses a graph that fails
/// verification or is not quantized; lists every unsupported node at once.
pub fn lower(
    graph: &Graph,
    hw: &HwConfig,
    opts: &BackendOptions,
) -> Result<(Program, BackendReport), BackendError> {
    let mut clock = StageClock::start();
    check_graph(graph)?;
    hw.validate().map_err(|e| BackendError::Emit {
        node: graph.name.clone(),
        detail: format!("hardware configuration: {e}"),
    })?;
    let tp = if opts.tile_pixels == 0 {
        hw.mac_rows
    } else {
        opts.tile_pixels
    };
    let mut w = walk_and_place(graph, hw, tp, opts)?;
    for (j, added) in seq_tiles::retile(&mut w.low.jobs, hw.mac_rows) {
        let node = &w.low.jobs[j].node;
        if let Some(l) = w.low.layers.iter_mut().find(|l| &l.layer == node) {
            l.tiles = l.tiles.saturating_add_signed(added);
        }
    }
    clock.lap("lower+alloc");
    let t = prefetch_and_emit(&w, hw, opts)?;
    w.low.jobs = t.jobs;
    let emitted = t.emitted;
    clock.lap("prefetch");
    let slice_rule = seq_rule::violations(
        &emitted.instrs,
        |i| w.low.jobs[emitted.job[i]].node.as_str(),
        hw.mac_rows,
    );
    if let Some(v) = slice_rule.first().filter(|_| opts.enforce_slice_rule) {
        return Err(BackendError::Emit {
            node: v.layer.clone(),
            detail: v.to_string(),
        });
    }
    clock.lap("slice rule");
    let mut instrs = if t.assigned.is_some() {
        t.flagged
    } else {
        emitted.instrs
    };
    clock.lap("emit+flags");
    let flags_used = match t.assigned {
        Some(n) => n,
        None if sync::FLAGS_USED <= hw.flags => {
            sync::serialise(&mut instrs);
            sync::FLAGS_USED
        }
        None => {
            return Err(BackendError::Emit {
                node: graph.name.clone(),
                detail: format!(
                    "needs {} flags, the hardware has {}",
                    sync::FLAGS_USED,
                    hw.flags
                ),
            })
        }
    };
    // The last job may already be the STOP of the last host ops.
    let final_stop = !matches!(instrs.last(), Some(Instr::Stop(_)));
    if final_stop {
        instrs.push(Instr::Stop(Default::default()));
    }
    clock.lap("flags");
    let low = &w.low;
    let layers = nnac_isa::LayerTable::from_names(
        emitted
            .job
            .iter()
            .map(|&j| (Some(j) != w.prologue_stop).then_some(low.jobs[j].node.as_str()))
            .chain(final_stop.then_some(None)),
    );
    // The body starts after the instruction of the prologue's STOP job.
    let body_start = w.prologue_stop.map(|s| {
        let after = emitted.job.iter().position(|&j| j > s);
        after.unwrap_or(emitted.job.len())
    });
    let mut report = report(&w, &instrs, flags_used, slice_rule, t.early);
    let program = Program {
        instrs,
        dram: DramImage {
            base: 0,
            bytes: w.low.dram.into(),
        },
        io: w.low.io,
        host_ops: (!w.low.host_ops.is_empty()).then(|| nnac_isa::HostOps {
            ops: w.low.host_ops.clone(),
        }),
        layers: Some(layers),
        meta: Metadata {
            source_model: opts.source_model.clone(),
            compiler_version: opts.compiler_version.clone(),
            hw: hw.clone(),
            ..Default::default()
        },
        body_start,
    };
    if !opts.skip_hazard_check {
        hazard_check(&program, &graph.name)?;
        clock.lap("hazard check");
    }
    report.stage_us = clock.laps;
    Ok((program, report))
}

/// The walk of the graph and its SRAM placement, with the weights pinned (all or
/// some, loaded by a prologue ending at job `prologue_stop`) or streamed.
struct Walked {
    low: walk::Lowered,
    placed: alloc::Placement,
    /// Walks the spill/split planner took.
    rounds: usize,
    prologue_stop: Option<usize>,
    residency: Residency,
}

/// Walks and places `graph`: every parameter pinned if they all fit
/// (`resident::try_pin`), else some of them or none (`streaming`).
fn walk_and_place(
    graph: &Graph,
    hw: &HwConfig,
    tp: u32,
    opts: &BackendOptions,
) -> Result<Walked, BackendError> {
    let pinned = match opts.resident_weights {
        ResidentWeights::Off => Err(Residency::Off),
        ResidentWeights::Auto => {
            let low = walk::Walk::new(graph, hw, tp).with_plan(base_plan(opts));
            let low = lower::graph::run(low)?;
            resident::try_pin(low, hw).map_err(Residency::Streamed)
        }
    };
    Ok(match pinned {
        Ok(p) => Walked {
            low: p.low,
            placed: p.placed,
            rounds: 1,
            prologue_stop: Some(p.stop_job),
            residency: p.residency,
        },
        Err(r) => match streaming(graph, hw, tp, opts)? {
            Streaming::Partly(low, p, rounds) => Walked {
                low,
                placed: p.placed,
                rounds,
                prologue_stop: Some(p.stop_job),
                residency: p.residency,
            },
            Streaming::All(low, placed, rounds) => Walked {
                low,
                placed,
                rounds,
                prologue_stop: None,
                residency: r,
            },
        },
    })
}

/// The jobs after prefetch, their emitted instructions, the same with flags
/// assigned (`assigned`: the flags used, `None` if they did not fit or the queues
/// are serialised), and the parameter loads moved early.
struct Trial {
    jobs: Vec<job::Job>,
    emitted: emit::Emitted,
    flagged: Vec<Instr>,
    assigned: Option<u32>,
    early: usize,
}

/// Prefetch as far as the flags allow: each window (in layers) is tried until the
/// flag assignment fits; serialised queues never overlap, so get none; parameters
/// left streaming move within the body only (after the prologue).
fn prefetch_and_emit(
    w: &Walked,
    hw: &HwConfig,
    opts: &BackendOptions,
) -> Result<Trial, BackendError> {
    let (low, placed) = (&w.low, &w.placed);
    let span = |b: BufId| placed.addrs[b.index()]..placed.addrs[b.index()] + low.bufs[b].size;
    let body_job = w.prologue_stop.map_or(0, |s| s + 1);
    let mut trial = None;
    for &window in &prefetch::windows(hw.flags, opts.serialise) {
        let mut jobs = low.jobs.clone();
        let mut bufs = low.bufs.clone();
        let early = prefetch::lookahead(
            &mut bufs,
            &placed.addrs,
            &mut jobs,
            &low.sp,
            window,
            body_job,
            hw,
        );
        let read_bands = bands::reads(&jobs, &low.read_cands, hw);
        let mut banded = low.banded.clone();
        banded.extend(read_bands.keys());
        let mut e = emit::emit(&jobs, &placed.addrs, hw, &banded, &read_bands)?;
        if !opts.serialise {
            cascade::reorder(&mut e, &jobs, &read_bands, hw);
        }
        let mut flagged = e.instrs.clone();
        let assigned = if opts.serialise {
            None
        } else {
            sync::assign(&mut flagged, &e.access, &span, hw.flags)
        };
        let done = assigned.is_some();
        trial = Some(Trial {
            jobs,
            emitted: e,
            flagged,
            assigned,
            early,
        });
        if done {
            break;
        }
    }
    Ok(trial.expect("at least one window"))
}

/// The backend's report of a lowered program whose instructions are `instrs`.
fn report(
    w: &Walked,
    instrs: &[Instr],
    flags_used: u32,
    slice_rule: Vec<seq_rule::SliceViolation>,
    early: usize,
) -> BackendReport {
    let (low, placed) = (&w.low, &w.placed);
    let count = |class| instrs.iter().filter(|i| i.class() == class).count();
    BackendReport {
        layers: low
            .layers
            .iter()
            .map(|l| LayerReport {
                name: l.layer.clone(),
                instr: l.mnemonic.clone(),
                tiles: l.tiles,
            })
            .collect(),
        dma_instrs: count(nnac_isa::Class::Dma),
        compute_instrs: count(nnac_isa::Class::Compute),
        sram_peak: placed.peak,
        sram_lower_bound: placed.lower_bound,
        dram_image_bytes: low.dram.len() as u64,
        flags_used,
        acc_overflow_risk: low.acc_risk.clone(),
        channels_on_rows: low.turned.clone(),
        slice_rule,
        spill_bytes: low.sp.spill_bytes,
        fill_bytes: low.sp.fill_bytes,
        spilled_values: low.sp.plan.spilled.len(),
        splits: low.sp.splits.clone(),
        prefetched_early: early,
        plan_rounds: w.rounds,
        residency: w.residency.clone(),
        stage_us: Vec::new(),
    }
}

/// Wall time of consecutive backend stages.
struct StageClock {
    last: std::time::Instant,
    laps: Vec<(String, u64)>,
}

impl StageClock {
    fn start() -> Self {
        StageClock {
            last: std::time::Instant::now(),
            laps: Vec::new(),
        }
    }

    fn lap(&mut self, stage: &str) {
        let now = std::time::Instant::now();
        let us = (now - self.last).as_micros();
        self.laps
            .push((stage.to_string(), u64::try_from(us).unwrap_or(u64::MAX)));
        self.last = now;
    }
}

/// A program whose parameters do not all fit: its walk, placement and number of
/// walks (`plan_and_place`), with some parameters pinned or none.
enum Streaming {
    Partly(walk::Lowered, resident::PartialPin, usize),
    All(walk::Lowered, alloc::Placement, usize),
}

/// The parameters do not all fit (or `--resident-weights off`): the streaming
/// plan's placement, with as many parameters pinned beside it as fit
/// (`resident::pin_some`, `auto` only) or none. The streaming plan loads large
/// layers' weights in chunks of at most 1/32 of the SRAM (`Plan::weight_chunk`),
/// so that the streamed ones need little SRAM (and pinning can fill the rest chunk
/// by chunk); only if that plan does not place is the plan without chunks used.
fn streaming(
    graph: &Graph,
    hw: &HwConfig,
    tp: u32,
    opts: &BackendOptions,
) -> Result<Streaming, BackendError> {
    let auto = opts.resident_weights == ResidentWeights::Auto;
    let chunked = Plan {
        weight_chunk: Some(hw.sram_bytes / WEIGHT_CHUNK_FRACTION),
        ..base_plan(opts)
    };
    let (mut low, placed, rounds) = match plan_and_place(graph, hw, tp, chunked) {
        Err(BackendError::SramFull { .. }) => plan_and_place(graph, hw, tp, base_plan(opts))?,
        placed => placed?,
    };
    match auto
        .then(|| resident::pin_some(&mut low, &placed, hw))
        .flatten()
    {
        Some(p) => Ok(Streaming::Partly(low, p, rounds)),
        None => Ok(Streaming::All(low, placed, rounds)),
    }
}

/// The plan every walk starts from: nothing spilled or split, the layers the options
/// turn channels-on-rows.
fn base_plan(opts: &BackendOptions) -> Plan {
    Plan {
        channels_on_rows: opts.channels_on_rows.clone(),
        ..Plan::default()
    }
}

/// The SRAM over the largest weight chunk of a program whose weights stream
/// (`streaming`).
const WEIGHT_CHUNK_FRACTION: u64 = 32;

/// Walks the graph and places its buffers, refining the spill/split plan
/// (`plan.rs`, starting from `plan`) until the placement fits; also the number of
/// walks.
fn plan_and_place(
    graph: &Graph,
    hw: &HwConfig,
    tp: u32,
    mut plan: Plan,
) -> Result<(walk::Lowered, alloc::Placement, usize), BackendError> {
    let mut round = 1;
    loop {
        let low = walk::Walk::new(graph, hw, tp).with_plan(plan.clone());
        let low = lower::graph::run(low)?;
        // A layer that cannot fit even in its smallest pieces: refuse at once.
        if let Some((&id, &min)) = low.sp.min_ws.iter().find(|(_, &m)| m > hw.sram_bytes) {
            return Err(BackendError::SramFull {
                node: graph.node(id).name.clone(),
                needed: min,
                sram: hw.sram_bytes,
            });
        }
        // Parameters where they can be prefetched furthest; if that fragments the
        // SRAM too much, plain first fit; if that fails too, a new plan.
        let mut early = vec![false; low.bufs.len()];
        for p in &low.sp.param_bufs {
            early[p.buf.index()] = true;
        }
        let cap = hw.sram_bytes;
        let placed = alloc::place_with(&low.bufs, cap, SRAM_ALIGN, &early)
            .or_else(|_| alloc::place(&low.bufs, cap, SRAM_ALIGN));
        match placed {
            Ok(placed) => return Ok((low, placed, round)),
            Err(nf) => plan::refine(&mut plan, graph, &low, &nf, cap)?,
        }
        round += 1;
    }
}

/// Proves the emitted flags race- and deadlock-free (docs/ISA.md 3.3); a finding is
/// a backend bug.
fn hazard_check(p: &Program, graph: &str) -> Result<(), BackendError> {
    let bug = |detail: String| BackendError::Emit {
        node: graph.to_string(),
        detail: format!("static hazard check failed (backend bug): {detail}"),
    };
    let report = nnac_isa::hazard::check_program(p).map_err(|e| bug(e.to_string()))?;
    if report.is_clean() {
        Ok(())
    } else {
        Err(bug(report.lines().join("; ")))
    }
}
