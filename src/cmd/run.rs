//! `nnac run P.nnab --input NAME=FILE.npy ... [--output-dir DIR] [--schedule S]
//! [--seed N] [--raw] [--hw FILE.toml]`: runs a compiled program on the functional
//! simulator.
//!
//! Inputs are float32 `.npy` files in the model's own layout and shape (quantized on
//! the way in by `nnac_interp::host::quantize`, the one rule; NaN gives the zero point), int8/uint8 `.npy` files of the descriptor's type taken as raw
//! codes, PNG/JPEG images (preprocessed by `--mean/--scale/--bgr/--resize` as in
//! `compile --calib`), or a directory of such files (one frame each). An `.npy` with
//! one extra leading dimension N runs N frames; the outputs are then stacked the same
//! way (also for a directory). Outputs are written as `DIR/<name>.npy` (the naming rule
//! of `nnac_driver::outputs`, shared with `nnac eval`), dequantized to float32 (`(code -
//! zero_point) * scale`), or as raw codes with `--raw`. Nothing is
//! written unless every frame ran.

use crate::error::CliError;
use nnac_driver::frames::Preprocess;
use nnac_driver::outputs::write_outputs;
use nnac_driver::run;
use nnac_ir::Tensor;
use nnac_isa::HwConfig;
use nnac_runtime_sim::{RunOptions, RunStats, Schedule, Simulator};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ScheduleArg {
    /// Program order, one instruction at a time.
    Serial,
    /// Both queues as far ahead as the flags allow (default).
    Eager,
    /// Random interleaving of the two queues (see --seed).
    Random,
}

#[derive(clap::Args)]
pub struct Args {
    /// Program container (.nnab).
    pub program: PathBuf,
    /// A program input: NAME=FILE.npy, NAME=IMAGE.png|jpg or NAME=DIR (repeatable, one
    /// per input).
    #[arg(long = "input", value_name = "NAME=FILE")]
    pub inputs: Vec<String>,
    /// Directory for the output .npy files (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,
    /// Interleaving of the DMA and compute queues.
    #[arg(long, value_enum, default_value = "eager")]
    pub schedule: ScheduleArg,
    /// Seed of the random schedule.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the outputs as raw int8/uint8 codes instead of dequantized float32.
    #[arg(long)]
    pub raw: bool,
    /// Hardware configuration (TOML) to run on; the program must have been compiled
    /// for exactly this configuration. Default: the program's own.
    #[arg(long, value_name = "FILE")]
    pub hw: Option<PathBuf>,
    #[command(flatten)]
    pub pre: Preprocess,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let program = run::read_program(&args.program)?;
    if let Some(w) = nnac_driver::synthetic::program_warning(&program) {
        eprintln!("{w}");
    }
    let hw = match &args.hw {
        Some(p) => Some(HwConfig::from_toml_file(p).map_err(|e| CliError::user(e.to_string()))?),
        None => None,
    };
    let schedule = match args.schedule {
        ScheduleArg::Serial => Schedule::Serial,
        ScheduleArg::Eager => Schedule::Eager,
        ScheduleArg::Random => Schedule::Random { seed: args.seed },
    };
    let name = args.program.display().to_string();
    let sim =
        Simulator::new(&program, &RunOptions { schedule, hw }).map_err(run::sim_err(&name))?;
    let frames = run::load_inputs(&sim, &args.inputs, &args.pre)?;
    // One load: the prologue once (weights resident in SRAM), then the body per frame.
    let mut session = sim.session().map_err(run::sim_err(&name))?;
    let (results, stats) = run::run_frames(&mut session, &frames, &name, &mut |_| Ok(()))?;
    let tensors = run::stack_outputs(&sim, &results, frames.stacked, args.raw)?;
    write_outputs(&args.output_dir, &tensors)?;
    report(&session.prologue, &stats, results.len(), &tensors);
    Ok(())
}

fn report(prologue: &RunStats, stats: &RunStats, frames: usize, tensors: &[(String, Tensor)]) {
    if prologue.instructions > 0 {
        println!(
            "prologue (once per load): {} instructions ({} DMA, {} compute), {} segments, {} DMA bytes",
            prologue.instructions,
            prologue.dma_instructions,
            prologue.compute_instructions,
            prologue.segments,
            prologue.dma_bytes
        );
    }
    let mut all = prologue.clone();
    all.merge(stats);
    let stats = &all;
    let names: Vec<String> = tensors
        .iter()
        .map(|(n, t)| format!("{n} {:?}", t.shape))
        .collect();
    let once = if prologue.instructions > 0 {
        " (totals include the prologue once)"
    } else {
        ""
    };
    println!(
        "ran {frames} frame(s){once}: {} instructions ({} DMA, {} compute), {} segments, {} host ops, {} MACs, {} DMA bytes; outputs: {}",
        stats.instructions,
        stats.dma_instructions,
        stats.compute_instructions,
        stats.segments,
        stats.host_ops,
        stats.macs,
        stats.dma_bytes,
        names.join(", ")
    );
    if let Some(s) = stats.first_overflow {
        eprintln!(
            "warning: {} accumulator overflow(s) (values wrapped); first at instruction #{} {}, pixel {}, channel {}",
            stats.acc_overflows, s.index, s.mnemonic, s.pixel, s.channel
        );
    }
}
