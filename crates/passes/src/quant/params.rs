//! Quantization parameters: activation scale/zero point from a range, per-channel
//! weight scales, fixed-point multipliers, and the float <-> code conversions the
//! host side (runtime) uses at graph inputs and outputs.

use nnac_ir::{DType, Multiplier, Quant};

// The float <-> code conversions live with the host-op semantics in nnac-interp
// (one implementation for the quantized interpreter and the simulator).
pub use nnac_interp::host::{code_range, dequantize, quantize};

/// Activation quantization for the float range `[lo, hi]` (which contains 0):
/// non-negative ranges use uint8 with zero point 0 (after ReLU); mixed ranges use
/// int8, asymmetric with a zero point unless `symmetric` (zero point 0).
pub fn act_quant(lo: f32, hi: f32, symmetric: bool) -> (DType, Quant) {
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    let tiny = |s: f32| {
        if s > 0.0 && s.is_finite() {
            s
        } else {
            1.0 / 255.0
        }
    };
    if lo >= 0.0 {
        return (
            DType::U8,
            Quant::PerTensor {
                scale: tiny(hi / 255.0),
                zero_point: 0,
            },
        );
    }
    if symmetric {
        let m = (-lo).max(hi);
        return (
            DType::I8,
            Quant::PerTensor {
                scale: tiny(m / 127.0),
                zero_point: 0,
            },
        );
    }
    let scale = tiny((hi - lo) / 255.0);
    let zp = (-128.0 - lo / scale).round().clamp(-128.0, 127.0) as i32;
    (
        DType::I8,
        Quant::PerTensor {
            scale,
            zero_point: zp,
        },
    )
}

pub use nnac_qinterp::scale_zp;

/// The fixed-point form of `real`: `mult / 2^shift` with `|mult|` in `[2^30, 2^31)`
/// where possible (tiny values use shift 63; zero gives mult 0). `None` if `|real|`
/// is too large (>= 2^31) or not finite.
pub fn multiplier(real: f64) -> Option<Multiplier> {
    if !real.is_finite() || real.abs() >= 2f64.powi(31) {
        return None;
    }
    if real == 0.0 {
        return Some(Multiplier { mult: 0, shift: 0 });
    }
    // real = m * 2^e with 0.5 <= |m| < 1.
    let e = real.abs().log2().floor() as i32 + 1;
    let mut shift = 31 - e;
    if shift > 63 {
        shift = 63;
    }
    if shift < 0 {
        return None;
    }
    let mut mult = (real * 2f64.powi(shift)).round();
    if mult.abs() >= 2f64.powi(31) {
        mult /= 2.0;
        shift -= 1;
    }
    Some(Multiplier {
        mult: mult as i32,
        shift: shift as u8,
    })
}

/// The real value a multiplier stands for.
pub fn multiplier_value(m: Multiplier) -> f64 {
    f64::from(m.mult) / 2f64.powi(i32::from(m.shift))
}

/// The symmetric int8 scale of one output channel's weights `w`: `max|w| / 127`
/// (NaNs ignored); a zero channel gets scale 1.
#[inline(always)]
pub fn weight_scale(w: &[f32]) -> f32 {
    let amax = w.iter().fold(0f32, |m, x| m.max(x.abs()));
    if amax > 0.0 {
        amax / 127.0
    } else {
        1.0
    }
}

/// The smallest weight code nnac chooses itself: its weights are symmetric,
/// `[-127, 127]` (a pre-quantized model's own codes may also be -128,
/// [`FILE_WEIGHT_MIN`]).
pub const WEIGHT_MIN: i32 = -127;

/// The smallest weight code a pre-quantized model's file may give (PyTorch's and
/// ONNX's int8 range; the MAC array multiplies any int8): kept as it is.
pub const FILE_WEIGHT_MIN: i32 = -128;

/// `out[i] = quantize_weight(w[i], scale)`.
#[inline(always)]
pub fn quantize_weights_into(w: &[f32], scale: f32, out: &mut [i8]) {
    quantize_weights_from(w, scale, WEIGHT_MIN, out);
}

/// `out[i]` = `w[i]` at `scale`, rounded as [`quantize_weight`], clamped to
/// `[lo, 127]` (`lo`: [`WEIGHT_MIN`] or [`FILE_WEIGHT_MIN`]).
#[inline(always)]
pub fn quantize_weights_from(w: &[f32], scale: f32, lo: i32, out: &mut [i8]) {
    out.iter_mut()
        .zip(w)
        .for_each(|(q, &x)| *q = quantize_weight_in(x, scale, lo));
}

/// One weight at a given scale (round half away from zero, clamp to [-127, 127]; NaN
/// gives 0).
#[inline(always)]
pub fn quantize_weight(x: f32, scale: f32) -> i8 {
    quantize_weight_in(x, scale, WEIGHT_MIN)
}

/// One weight at a given scale, clamped to `[lo, 127]`. Written with a truncating conversion instead of `f32::round` (a libm
/// call) so that loops over weights vectorise; the same integer for every input:
/// `q - trunc(q)` is exact, and beyond 2^23 every f32 is an integer.
#[inline(always)]
fn quantize_weight_in(x: f32, scale: f32, lo: i32) -> i8 {
    let q = x / scale;
    let t = q as i32; // toward zero, saturating; NaN -> 0
    let frac = q - t as f32;
    let r = if frac >= 0.5 {
        t.saturating_add(1)
    } else if frac <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    };
    r.clamp(lo, 127) as i8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplier_is_accurate() {
        for &r in &[
            1e-6,
            0.000123,
            0.3,
            0.5,
            0.999_999_9,
            1.0,
            3.7,
            1234.5,
            -0.25,
        ] {
            let m = multiplier(r).unwrap();
            assert!(
                m.mult.unsigned_abs() >= 1 << 30 || r.abs() < 1e-9,
                "{r}: {m:?}"
            );
            let back = multiplier_value(m);
            assert!(((back - r) / r).abs() < 1e-9, "{r} -> {m:?} -> {back}");
        }
        assert_eq!(multiplier(0.0), Some(Multiplier { mult: 0, shift: 0 }));
        assert_eq!(multiplier(3e9), None);
    }

    #[test]
    fn activation_ranges() {
        assert_eq!(
            act_quant(0.0, 2.55, false),
            (
                DType::U8,
                Quant::PerTensor {
                    scale: 0.01,
                    zero_point: 0
                }
            )
        );
        let (d, q) = act_quant(-1.0, 3.0, false);
        assert_eq!(d, DType::I8);
        let Quant::PerTensor { scale, zero_point } = q else {
            panic!()
        };
        assert!((scale - 4.0 / 255.0).abs() < 1e-7);
        assert_eq!(zero_point, -64); // -128 + 1/scale = -128 + 63.75
        assert_eq!(quantize(0.0, scale, zero_point, d), zero_point);
        let (_, q) = act_quant(-1.0, 3.0, true);
        assert_eq!(
            q,
            Quant::PerTensor {
                scale: 3.0 / 127.0,
                zero_point: 0
            }
        );
    }

    #[test]
    fn weight_rounding_is_f32_round() {
        let by_round = |x: f32, s: f32| (x / s).round().clamp(-127.0, 127.0) as i8;
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -2.5,
            0.499_999_97,
            -0.499_999_97,
            126.5,
            127.49,
            -127.5,
            1e9,
            -3e38,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            8_388_607.5,
        ];
        xs.extend((0..20_000).map(|i| (i as f32 - 10_000.0) * 0.013_7));
        for &x in &xs {
            for s in [1.0, 0.1, 3.0e-3, 7.0] {
                assert_eq!(quantize_weight(x, s), by_round(x, s), "{x} / {s}");
            }
        }
    }

    #[test]
    fn weights_per_channel() {
        let w = [1.0, -0.5, 0.25, 0.0, 0.0, 0.0];
        let s: Vec<f32> = w.chunks(3).map(weight_scale).collect();
        assert_eq!(s, vec![1.0 / 127.0, 1.0]);
        let mut q = [0i8; 6];
        for ((wc, qc), &sc) in w.chunks(3).zip(q.chunks_mut(3)).zip(&s) {
            quantize_weights_into(wc, sc, qc);
        }
        assert_eq!(q, [127, -64, 32, 0, 0, 0]);
        assert_eq!(weight_scale(&[f32::NAN, -1.27]), 1.27f32 / 127.0);
    }
}
