//! BatchNormalization (inference), LRN and Softmax (2-D coercion before opset 13).

use super::{norm_axis, one};
use crate::onnx::ctx::{invalid, unsupported, Ctx, NResult, NodeCx, Out};
use crate::onnx::limits::attr_size;
use nnac_ir::Op;

/// BatchNormalization attributes nnac cannot honour: per-activation statistics
/// (`spatial = 0`, opset < 9) and training mode.
pub fn check_batch_norm(cx: &NodeCx) -> NResult<()> {
    if cx.attrs.int_or("spatial", 1)? == 0 {
        return Err(unsupported("spatial = 0 (per-activation statistics)"));
    }
    if cx.attrs.int_or("training_mode", 0)? != 0 {
        return Err(unsupported("training_mode = 1"));
    }
    Ok(())
}

pub fn batch_norm(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let epsilon = cx.attrs.float_or("epsilon", 1e-5)?;
    let ins = (0..5)
        .map(|i| ctx.value(cx, i))
        .collect::<NResult<Vec<_>>>()?;
    one(ctx.add(cx, "", Op::BatchNorm { epsilon }, &ins)?)
}

pub fn lrn(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let size = cx
        .attrs
        .int("size")?
        .ok_or_else(|| invalid("attribute 'size' is required"))?;
    let op = Op::Lrn {
        size: attr_size(size, 1, "size").map_err(invalid)?,
        alpha: cx.attrs.float_or("alpha", 1e-4)?,
        beta: cx.attrs.float_or("beta", 0.75)?,
        bias: cx.attrs.float_or("bias", 1.0)?,
    };
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", op, &[x])?)
}

/// Softmax along `axis`. Before opset 13 the input is coerced to 2-D
/// `[prod(d[..axis]), prod(d[axis..])]`: lowered as Reshape + Softmax + Reshape unless
/// every dimension after `axis` is 1.
pub fn softmax(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let shape = ctx.shape(cx, 0)?;
    if shape.is_empty() {
        return Err(invalid("softmax of a scalar"));
    }
    let default = if cx.opset < 13 { 1 } else { -1 };
    let axis = norm_axis(cx.attrs.int_or("axis", default)?, shape.len())?;
    let x = ctx.value(cx, 0)?;
    if cx.opset >= 13 || shape[axis + 1..].iter().all(|&d| d == 1) {
        return one(ctx.add(cx, "", Op::Softmax { axis }, &[x])?);
    }
    let flat = vec![
        shape[..axis].iter().product(),
        shape[axis..].iter().product(),
    ];
    let x2 = ctx.add(cx, "flatten", Op::Reshape { shape: flat }, &[x])?;
    let s = ctx.add(cx, "softmax", Op::Softmax { axis: 1 }, &[x2])?;
    one(ctx.add(cx, "", Op::Reshape { shape }, &[s])?)
}
