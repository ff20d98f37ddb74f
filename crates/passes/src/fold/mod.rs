//! Folding: the float graph simplified into the forms the later stages expect
//! (pre-quantized QDQ taken apart, identities removed, inner products normalized,
//! constants evaluated, hard-swish and SiLU recognized, zero pads, batch norms and
//! per-channel scales folded into the dot products before them). The first passes of
//! [`FLOAT_PASSES`](crate::FLOAT_PASSES); the graph stays float.

pub(crate) mod absorb_qdq;
pub(crate) mod fold_batchnorm;
pub(crate) mod fold_constants;
pub(crate) mod fold_hardswish;
pub(crate) mod fold_pad;
pub(crate) mod fold_scale_bias;
pub(crate) mod fold_silu;
pub(crate) mod normalize_gemm;
pub(crate) mod remove_identity;
