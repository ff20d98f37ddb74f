//! Builds the SIMD epilogue's requantization from the real value of one unit of the
//! SIMD input (per channel), the activation and the output quantization.

use super::params::{code_range, multiplier, quantize};
use nnac_ir::{Activation, DType, FusedAct, Multiplier, Requant};
use std::fmt;

/// Why no requantization can be built for a SIMD epilogue.
#[derive(Debug, Clone, PartialEq)]
pub enum RequantError {
    /// Channel `channel`'s ratio (SIMD input unit / output scale) has no
    /// fixed-point multiplier.
    Multiplier { channel: usize, ratio: f64 },
    /// A PReLU with another number of slopes than channels.
    PreluSlopes { slopes: usize, channels: usize },
}

impl fmt::Display for RequantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequantError::Multiplier { channel, ratio } => write!(
                f,
                "requantization multiplier {ratio:e} of channel {channel} is not representable"
            ),
            RequantError::PreluSlopes { slopes, channels } => {
                write!(f, "{slopes} PReLU slopes for {channels} channels")
            }
        }
    }
}

impl std::error::Error for RequantError {}

/// `unit[c]`: real value of one unit of the SIMD input for channel c.
pub fn build(
    act: Option<&FusedAct>,
    unit: &[f64],
    out_scale: f32,
    zp: i32,
    dtype: DType,
) -> Result<Requant, RequantError> {
    let (qmin, qmax) = code_range(dtype);
    let s_out = f64::from(out_scale);
    let mults = || -> Result<Vec<Multiplier>, RequantError> {
        unit.iter()
            .enumerate()
            .map(|(c, u)| {
                let r = u / s_out;
                multiplier(r).ok_or(RequantError::Multiplier {
                    channel: c,
                    ratio: r,
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
                return Err(RequantError::PreluSlopes {
                    slopes: slopes.len(),
                    channels: unit.len(),
                });
            }
            float_path(qmin, qmax)
        }
    })
}

/// ONNX Runtime's requantization of a dot product in place of `rq` (built by
/// [`build`]): `scale[c]` per channel, the same zero point and clamp. `None` when
/// `rq` is not the integer path (an activation on the fp32 path keeps it).
pub fn even(rq: &Requant, scale: Vec<f32>) -> Option<Requant> {
    match *rq {
        Requant::Int {
            zero_point, lo, hi, ..
        } => Some(Requant::Even {
            scale,
            zero_point,
            lo,
            hi,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unrepresentable_ratios_and_slope_counts_are_typed_errors() {
        let e = build(None, &[0.5, 1e12], 1.0, 0, DType::I8).unwrap_err();
        assert_eq!(
            e,
            RequantError::Multiplier {
                channel: 1,
                ratio: 1e12
            }
        );
        assert!(e.to_string().contains("of channel 1"), "{e}");
        let prelu = FusedAct::PRelu(vec![0.1, 0.2]);
        assert_eq!(
            build(Some(&prelu), &[1.0], 1.0, 0, DType::I8),
            Err(RequantError::PreluSlopes {
                slopes: 2,
                channels: 1
            })
        );
    }
}
