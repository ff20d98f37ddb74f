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

/// Most elements any value of the IR may hold (2^32): far above any real network's
/// tensors, and low enough that no size computation on a valid shape overflows.
pub const MAX_ELEMENTS: usize = 1 << 32;

/// The element count of `shape`, or why it is not a valid IR shape: the product
/// overflows or exceeds [`MAX_ELEMENTS`] (also when a zero dimension hides that the
/// others' product does).
pub fn checked_numel(shape: &[usize]) -> Result<usize, crate::ShapeError> {
    let within = |skip_zero: bool| {
        shape
            .iter()
            .filter(|&&d| !(skip_zero && d == 0))
            .try_fold(1usize, |n, &d| {
                n.checked_mul(d).filter(|&n| n <= MAX_ELEMENTS)
            })
    };
    let too_big = || crate::ShapeError::TooManyElements {
        shape: shape.to_vec(),
    };
    within(true).ok_or_else(too_big)?;
    within(false).ok_or_else(too_big)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_counts_are_checked_against_the_limit() {
        assert_eq!(checked_numel(&[1, 3, 224, 224]), Ok(150_528));
        assert_eq!(checked_numel(&[]), Ok(1));
        assert_eq!(checked_numel(&[1 << 16, 1 << 16]), Ok(MAX_ELEMENTS));
        assert!(checked_numel(&[1 << 16, (1 << 16) + 1]).is_err());
        // An overflowing product, and one hidden behind a zero dimension.
        assert!(checked_numel(&[usize::MAX, 2]).is_err());
        assert!(checked_numel(&[0, usize::MAX, usize::MAX]).is_err());
        assert_eq!(checked_numel(&[0, 7]), Ok(0));
    }
}
