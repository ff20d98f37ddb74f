//! The options of a compile (`nnac compile`'s flags, `nnac.compile`'s keywords) and
//! what they mean to the pass pipeline, the backend and the partitioning.

use crate::error::Error;
use crate::model::QuantArgs;
use nnac_backend_nna::{BackendOptions, ResidentWeights};
use nnac_partition::PartitionError;
use nnac_passes::{DumpSpec, PassOptions, Progress};

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

/// `--host-ops`: what to do with the ops the NNA cannot run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HostOps {
    /// Run them on the host between NNA segments (listed in the summary).
    #[default]
    Allow,
    /// Refuse the model, naming every op that would run on the host.
    Deny,
}

impl HostOps {
    /// `allow` or `deny`.
    pub fn parse(name: &str) -> Result<HostOps, Error> {
        match name {
            "allow" => Ok(HostOps::Allow),
            "deny" => Ok(HostOps::Deny),
            other => Err(Error::user(format!(
                "host ops '{other}': expected allow or deny"
            ))),
        }
    }
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
    /// Ops the NNA cannot run: on the host, or an error.
    pub host_ops: HostOps,
    /// Layers to run with their output channels on the MAC array's rows
    /// (`BackendOptions::channels_on_rows`).
    pub channels_on_rows: Vec<String>,
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
            host_ops: HostOps::Allow,
            channels_on_rows: Vec::new(),
        }
    }
}

/// The pass options `opts` stands for.
pub fn pass_options(opts: &CompileOptions) -> Result<PassOptions, Error> {
    Ok(PassOptions {
        verify_each: opts.verify_each,
        dump: opts.dump.clone(),
        progress: opts.progress.clone(),
        measure: opts.measure,
        ..opts.quant.pass_options()?
    })
}

/// The backend options `opts` stands for.
pub fn backend_options(opts: &CompileOptions) -> Result<BackendOptions, Error> {
    Ok(BackendOptions {
        source_model: opts.source_model.clone(),
        compiler_version: env!("CARGO_PKG_VERSION").to_string(),
        resident_weights: resident_weights(&opts.resident_weights)?,
        channels_on_rows: opts.channels_on_rows.iter().cloned().collect(),
        ..Default::default()
    })
}

/// A partitioning error as the driver's: the passes' and the backend's keep their
/// classification; a partitioning that does not settle is a bug.
pub fn from_partition(e: PartitionError) -> Error {
    match e {
        PartitionError::Passes(e) => Error::from_pass(e),
        PartitionError::Backend(e) => Error::from_backend(e),
        e @ PartitionError::Rounds(_) => Error::internal("partitioning", e.to_string()),
    }
}
