//! Layers that rearrange or normalise along axes: Concat, Softmax, Flatten, Reshape.

use crate::caffe::error::LayerError;
use crate::caffe::layer::{numel, Layer};
use crate::proto::caffe::ReshapeParameter;
use nnac_ir::{Graph, Op, Value};

/// Concat along `axis` (or the deprecated `concat_dim`, which wins when set).
pub(in crate::caffe) fn concat(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, usize::MAX)?;
    let p = l.param.concat_param.unwrap_or_default();
    let rank = l.shape(g, 0).len();
    let axis = match p.concat_dim {
        Some(d) => l.axis(d.into(), rank, "concat_dim")?,
        None => l.axis(p.axis().into(), rank, "axis")?,
    };
    Ok(vec![l.node(g, Op::Concat { axis }, &l.bottoms)?])
}

pub(in crate::caffe) fn softmax(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let axis = l.param.softmax_param.as_ref().map_or(1, |p| p.axis());
    let axis = l.axis(axis.into(), l.shape(g, 0).len(), "axis")?;
    Ok(vec![l.node(g, Op::Softmax { axis }, &[l.x()])?])
}

/// Flatten axes `axis..=end_axis` into one.
pub(in crate::caffe) fn flatten(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let p = l.param.flatten_param.unwrap_or_default();
    let x = l.shape(g, 0);
    let start = l.axis(p.axis().into(), x.len(), "axis")?;
    let end = l.axis(p.end_axis().into(), x.len(), "end_axis")?;
    if end < start {
        return Err(l.invalid(format!("end_axis {end} comes before axis {start}")));
    }
    let flat =
        numel(&x[start..=end]).ok_or_else(|| l.invalid(format!("input shape {x:?} overflows")))?;
    let mut shape = x[..start].to_vec();
    shape.push(flat);
    shape.extend(&x[end + 1..]);
    Ok(vec![l.node(g, Op::Reshape { shape }, &[l.x()])?])
}

pub(in crate::caffe) fn reshape(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let p = l.param.reshape_param.clone().unwrap_or_default();
    let shape = reshaped(l, &p, &l.shape(g, 0))?;
    Ok(vec![l.node(g, Op::Reshape { shape }, &[l.x()])?])
}

/// Caffe's `ReshapeLayer`: axes `[axis, axis + num_axes)` of the input are replaced by
/// `shape`, where 0 copies the input dimension at the same position and one -1 is
/// inferred. A negative `axis` counts from the end, -1 meaning after the last axis.
fn reshaped(l: &Layer, p: &ReshapeParameter, x: &[usize]) -> Result<Vec<usize>, LayerError> {
    let r = x.len() as i64;
    let axis = i64::from(p.axis());
    let start = if axis < 0 { axis + r + 1 } else { axis };
    let end = match i64::from(p.num_axes()) {
        -1 => r,
        n if n >= 0 => start + n,
        n => return Err(l.invalid(format!("num_axes {n} must be >= -1"))),
    };
    if start < 0 || end > r || start > end {
        return Err(l.invalid(format!(
            "axis {axis} and num_axes {} do not fit the input {x:?}",
            p.num_axes()
        )));
    }
    let (start, end) = (start as usize, end as usize);
    let dims = p.shape.as_ref().map(|s| s.dim.clone()).unwrap_or_default();
    let mut mid = Vec::with_capacity(dims.len());
    let mut infer = None;
    for (i, &d) in dims.iter().enumerate() {
        match d {
            0 => mid.push(*x.get(start + i).ok_or_else(|| {
                l.invalid(format!(
                    "dim {i} is 0 but the input has no axis {}",
                    start + i
                ))
            })?),
            -1 if infer.is_none() => {
                infer = Some(i);
                mid.push(1);
            }
            d if d > 0 => mid
                .push(usize::try_from(d).map_err(|_| l.invalid(format!("dim {d} is too large")))?),
            d => {
                return Err(l.invalid(format!(
                    "dim {i} is {d}: only one -1 and no other negative value is allowed"
                )))
            }
        }
    }
    let mut shape = x[..start].to_vec();
    shape.extend(&mid);
    shape.extend(&x[end..]);
    let total = numel(x).unwrap_or(usize::MAX);
    let known = numel(&shape).ok_or_else(|| l.invalid(format!("shape {shape:?} overflows")))?;
    if let Some(i) = infer {
        if known == 0 || !total.is_multiple_of(known) {
            return Err(l.invalid(format!(
                "cannot infer dim {i}: {total} elements do not divide by {known}"
            )));
        }
        shape[start + i] = total / known;
    }
    if numel(&shape) != Some(total) {
        return Err(l.invalid(format!("cannot reshape {x:?} to {shape:?}")));
    }
    Ok(shape)
}
