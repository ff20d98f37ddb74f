//! Lowering: ops rewritten into work the NNA's units can do. Pools the pooling unit
//! cannot run (`lower_pools`; a pool moved before a concatenation,
//! `sink_pool_into_concat`; both in [`FLOAT_PASSES`](crate::FLOAT_PASSES), so
//! calibration sees them) and, in [`FUSION_PASSES`](crate::FUSION_PASSES), per-channel
//! work to `nna.scale`, concatenations to `nna.concat`, pixel-repeating resizes to
//! `nna.upsample`. `pool_unit.rs` says what the pooling unit can do.

pub(crate) mod lower_concat;
pub(crate) mod lower_pools;
pub(crate) mod lower_resize;
pub(crate) mod lower_scale;
pub(crate) mod pool_unit;
pub(crate) mod sink_pool_into_concat;
