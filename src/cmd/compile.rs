//! `nnac compile`: import, run the pass pipeline (fold, fuse, calibrate, quantize),
//! lower to an NNA program and write the `.nnab` container.

use super::pictures;
use crate::error::{write_atomic, CliError};
use nnac_driver::compile::{self, CompileOptions, HostOps};
use nnac_driver::frames::Preprocess;
use nnac_driver::model::{load, ModelArgs, QuantArgs};
use nnac_passes::{Progress, ProgressEvent};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Calibration data: `[INPUT=]PATH`, where PATH is an .npy (one frame or N
    /// stacked), a PNG/JPEG, or a directory of them. Repeatable. INPUT may be omitted
    /// for single-input models. Without it the model is calibrated on synthetic
    /// frames (N(0, 1) noise) with a warning that the program's metadata keeps.
    #[arg(long, value_name = "[INPUT=]PATH")]
    pub calib: Vec<String>,
    #[command(flatten)]
    pub quant: QuantArgs,
    #[command(flatten)]
    pub pre: Preprocess,
    /// Output program (default: the model's file stem + `.nnab`).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Hardware configuration TOML (default: the FSD NNA, 96x96, 32 MiB SRAM).
    #[arg(long, value_name = "FILE")]
    pub hw: Option<PathBuf>,
    /// Write the IR after the named pass, or after every pass (`all`).
    #[arg(long, value_name = "STAGE|all")]
    pub dump_ir: Option<String>,
    /// Directory for --dump-ir files (default: `<model stem>.dump`).
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,
    /// Run the IR verifier after every pass (always on in debug builds).
    #[arg(long)]
    pub verify_each: bool,
    /// Write the per-layer quantization report (SQNR, cosine, scales, accumulator
    /// bounds) as JSON.
    #[arg(long, value_name = "FILE.json")]
    pub quant_report: Option<PathBuf>,
    /// No progress or summary output.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the wall time of every stage (import, each pass, calibration,
    /// quantization, report, each backend stage, encoding) to stderr.
    #[arg(long)]
    pub time_passes: bool,
    /// Keep the weights in SRAM across frames: `auto` pins every parameter buffer
    /// and loads it once in a prologue when all of them fit with the activations,
    /// else pins as many (weight chunks among them) as fit beside the streaming
    /// plan and streams the rest every frame; `off` always streams them.
    #[arg(long, default_value = "auto", value_parser = ["auto", "off"])]
    pub resident_weights: String,
    /// Write the compiled graph: fused groups boxed, host ops in another colour,
    /// cycles per node. `.svg` is rendered by Graphviz `dot` when it is installed
    /// (else the DOT text goes to FILE.dot, with a note); `.dot` writes the DOT text.
    #[arg(long, value_name = "FILE.svg|FILE.dot")]
    pub graph: Option<PathBuf>,
    /// Ops the NNA cannot run: `allow` runs them on the host between NNA segments
    /// (listed in the summary with their reason and bytes); `deny` makes any host op
    /// an error naming each (for an all-NNA program).
    #[arg(long, default_value = "allow", value_parser = ["allow", "deny"])]
    pub host_ops: String,
    /// Run these layers (comma-separated names) with their output channels on the MAC
    /// array's rows and their pixels on its columns: the mapping knob `nnac tune`
    /// picks per layer, for arrays with more rows than a layer has pixels. Only 1x1,
    /// stride-1, unpadded, ungrouped, unpooled convolutions over planar tensors that
    /// need no split turn (the summary lists them); results are bit-identical.
    #[arg(long, value_name = "LAYER,...", value_delimiter = ',')]
    pub channels_on_rows: Vec<String>,
}

/// Width of the progress bar in characters.
const BAR: usize = 30;

/// Draws one progress line on stderr (`\r`, redrawn in place; only on a terminal).
fn draw_progress(e: ProgressEvent) {
    let line = match e {
        ProgressEvent::Calibrate { done, total } => {
            let fill = done * BAR / total.max(1);
            format!(
                "calibrating [{}{}] {done}/{total} frames",
                "#".repeat(fill),
                " ".repeat(BAR - fill)
            )
        }
        ProgressEvent::Report { frames, layers } => {
            format!("measuring int8 vs float: {layers} layers on {frames} frame(s) ...")
        }
        ProgressEvent::Stage { name } => format!("{name} ..."),
    };
    eprint!("\r\x1b[K{line}");
}

pub fn run(args: Args) -> Result<(), CliError> {
    let mut times = StageTimes::default();
    let hw = compile::load_hw(args.hw.as_deref())?;
    let graph_format = args
        .graph
        .as_deref()
        .map(pictures::graph_format)
        .transpose()?;
    let graph = load(&args.model)?;
    times.lap("import");
    let calib = compile::calibration_args(&args.calib, &args.pre, &graph)?;
    if let Some(w) = calib.warning() {
        eprintln!("{w}");
    }
    times.lap("load calibration frames");
    let stem = compile::model_stem(&args.model.model);
    let dump = match &args.dump_ir {
        Some(stage) => Some(compile::dump_spec(stage, args.dump_dir.clone(), &stem)?),
        None => None,
    };
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let opts = CompileOptions {
        quant: args.quant.clone(),
        verify_each: args.verify_each,
        dump,
        progress: show_progress.then(|| Progress(Arc::new(draw_progress))),
        // The accuracy measurement is only shown in the summary table and the JSON.
        measure: !args.quiet || args.quant_report.is_some(),
        resident_weights: args.resident_weights.clone(),
        source_model: args.model.model.display().to_string(),
        host_ops: HostOps::parse(&args.host_ops)?,
        channels_on_rows: args.channels_on_rows.clone(),
    };
    let quiet = args.quiet;
    let lowered = compile::compile_and_lower(&graph, &calib, &hw, &opts, &|round, moved| {
        if show_progress {
            eprint!("\r\x1b[K");
        }
        if !quiet {
            eprintln!(
                "partitioning: {} node(s) the NNA backend cannot lower move to the host; compiling again (round {round})",
                moved.len()
            );
        }
    });
    if show_progress {
        eprint!("\r\x1b[K");
    }
    let compile::Lowered {
        compiled,
        program,
        backend: be_report,
        host,
        ..
    } = lowered?;
    times.add_passes(&compiled.report.pass_ms);
    times.add_backend(&be_report.stage_us);
    let bytes = compile::encode(&program)?;
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{stem}.nnab")));
    if let Some(path) = &args.quant_report {
        let json = serde_json::to_string_pretty(&compiled.report).map_err(|e| {
            CliError::internal("serializing the quantization report", e.to_string())
        })?;
        write_atomic(path, json.as_bytes())?;
    }
    write_atomic(&out, &bytes)?;
    times.lap("encode + write");
    if let (Some(path), Some(f)) = (&args.graph, graph_format) {
        pictures::write_graph(path, f, &compiled.graph, &compiled.report, &program, &hw)?;
        times.lap("graph picture");
    }
    if args.time_passes {
        eprint!("{}", nnac_passes::report::time_table(&times.rows));
    }
    if !args.quiet {
        println!("{}", compiled.report.table());
        println!(
            "wrote {}: {} bytes, {} DMA + {} compute instructions, SRAM peak {} B (lower bound {} B), {} flags",
            out.display(),
            bytes.len(),
            be_report.dma_instrs,
            be_report.compute_instrs,
            be_report.sram_peak,
            be_report.sram_lower_bound,
            be_report.flags_used
        );
        println!("weights: {}", be_report.residency);
        print_turned(&args.channels_on_rows, &be_report.channels_on_rows);
        print_spills(&be_report);
        print!("{}", nnac_driver::host_ops::summary(&host));
        if let Some(note) = &calib.synthetic {
            println!("calibration: {note}");
        }
    }
    Ok(())
}

/// The layers `--channels-on-rows` turned, and those it named that keep the
/// compiler's orientation.
fn print_turned(asked: &[String], turned: &[String]) {
    if asked.is_empty() {
        return;
    }
    println!("channels on rows: {}", turned.join(", "));
    let kept: Vec<&str> = asked
        .iter()
        .filter(|n| !turned.contains(n))
        .map(String::as_str)
        .collect();
    if !kept.is_empty() {
        println!(
            "  kept pixels on rows (not a plain 1x1 matrix product over planar tensors, or split): {}",
            kept.join(", ")
        );
    }
}

/// DRAM spill/fill traffic and the layers split into row bands / weight groups.
fn print_spills(r: &nnac_backend_nna::BackendReport) {
    println!(
        "spill {} B, fill {} B ({} activations kept in DRAM), {} weight buffers prefetched early, {} placement round(s)",
        r.spill_bytes, r.fill_bytes, r.spilled_values, r.prefetched_early, r.plan_rounds
    );
    for s in &r.splits {
        println!(
            "  split {}: {} row band(s) x {} weight chunk(s) of output channels",
            s.layer, s.bands, s.groups
        );
    }
}

/// Wall time of consecutive stages for `--time-passes`: [`StageTimes::lap`] closes
/// the stage that ran since the previous lap; the pass pipeline and the backend report
/// their own stages, which are taken over as they are.
struct StageTimes {
    last: std::time::Instant,
    rows: Vec<(String, f64)>,
}

impl Default for StageTimes {
    fn default() -> Self {
        StageTimes {
            last: std::time::Instant::now(),
            rows: Vec::new(),
        }
    }
}

impl StageTimes {
    fn lap(&mut self, stage: &str) {
        let now = std::time::Instant::now();
        self.rows
            .push((stage.to_string(), (now - self.last).as_secs_f64() * 1e3));
        self.last = now;
    }

    /// Stages timed elsewhere that ran since the last lap.
    fn add_passes(&mut self, passes: &[(String, f64)]) {
        self.rows.extend(passes.iter().cloned());
        self.last = std::time::Instant::now();
    }

    fn add_backend(&mut self, stages: &[(String, u64)]) {
        self.rows.extend(
            stages
                .iter()
                .map(|(s, us)| (format!("backend {s}"), *us as f64 / 1e3)),
        );
        self.last = std::time::Instant::now();
    }
}
