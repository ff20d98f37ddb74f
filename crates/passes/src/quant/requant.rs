//! Builds the SIMD epilogue's requantization from the real value of one unit of the
//! SIMD input (per channel), the activation and the output quantization.

use super::params::{code_range, multiplier, quantize};
use nnac_ir::{Activation, DType, FusedAct, Multiplier, Requant};

/// `unit[c]`: real value of one unit of the SIMD input for channel c.
pub fn build(
    act: Option<&FusedAct>,
    unit: &[f64],
    out_scale: f32,
    zp: i32,
    dtype: DType,
) -> Result<Requant, String> {
    let (qmin, qmax) = code_range(dtype);
    let s_out = f64::from(out_scale);
    let mults = || -> Result<Vec<Multiplier>, String> {
        unit.iter()
            .enumerate()
            .map(|(c, u)| {
                let r = u / s_out;
                multiplier(r).ok_or_else(|| {
                    format!("requantization multiplier {r:e} of channel {c} is not representable")
                })
            })
            .collect()
    };
    let level = |x: f32| quantize(x, out_scale, zp, dtype);
    let float_path = |lo: i32, hi: i32| Requant::Float {
        in_scale: unit.iter().map(|&u| u as f32).collect(),
        inv_out_scale: 1.0 / out_scale,
        zero_point: zp,
        lo,
        hi,
    };
    // FUSED_RELU has one multiplier per channel, so activations with a negative-side
    // slope (leaky ReLU, PReLU) take the fp32 path like the transcendental ones.
    Ok(match act {
        None => Requant::Int {
            mult: mults()?,
            zero_point: zp,
            lo: qmin,
            hi: qmax,
        },
        Some(FusedAct::Act(a)) => match *a {
            Activation::Relu => Requant::Int {
                mult: mults()?,
                zero_point: zp,
                lo: zp.max(qmin),
                hi: qmax,
            },
            Activation::Clip { min, max } => {
                let lo = if min.is_finite() {
                    level(min).max(qmin)
                } else {
                    qmin
                };
                let hi = if max.is_finite() {
                    level(max).min(qmax)
                } else {
                    qmax
                };
                Requant::Int {
                    mult: mults()?,
                    zero_point: zp,
                    lo,
                    hi,
                }
            }
            Activation::LeakyRelu { .. }
            | Activation::Sigmoid
            | Activation::Tanh
            | Activation::HardSigmoid { .. }
            | Activation::HardSwish
            | Activation::Silu => float_path(qmin, qmax),
        },
        Some(FusedAct::PRelu(slopes)) => {
            if slopes.len() != unit.len() {
                return Err(format!(
                    "{} PReLU slopes for {} channels",
                    slopes.len(),
                    unit.len()
                ));
            }
            float_path(qmin, qmax)
        }
    })
}
