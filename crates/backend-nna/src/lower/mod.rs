//! The op lowerings: every node of the quantized graph becomes buffers and jobs
//! through the walk's core ([`crate::base::walk::Walk`]). Dot products, SCALE and
//! ELTWISE ([`dot`]), host ops ([`host`]), global pooling ([`gap`]), pooling apart
//! from its producer ([`pool_apart`], [`pool_bands`]), channel shuffles
//! ([`shuffle`]), upsampling ([`upsample`]), HWC eltwise ([`eltwise_hwc`]) and the
//! SIMD epilogue programs ([`simd`]).
//!
//! **Boundary**: depends on `base`, `place` and `schedule`; nothing but the crate
//! root depends on it.

pub mod dot;
pub mod eltwise_hwc;
pub mod fields;
pub mod gap;
pub mod graph;
pub mod host;
pub mod pool_apart;
pub mod pool_bands;
pub mod shuffle;
pub mod simd;
pub mod upsample;
