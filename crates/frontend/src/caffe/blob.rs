//! Weight blobs: a `BlobProto`'s shape (the `shape` field, or the legacy 4-D
//! num/channels/height/width) and data checked against the shape a layer expects,
//! following Caffe's `Blob::ShapeEquals`.

use super::error::BlobError;
use crate::proto::caffe::BlobProto;
use nnac_ir::Tensor;

/// The shape a blob declares. Legacy blobs (any of num/channels/height/width set)
/// declare a 4-D shape; negative dimensions are an error.
pub(super) fn declared_shape(b: &BlobProto) -> Result<Vec<usize>, BlobError> {
    let dims: Vec<i64> = if is_legacy(b) {
        vec![
            b.num() as i64,
            b.channels() as i64,
            b.height() as i64,
            b.width() as i64,
        ]
    } else {
        b.shape.as_ref().map(|s| s.dim.clone()).unwrap_or_default()
    };
    dims.iter()
        .map(|&d| usize::try_from(d).map_err(|_| BlobError::NegativeDim { dims: dims.clone() }))
        .collect()
}

fn is_legacy(b: &BlobProto) -> bool {
    b.num.is_some() || b.channels.is_some() || b.height.is_some() || b.width.is_some()
}

/// Whether the declared shape matches `expected` the way Caffe checks it: exactly, or
/// for legacy 4-D blobs, `expected` left-padded with ones to 4 axes.
fn shape_matches(b: &BlobProto, declared: &[usize], expected: &[usize]) -> bool {
    if !is_legacy(b) {
        return declared == expected;
    }
    if expected.len() > 4 {
        return false;
    }
    let padded: Vec<usize> = std::iter::repeat_n(1, 4 - expected.len())
        .chain(expected.iter().copied())
        .collect();
    declared == padded.as_slice()
}

/// Converts blob `b` to an f32 tensor of shape `expected`. The message names what is
/// wrong (the caller prefixes the layer and blob index).
pub(super) fn to_tensor(b: &BlobProto, expected: &[usize]) -> Result<Tensor, BlobError> {
    let declared = declared_shape(b)?;
    if !shape_matches(b, &declared, expected) {
        return Err(BlobError::Shape {
            declared,
            expected: expected.to_vec(),
        });
    }
    let numel = nnac_ir::checked_numel(&declared).map_err(BlobError::Elements)?;
    let data: Vec<f32> = if !b.data.is_empty() || b.double_data.is_empty() {
        b.data.clone()
    } else {
        b.double_data.iter().map(|&d| d as f32).collect()
    };
    if data.len() != numel {
        return Err(BlobError::Count {
            values: data.len(),
            declared,
            numel,
        });
    }
    Tensor::f32(expected.to_vec(), data).ok_or_else(|| BlobError::Hold {
        expected: expected.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::caffe::BlobShape;

    fn blob(dims: &[i64], n: usize) -> BlobProto {
        BlobProto {
            shape: Some(BlobShape { dim: dims.to_vec() }),
            data: (0..n).map(|i| i as f32).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn exact_shape_is_accepted() {
        let t = to_tensor(&blob(&[2, 3], 6), &[2, 3]).unwrap();
        assert_eq!(t.shape, vec![2, 3]);
        assert_eq!(t.as_f32().unwrap()[5], 5.0);
    }

    #[test]
    fn legacy_shape_is_left_padded() {
        let b = BlobProto {
            num: Some(1),
            channels: Some(1),
            height: Some(4),
            width: Some(3),
            data: vec![0.0; 12],
            ..Default::default()
        };
        assert_eq!(to_tensor(&b, &[4, 3]).unwrap().shape, vec![4, 3]);
        let e = to_tensor(&b, &[3, 4]).unwrap_err();
        assert_eq!(
            e,
            BlobError::Shape {
                declared: vec![1, 1, 4, 3],
                expected: vec![3, 4]
            }
        );
        assert!(e.to_string().contains("expected 3x4"), "{e}");
    }

    #[test]
    fn wrong_shape_or_count_is_an_error() {
        assert!(to_tensor(&blob(&[3, 2], 6), &[2, 3])
            .unwrap_err()
            .to_string()
            .contains("has shape 3x2"));
        let e = to_tensor(&blob(&[2, 3], 5), &[2, 3]).unwrap_err();
        assert!(
            matches!(
                e,
                BlobError::Count {
                    values: 5,
                    numel: 6,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("holds 5 values"), "{e}");
        assert!(to_tensor(&blob(&[-2, 3], 6), &[2, 3])
            .unwrap_err()
            .to_string()
            .contains("negative"));
    }

    #[test]
    fn double_data_is_converted() {
        let b = BlobProto {
            shape: Some(BlobShape { dim: vec![2] }),
            double_data: vec![1.5, -2.0],
            ..Default::default()
        };
        assert_eq!(to_tensor(&b, &[2]).unwrap().as_f32().unwrap(), &[1.5, -2.0]);
    }
}
