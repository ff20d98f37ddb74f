//! The SIMD epilogue on one value, written from docs/ISA.md's arithmetic:
//! FUSED_RELU for the integer path, the fp32 sequence for the float path; and on a
//! convolution channel's plane or an inner product's row of accumulators.

use super::saturate;
use crate::simd_float::activation;
use nnac_ir::{Activation, DType, FusedAct, Multiplier, Requant};
use nnac_isa::arith::{self, wrap_acc, ACC_BITS};
use nnac_isa::simd::float::{canon, f2i, i2f};

/// The output code for SIMD input `v` of channel `c`.
pub fn apply(rq: &Requant, act: Option<&FusedAct>, v: i32, c: usize) -> i32 {
    match rq {
        Requant::Int {
            mult,
            zero_point,
            lo,
            hi,
        } => int_code(v, mult[c], *zero_point, *lo, *hi),
        Requant::Float {
            in_scale,
            inv_out_scale,
            zero_point,
            lo,
            hi,
        } => {
            let x = canon(i2f(v) * in_scale[c]);
            let a = match act {
                Some(FusedAct::Act(a)) => activation(a, x),
                Some(FusedAct::PRelu(slopes)) => {
                    activation(&Activation::LeakyRelu { alpha: slopes[c] }, x)
                }
                None => x,
            };
            // FUSED_RELU by 1 >> 0: the zero point added exactly, then the clamp.
            let y = i64::from(f2i(canon(a * inv_out_scale))) + i64::from(*zero_point);
            y.clamp(i64::from(*lo), i64::from(*hi)) as i32
        }
    }
}

/// FUSED_RELU: `clamp(scale(v, m) + zero_point, lo, hi)`.
#[inline(always)]
fn int_code(v: i32, m: Multiplier, zero_point: i32, lo: i32, hi: i32) -> i32 {
    let y = arith::scale(i64::from(v), m.mult, u32::from(m.shift)) + i128::from(zero_point);
    arith::sat_i32(y.clamp(i128::from(lo), i128::from(hi)))
}

/// The `dtype` code of accumulator `a` of channel `c`: wrapped at 30 bits, through the
/// epilogue and saturated; and whether it wrapped.
#[inline]
pub fn code(rq: &Requant, act: Option<&FusedAct>, a: i64, c: usize, dtype: DType) -> (i32, bool) {
    let (v, wrapped) = wrap_acc(a, ACC_BITS);
    (saturate(apply(rq, act, v, c), dtype), wrapped)
}

/// `out[i]`: the `dtype` code of accumulator `acc[i]` of channel `c`, wrapped at 30
/// bits, through the epilogue and saturated; returns how many accumulators wrapped.
/// The same values as [`code`] one by one, with the requantization chosen once.
pub fn plane(
    rq: &Requant,
    act: Option<&FusedAct>,
    c: usize,
    acc: &[i64],
    out: &mut [i32],
    dtype: DType,
) -> u64 {
    match rq {
        Requant::Int {
            mult,
            zero_point,
            lo,
            hi,
        } => {
            let m = mult[c];
            each(out, acc, |_, a| {
                let (v, w) = wrap_acc(a, ACC_BITS);
                (saturate(int_code(v, m, *zero_point, *lo, *hi), dtype), w)
            })
        }
        Requant::Float { .. } => each(out, acc, |_, a| code(rq, act, a, c, dtype)),
    }
}

/// An inner product's row of accumulators (element i is channel i) into `out`, as
/// [`code`]; returns how many accumulators wrapped.
pub fn row(
    rq: &Requant,
    act: Option<&FusedAct>,
    acc: &[i64],
    out: &mut [i32],
    dtype: DType,
) -> u64 {
    each(out, acc, |i, a| code(rq, act, a, i, dtype))
}

/// `out[i] = f(i, acc[i])`; returns how many of them wrapped.
#[inline]
fn each(out: &mut [i32], acc: &[i64], f: impl Fn(usize, i64) -> (i32, bool)) -> u64 {
    let mut wrapped = 0;
    for (i, (o, &a)) in out.iter_mut().zip(acc).enumerate() {
        let (code, w) = f(i, a);
        *o = code;
        wrapped += u64::from(w);
    }
    wrapped
}
