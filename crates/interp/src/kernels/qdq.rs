//! QuantizeLinear / DequantizeLinear (ONNX semantics, per tensor or per axis). Codes
//! are carried as f32 values; the one float-to-code rule is `host::quantize`.

use super::error::KernelError;
use super::View;
use crate::host::{code_range, quantize};
use nnac_ir::QdqAttrs;

/// `saturate(round(x / scale) + zero_point)` element by element.
pub fn quantize_linear(q: &QdqAttrs, x: View<'_>) -> Vec<f32> {
    x.data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let (s, zp) = q.params_at(x.shape, i);
            quantize(v, s, zp, q.dtype) as f32
        })
        .collect()
}

/// `(q - zero_point) * scale` element by element; a code outside the dtype's range
/// is an error (the input is not a tensor of that type).
pub fn dequantize_linear(q: &QdqAttrs, x: View<'_>) -> Result<Vec<f32>, KernelError> {
    let (lo, hi) = match q.dtype {
        nnac_ir::DType::I32 => (i32::MIN as f32, i32::MAX as f32),
        d => {
            let (lo, hi) = code_range(d);
            (lo as f32, hi as f32)
        }
    };
    x.data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if !(lo..=hi).contains(&v) || v.fract() != 0.0 {
                return Err(KernelError::NotACode {
                    index: i,
                    value: v,
                    dtype: q.dtype.name(),
                });
            }
            let (s, zp) = q.params_at(x.shape, i);
            // In f64 so that int32 codes (biases) subtract exactly.
            Ok(((f64::from(v) - f64::from(zp)) as f32) * s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_ir::DType;

    #[test]
    fn per_axis_parameters_follow_the_axis() {
        let q = QdqAttrs {
            axis: Some(1),
            scales: vec![0.5, 2.0],
            zero_points: vec![0, 10],
            dtype: DType::U8,
        };
        let x = [1.0, -1.0, 4.0, 600.0];
        let shape = [1, 2, 2];
        let codes = quantize_linear(
            &q,
            View {
                shape: &shape,
                data: &x,
            },
        );
        assert_eq!(codes, [2.0, 0.0, 12.0, 255.0]);
        let back = dequantize_linear(
            &q,
            View {
                shape: &shape,
                data: &codes,
            },
        )
        .unwrap();
        assert_eq!(back, [1.0, 0.0, 4.0, 490.0]);
        assert!(dequantize_linear(
            &q,
            View {
                shape: &shape,
                data: &[256.0; 4]
            }
        )
        .is_err());
    }
}
