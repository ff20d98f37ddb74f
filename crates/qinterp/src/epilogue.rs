//! The SIMD epilogue on one value, written from docs/ISA.md's arithmetic:
//! FUSED_RELU for the integer path, the fp32 sequence for the float path, and ONNX
//! Runtime's rules for `--requant onnxruntime` (`Requant::Even`: FUSED_RELU_F;
//! `Requant::FmaAdd`: QLinearAdd's two fused multiply-adds); and on a
//! convolution channel's plane or an inner product's row of accumulators.

use super::saturate;
use crate::simd_float::activation;
use nnac_ir::{Activation, DType, FusedAct, Multiplier, Requant, FMA_ADD_SHIFT};
use nnac_isa::arith::{self, wrap_acc, ACC_BITS};
use nnac_isa::simd::float::{canon, f2i, f2i_even, i2f, requant_even};

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
            arith::add_zero_point(f2i(canon(a * inv_out_scale)), *zero_point, *lo, *hi)
        }
        Requant::Even {
            scale,
            zero_point,
            lo,
            hi,
        } => requant_even(v, scale[c], *zero_point, *lo, *hi),
        Requant::FmaAdd {
            ratio_a,
            ratio_b,
            fixed,
            code_a,
            code_b,
            offset,
            lo,
            hi,
        } => {
            let (da, db) = fma_add_split(v);
            let a = i2f(da.wrapping_add(*code_a));
            let b = i2f(db.wrapping_add(*code_b));
            let u = canon(a.mul_add(*ratio_a, canon(b.mul_add(*ratio_b, *fixed))));
            arith::add_zero_point(f2i_even(u), *offset, *lo, *hi)
        }
    }
}

/// The two input differences `(a - a_zp, b - b_zp)` an ELTWISE add with input stage
/// `EltwiseRequant::FMA_ADD` leaves in its accumulator `v = 2^9 (a - a_zp) + (b - b_zp)`.
fn fma_add_split(v: i32) -> (i32, i32) {
    let da = arith::rounding_shift_right(i128::from(v), FMA_ADD_SHIFT) as i32;
    (da, v.wrapping_sub(da.wrapping_shl(FMA_ADD_SHIFT)))
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
        _ => each(out, acc, |_, a| code(rq, act, a, c, dtype)),
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
