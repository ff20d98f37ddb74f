//! nnac's graph passes: folding, fusion into the NNA's compound operations,
//! calibration and int8 quantization. The quantized reference interpreter that
//! judges their output is a crate of its own (`nnac-qinterp`), re-exported here.
//!
//! Entry: [`compile_graph`]. The order of the passes lives in [`pipeline`] only; each
//! pass is one file named after the pass, with one entry function
//! `fn(&mut Graph, &mut PassCtx)` of the same name, in the folder of its kind:
//! `fold/`, `lower/`, `fuse/`, `host/` (then `calib/` and `quant/`).

pub mod agreement;
pub mod analysis;
pub mod calib;
mod channels;
mod ctx;
mod error;
pub mod fixed;
pub mod float_eval;
pub mod float_ref;
mod fold;
mod fuse;
mod host;
mod lower;
mod options;
pub mod pipeline;
pub mod quant;
pub mod report;
mod util;

pub use ctx::{Fused, PassCtx, Rewrite};
pub use error::PassError;
pub use float_eval::Frame;
pub use host::float_layers::FLOAT_LAYER_REASON;
pub use nnac_qinterp::{run_quantized, run_quantized_observed, run_quantized_raw, QTrace};
pub use options::{
    BiasScope, CalibMethod, CalibStats, DumpSpec, PassOptions, Progress, ProgressEvent,
    RequantRule, WeightRounding,
};
pub use pipeline::{
    compile_graph, run_passes, stage_names, Compiled, Pass, FLOAT_PASSES, FUSION_PASSES,
};
pub use report::Report;
