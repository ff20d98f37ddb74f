//! Compiling a model to an NNA program, stage by stage: hardware configuration, IR
//! dump choice, the pass pipeline, lowering and encoding. `nnac compile` times and
//! prints between the stages; [`compile`] runs them all for `nnac.compile`.

use crate::calib::{calib_frames, CalibSpec};
use crate::error::Error;
use crate::frames::Preprocess;
use crate::model::{load, ModelArgs, QuantArgs};
use nnac_backend_nna::{BackendOptions, BackendReport, ResidentWeights};
use nnac_isa::{HwConfig, Program};
use nnac_passes::{Compiled, DumpSpec, Frame, PassOptions, Progress};
use std::path::{Path, PathBuf};

/// The hardware configuration a TOML file describes; `None` is the FSD NNA.
pub fn load_hw(path: Option<&Path>) -> Result<HwConfig, Error> {
    match path {
        None => Ok(HwConfig::fsd()),
        Some(p) => HwConfig::from_toml_file(p).map_err(|e| Error::user(e.to_string())),
    }
}

/// `--resident-weights auto|off` as the backend's option.
pub fn resident_weights(name: &str) -> Result<ResidentWeights, Error> {
    match name {
        "auto" => Ok(ResidentWeights::Auto),
        "off" => Ok(ResidentWeights::Off),
        other => Err(Error::user(format!(
            "resident weights '{other}': expected auto or off"
        ))),
    }
}

/// The IR dump `--dump-ir STAGE|all --dump-dir DIR` asks for; an unknown stage is the
/// user's error naming the stages. The directory defaults to `<model stem>.dump`.
pub fn dump_spec(stage: &str, dir: Option<PathBuf>, stem: &str) -> Result<DumpSpec, Error> {
    if stage != "all" {
        let names = nnac_passes::stage_names();
        if !names.contains(&stage) {
            return Err(Error::user(format!(
                "--dump-ir {stage}: unknown stage; stages are all, {}",
                names.join(", ")
            )));
        }
    }
    Ok(DumpSpec {
        stage: (stage != "all").then(|| stage.to_string()),
        dir: dir.unwrap_or_else(|| PathBuf::from(format!("{stem}.dump"))),
    })
}

/// The file stem of a model path (`model` when it has none): default names of the
/// program and the dump directory.
pub fn model_stem(model: &Path) -> String {
    model
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into())
}

/// What compiling needs beyond the model and its calibration frames.
#[derive(Clone)]
pub struct CompileOptions {
    /// Calibration method and weight rounding.
    pub quant: QuantArgs,
    /// Run the IR verifier after every pass.
    pub verify_each: bool,
    /// Write the IR after a pass.
    pub dump: Option<DumpSpec>,
    /// Measure int8 against float for the quantization report.
    pub measure: bool,
    /// Told about calibration progress.
    pub progress: Option<Progress>,
    /// `auto` or `off` (docs/ARCHITECTURE.md, resident weights).
    pub resident_weights: String,
    /// The model's path as recorded in the program's metadata.
    pub source_model: String,
}

impl Default for CompileOptions {
    /// The CLI's defaults: measured report, resident weights `auto`.
    fn default() -> Self {
        CompileOptions {
            quant: QuantArgs::default(),
            verify_each: false,
            dump: None,
            measure: true,
            progress: None,
            resident_weights: "auto".to_string(),
            source_model: String::new(),
        }
    }
}

/// The pass pipeline on an imported graph: fold, fuse, calibrate, quantize.
pub fn run_passes(
    graph: nnac_ir::Graph,
    frames: &[Frame],
    opts: &CompileOptions,
) -> Result<Compiled, Error> {
    let pass_opts = PassOptions {
        verify_each: opts.verify_each,
        dump: opts.dump.clone(),
        progress: opts.progress.clone(),
        measure: opts.measure,
        ..opts.quant.pass_options()?
    };
    nnac_passes::compile_graph(graph, frames, &pass_opts).map_err(Error::from_pass)
}

/// Lowers the quantized graph to a program for `hw`.
pub fn lower(
    graph: &nnac_ir::Graph,
    hw: &HwConfig,
    opts: &CompileOptions,
) -> Result<(Program, BackendReport), Error> {
    let be_opts = BackendOptions {
        source_model: opts.source_model.clone(),
        compiler_version: env!("CARGO_PKG_VERSION").to_string(),
        resident_weights: resident_weights(&opts.resident_weights)?,
        ..Default::default()
    };
    nnac_backend_nna::lower(graph, hw, &be_opts).map_err(Error::from_backend)
}

/// The program's `.nnab` bytes.
pub fn encode(program: &Program) -> Result<Vec<u8>, Error> {
    program
        .write()
        .map_err(|e| Error::internal("encoding the program", e.to_string()))
}

/// A compiled program with what the compiler reported on the way.
pub struct CompileResult {
    pub program: Program,
    /// The quantization report (`--quant-report`).
    pub report: nnac_passes::Report,
    pub backend: BackendReport,
}

/// Every stage at once: load the model, its calibration frames, the passes, lowering.
pub fn compile(
    model: &ModelArgs,
    calib: &[CalibSpec],
    pre: &Preprocess,
    hw: &HwConfig,
    opts: &CompileOptions,
) -> Result<CompileResult, Error> {
    let graph = load(model)?;
    let frames = calib_frames(calib, pre, &graph)?;
    let compiled = run_passes(graph, &frames, opts)?;
    let (program, backend) = lower(&compiled.graph, hw, opts)?;
    Ok(CompileResult {
        program,
        report: compiled.report,
        backend,
    })
}
