//! Bounds that keep a hostile model from overflowing shape arithmetic or allocating
//! without limit. Real CNNs are far below every one of them.

use super::error::LimitError;

/// Largest rank of any tensor.
pub const MAX_RANK: usize = 16;
/// Largest element count of any runtime tensor or constant: the IR's.
pub const MAX_ELEMS: usize = nnac_ir::MAX_ELEMENTS;
/// Largest value of an integer attribute used as a size (kernel, stride, pad,
/// dilation, group, shape entry).
pub const MAX_ATTR: i64 = 1 << 24;
/// Total number of elements the importer may synthesise by folding and
/// `ConstantOfShape` (2^28, 1 GiB of f32): VGG-19's 143 M weights fit.
pub const FOLD_BUDGET: usize = 1 << 28;

/// The element count of `shape`, or an error when it overflows or exceeds
/// [`MAX_ELEMS`] ([`nnac_ir::checked_numel`]) or the rank exceeds [`MAX_RANK`].
pub fn checked_numel(shape: &[usize]) -> Result<usize, LimitError> {
    check_rank(shape)?;
    nnac_ir::checked_numel(shape).map_err(LimitError::Elements)
}

/// An error when the rank of `shape` exceeds [`MAX_RANK`].
pub fn check_rank(shape: &[usize]) -> Result<(), LimitError> {
    if shape.len() > MAX_RANK {
        return Err(LimitError::Rank {
            rank: shape.len(),
            max: MAX_RANK,
        });
    }
    Ok(())
}

/// Converts ONNX `int64` dims to a checked IR shape (no negative entries).
pub fn dims_to_shape(dims: &[i64]) -> Result<Vec<usize>, LimitError> {
    let mut shape = Vec::with_capacity(dims.len().min(MAX_RANK + 1));
    for &d in dims {
        if d < 0 {
            return Err(LimitError::NegativeDim {
                dim: d,
                dims: dims.to_vec(),
            });
        }
        shape.push(usize::try_from(d).map_err(|_| LimitError::DimTooLarge { dim: d })?);
        if shape.len() > MAX_RANK {
            return Err(LimitError::Rank {
                rank: dims.len(),
                max: MAX_RANK,
            });
        }
    }
    checked_numel(&shape)?;
    Ok(shape)
}

/// Checks an integer attribute used as a size: `min <= v <= MAX_ATTR`.
pub fn attr_size(v: i64, min: i64, what: &str) -> Result<usize, LimitError> {
    if v < min || v > MAX_ATTR {
        return Err(LimitError::Attr {
            what: what.to_string(),
            value: v,
            min,
            max: MAX_ATTR,
        });
    }
    Ok(v as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numel_overflow_is_an_error() {
        assert_eq!(checked_numel(&[2, 3]), Ok(6));
        assert_eq!(checked_numel(&[]), Ok(1));
        assert!(checked_numel(&[1 << 40, 1 << 40]).is_err());
        assert!(checked_numel(&[1 << 40, 1 << 40, 0]).is_err());
        assert_eq!(checked_numel(&[0, 5]), Ok(0));
    }

    #[test]
    fn dims_reject_negative_and_huge() {
        assert_eq!(
            dims_to_shape(&[-1, 2]),
            Err(LimitError::NegativeDim {
                dim: -1,
                dims: vec![-1, 2]
            })
        );
        assert_eq!(
            check_rank(&[1; MAX_RANK + 1]),
            Err(LimitError::Rank {
                rank: MAX_RANK + 1,
                max: MAX_RANK
            })
        );
        assert!(dims_to_shape(&[i64::MAX, i64::MAX]).is_err());
        assert_eq!(dims_to_shape(&[1, 3]), Ok(vec![1, 3]));
        let e = attr_size(MAX_ATTR + 1, 1, "stride").unwrap_err();
        assert!(
            matches!(&e, LimitError::Attr { what, value, .. } if what == "stride" && *value == MAX_ATTR + 1),
            "{e:?}"
        );
        assert_eq!(attr_size(0, 0, "pad"), Ok(0));
    }
}
