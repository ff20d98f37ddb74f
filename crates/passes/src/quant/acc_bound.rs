//! The 30-bit accumulator bound. For output channel c the accumulator holds
//! `bias[c] + sum_k w[c,k] * x_k` over raw 8-bit codes, so
//! `|acc| <= |bias[c]| + sum_k |w[c,k]| * max|x|` where `max|x|` is the largest code
//! magnitude the input can hold (from its producer's clamp, else its dtype). If that
//! can exceed `2^29 - 1` the channel is rescaled: its weights are requantized at a
//! coarser scale (dropping the low bits of precision that channel cannot afford)
//! until the bound holds. Nothing is left to luck.

use nnac_isa::arith::ACC_BITS;

/// Largest value the accumulator holds without wrapping.
pub const ACC_LIMIT: i64 = (1 << (ACC_BITS - 1)) - 1;

/// One channel's bound: `|bias| + sum |w| * xmax`.
#[inline(always)]
pub fn channel_bound(wq: &[i8], bias: i64, xmax: i64) -> i64 {
    bound_of_abs_sum(abs_sum(wq), bias, xmax)
}

/// A channel's `sum |w|`.
#[inline(always)]
pub fn abs_sum(wq: &[i8]) -> i64 {
    wq.iter().map(|&w| i64::from(w).abs()).sum()
}

/// [`channel_bound`] from a channel's `sum |w|`: `|bias| + sum |w| * xmax`.
pub fn bound_of_abs_sum(wabs: i64, bias: i64, xmax: i64) -> i64 {
    bias.abs() + wabs * xmax
}

/// What the bound check did for one layer.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct AccReport {
    /// Largest per-channel bound after any rescaling.
    pub bound: i64,
    pub limit: i64,
    /// Largest bound before rescaling (equal to `bound` when nothing was rescaled).
    pub bound_before: i64,
    pub rescaled_channels: usize,
    /// Largest factor a channel's weight scale was multiplied by.
    pub max_rescale: f32,
}
