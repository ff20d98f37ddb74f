//! The static type of a value: element type, concrete shape and (after quantization)
//! quantization parameters. All shapes in the IR are concrete: importers fix dynamic
//! dimensions (batch is always 1).

use crate::{DType, Quant};
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Quantization of an integer tensor; `None` for float tensors.
    pub quant: Option<Quant>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: Vec<usize>) -> Self {
        TensorType {
            dtype,
            shape,
            quant: None,
        }
    }

    pub fn f32(shape: Vec<usize>) -> Self {
        TensorType::new(DType::F32, shape)
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn size_bytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }
}

/// Formats a shape as `1x3x224x224` (a scalar is `scalar`).
pub fn shape_str(shape: &[usize]) -> String {
    if shape.is_empty() {
        return "scalar".to_string();
    }
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.dtype, shape_str(&self.shape))?;
        if let Some(q) = &self.quant {
            write!(f, " {q}")?;
        }
        Ok(())
    }
}
