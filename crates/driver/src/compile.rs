//! Compiling a model to an NNA program, stage by stage: hardware configuration, IR
//! dump choice, calibration frames (real or synthetic), the pass pipeline with the
//! partitioning between NNA and host (`nnac_partition`), and encoding. `nnac compile`
//! times and prints between the stages; [`compile`] runs them all for `nnac.compile`.

pub use crate::calib::Calibration;
use crate::calib::{calib_frames, CalibSpec};
use crate::error::Error;
use crate::frames::Preprocess;
use crate::host_ops::{host_op_lines, HostLine};
use crate::model::{load, ModelArgs};
pub use crate::options::{
    backend_options, from_partition, pass_options, resident_weights, CompileOptions, HostOps,
};
use nnac_backend_nna::BackendReport;
use nnac_isa::{HwConfig, MetaNote, Program};
use nnac_passes::{Compiled, DumpSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The hardware configuration a TOML file describes; `None` is the FSD NNA.
pub fn load_hw(path: Option<&Path>) -> Result<HwConfig, Error> {
    match path {
        None => Ok(HwConfig::fsd()),
        Some(p) => HwConfig::from_toml_file(p).map_err(|e| Error::user(e.to_string())),
    }
}

/// The frames `specs` give; without any, none for a pre-quantized model (the file's
/// quantization is used, no warning), else [`crate::synthetic::frames`] (the caller
/// warns with [`crate::synthetic::warning`]).
pub fn calibration(
    specs: &[CalibSpec],
    pre: &Preprocess,
    graph: &nnac_ir::Graph,
) -> Result<Calibration, Error> {
    if specs.is_empty() && nnac_passes::fixed::is_pre_quantized(graph) {
        return Ok(Calibration {
            frames: Vec::new(),
            synthetic: None,
        });
    }
    if specs.is_empty() {
        let frames = crate::synthetic::frames(graph)?;
        return Ok(Calibration {
            synthetic: Some(crate::synthetic::description(frames.len())),
            frames,
        });
    }
    Ok(Calibration {
        frames: calib_frames(specs, pre, graph)?,
        synthetic: None,
    })
}

/// [`calibration`] of the CLI's `--calib [INPUT=]PATH` arguments.
pub fn calibration_args(
    args: &[String],
    pre: &Preprocess,
    graph: &nnac_ir::Graph,
) -> Result<Calibration, Error> {
    calibration(&crate::calib::parse_calib_args(args, graph)?, pre, graph)
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

/// The quantized graph and the program lowered from it.
pub struct Lowered {
    /// What the passes made: the quantized graph and the quantization report.
    pub compiled: Compiled,
    pub program: Program,
    pub backend: BackendReport,
    /// The program's host ops with their reasons and DRAM bytes.
    pub host: Vec<HostLine>,
    /// Compile rounds the partitioning took (1: the NNA backend took every node).
    pub rounds: usize,
}

/// The pass pipeline and lowering, with the nodes the NNA backend refuses moved to
/// the host and compiled again (`nnac_partition`); `on_round(round, moved)` is told
/// before each extra round. With [`HostOps::Deny`] any host op is an error naming
/// each. The program's metadata records synthetic calibration (`calibration`) and
/// every host op's reason.
pub fn compile_and_lower(
    graph: &nnac_ir::Graph,
    calib: &Calibration,
    hw: &HwConfig,
    opts: &CompileOptions,
    on_round: &dyn Fn(usize, &BTreeMap<String, String>),
) -> Result<Lowered, Error> {
    let parted = crate::analyze::partition(graph, calib, hw, opts, false, on_round)?;
    let (mut program, backend) = parted.lowered.map_err(from_partition)?;
    let unknown: Vec<&str> = opts
        .channels_on_rows
        .iter()
        .filter(|n| !backend.layers.iter().any(|l| &l.name == *n))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(Error::user(format!(
            "--channels-on-rows: no NNA layer named {} (the layer names are those of \
             `nnac compile --dump-ir final`)",
            unknown
                .iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let host = host_op_lines(&program, &parted.compiled.report);
    if opts.host_ops == HostOps::Deny && !host.is_empty() {
        return Err(Error::user(format!(
            "--host-ops deny: {} op(s) would run on the host: {}",
            host.len(),
            host.iter()
                .map(|h| format!("'{}' ({}: {})", h.name, h.op, h.reason))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(note) = &calib.synthetic {
        program.meta.notes.push(MetaNote {
            key: nnac_isa::NOTE_CALIBRATION.into(),
            value: note.clone(),
        });
    }
    for h in &host {
        program.meta.notes.push(MetaNote {
            key: format!("{}{}", nnac_isa::NOTE_HOST_REASON, h.name),
            value: h.reason.clone(),
        });
    }
    Ok(Lowered {
        compiled: parted.compiled,
        program,
        backend,
        host,
        rounds: parted.rounds,
    })
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
    /// The program's host ops with their reasons.
    pub host: Vec<HostLine>,
    /// The synthetic-calibration warning, when no calibration data was given.
    pub warning: Option<String>,
}

/// Every stage at once: load the model, its calibration frames (synthetic without
/// `calib`), the passes and the partitioned lowering.
pub fn compile(
    model: &ModelArgs,
    calib: &[CalibSpec],
    pre: &Preprocess,
    hw: &HwConfig,
    opts: &CompileOptions,
) -> Result<CompileResult, Error> {
    let graph = load(model)?;
    let calib = calibration(calib, pre, &graph)?;
    let lowered = compile_and_lower(&graph, &calib, hw, opts, &|_, _| {})?;
    Ok(CompileResult {
        program: lowered.program,
        report: lowered.compiled.report,
        backend: lowered.backend,
        host: lowered.host,
        warning: calib.warning(),
    })
}
