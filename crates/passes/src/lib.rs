//! nnac's graph passes: folding, fusion into the NNA's compound operations,
//! calibration and int8 quantization. The quantized reference interpreter that
//! judges their output is a crate of its own (`nnac-qinterp`), re-exported here.
//!
//! Entry: [`compile_graph`]. The order of the passes lives in [`pipeline`] only; each
//! pass is one file with one entry function `fn(&mut Graph, &mut PassCtx)`.

mod absorb;
pub mod absorb_qdq;
pub mod calib;
mod channels;
mod ctx;
mod error;
pub mod fixed;
pub mod float_eval;
pub mod float_ref;
mod options;
pub mod pipeline;
mod pool_unit;
pub mod quant;
pub mod report;
mod util;

pub mod fold_batchnorm;
pub mod fold_constants;
pub mod fold_hardswish;
pub mod fold_pad;
pub mod fold_scale_bias;
pub mod fold_silu;
pub mod force_host;
pub mod fuse_dot;
pub mod fuse_eltwise;
pub mod fuse_shuffle;
pub mod lower_concat;
pub mod lower_pools;
pub mod lower_resize;
pub mod lower_scale;
pub mod mark_host;
pub mod normalize_gemm;
pub mod remove_identity;
pub mod sink_pool;

pub use ctx::{Fused, PassCtx, Rewrite};
pub use error::PassError;
pub use float_eval::Frame;
pub use nnac_qinterp::{run_quantized, run_quantized_observed, run_quantized_raw, QTrace};
pub use options::{
    CalibMethod, CalibStats, DumpSpec, PassOptions, Progress, ProgressEvent, WeightRounding,
};
pub use pipeline::{
    compile_graph, run_passes, stage_names, Compiled, Pass, FLOAT_PASSES, FUSION_PASSES,
};
pub use report::Report;
