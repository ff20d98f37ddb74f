//! The public entry points: prepare a program once, run it on inputs.

use crate::engine::{Engine, Schedule};
use crate::error::SimError;
use crate::exec::dot::param_ranges;
use crate::footprint::{self, Footprints, Intervals};
use crate::host::{self, Prepared};
use crate::io::{dram_extent, read_output, write_input};
use crate::memory::{Dram, Memory};
use crate::stats::RunStats;
use nnac_isa::{HwConfig, Instr, IoDesc, IoDir, IoDtype, Program};
use rayon::prelude::*;

/// Largest DRAM window the simulator allocates.
const MAX_DRAM_BYTES: u64 = 1 << 30;

/// How to run a program.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub schedule: Schedule,
    /// The hardware to run on; `None` = the program's own configuration. A program
    /// compiled for a different configuration is refused.
    pub hw: Option<HwConfig>,
}

/// One output tensor, raw codes in the descriptor's logical order.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub name: String,
    pub shape: Vec<u32>,
    pub dtype: IoDtype,
    pub scale: f32,
    pub zero_point: i32,
    pub data: Vec<u8>,
}

/// The outputs of one run (in descriptor order) and what the run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub outputs: Vec<Output>,
    pub stats: RunStats,
}

/// A program checked and prepared for running (footprints computed when first
/// needed, then kept). A program with a prologue (docs/ISA.md 2.2) runs it once per
/// [`Session`], then its body once per frame.
pub struct Simulator<'p> {
    program: &'p Program,
    footprints: Footprints<'p>,
    /// The DRAM segments; each session starts from a fresh copy of the image.
    dram_layout: Vec<(u64, u64)>,
    schedule: Schedule,
    /// Host ops, op text parsed, in execution order.
    host_ops: Vec<Prepared<'p>>,
}

/// Runs `program` once. `inputs` gives the raw codes of every input, by descriptor
/// name, in the descriptor's logical order (e.g. NCHW).
pub fn run(
    program: &Program,
    inputs: &[(String, Vec<u8>)],
    opts: &RunOptions,
) -> Result<RunResult, SimError> {
    Simulator::new(program, opts)?.run(inputs)
}

fn check_hw(program: &Program, given: &Option<HwConfig>) -> Result<(), SimError> {
    if let Some(hw) = given {
        if *hw != program.meta.hw {
            return Err(SimError::HwMismatch {
                program: format!("fingerprint {:#018x}", program.meta.hw.fingerprint()),
                given: format!("fingerprint {:#018x}", hw.fingerprint()),
            });
        }
    }
    program
        .meta
        .hw
        .validate()
        .map_err(|e| SimError::Program(e.to_string()))?;
    Ok(program.check_hw()?)
}

fn check_structure(program: &Program) -> Result<(), SimError> {
    nnac_isa::instr::check_program(&program.instrs)?;
    if let Some(b) = program.body_start {
        nnac_isa::check_body_start(b, &program.instrs, program.host_ops.as_ref())?;
    }
    let mut names: Vec<&str> = program.io.iter().map(|d| d.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(SimError::Program(format!(
            "two descriptors are named '{}'",
            w[0]
        )));
    }
    Ok(())
}

/// The segments of the program's DRAM (see [`Dram::layout`]): the image, every I/O
/// tensor and every host-op tensor; checked against [`MAX_DRAM_BYTES`].
fn dram_layout(
    program: &Program,
    host_spans: Vec<(u64, u64)>,
) -> Result<Vec<(u64, u64)>, SimError> {
    let img = &program.dram;
    let mut spans: Vec<(u64, u64)> = program.io.iter().filter_map(dram_extent).collect();
    if let Some(d) = program
        .io
        .iter()
        .find(|d| crate::io::numel(d) > 0 && dram_extent(d).is_none())
    {
        return Err(SimError::Program(format!(
            "'{}': DRAM extent overflows the address space",
            d.name
        )));
    }
    spans.push((img.base, img.base + img.bytes.len() as u64));
    spans.extend(host_spans);
    let layout = Dram::layout(spans);
    let len: u64 = layout.iter().map(|&(lo, hi)| hi - lo).sum();
    if len > MAX_DRAM_BYTES {
        return Err(SimError::Program(format!(
            "DRAM image, I/O and host-op tensors need {len} bytes, more than {MAX_DRAM_BYTES}"
        )));
    }
    Ok(layout)
}

/// A fresh DRAM of `layout` holding the program's image (borrowed where a segment is
/// exactly the image, see [`Dram::with_image`]).
fn dram_of<'p>(program: &'p Program, layout: &[(u64, u64)]) -> Result<Dram<'p>, SimError> {
    let img = &program.dram;
    Dram::with_image(layout, img.base, &img.bytes).map_err(SimError::Image)
}

impl<'p> Simulator<'p> {
    /// Checks the program against the hardware and checks every instruction
    /// ([`footprint::check`]: malformed instructions are reported here, naming the
    /// instruction); their footprints are computed later, when needed.
    pub fn new(program: &'p Program, opts: &RunOptions) -> Result<Simulator<'p>, SimError> {
        check_hw(program, &opts.hw)?;
        check_structure(program)?;
        let hw = &program.meta.hw;
        // In parallel (a large program has thousands of instructions); the first error
        // in program order is reported, as a sequential pass would.
        let hulls: Vec<_> = program
            .instrs
            .par_iter()
            .enumerate()
            .map(|(i, ins)| {
                footprint::check(ins, hw).map_err(|m| SimError::instr(i, ins.mnemonic(), m))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect::<Result<_, _>>()?;
        let host_ops = host::prepare(program)?;
        Ok(Simulator {
            program,
            footprints: Footprints::new(&program.instrs, hw, &hulls),
            dram_layout: dram_layout(program, host::spans(&host_ops))?,
            schedule: opts.schedule,
            host_ops,
        })
    }

    pub fn inputs(&self) -> impl Iterator<Item = &IoDesc> {
        self.program.io.iter().filter(|d| d.dir == IoDir::Input)
    }

    pub fn outputs(&self) -> impl Iterator<Item = &IoDesc> {
        self.program.io.iter().filter(|d| d.dir == IoDir::Output)
    }

    fn load_inputs(&self, inputs: &[(String, Vec<u8>)], dram: &mut Dram) -> Result<(), SimError> {
        for (name, _) in inputs {
            if !self.inputs().any(|d| &d.name == name) {
                let known: Vec<&str> = self.inputs().map(|d| d.name.as_str()).collect();
                return Err(SimError::Input(format!(
                    "the program has no input '{name}' (inputs: {known:?})"
                )));
            }
        }
        for d in self.inputs() {
            let mut given = inputs.iter().filter(|(n, _)| n == &d.name);
            let (_, data) = given
                .next()
                .ok_or_else(|| SimError::Input(format!("missing input '{}'", d.name)))?;
            if given.next().is_some() {
                return Err(SimError::Input(format!("input '{}' given twice", d.name)));
            }
            write_input(d, data, dram).map_err(SimError::InputData)?;
        }
        Ok(())
    }

    /// Runs one frame from power-on: the prologue (if any), then the body. The
    /// statistics cover both.
    pub fn run(&self, inputs: &[(String, Vec<u8>)]) -> Result<RunResult, SimError> {
        let mut session = self.session()?;
        let mut r = session.run(inputs)?;
        let mut stats = session.prologue.clone();
        stats.merge(&r.stats);
        r.stats = stats;
        Ok(r)
    }

    /// Loads the program: a fresh machine (DRAM image, zeroed SRAM) that has run the
    /// prologue (docs/ISA.md 2.2; nothing without one). Frames then run the body on
    /// the SRAM and DRAM the previous frame left, as the hardware would.
    pub fn session(&self) -> Result<Session<'_, 'p>, SimError> {
        let hw = &self.program.meta.hw;
        let mut sram = Memory::zeroed("SRAM", 0, hw.sram_bytes as usize);
        // The SRAM the prologue writes (the resident weights), faulted in on every
        // thread before its copies run on one (SRAM addresses are offsets: base 0).
        let prologue_writes: Vec<(usize, usize)> = (0..self.program.body_start())
            .filter_map(|i| self.footprints.write_hull(i))
            .map(|(lo, hi)| (lo as usize, hi as usize))
            .collect();
        crate::pages::fault_in(&mut sram.bytes, &prologue_writes);
        let mut engine = Engine::new(
            &self.program.instrs,
            &self.footprints,
            hw,
            dram_of(self.program, &self.dram_layout)?,
            sram,
        );
        let first_body = self.program.prologue_segments();
        // The container guarantees that no host op runs in the prologue.
        engine.run(self.schedule, 0..first_body, &mut |_, _, _| Ok(()))?;
        let prologue = std::mem::take(&mut engine.stats);
        Ok(Session {
            sim: self,
            engine,
            first_body,
            prologue,
            frames: 0,
        })
    }

    /// Whether each instruction's prepared form ([`crate::exec::dot::DotPrep`]) stays
    /// valid from one frame to the next: a body dot-product instruction whose
    /// parameter bytes (weights, bias, channel table) no body instruction writes.
    /// Those bytes were written by the prologue or nothing, so every frame reads the
    /// same values.
    fn stable_preps(&self) -> Vec<bool> {
        let body = self.program.body_start();
        let hw = &self.program.meta.hw;
        let writes: Vec<Intervals> = self.program.instrs[body..]
            .par_iter()
            .map(|ins| nnac_isa::hazard::footprint::sram_writes(ins, hw))
            .collect();
        let writes = Intervals::from_ranges(
            writes
                .iter()
                .flat_map(|w| w.ranges().iter().copied())
                .collect(),
        );
        let mac_cols = hw.mac_cols;
        let instrs = &self.program.instrs;
        (0..instrs.len())
            .map(|j| match &instrs[j] {
                Instr::Conv(d) | Instr::Deconv(d) | Instr::InnerProduct(d) if j >= body => {
                    let params = Intervals::from_ranges(param_ranges(d, mac_cols));
                    writes.first_overlap(&params).is_none()
                }
                _ => false,
            })
            .collect()
    }
}

/// A loaded program (see [`Simulator::session`]): runs the body once per frame.
pub struct Session<'s, 'p> {
    sim: &'s Simulator<'p>,
    engine: Engine<'s>,
    first_body: usize,
    /// What the prologue did (once per load; empty without a prologue).
    pub prologue: RunStats,
    /// Frames run so far.
    frames: u64,
}

impl Session<'_, '_> {
    /// Runs the body on one frame's inputs; the statistics are this frame's.
    pub fn run(&mut self, inputs: &[(String, Vec<u8>)]) -> Result<RunResult, SimError> {
        let sim = self.sim;
        // From the second frame on, the instructions whose parameters every frame
        // shares are prepared once and kept (a one-frame run keeps nothing).
        if self.frames == 1 {
            self.engine.keep = sim.stable_preps();
        }
        self.frames += 1;
        sim.load_inputs(inputs, &mut self.engine.dram)?;
        self.engine.stats = RunStats::default();
        let host_ops = &sim.host_ops;
        let mut next = host_ops
            .iter()
            .position(|p| p.rec.segment as usize >= self.first_body)
            .unwrap_or(host_ops.len());
        let segs = self.first_body..self.engine.segment_count();
        let engine = &mut self.engine;
        // On a worker of the thread pool: an instruction's parallel blocks then start
        // beside this thread instead of handing the work over and waiting for it; the
        // other workers poll for them instead of sleeping between instructions.
        crate::awake::run_awake(|| {
            engine.run(sim.schedule, segs, &mut |k, dram, stats| {
                while let Some(p) = host_ops.get(next).filter(|p| p.rec.segment as usize == k) {
                    host::run(p, dram)?;
                    stats.host_ops += 1;
                    next += 1;
                }
                Ok(())
            })
        })?;
        let engine = &mut self.engine;
        let outputs = sim
            .outputs()
            .map(|d| {
                Ok(Output {
                    name: d.name.clone(),
                    shape: d.shape.clone(),
                    dtype: d.dtype,
                    scale: d.scale,
                    zero_point: d.zero_point,
                    data: read_output(d, &mut engine.dram).map_err(SimError::Output)?,
                })
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        Ok(RunResult {
            outputs,
            stats: engine.stats.clone(),
        })
    }
}
