//! Ops that only exist at import time: the shape arithmetic exporters emit around
//! Reshape (Shape, Size, Gather, Slice, Cast, Range, Equal/Less/Greater, Where,
//! Expand). Shape and Size read the static shape of any value; the others need
//! constant inputs and fold (Cast of a float value to a float type is an alias).
//! Slice and Split of a runtime tensor (with constant bounds, step 1) become IR
//! `Slice` ops (one per Split output).

use super::{folded, norm_axis};
use crate::onnx::ctx::{invalid, unsupported, Ctx, NResult, NodeCx, NodeError, Out};
use crate::onnx::dtype::{self, BOOL, INT16, INT32, INT64, INT8, UINT16, UINT32, UINT64, UINT8};
use crate::onnx::fold::{self, i64_tensor, i64s, Bin, SliceAxis};
use crate::onnx::limits::dims_to_shape;
use nnac_ir::{DType, Op, Tensor, TensorData, Value};

fn runtime(cx: &NodeCx) -> NodeError {
    unsupported(format!(
        "{} of a runtime tensor (nnac only folds it on constants)",
        cx.op_type()
    ))
}

/// A required constant input, or "unsupported" when it is computed at run time.
fn need<'c>(ctx: &'c Ctx, cx: &NodeCx, i: usize, what: &str) -> NResult<&'c Tensor> {
    match ctx.konst(cx, i) {
        Some(t) => Ok(t),
        None if cx.has_input(i) => Err(runtime(cx)),
        None => Err(invalid(format!("missing input '{what}' (#{i})"))),
    }
}

pub fn shape(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let s = ctx.shape(cx, 0)?;
    let r = s.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let start = clamp(cx.attrs.int_or("start", 0)?);
    let end = clamp(cx.attrs.int_or("end", r)?).max(start);
    let dims: Vec<i64> = s[start..end].iter().map(|&d| d as i64).collect();
    folded(i64_tensor(vec![dims.len()], dims)?)
}

pub fn size(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let n = ctx.shape(cx, 0)?.iter().product::<usize>() as i64;
    folded(i64_tensor(vec![], vec![n])?)
}

pub fn gather(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (data, indices) = (need(ctx, cx, 0, "data")?, need(ctx, cx, 1, "indices")?);
    let axis = norm_axis(cx.attrs.int_or("axis", 0)?, data.shape.len())?;
    folded(fold::gather(ctx, data, indices, axis)?)
}

pub fn slice(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let rank = ctx.shape(cx, 0)?.len();
    let (starts, ends, axes, steps) = if cx.opset < 10 {
        let get = |n: &str| cx.attrs.ints(n).map(|v| v.map(<[i64]>::to_vec));
        let starts = get("starts")?.ok_or_else(|| invalid("attribute 'starts' is required"))?;
        let ends = get("ends")?.ok_or_else(|| invalid("attribute 'ends' is required"))?;
        (starts, ends, get("axes")?, None)
    } else {
        let opt = |i: usize, what: &str| -> NResult<Option<Vec<i64>>> {
            if cx.has_input(i) {
                Some(i64s(need(ctx, cx, i, what)?, what)).transpose()
            } else {
                Ok(None)
            }
        };
        let starts = opt(1, "starts")?.ok_or_else(|| invalid("missing input 'starts'"))?;
        let ends = opt(2, "ends")?.ok_or_else(|| invalid("missing input 'ends'"))?;
        (starts, ends, opt(3, "axes")?, opt(4, "steps")?)
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(invalid("starts, ends, axes and steps differ in length"));
    }
    let axes = super::norm_axes(&axes, rank)?;
    let spec: Vec<SliceAxis> = (0..starts.len())
        .map(|k| SliceAxis {
            axis: axes[k],
            start: starts[k],
            end: ends[k],
            step: steps[k],
        })
        .collect();
    match ctx.konst(cx, 0) {
        Some(data) => folded(fold::slice(ctx, data, &spec)?),
        None => runtime_slice(ctx, cx, "", &spec).map(|v| vec![Out::Value(v)]),
    }
}

/// An IR `Slice` of runtime input 0 by `spec` (ONNX bounds: negative from the end,
/// clamped to the axis), or a `StridedSlice` when some positive step is above 1
/// (the Focus stem); negative steps are refused, and the result must not be empty.
pub(crate) fn runtime_slice(
    ctx: &mut Ctx,
    cx: &NodeCx,
    suffix: &str,
    spec: &[SliceAxis],
) -> NResult<Value> {
    let shape = ctx.shape(cx, 0)?;
    let (mut axes, mut starts, mut ends, mut steps) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for s in spec {
        if s.step < 1 {
            return Err(unsupported(format!(
                "{} of a runtime tensor with step {} (only positive steps)",
                cx.op_type(),
                s.step
            )));
        }
        if axes.contains(&s.axis) {
            return Err(invalid(format!("axis {} sliced twice", s.axis)));
        }
        let dim = shape[s.axis] as i128;
        let bound = |v: i64| {
            let v = i128::from(v);
            (if v < 0 { v + dim } else { v }).clamp(0, dim) as usize
        };
        let (start, end) = (bound(s.start), bound(s.end));
        if start >= end {
            return Err(unsupported(format!(
                "{} of axis {} to {}..{}: an empty tensor",
                cx.op_type(),
                s.axis,
                s.start,
                s.end
            )));
        }
        let step = usize::try_from(s.step).unwrap_or(usize::MAX);
        if (start, end, step) == (0, shape[s.axis], 1) {
            continue;
        }
        axes.push(s.axis);
        starts.push(start);
        ends.push(end);
        steps.push(step.min(end - start));
    }
    let x = ctx.value(cx, 0)?;
    if axes.is_empty() {
        return ctx.add(cx, suffix, Op::Identity, &[x]);
    }
    if steps.iter().any(|&st| st > 1) {
        let op = Op::StridedSlice {
            axes,
            starts,
            ends,
            steps,
        };
        return ctx.add(cx, suffix, op, &[x]);
    }
    ctx.add(cx, suffix, Op::Slice { axes, starts, ends }, &[x])
}

/// ONNX Split: consecutive parts of one axis, by the `split` sizes (attribute before
/// opset 13, input since), else `num_outputs` (opset 18: parts of `ceil(dim / n)`,
/// the last smaller), else as many equal parts as outputs. One IR `Slice` per output
/// (folded on a constant).
pub fn split(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let shape = ctx.shape(cx, 0)?.to_vec();
    let axis = super::norm_axis(cx.attrs.int_or("axis", 0)?, shape.len())?;
    let dim = shape[axis];
    let outputs = cx.proto.output.len();
    let sizes: Vec<i64> = if cx.opset < 13 {
        match cx.attrs.ints("split")? {
            Some(v) => v.to_vec(),
            None => equal_parts(dim, outputs)?,
        }
    } else if cx.has_input(1) {
        i64s(need(ctx, cx, 1, "split")?, "split")?
    } else if let Some(n) = cx.attrs.int("num_outputs")? {
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n > 0 && n == outputs)
            .ok_or_else(|| invalid(format!("num_outputs {n} for {outputs} outputs")))?;
        let part = dim.div_ceil(n);
        (0..n)
            .map(|k| (dim.min((k + 1) * part) - dim.min(k * part)) as i64)
            .collect()
    } else {
        equal_parts(dim, outputs)?
    };
    if sizes.contains(&0) {
        return Err(unsupported(format!(
            "split sizes {sizes:?}: zero-size outputs (IR tensors have no zero-size dimensions)"
        )));
    }
    let total = sizes.iter().try_fold(0i64, |t, &s| t.checked_add(s));
    if sizes.len() != outputs || sizes.iter().any(|&s| s < 0) || total != Some(dim as i64) {
        return Err(invalid(format!(
            "split sizes {sizes:?} of axis {axis} (size {dim}) into {outputs} outputs"
        )));
    }
    let mut start = 0i64;
    let mut outs = Vec::with_capacity(outputs);
    for (k, &n) in sizes.iter().enumerate() {
        let spec = [SliceAxis {
            axis,
            start,
            end: start + n,
            step: 1,
        }];
        start += n;
        outs.push(match ctx.konst(cx, 0) {
            Some(data) => Out::Const(fold::slice(ctx, data, &spec)?),
            None => Out::Value(runtime_slice(ctx, cx, &k.to_string(), &spec)?),
        });
    }
    Ok(outs)
}

/// `n` equal parts of `dim`.
fn equal_parts(dim: usize, n: usize) -> NResult<Vec<i64>> {
    if n == 0 || !dim.is_multiple_of(n) {
        return Err(invalid(format!(
            "{dim} elements do not split into {n} equal parts"
        )));
    }
    Ok(vec![(dim / n) as i64; n])
}

/// Casts constant data: floats to f32, integers and bools to the IR integer type
/// (i64 when the IR has no such type).
fn cast_data(t: &Tensor, to: i32) -> NResult<TensorData> {
    if !matches!(
        to,
        INT8 | UINT8 | INT16 | UINT16 | INT32 | INT64 | UINT32 | UINT64 | BOOL
    ) && !dtype::is_float(to)
    {
        return Err(unsupported(format!("cast to {}", dtype::name(to))));
    }
    if dtype::is_float(to) {
        return Ok(TensorData::F32(t.to_f32_vec()));
    }
    let v: Vec<i64> = match &t.data {
        TensorData::F32(f) => f
            .iter()
            .map(|&x| {
                if to == BOOL {
                    i64::from(x != 0.0)
                } else {
                    x as i64
                }
            })
            .collect(),
        _ => i64s(t, "input")?
            .into_iter()
            .map(|x| if to == BOOL { i64::from(x != 0) } else { x })
            .collect(),
    };
    Ok(match to {
        INT8 => TensorData::I8(v.iter().map(|&x| x as i8).collect()),
        UINT8 => TensorData::U8(v.iter().map(|&x| x as u8).collect()),
        INT32 => TensorData::I32(v.iter().map(|&x| x as i32).collect()),
        _ => TensorData::I64(v),
    })
}

pub fn cast(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let to = cx
        .attrs
        .int("to")?
        .ok_or_else(|| invalid("attribute 'to' is required"))?;
    let to = i32::try_from(to).map_err(|_| invalid(format!("cast target {to}")))?;
    if let Some(t) = ctx.konst(cx, 0) {
        ctx.charge_shape(&t.shape)?;
        let data = cast_data(t, to)?;
        return folded(Tensor {
            shape: t.shape.clone(),
            data,
        });
    }
    let from = ctx.ty(cx, 0)?.dtype;
    if (from == DType::F32 && dtype::is_float(to)) || dtype::ir_dtype(to) == Some(from) {
        return Ok(vec![Out::Input(0)]);
    }
    Err(runtime(cx))
}

pub fn range(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (s, l, d) = (
        need(ctx, cx, 0, "start")?,
        need(ctx, cx, 1, "limit")?,
        need(ctx, cx, 2, "delta")?,
    );
    if [s, l, d].iter().any(|t| t.numel() != 1) {
        return Err(invalid("Range inputs must be scalars"));
    }
    if [s, l, d].iter().all(|t| t.dtype() != DType::F32) {
        let (s, l, d) = (
            i64s(s, "start")?[0],
            i64s(l, "limit")?[0],
            i64s(d, "delta")?[0],
        );
        if d == 0 {
            return Err(invalid("Range delta 0"));
        }
        let n = ((l as i128 - s as i128) as f64 / d as f64).ceil().max(0.0) as usize;
        ctx.charge_shape(&[n])?;
        let values = (0..n as i64).map(|k| k.checked_mul(d).and_then(|kd| kd.checked_add(s)));
        let values = values
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| invalid("Range overflows int64"))?;
        return folded(i64_tensor(vec![n], values)?);
    }
    let (s, l, d) = (s.to_f32_vec()[0], l.to_f32_vec()[0], d.to_f32_vec()[0]);
    let n = ((l - s) / d).ceil();
    if !n.is_finite() {
        return Err(invalid("Range with delta 0 or non-finite bounds"));
    }
    let n = n.max(0.0) as usize;
    ctx.charge_shape(&[n])?;
    folded(Tensor {
        shape: vec![n],
        data: TensorData::F32((0..n).map(|k| s + k as f32 * d).collect()),
    })
}

fn compare(ctx: &mut Ctx, cx: &NodeCx, op: Bin) -> NResult<Vec<Out>> {
    let (a, b) = (need(ctx, cx, 0, "A")?, need(ctx, cx, 1, "B")?);
    folded(fold::binary(ctx, op, a, b)?)
}

pub fn equal(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    compare(ctx, cx, Bin::Equal)
}

pub fn less(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    compare(ctx, cx, Bin::Less)
}

pub fn greater(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    compare(ctx, cx, Bin::Greater)
}

pub fn where_(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (c, x, y) = (
        need(ctx, cx, 0, "condition")?,
        need(ctx, cx, 1, "X")?,
        need(ctx, cx, 2, "Y")?,
    );
    folded(fold::where_(ctx, c, x, y)?)
}

pub fn expand(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (t, s) = (need(ctx, cx, 0, "input")?, need(ctx, cx, 1, "shape")?);
    let shape = dims_to_shape(&i64s(s, "shape")?).map_err(invalid)?;
    folded(fold::expand(ctx, t, &shape)?)
}
