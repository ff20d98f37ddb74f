//! The op lowerings: every node of the quantized graph becomes buffers and jobs
//! through the walk's core ([`crate::base::walk::Walk`]). Dot products, SCALE and
//! ELTWISE ([`dot`]), host ops ([`host`]), global pooling ([`gap`]), pooling apart
//! from its producer ([`pool_apart`], [`pool_bands`]), channel shuffles
//! ([`shuffle`]), upsampling ([`upsample`]), depth-to-space ([`depth_to_space`]),
//! strided slices ([`strided`]) with their SCALE copies ([`copy`]), HWC eltwise ([`eltwise_hwc`]) and the
//! SIMD epilogue programs ([`simd`]).
//!
//! **Boundary**: depends on `base`, `place` and `schedule`; nothing but the crate
//! root depends on it.

pub(crate) mod channels_on_rows;
pub(crate) mod copy;
pub(crate) mod depth_to_space;
pub(crate) mod dot;
pub(crate) mod eltwise_hwc;
pub(crate) mod fields;
pub(crate) mod gap;
pub(crate) mod graph;
pub(crate) mod host;
pub(crate) mod pool_apart;
pub(crate) mod pool_bands;
pub(crate) mod shuffle;
pub mod simd;
pub(crate) mod strided;
pub(crate) mod upsample;
