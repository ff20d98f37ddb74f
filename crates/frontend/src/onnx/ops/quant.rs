//! Pre-quantized models: QuantizeLinear / DequantizeLinear (per tensor or per axis,
//! int8 / uint8, int32 for biases; opsets 10-25) become IR `Quantize` / `Dequantize`
//! ops with their constant scales and zero points, and the QOperator ops
//! (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger) become the float op
//! between them: `Dequantize` of the inputs, `Conv` / `MatMul`, `Quantize` of the
//! result (the integer ops' int32 output is the exact float sum of the centred
//! products). The quantizer later honours these parameters (`nnac-passes` `qdq`).

use super::conv::conv_attrs;
use super::{norm_axis, one};
use crate::onnx::ctx::{invalid, unsupported, Ctx, NResult, NodeCx, Out};
use nnac_ir::{DType, Op, QdqAttrs, Tensor, Value};

/// ONNX `TensorProto.DataType` codes `output_dtype` may name.
const ONNX_UINT8: i64 = 2;
const ONNX_INT8: i64 = 3;

/// The scale(s) and zero point(s) at slots `s` and `z` for a tensor of `shape`,
/// per-axis along `axis` when the scale has more than one element (or is 1-D where
/// the op allows per-axis). `dtype` is the code type when no zero point names it.
fn params(
    ctx: &Ctx,
    cx: &NodeCx,
    (s, z): (usize, usize),
    shape: &[usize],
    axis: Option<i64>,
    dtype: Option<DType>,
) -> NResult<QdqAttrs> {
    let scale = ctx.const_input(cx, s, "scale")?;
    let zp = ctx.opt_const(cx, z, "zero point")?;
    let dtype = match (zp.map(Tensor::dtype), dtype) {
        (Some(d @ (DType::I8 | DType::U8 | DType::I32)), _) => d,
        (Some(d), _) => {
            return Err(unsupported(format!(
                "zero point of type {d}: nnac imports int8 and uint8 quantization \
                 (int32 for biases)"
            )))
        }
        (None, Some(d)) => d,
        (None, None) => DType::U8,
    };
    let scales = scale.to_f32_vec();
    if scales.iter().any(|&v| !(v.is_finite() && v > 0.0)) {
        return Err(invalid(format!(
            "scales must be positive and finite, found {:?}",
            scales.iter().find(|v| !(v.is_finite() && **v > 0.0))
        )));
    }
    let zero_points = match zp {
        Some(t) => zero_point_values(t)?,
        None => vec![0; scales.len()],
    };
    if zp.is_some_and(|t| t.shape != scale.shape) {
        return Err(invalid(format!(
            "scale shape {:?} and zero point shape {:?} differ",
            scale.shape,
            zp.map(|t| t.shape.clone()).unwrap_or_default()
        )));
    }
    let per_tensor = scale.shape.iter().product::<usize>() == 1 && scale.shape.len() <= 1;
    let axis = match axis {
        Some(a) if !per_tensor => Some(norm_axis(a, shape.len())?),
        _ => None,
    };
    if !per_tensor && (scale.shape.len() != 1 || axis.is_none()) {
        return Err(unsupported(format!(
            "scale of shape {:?}: nnac imports per-tensor or per-axis (1-D) scales",
            scale.shape
        )));
    }
    let q = QdqAttrs {
        axis,
        scales,
        zero_points,
        dtype,
    };
    q.check(shape).map_err(invalid)?;
    Ok(q)
}

/// The values of a zero-point tensor (int8, uint8 or int32: they fit i32).
fn zero_point_values(t: &Tensor) -> NResult<Vec<i32>> {
    t.to_i64_vec()
        .ok_or_else(|| invalid("zero point is not an integer tensor"))?
        .into_iter()
        .map(|v| i32::try_from(v).map_err(|_| invalid(format!("zero point {v} exceeds int32"))))
        .collect()
}

/// The `axis` attribute (default 1; used only with per-axis scales); `block_size`
/// must be 0.
fn axis_attr(cx: &NodeCx) -> NResult<Option<i64>> {
    if cx.attrs.int_or("block_size", 0)? != 0 {
        return Err(unsupported(
            "blocked quantization (block_size > 0): nnac imports per-tensor and per-axis",
        ));
    }
    Ok(Some(cx.attrs.int_or("axis", 1)?))
}

pub fn quantize_linear(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let shape = ctx.shape(cx, 0)?;
    let axis = axis_attr(cx)?;
    let out = match cx.attrs.int_or("output_dtype", 0)? {
        0 => None,
        ONNX_UINT8 => Some(DType::U8),
        ONNX_INT8 => Some(DType::I8),
        d => {
            return Err(unsupported(format!(
                "output_dtype {d}: nnac imports int8 and uint8 quantization"
            )))
        }
    };
    let q = params(ctx, cx, (1, 2), &shape, axis, out)?;
    if out.is_some_and(|d| d != q.dtype) || q.dtype == DType::I32 {
        return Err(invalid(format!(
            "output type {} does not match the zero point's",
            q.dtype
        )));
    }
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", Op::Quantize(q), &[x])?)
}

pub fn dequantize_linear(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let ty = ctx.ty(cx, 0)?;
    if !matches!(ty.dtype, DType::I8 | DType::U8 | DType::I32) {
        return Err(unsupported(format!(
            "dequantizing {}: nnac imports int8, uint8 and int32 codes",
            ty.dtype
        )));
    }
    let axis = axis_attr(cx)?;
    let q = params(ctx, cx, (1, 2), &ty.shape, axis, Some(ty.dtype))?;
    if q.dtype != ty.dtype {
        return Err(invalid(format!(
            "zero point type {} differs from the input's {}",
            q.dtype, ty.dtype
        )));
    }
    if q.dtype == DType::I32 && q.zero_points.iter().any(|&z| z != 0) {
        return Err(invalid("an int32 zero point must be 0"));
    }
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", Op::Dequantize(q), &[x])?)
}

/// `Dequantize` of input `i` with the parameters at slots `sz` (per axis `axis`
/// where the scale is 1-D), named `<node>/<suffix>`.
fn dequantized(
    ctx: &mut Ctx,
    cx: &NodeCx,
    i: usize,
    sz: (usize, usize),
    axis: Option<i64>,
    suffix: &str,
) -> NResult<(Value, QdqAttrs)> {
    let ty = ctx.ty(cx, i)?;
    if !matches!(ty.dtype, DType::I8 | DType::U8) {
        return Err(unsupported(format!(
            "input #{i} of type {}: nnac imports int8 and uint8 codes",
            ty.dtype
        )));
    }
    let q = params(ctx, cx, sz, &ty.shape, axis, Some(ty.dtype))?;
    let x = ctx.value(cx, i)?;
    let v = ctx.add(cx, suffix, Op::Dequantize(q.clone()), &[x])?;
    Ok((v, q))
}

/// Centred codes `q - zero_point` (scale 1) of input `i`, zero point at slot `z`.
fn centred(
    ctx: &mut Ctx,
    cx: &NodeCx,
    i: usize,
    z: usize,
    axis: Option<usize>,
    suffix: &str,
) -> NResult<Value> {
    let ty = ctx.ty(cx, i)?;
    if !matches!(ty.dtype, DType::I8 | DType::U8) {
        return Err(unsupported(format!(
            "input #{i} of type {}: nnac imports int8 and uint8 codes",
            ty.dtype
        )));
    }
    let zero_points = match ctx.opt_const(cx, z, "zero point")? {
        Some(t) => zero_point_values(t)?,
        None => vec![0],
    };
    let axis = if zero_points.len() > 1 { axis } else { None };
    let q = QdqAttrs {
        axis,
        scales: vec![1.0; zero_points.len()],
        zero_points,
        dtype: ty.dtype,
    };
    q.check(&ty.shape).map_err(invalid)?;
    let x = ctx.value(cx, i)?;
    ctx.add(cx, suffix, Op::Dequantize(q), &[x])
}

/// `Quantize` of `v` with the parameters at slots `sz` as the node's output.
fn requantized(ctx: &mut Ctx, cx: &NodeCx, v: Value, sz: (usize, usize)) -> NResult<Vec<Out>> {
    let shape = ctx.graph.value_type(v).shape.clone();
    let q = params(ctx, cx, sz, &shape, None, None)?;
    if q.axis.is_some() || q.dtype == DType::I32 {
        return Err(unsupported(
            "per-axis or int32 output quantization of a QOperator op",
        ));
    }
    one(ctx.add(cx, "", Op::Quantize(q), &[v])?)
}

/// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B).
pub fn qlinear_conv(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let attrs = conv_attrs(ctx, cx, 0, 3)?;
    let (x, xq) = dequantized(ctx, cx, 0, (1, 2), None, "x")?;
    let (w, wq) = dequantized(ctx, cx, 3, (4, 5), Some(0), "w")?;
    if xq.axis.is_some() {
        return Err(unsupported("per-axis quantization of a QLinearConv input"));
    }
    let mut ins = vec![x, w];
    if cx.has_input(8) {
        // The int32 bias is in units of x_scale * w_scale (per output channel).
        let scales: Vec<f32> = wq.scales.iter().map(|&s| xq.scales[0] * s).collect();
        let bq = QdqAttrs {
            axis: (scales.len() > 1).then_some(0),
            zero_points: vec![0; scales.len()],
            scales,
            dtype: DType::I32,
        };
        let ty = ctx.ty(cx, 8)?;
        if ty.dtype != DType::I32 || ty.shape.len() != 1 {
            return Err(invalid(format!("bias must be 1-D int32, found {ty}")));
        }
        bq.check(&ty.shape).map_err(invalid)?;
        let b = ctx.value(cx, 8)?;
        ins.push(ctx.add(cx, "b", Op::Dequantize(bq), &[b])?);
    }
    let y = ctx.add(cx, "conv", Op::Conv(attrs), &ins)?;
    requantized(ctx, cx, y, (6, 7))
}

/// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp).
pub fn qlinear_matmul(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (a, _) = dequantized(ctx, cx, 0, (1, 2), None, "a")?;
    let (b, _) = dequantized(ctx, cx, 3, (4, 5), Some(-1), "b")?;
    let y = ctx.add(cx, "matmul", Op::MatMul, &[a, b])?;
    requantized(ctx, cx, y, (6, 7))
}

/// ConvInteger(x, w, x_zp, w_zp): the int32 sums of centred products.
pub fn conv_integer(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let attrs = conv_attrs(ctx, cx, 0, 1)?;
    let x = centred(ctx, cx, 0, 2, None, "x")?;
    let w = centred(ctx, cx, 1, 3, Some(0), "w")?;
    one(ctx.add(cx, "", Op::Conv(attrs), &[x, w])?)
}

/// MatMulInteger(a, b, a_zp, b_zp): the int32 sums of centred products.
pub fn matmul_integer(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let rank_a = ctx.shape(cx, 0)?.len();
    let rank_b = ctx.shape(cx, 1)?.len();
    let a = centred(ctx, cx, 0, 2, rank_a.checked_sub(2), "a")?;
    let b = centred(ctx, cx, 1, 3, rank_b.checked_sub(1), "b")?;
    one(ctx.add(cx, "", Op::MatMul, &[a, b])?)
}
