//! The cycle-approximate timing model (docs/PERFORMANCE.md).
//!
//! Timing is data-independent: it is computed from the instruction stream and the
//! hardware configuration alone, as a discrete-event schedule of the DMA queue and
//! the compute queue synchronized by the dependency flags.
//!
//! - [`params`]: machine parameters derived from [`HwConfig`].
//! - [`packet`]: loads of an activation packet by the 256-byte rule.
//! - [`dot_cost`], [`simd_cost`], [`cost`]: the cost of each instruction kind.
//! - [`pipeline`]: MAC array, accumulator / shift-register double buffering, SIMD unit.
//! - [`scheduler`]: the two queues, the flags, STOP-separated segments.
//! - [`timeline`]: when each instruction ran and what each cycle is charged to.
//! - [`shape`]: the shape bound; [`hw_bound`]: the hardware bound; [`layers`]:
//!   per-layer aggregation.
//! - [`floor`]: the schedule floor, each segment's busiest unit.
//!
//! Entry point: [`analyze`].

pub mod cost;
pub mod dot_cost;
pub mod floor;
pub mod hw_bound;
pub mod layers;
pub mod packet;
pub mod params;
pub mod pipeline;
pub mod scheduler;
pub mod shape;
pub mod simd_cost;
pub mod timeline;

pub use floor::SegmentFloor;
pub use hw_bound::UnitWork;
pub use layers::{LayerProfile, PROGRAM_LAYER};
pub use params::TimingParams;
pub use timeline::{Charge, InstrTiming, SegmentTiming, Timeline, Unit};

use crate::footprint::{footprint, Footprint};
use cost::{instr_cost, InstrCost};
use nnac_isa::{HwConfig, Program};
use std::fmt;

/// A program the timing model cannot analyze.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimingError(pub String);

impl fmt::Display for TimingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TimingError {}

/// A host operation of the program (run on the CPU after a segment; not timed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostOpSummary {
    /// The segment after whose STOP it runs.
    pub segment: u32,
    pub name: String,
    /// The op in nnac-ir's op text syntax.
    pub op: String,
    /// Elements it reads (all inputs) and writes.
    pub input_elements: u64,
    pub output_elements: u64,
    /// DRAM bytes it reads and writes.
    pub bytes: u64,
    /// Why it is not on the NNA (the program's metadata note), if recorded.
    pub reason: Option<String>,
}

fn host_ops(p: &Program) -> Vec<HostOpSummary> {
    let ops = p.host_ops.as_ref().map_or(&[][..], |h| &h.ops[..]);
    ops.iter()
        .map(|o| HostOpSummary {
            segment: o.segment,
            name: o.name.clone(),
            op: o.op.clone(),
            input_elements: o.inputs.iter().map(crate::io::numel).sum(),
            output_elements: crate::io::numel(&o.output),
            bytes: o.inputs.iter().map(|d| d.bytes()).sum::<u64>() + o.output.bytes(),
            reason: p.meta.host_reason(&o.name).map(str::to_string),
        })
        .collect()
}

/// What the prologue of a program costs (run once per load, docs/ISA.md 2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrologueProfile {
    /// Instructions of the prologue, STOPs included (= the body's first index).
    pub instructions: usize,
    pub segments: usize,
    /// NNA cycles from the start to the prologue's last STOP.
    pub cycles: u64,
    pub dram_read: u64,
    pub dram_written: u64,
}

/// The timing of one program on one hardware configuration. With a prologue, every
/// per-frame figure (cycles, MACs, DRAM bytes, charges, layers) is the body's: the
/// steady state of one frame; the prologue is in [`Profile::prologue`].
#[derive(Debug, Clone)]
pub struct Profile {
    pub params: TimingParams,
    /// NNA cycles of one frame: all segments of the body (the whole program without
    /// a prologue); host-op time excluded.
    pub total_cycles: u64,
    pub macs: u64,
    pub dram_read: u64,
    pub dram_written: u64,
    /// DRAM traffic lower bound: DRAM image (weights, constants) once plus every
    /// input and output tensor once.
    pub dram_lower_bound: u64,
    /// Bytes of every input and output tensor once: the least a frame moves.
    pub io_bytes: u64,
    /// The run-once part, when the program has one.
    pub prologue: Option<PrologueProfile>,
    /// Highest SRAM byte any instruction touches, plus one.
    pub sram_peak: u64,
    /// Host operations run between segments (their time is not NNA time and is not
    /// modelled).
    pub host_ops: Vec<HostOpSummary>,
    /// The whole program's charge by cause (sums to `total_cycles`).
    pub charge: Charge,
    pub broken_slices: u64,
    pub layers: Vec<LayerProfile>,
    pub timeline: Timeline,
    /// The work of every segment of the timeline per unit (its order; the
    /// prologue's included): [`Profile::floor_cycles`].
    pub floors: Vec<SegmentFloor>,
    /// Mnemonic of every instruction (for traces).
    pub mnemonics: Vec<&'static str>,
    /// Layer name of every instruction.
    pub layer_of: Vec<String>,
}

impl Profile {
    pub fn seconds(&self) -> f64 {
        self.params.seconds(self.total_cycles)
    }
    /// Frames per second at the configured clock (one frame = one run of the body).
    pub fn fps(&self) -> f64 {
        let s = self.seconds();
        if s > 0.0 {
            1.0 / s
        } else {
            0.0
        }
    }
    /// The program's shape bound: MACs over the fewest MAC-array cycles the output
    /// slicing of all its layers allows (`None` without dot products).
    pub fn shape_bound(&self) -> Option<f64> {
        let min = self.min_cycles();
        let array = (self.params.rows * self.params.cols) as f64;
        (min > 0).then(|| (self.macs as f64 / (min as f64 * array)).min(1.0))
    }

    /// The fewest MAC-array cycles the output slicing of all layers allows (the
    /// shape bound's denominator, in cycles).
    pub fn min_cycles(&self) -> u64 {
        self.layers.iter().map(|l| l.min_cycles).sum()
    }

    /// The least work of one frame on each unit: the layers' [`UnitWork`] summed
    /// (units run concurrently, so one layer's unloads may hide under another's
    /// passes), plus one DMA latency when the frame moves inputs or outputs.
    pub fn hw_work(&self) -> UnitWork {
        let mut w = UnitWork::default();
        self.layers.iter().for_each(|l| w.add(&l.hw_work));
        if w.dram > 0 {
            w.dram += self.params.dma_latency;
        }
        w
    }

    /// The fewest cycles any program of this ISA could take for this frame's work on
    /// this configuration (docs/PERFORMANCE.md 3.1): the busiest unit of
    /// [`Profile::hw_work`], or the shift register's pairing of the passes
    /// ([`Profile::coupled_cycles`]), whichever is more.
    pub fn hw_bound_cycles(&self) -> u64 {
        self.hw_work().cycles().max(self.coupled_cycles())
    }

    /// The fewest cycles the shift register allows for the frame: its passes can only
    /// overlap pass by pass (`hw_bound.rs`, [`hw_bound::coupled_cycles`]).
    pub fn coupled_cycles(&self) -> u64 {
        hw_bound::coupled_cycles(&self.pass_loads(), &self.hw_work())
    }

    /// Every layer's dot-product passes as the shift register sees them.
    fn pass_loads(&self) -> Vec<hw_bound::PassLoad> {
        self.layers
            .iter()
            .flat_map(|l| l.pass_loads.iter().copied())
            .collect()
    }

    /// What sets the frame's hardware bound: `"MAC"`, `"SIMD"`, `"DMA"` or
    /// `"shift register"` ([`UnitWork::limit_with`]).
    pub fn hw_limit(&self) -> &'static str {
        self.hw_work()
            .limit_with(self.coupled_cycles(), &self.pass_loads())
    }

    /// The hardware bound as a MAC utilization (`None` without dot products).
    pub fn hardware_bound(&self) -> Option<f64> {
        hw_bound::as_utilization(self.macs, self.hw_bound_cycles(), &self.params)
    }

    /// The schedule floor of one frame: the sum of the body's segments' floors
    /// (`floor.rs`), the fewest cycles any order of these instructions could take.
    pub fn floor_cycles(&self) -> u64 {
        let body = self.prologue.map_or(0, |p| p.segments);
        self.floors
            .iter()
            .skip(body)
            .map(SegmentFloor::cycles)
            .sum()
    }

    /// MACs / (cycles x rows x cols).
    pub fn mac_utilization(&self) -> f64 {
        if self.total_cycles == 0 {
            return 0.0;
        }
        self.macs as f64 / (self.total_cycles as f64 * (self.params.rows * self.params.cols) as f64)
    }
}

/// The keys that shape a program; a profile on another configuration must keep them.
fn check_compatible(program: &HwConfig, hw: &HwConfig) -> Result<(), TimingError> {
    let keys = [
        ("mac_rows", program.mac_rows == hw.mac_rows),
        ("mac_cols", program.mac_cols == hw.mac_cols),
        ("acc_bits", program.acc_bits == hw.acc_bits),
        ("simd_width", program.simd_width == hw.simd_width),
        ("sram_bytes", program.sram_bytes == hw.sram_bytes),
        ("flags", program.flags == hw.flags),
    ];
    match keys.iter().find(|(_, same)| !same) {
        Some((k, _)) => Err(TimingError(format!(
            "the program was compiled for a different `{k}`; only timing keys (clock, DRAM bandwidth, SRAM ports, banks, cache, SIMD rows per cycle) may differ"
        ))),
        None => hw.validate().map_err(|e| TimingError(e.to_string())),
    }
}

fn footprints(p: &Program) -> Result<Vec<Footprint>, TimingError> {
    p.instrs
        .iter()
        .enumerate()
        .map(|(i, ins)| {
            footprint(ins, &p.meta.hw)
                .map_err(|m| TimingError(format!("instruction {i} ({}): {m}", ins.mnemonic())))
        })
        .collect()
}

/// The charge of the instructions from `from` on (every cycle of their segments).
fn total_charge(tl: &Timeline, from: usize) -> Charge {
    let mut c = Charge::default();
    tl.instrs.iter().skip(from).for_each(|t| c.add(&t.charge));
    c
}

/// The prologue's cost: its segments' cycles and its DMA bytes.
fn prologue_profile(p: &Program, costs: &[InstrCost], tl: &Timeline) -> Option<PrologueProfile> {
    let b = p.body_start?;
    let segments = p.prologue_segments();
    let (mut dram_read, mut dram_written) = (0, 0);
    for c in &costs[..b] {
        if let InstrCost::Dma(d) = c {
            dram_read += d.dram_read;
            dram_written += d.dram_written;
        }
    }
    Some(PrologueProfile {
        instructions: b,
        segments,
        cycles: segments
            .checked_sub(1)
            .and_then(|k| tl.segments.get(k))
            .map_or(0, |s| s.end),
        dram_read,
        dram_written,
    })
}

/// Times `program` on `hw` (its own configuration when `None`).
pub fn analyze(program: &Program, hw: Option<&HwConfig>) -> Result<Profile, TimingError> {
    analyze_with(program, hw, &WhatIf::default())
}

/// Counterfactual assumptions (all off by default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WhatIf {
    /// Every activation packet obeys the 256-byte rule.
    pub packet_rule: bool,
}

/// [`analyze`] under counterfactual assumptions.
pub fn analyze_with(
    program: &Program,
    hw: Option<&HwConfig>,
    what_if: &WhatIf,
) -> Result<Profile, TimingError> {
    let hw = hw.unwrap_or(&program.meta.hw);
    check_compatible(&program.meta.hw, hw)?;
    program.check_hw().map_err(|e| TimingError(e.to_string()))?;
    let prm = TimingParams {
        assume_packet_rule: what_if.packet_rule,
        ..TimingParams::new(hw)
    };
    let fps = footprints(program)?;
    let costs: Vec<InstrCost> = program.instrs.iter().map(|i| instr_cost(i, &prm)).collect();
    let inputs = scheduler::Inputs {
        instrs: &program.instrs,
        costs: &costs,
        footprints: &fps,
    };
    let tl = scheduler::schedule(&inputs).map_err(|e| match e.index {
        Some(i) => TimingError(format!(
            "instruction {i} ({}): {}",
            program.instrs[i].mnemonic(),
            e.message
        )),
        None => TimingError(e.message),
    })?;
    let names = layers::layer_names(&program.instrs, program.layers.as_ref());
    let body = program.body_start();
    let io = hw_bound::io_ranges(&program.io);
    let facts = layers::Program {
        instrs: &program.instrs,
        costs: &costs,
        names: &names,
        io: &io,
    };
    let layers = layers::aggregate(&facts, &tl, body, &prm);
    let prologue = prologue_profile(program, &costs, &tl);
    let sum = |f: fn(&LayerProfile) -> u64| layers.iter().map(f).sum::<u64>();
    let io_bytes: u64 = program
        .io
        .iter()
        .map(|d| crate::io::numel(d) * d.dtype.size())
        .sum();
    let sram_peak = fps
        .iter()
        .flat_map(|f| [f.sram_reads.hull(), f.sram_writes.hull()])
        .flatten()
        .map(|h| h.1)
        .max()
        .unwrap_or(0);
    Ok(Profile {
        total_cycles: tl.total_cycles() - prologue.map_or(0, |p| p.cycles),
        macs: sum(|l| l.macs),
        dram_read: sum(|l| l.dram_read),
        dram_written: sum(|l| l.dram_written),
        dram_lower_bound: program.dram.bytes.len() as u64 + io_bytes,
        io_bytes,
        prologue,
        sram_peak,
        host_ops: host_ops(program),
        charge: total_charge(&tl, body),
        broken_slices: sum(|l| l.broken_slices),
        layers,
        mnemonics: program.instrs.iter().map(|i| i.mnemonic()).collect(),
        layer_of: names,
        floors: floor::segment_floors(&costs, &tl),
        timeline: tl,
        params: prm,
    })
}
