//! Quantization parameters: `real = scale * (q - zero_point)`.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Quant {
    /// One scale and zero point for the whole tensor (activations).
    PerTensor { scale: f32, zero_point: i32 },
    /// Symmetric per-channel scales along `axis` (weights, zero point 0).
    PerChannel { axis: usize, scales: Vec<f32> },
}

impl Quant {
    /// The scale applying to `channel` (the tensor scale for per-tensor quantization).
    pub fn scale_of(&self, channel: usize) -> f32 {
        match self {
            Quant::PerTensor { scale, .. } => *scale,
            Quant::PerChannel { scales, .. } => scales[channel],
        }
    }

    pub fn zero_point(&self) -> i32 {
        match self {
            Quant::PerTensor { zero_point, .. } => *zero_point,
            Quant::PerChannel { .. } => 0,
        }
    }
}

impl fmt::Display for Quant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // `{:e}` round-trips f32 exactly through the text form.
            Quant::PerTensor { scale, zero_point } => {
                write!(f, "q(scale={scale:e}, zp={zero_point})")
            }
            Quant::PerChannel { axis, scales } => {
                write!(f, "qc(axis={axis}, scales=[")?;
                for (i, s) in scales.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{s:e}")?;
                }
                f.write_str("])")
            }
        }
    }
}
