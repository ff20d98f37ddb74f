//! `nnac compile`: import, run the pass pipeline (fold, fuse, calibrate, quantize),
//! lower to an NNA program and write the `.nnab` container.

use super::common::{self, ModelArgs, QuantArgs};
use super::frames::{self, Preprocess};
use crate::error::{write_atomic, CliError};
use nnac_passes::{DumpSpec, Frame, PassOptions, Progress, ProgressEvent};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Calibration data: `[INPUT=]PATH`, where PATH is an .npy (one frame or N
    /// stacked), a PNG/JPEG, or a directory of them. Repeatable. INPUT may be omitted
    /// for single-input models.
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
}

pub fn load_hw(path: Option<&Path>) -> Result<nnac_isa::HwConfig, CliError> {
    match path {
        None => Ok(nnac_isa::HwConfig::fsd()),
        Some(p) => nnac_isa::HwConfig::from_toml_file(p).map_err(|e| CliError::user(e.to_string())),
    }
}

/// Parses the `--calib` arguments into frames keyed by input name (also used by
/// `eval --quantized`).
pub fn calib_frames(
    calib: &[String],
    pre: &Preprocess,
    graph: &nnac_ir::Graph,
) -> Result<Vec<Frame>, CliError> {
    let inputs: Vec<(String, nnac_ir::TensorType)> = graph
        .inputs()
        .iter()
        .map(|&id| {
            (
                graph.node(id).name.clone(),
                graph.node(id).outputs[0].clone(),
            )
        })
        .collect();
    if calib.is_empty() && nnac_passes::fixed::is_pre_quantized(graph) {
        // The file's scales and zero points; the quantizer names any value they miss.
        return Ok(Vec::new());
    }
    if calib.is_empty() {
        return Err(CliError::user(
            "quantization needs calibration data: --calib PATH (an .npy, an image, or a directory)",
        ));
    }
    let mut per_input: BTreeMap<String, Vec<nnac_ir::Tensor>> = BTreeMap::new();
    for spec in calib {
        let (name, path) = match spec.split_once('=') {
            Some((n, p)) if inputs.iter().any(|(i, _)| i == n) => (n.to_string(), p),
            _ if inputs.len() == 1 => (inputs[0].0.clone(), spec.as_str()),
            _ => {
                let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
                return Err(CliError::user(format!(
                    "--calib {spec}: the model has inputs {names:?}; write --calib INPUT=PATH"
                )));
            }
        };
        let ty = &inputs
            .iter()
            .find(|(n, _)| *n == name)
            .expect("name checked")
            .1;
        per_input
            .entry(name.clone())
            .or_default()
            .extend(frames::load_frames(Path::new(path), &name, ty, pre)?);
    }
    let counts: BTreeMap<&String, usize> = per_input.iter().map(|(k, v)| (k, v.len())).collect();
    let n = counts.values().copied().max().unwrap_or(0);
    if per_input.len() != inputs.len() || counts.values().any(|&c| c != n) {
        return Err(CliError::user(format!(
            "--calib must give the same number of frames for every input; got {counts:?} for inputs {:?}",
            inputs.iter().map(|(n, _)| n).collect::<Vec<_>>()
        )));
    }
    Ok((0..n)
        .map(|i| {
            per_input
                .iter()
                .map(|(k, v)| (k.clone(), v[i].clone()))
                .collect()
        })
        .collect())
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
    };
    eprint!("\r\x1b[K{line}");
}

pub fn run(args: Args) -> Result<(), CliError> {
    let mut times = StageTimes::default();
    let hw = load_hw(args.hw.as_deref())?;
    let graph = common::load(&args.model)?;
    times.lap("import");
    let frames = calib_frames(&args.calib, &args.pre, &graph)?;
    times.lap("load calibration frames");
    let stem = args
        .model
        .model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let dump = args.dump_ir.as_ref().map(|stage| DumpSpec {
        stage: (stage != "all").then(|| stage.clone()),
        dir: args
            .dump_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("{stem}.dump"))),
    });
    if let Some(DumpSpec { stage: Some(s), .. }) = &dump {
        let names = nnac_passes::stage_names();
        if !names.contains(&s.as_str()) {
            return Err(CliError::user(format!(
                "--dump-ir {s}: unknown stage; stages are all, {}",
                names.join(", ")
            )));
        }
    }
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let opts = PassOptions {
        verify_each: args.verify_each,
        dump,
        progress: show_progress.then(|| Progress(Arc::new(draw_progress))),
        // The accuracy measurement is only shown in the summary table and the JSON.
        measure: !args.quiet || args.quant_report.is_some(),
        ..args.quant.pass_options()
    };
    let compiled = nnac_passes::compile_graph(graph, &frames, &opts);
    if show_progress {
        eprint!("\r\x1b[K");
    }
    let compiled = compiled.map_err(CliError::from_pass)?;
    times.add_passes(&compiled.report.pass_ms);
    let be_opts = nnac_backend_nna::BackendOptions {
        source_model: args.model.model.display().to_string(),
        compiler_version: env!("CARGO_PKG_VERSION").to_string(),
        resident_weights: if args.resident_weights == "off" {
            nnac_backend_nna::ResidentWeights::Off
        } else {
            nnac_backend_nna::ResidentWeights::Auto
        },
        ..Default::default()
    };
    let (program, be_report) =
        nnac_backend_nna::lower(&compiled.graph, &hw, &be_opts).map_err(CliError::from_backend)?;
    times.add_backend(&be_report.stage_us);
    let bytes = program
        .write()
        .map_err(|e| CliError::internal("encoding the program", e.to_string()))?;
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
        print_spills(&be_report);
    }
    Ok(())
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
