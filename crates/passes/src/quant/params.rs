//! Quantization parameters: activation scale/zero point from a range, per-channel
//! weight scales, fixed-point multipliers, and the float <-> code conversions the
//! host side (runtime) uses at graph inputs and outputs.

use nnac_ir::{DType, Multiplier, Quant, TensorType};

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

/// `(scale, zero_point)` of a per-tensor quantized type.
pub fn scale_zp(t: &TensorType) -> (f32, i32) {
    match &t.quant {
        Some(Quant::PerTensor { scale, zero_point }) => (*scale, *zero_point),
        _ => (1.0, 0),
    }
}

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

/// Symmetric int8 quantization of `w` with one scale per output channel
/// (`channel_of(i)` gives element i's channel; `m` channels). Zero channels get scale 1.
pub fn quantize_weights(
    w: &[f32],
    m: usize,
    channel_of: &dyn Fn(usize) -> usize,
) -> (Vec<i8>, Vec<f32>) {
    let mut amax = vec![0f32; m];
    for (i, x) in w.iter().enumerate() {
        let c = channel_of(i);
        amax[c] = amax[c].max(x.abs());
    }
    let scales: Vec<f32> = amax
        .iter()
        .map(|&a| if a > 0.0 { a / 127.0 } else { 1.0 })
        .collect();
    let q = w
        .iter()
        .enumerate()
        .map(|(i, x)| quantize_weight(*x, scales[channel_of(i)]))
        .collect();
    (q, scales)
}

/// One weight at a given scale (round half away from zero, clamp to [-127, 127]).
pub fn quantize_weight(x: f32, scale: f32) -> i8 {
    (x / scale).round().clamp(-127.0, 127.0) as i8
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
    fn weights_per_channel() {
        let w = [1.0, -0.5, 0.25, 0.0, 0.0, 0.0];
        let (q, s) = quantize_weights(&w, 2, &|i| i / 3);
        assert_eq!(q, vec![127, -64, 32, 0, 0, 0]);
        assert_eq!(s, vec![1.0 / 127.0, 1.0]);
    }
}
