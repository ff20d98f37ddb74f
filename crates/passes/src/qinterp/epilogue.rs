//! The SIMD epilogue on one value, written from docs/ISA.md's arithmetic:
//! FUSED_RELU for the integer path, the fp32 sequence for the float path.

use crate::simd_float::activation;
use nnac_ir::{Activation, FusedAct, Requant};
use nnac_isa::arith;
use nnac_isa::simd::float::{canon, f2i, i2f};

/// The output code for SIMD input `v` of channel `c`.
pub fn apply(rq: &Requant, act: Option<&FusedAct>, v: i32, c: usize) -> i32 {
    match rq {
        Requant::Int {
            mult,
            zero_point,
            lo,
            hi,
        } => {
            let m = mult[c];
            let y =
                arith::scale(i64::from(v), m.mult, u32::from(m.shift)) + i128::from(*zero_point);
            arith::sat_i32(y.clamp(i128::from(*lo), i128::from(*hi)))
        }
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
            let y = f2i(canon(a * inv_out_scale));
            y.wrapping_add(*zero_point).clamp(*lo, *hi)
        }
    }
}
