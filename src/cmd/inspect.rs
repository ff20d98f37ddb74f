//! `nnac inspect`: import a model, verify it, and show its graph IR as text or DOT.
//!
//! The output starts with a summary (model, nodes by op, parameters, inputs and
//! outputs) written as `//` comments, which both the IR text parser and Graphviz
//! ignore. The text form elides constants with more than 16 elements unless `--full`
//! is given (only the full form parses back). With `--calib` the model is also
//! compiled (fold, fuse, calibrate, quantize) and the quantization table `compile`
//! prints (per-layer SQNR, cosine, scales, accumulator bounds; passes'
//! `Report::table()`) is appended as `//` comments.

use crate::error::{write_atomic, CliError};
use nnac_driver::calib::calib_args;
use nnac_driver::frames::Preprocess;
use nnac_driver::inspect::{check, ir_text, quant_table, summary};
use nnac_driver::model::{load, ModelArgs, QuantArgs};
use nnac_ir::to_dot;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The IR text form.
    Text,
    /// Graphviz DOT.
    Dot,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Print every constant's data (the text then parses back exactly).
    #[arg(long)]
    pub full: bool,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Calibration data (as `compile --calib`): adds the quantization table.
    #[arg(long, value_name = "[INPUT=]PATH")]
    pub calib: Vec<String>,
    #[command(flatten)]
    pub quant: QuantArgs,
    #[command(flatten)]
    pub pre: Preprocess,
}

/// The quantization table of `g` calibrated on `--calib`, as `//` comment lines.
pub fn run(args: Args) -> Result<(), CliError> {
    let g = load(&args.model)?;
    let path = args.model.model.display().to_string();
    check(&g, &path)?;
    let mut out = summary(&g, &path);
    if !args.calib.is_empty() {
        let frames = calib_args(&args.calib, &args.pre, &g)?;
        out.push_str(&quant_table(&g, &frames, &args.quant)?);
    }
    match args.format {
        Format::Text => out.push_str(&ir_text(&g, args.full)),
        Format::Dot => out.push_str(&to_dot(&g)),
    }
    match &args.output {
        Some(path) => write_atomic(path, out.as_bytes()),
        None => {
            use std::io::Write as _;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(out.as_bytes())
                .map_err(|e| CliError::user(format!("cannot write to stdout: {e}")))
        }
    }
}
