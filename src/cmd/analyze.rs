//! `nnac analyze`: which layer lost the accuracy? Compiles the model as `nnac compile`
//! does (same calibration and options, `--float-layers` / `--auto-float` included),
//! runs the user's frames through the float graph and the bit-exact int8 path (the
//! quantized reference interpreter) and prints, per layer, the error accumulated from
//! the input ("entire") and the error of the layer alone on float inputs ("single"):
//! cosine, SQNR and largest error, then a sensitivity ranking (`nnac_passes::analysis`).

use crate::error::{write_atomic, CliError};
use nnac_driver::calib::{calib_frames, parse_frame_arg};
use nnac_driver::compile::{self, CompileOptions};
use nnac_driver::frames::Preprocess;
use nnac_driver::model::{load, ModelArgs, QuantArgs};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The frames to measure: `[INPUT=]PATH`, where PATH is an .npy (one frame or N
    /// stacked), a PNG/JPEG or a directory of them (as `--calib`). Repeatable.
    /// Without it the calibration frames are measured.
    #[arg(long, value_name = "[INPUT=]PATH")]
    pub input: Vec<String>,
    /// Calibration data, as `nnac compile --calib` (without it: synthetic frames, or
    /// the file's quantization for a pre-quantized model).
    #[arg(long, value_name = "[INPUT=]PATH")]
    pub calib: Vec<String>,
    #[command(flatten)]
    pub quant: QuantArgs,
    #[command(flatten)]
    pub pre: Preprocess,
    /// Hardware configuration TOML (default: the FSD NNA); it decides which ops the
    /// backend leaves to the host.
    #[arg(long, value_name = "FILE")]
    pub hw: Option<PathBuf>,
    /// Write the analysis as JSON (every layer, the outputs and the ranking).
    #[arg(long, value_name = "FILE.json")]
    pub json: Option<PathBuf>,
    /// How many layers of the sensitivity ranking to print.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let hw = compile::load_hw(args.hw.as_deref())?;
    let graph = load(&args.model)?;
    let calib = compile::calibration_args(&args.calib, &args.pre, &graph)?;
    if let Some(w) = calib.warning() {
        eprintln!("{w}");
    }
    let frames = if args.input.is_empty() {
        calib.frames.clone()
    } else {
        let specs = args
            .input
            .iter()
            .map(|s| parse_frame_arg("--input", s, &graph))
            .collect::<Result<Vec<_>, _>>()?;
        calib_frames(&specs, &args.pre, &graph)?
    };
    let opts = CompileOptions {
        quant: args.quant.clone(),
        source_model: args.model.model.display().to_string(),
        ..CompileOptions::default()
    };
    let analysis = nnac_driver::analyze::analyze(&graph, &calib, &frames, &hw, &opts)?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&analysis)
            .map_err(|e| CliError::internal("serializing the analysis", e.to_string()))?;
        write_atomic(path, json.as_bytes())?;
    }
    print!("{}", analysis.table(args.top));
    Ok(())
}
