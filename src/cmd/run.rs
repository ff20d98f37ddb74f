//! `nnac run P.nnab --input NAME=FILE.npy ... [--output-dir DIR] [--schedule S]
//! [--seed N] [--raw] [--hw FILE.toml]`: runs a compiled program on the functional
//! simulator.
//!
//! Inputs are float32 `.npy` files in the model's own layout and shape (quantized on
//! the way in by the one rule of `nnac_interp::host::quantize`, ONNX QuantizeLinear's:
//! `code = round_half_to_even(x / scale) + zero_point` in float32, saturated; NaN gives
//! the zero point), int8/uint8 `.npy` files of the descriptor's type taken as raw
//! codes, PNG/JPEG images (preprocessed by `--mean/--scale/--bgr/--resize` as in
//! `compile --calib`), or a directory of such files (one frame each). An `.npy` with
//! one extra leading dimension N runs N frames; the outputs are then stacked the same
//! way (also for a directory). Outputs are written as `DIR/<name>.npy` (the naming rule
//! of `outputs.rs`, shared with `nnac eval`), dequantized to float32 (`(code -
//! zero_point) * scale`), or as raw codes with `--raw`. Nothing is
//! written unless every frame ran.

use super::frames::{load_frames, Preprocess};
use crate::cmd::outputs::write_outputs;
use crate::error::CliError;
use nnac_interp::host::dequantize;
use nnac_interp::npy::read_npy;
use nnac_ir::{DType, Tensor, TensorData, TensorType};
use nnac_isa::arith::code_value;
use nnac_isa::{HwConfig, IoDesc, IoDtype, Program};
use nnac_runtime_sim::{Output, RunOptions, RunStats, Schedule, Simulator};
use std::path::{Path, PathBuf};

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
    let bytes = std::fs::read(&args.program)
        .map_err(|e| CliError::user(format!("cannot read {}: {e}", args.program.display())))?;
    let program = Program::read(&bytes)
        .map_err(|e| CliError::user(format!("{}: {e}", args.program.display())))?;
    let hw = match &args.hw {
        Some(p) => Some(HwConfig::from_toml_file(p).map_err(|e| CliError::user(e.to_string()))?),
        None => None,
    };
    let schedule = match args.schedule {
        ScheduleArg::Serial => Schedule::Serial,
        ScheduleArg::Eager => Schedule::Eager,
        ScheduleArg::Random => Schedule::Random { seed: args.seed },
    };
    let sim =
        Simulator::new(&program, &RunOptions { schedule, hw }).map_err(sim_err(&args.program))?;
    let frames = load_inputs(&sim, &args.inputs, &args.pre)?;
    let mut results: Vec<Vec<Output>> = Vec::with_capacity(frames.frames.len());
    let mut stats = RunStats::default();
    // One load: the prologue once (weights resident in SRAM), then the body per frame.
    let mut session = sim.session().map_err(sim_err(&args.program))?;
    for (n, frame) in frames.frames.iter().enumerate() {
        let r = session.run(frame).map_err(|e| {
            let at = if frames.stacked {
                format!(" (frame {n})")
            } else {
                String::new()
            };
            CliError::user(format!("{}{at}: {e}", args.program.display()))
        })?;
        stats.merge(&r.stats);
        results.push(r.outputs);
    }
    let tensors = stack_outputs(&sim, &results, frames.stacked, args.raw)?;
    write_outputs(&args.output_dir, &tensors)?;
    report(&session.prologue, &stats, results.len(), &tensors);
    Ok(())
}

fn sim_err(path: &Path) -> impl Fn(nnac_runtime_sim::SimError) -> CliError + '_ {
    move |e| CliError::user(format!("{}: {e}", path.display()))
}

/// Raw codes of every input, per frame.
struct Frames {
    frames: Vec<Vec<(String, Vec<u8>)>>,
    /// The inputs had the extra leading frame dimension.
    stacked: bool,
}

fn parse_input_arg(s: &str) -> Result<(String, PathBuf), CliError> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(CliError::user(format!(
            "--input '{s}': expected NAME=FILE.npy"
        ))),
    }
}

fn load_inputs(sim: &Simulator, args: &[String], pre: &Preprocess) -> Result<Frames, CliError> {
    let mut given: Vec<(String, PathBuf)> = Vec::new();
    for a in args {
        let (name, file) = parse_input_arg(a)?;
        if given.iter().any(|(n, _)| *n == name) {
            return Err(CliError::user(format!("--input given twice for '{name}'")));
        }
        if !sim.inputs().any(|d| d.name == name) {
            let known: Vec<&str> = sim.inputs().map(|d| d.name.as_str()).collect();
            return Err(CliError::user(format!(
                "the program has no input '{name}' (inputs: {})",
                known.join(", ")
            )));
        }
        given.push((name, file));
    }
    let mut per_input: Vec<(String, Vec<Vec<u8>>, bool)> = Vec::new();
    for d in sim.inputs() {
        let (_, file) = given
            .iter()
            .find(|(n, _)| *n == d.name)
            .ok_or_else(|| CliError::user(format!("missing --input {}=FILE.npy", d.name)))?;
        let (frames, stacked) = if file.extension().and_then(|e| e.to_str()) == Some("npy") {
            let t = read_npy(file).map_err(|e| CliError::user(e.to_string()))?;
            quantize_input(d, &t).map_err(|m| CliError::user(format!("{}: {m}", file.display())))?
        } else {
            let shape: Vec<usize> = d.shape.iter().map(|&s| s as usize).collect();
            let floats = load_frames(file, &d.name, &TensorType::f32(shape), pre)?;
            let codes = floats
                .iter()
                .map(|t| t.to_f32_vec().iter().map(|&x| quantize(x, d)).collect())
                .collect();
            (codes, file.is_dir())
        };
        per_input.push((d.name.clone(), frames, stacked));
    }
    let counts: Vec<(usize, bool)> = per_input.iter().map(|(_, f, s)| (f.len(), *s)).collect();
    if counts.windows(2).any(|w| w[0] != w[1]) {
        return Err(CliError::user(format!(
            "inputs disagree on the number of frames (leading dimension): {}",
            per_input
                .iter()
                .map(|(n, f, s)| format!(
                    "{n}: {}",
                    if *s {
                        f.len().to_string()
                    } else {
                        "unstacked".into()
                    }
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let (n, stacked) = counts.first().copied().unwrap_or((1, false));
    let frames = (0..n)
        .map(|i| {
            per_input
                .iter()
                .map(|(name, f, _)| (name.clone(), f[i].clone()))
                .collect()
        })
        .collect();
    Ok(Frames { frames, stacked })
}

/// The code of `x` for the input `d` (the one rule, `nnac_interp::host::quantize`).
fn quantize(x: f32, d: &IoDesc) -> u8 {
    nnac_interp::host::quantize(x, d.scale, d.zero_point, code_dtype(d.dtype)) as u8
}

/// The IR type whose codes a program I/O type holds (the container admits only 8-bit
/// code types for inputs and outputs).
fn code_dtype(d: IoDtype) -> DType {
    match d {
        IoDtype::Uint8 => DType::U8,
        _ => DType::I8,
    }
}

/// The input's frames as raw codes, and whether the tensor had the frame dimension.
fn quantize_input(d: &IoDesc, t: &Tensor) -> Result<(Vec<Vec<u8>>, bool), String> {
    let want: Vec<usize> = d.shape.iter().map(|&s| s as usize).collect();
    let (n, stacked) = crate::cmd::frame_shape::frames_in(&d.name, &t.shape, &want)?;
    let codes: Vec<u8> = match (&t.data, d.dtype) {
        (TensorData::F32(v), _) => v.iter().map(|&x| quantize(x, d)).collect(),
        (TensorData::I8(v), IoDtype::Int8) => v.iter().map(|&x| x as u8).collect(),
        (TensorData::U8(v), IoDtype::Uint8) => v.clone(),
        (other, _) => {
            return Err(format!(
                "input '{}' needs float32 or {} data, the file holds {}",
                d.name,
                d.dtype.name(),
                other.dtype().name()
            ))
        }
    };
    let per = want.iter().product::<usize>();
    let frames = if per == 0 {
        vec![Vec::new(); n]
    } else {
        codes.chunks_exact(per).map(<[u8]>::to_vec).collect()
    };
    Ok((frames, stacked))
}

/// One tensor per program output, frames stacked when the inputs were.
fn stack_outputs(
    sim: &Simulator,
    results: &[Vec<Output>],
    stacked: bool,
    raw: bool,
) -> Result<Vec<(String, Tensor)>, CliError> {
    let mut out = Vec::new();
    for (k, d) in sim.outputs().enumerate() {
        let mut shape: Vec<usize> = d.shape.iter().map(|&s| s as usize).collect();
        if stacked {
            shape.insert(0, results.len());
        }
        let codes: Vec<u8> = results
            .iter()
            .flat_map(|r| r[k].data.iter().copied())
            .collect();
        let data = match (raw, d.dtype) {
            (true, IoDtype::Int8) => TensorData::I8(codes.iter().map(|&b| b as i8).collect()),
            (true, IoDtype::Uint8) => TensorData::U8(codes),
            // The container refuses program outputs wider than 8 bits.
            (true, other) => {
                return Err(CliError::internal(
                    "run",
                    format!(
                        "output '{}' has dtype {}, not an 8-bit code type",
                        d.name,
                        other.name()
                    ),
                ))
            }
            (false, dt) => TensorData::F32(
                codes
                    .iter()
                    .map(|&b| dequantize(code_value(b, dt == IoDtype::Int8), d.scale, d.zero_point))
                    .collect(),
            ),
        };
        let t = Tensor::new(shape, data).ok_or_else(|| {
            CliError::internal(
                "run",
                format!("output '{}' has the wrong number of elements", d.name),
            )
        })?;
        out.push((d.name.clone(), t));
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::{IoDir, IoLayout};

    fn desc(dtype: IoDtype, scale: f32, zp: i32) -> IoDesc {
        IoDesc {
            name: "x".into(),
            dir: IoDir::Input,
            dtype,
            shape: vec![1, 2],
            dram_addr: 0,
            layout: IoLayout::Dense,
            scale,
            zero_point: zp,
        }
    }

    #[test]
    fn quantization_rounds_half_to_even_and_saturates() {
        let d = desc(IoDtype::Int8, 0.5, 3);
        assert_eq!(quantize(0.25, &d) as i8, 3); // 0.5 -> 0, + 3
        assert_eq!(quantize(-0.25, &d) as i8, 3); // -0.5 -> 0, + 3
        assert_eq!(quantize(0.75, &d) as i8, 5); // 1.5 -> 2, + 3
        assert_eq!(quantize(1000.0, &d) as i8, 127);
        assert_eq!(quantize(-1000.0, &d) as i8, -128);
        assert_eq!(quantize(f32::NAN, &d) as i8, 3);
        let u = desc(IoDtype::Uint8, 1.0, 10);
        assert_eq!(quantize(-20.0, &u), 0);
        assert_eq!(quantize(2.5, &u), 12);
        assert_eq!(quantize(f32::INFINITY, &u), 255);
    }

    #[test]
    fn frames_from_a_leading_dimension() {
        let d = desc(IoDtype::Int8, 1.0, 0);
        let t = Tensor::f32(vec![3, 1, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let (frames, stacked) = quantize_input(&d, &t).unwrap();
        assert!(stacked);
        assert_eq!(frames, vec![vec![1, 2], vec![3, 4], vec![5, 6]]);
        let bad = Tensor::f32(vec![2, 2], vec![0.0; 4]).unwrap();
        assert!(quantize_input(&d, &bad).is_err());
        let wrong_type = Tensor::new(vec![1, 2], TensorData::U8(vec![1, 2])).unwrap();
        assert!(quantize_input(&d, &wrong_type).is_err());
    }
}
