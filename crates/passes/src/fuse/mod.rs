//! Fusion: dot products, elementwise ops, channel shuffles and depth-to-space become
//! the NNA's compound ops (`nna.conv`/`deconv`/`inner`, `nna.eltwise`,
//! `nna.channel_shuffle`, `nna.depth_to_space`),
//! each absorbing the activation and pooling after it (`absorb.rs`). Part of
//! [`FUSION_PASSES`](crate::FUSION_PASSES).

pub(crate) mod absorb;
pub(crate) mod fuse_channel_shuffle;
pub(crate) mod fuse_depth_to_space;
pub(crate) mod fuse_dot;
pub(crate) mod fuse_eltwise;
