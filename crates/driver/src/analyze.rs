//! Which layer lost the accuracy, and hybrid precision: `nnac analyze` /
//! `nnac.analyze` measure every layer of the compiled int8 graph against the float
//! graph on the user's frames (`nnac_passes::analysis`); `--auto-float N` keeps the N
//! layers that analysis on the calibration frames ranks most sensitive in float32 on
//! the host, beside those `--float-layers` names.

use crate::calib::Calibration;
use crate::error::Error;
use crate::options::{backend_options, from_partition, pass_options, CompileOptions};
use nnac_ir::Graph;
use nnac_isa::HwConfig;
use nnac_partition::Partitioned;
use nnac_passes::analysis::Analysis;
use nnac_passes::Frame;
use std::collections::BTreeMap;

/// The partitioned compile of `graph` with `opts`, calibrated on `calib`: with
/// `--auto-float N`, the N most sensitive layers (ranked on the calibration frames)
/// join the float layers first. `keep_reference` keeps the float graph for an
/// analysis.
pub fn partition(
    graph: &Graph,
    calib: &Calibration,
    hw: &HwConfig,
    opts: &CompileOptions,
    keep_reference: bool,
    on_round: &dyn Fn(usize, &BTreeMap<String, String>),
) -> Result<Partitioned, Error> {
    let mut pass_opts = calib.pass_options(nnac_passes::PassOptions {
        keep_reference,
        ..pass_options(opts)?
    });
    if let Some(n) = opts.quant.auto_float.filter(|&n| n > 0) {
        let picks = most_sensitive(graph, calib, hw, opts, n)?;
        for (k, name) in picks.into_iter().enumerate() {
            pass_opts.float_layers.entry(name).or_insert_with(|| {
                format!(
                    "kept in float32 (--auto-float: sensitivity rank {} of the analysis)",
                    k + 1
                )
            });
        }
    }
    nnac_partition::compile_and_lower(
        graph,
        &calib.frames,
        &pass_opts,
        hw,
        &backend_options(opts)?,
        on_round,
    )
    .map_err(from_partition)
}

/// The `n` layers the analysis of `opts`' compile on `frames` ranks most sensitive,
/// leaving out those already in float.
fn most_sensitive(
    graph: &Graph,
    calib: &Calibration,
    hw: &HwConfig,
    opts: &CompileOptions,
    n: usize,
) -> Result<Vec<String>, Error> {
    if calib.frames.is_empty() {
        return Err(Error::user(
            "--auto-float ranks the layers on the calibration frames: give --calib \
             (a pre-quantized model compiles without them, but cannot be ranked)",
        ));
    }
    let mut first = CompileOptions {
        measure: false,
        dump: None,
        progress: None,
        ..opts.clone()
    };
    first.quant.auto_float = None;
    let parted = partition(graph, calib, hw, &first, true, &|_, _| {})?;
    let a = analysis_of(&parted, &calib.frames)?;
    Ok(a.ranking.into_iter().take(n).collect())
}

/// The analysis of a partitioned compile (made with `keep_reference`) on `frames`.
fn analysis_of(parted: &Partitioned, frames: &[Frame]) -> Result<Analysis, Error> {
    let reference =
        parted.compiled.reference.as_ref().ok_or_else(|| {
            Error::internal("analysis", "the compile kept no float reference graph")
        })?;
    nnac_passes::analysis::analyze(reference, &parted.compiled.graph, frames)
        .map_err(Error::from_pass)
}

/// `nnac analyze`: compiles `graph` as `nnac compile` would with `opts` (calibrated
/// on `calib`, `--float-layers` and `--auto-float` honoured), then measures every
/// layer on `frames` (the user's inputs).
pub fn analyze(
    graph: &Graph,
    calib: &Calibration,
    frames: &[Frame],
    hw: &HwConfig,
    opts: &CompileOptions,
) -> Result<Analysis, Error> {
    if frames.is_empty() {
        return Err(Error::user(
            "nothing to analyze: give the frames to measure with --input (or --calib)",
        ));
    }
    let opts = CompileOptions {
        measure: false,
        ..opts.clone()
    };
    let parted = partition(graph, calib, hw, &opts, true, &|_, _| {})?;
    analysis_of(&parted, frames)
}
