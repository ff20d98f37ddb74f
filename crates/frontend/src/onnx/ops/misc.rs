//! Pad (constant mode; pads attribute before opset 11, inputs since, axes since 18),
//! Dropout (inference: an alias of its input) and Identity.

use super::{norm_axes, one, scalar_f32};
use crate::onnx::ctx::{invalid, unsupported, Ctx, NResult, NodeCx, Out};
use crate::onnx::fold::i64s;
use crate::onnx::limits::MAX_ATTR;
use nnac_ir::Op;

/// Only constant padding is supported.
pub fn check_pad(cx: &NodeCx) -> NResult<()> {
    match cx.attrs.string_or("mode", "constant")?.as_str() {
        "constant" => Ok(()),
        m => Err(unsupported(format!("mode '{m}' (only constant padding)"))),
    }
}

pub fn pad(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let rank = ctx.shape(cx, 0)?.len();
    let (given, value, axes): (Vec<i64>, f32, Vec<usize>) = if cx.opset < 11 {
        let pads = cx
            .attrs
            .ints("pads")?
            .ok_or_else(|| invalid("attribute 'pads' is required"))?
            .to_vec();
        (pads, cx.attrs.float_or("value", 0.0)?, (0..rank).collect())
    } else {
        let pads = i64s(ctx.const_input(cx, 1, "pads")?, "pads")?;
        let value = ctx
            .opt_const(cx, 2, "constant_value")?
            .filter(|t| t.numel() > 0)
            .map_or(Ok(0.0), |t| scalar_f32(t, "constant_value"))?;
        let axes = match ctx.opt_const(cx, 3, "axes")? {
            Some(t) => norm_axes(&i64s(t, "axes")?, rank)?,
            None => (0..rank).collect(),
        };
        (pads, value, axes)
    };
    if given.len() != 2 * axes.len() {
        return Err(invalid(format!(
            "{} pads for {} axes",
            given.len(),
            axes.len()
        )));
    }
    if given.iter().any(|&p| p < 0) {
        return Err(unsupported(format!("negative pads {given:?} (cropping)")));
    }
    if given.iter().any(|&p| p > MAX_ATTR) {
        return Err(invalid(format!("pads {given:?} are too large")));
    }
    let mut pads = vec![0usize; 2 * rank];
    let k = axes.len();
    for (j, &a) in axes.iter().enumerate() {
        pads[a] = given[j] as usize;
        pads[rank + a] = given[k + j] as usize;
    }
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", Op::Pad { pads, value }, &[x])?)
}

/// Dropout in inference is the identity; training mode is not supported. The mask
/// output is not produced (the driver marks it unavailable).
pub fn dropout(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    identity(ctx, cx)?;
    if cx.opset >= 12 && cx.has_input(2) {
        let training = ctx
            .opt_const(cx, 2, "training_mode")?
            .map(|t| t.to_f32_vec());
        if training.is_some_and(|v| v.iter().any(|&x| x != 0.0)) {
            return Err(unsupported("training_mode = true"));
        }
    }
    Ok(vec![Out::Input(0)])
}

pub fn identity(_ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    if !cx.has_input(0) {
        return Err(invalid("missing input #0"));
    }
    Ok(vec![Out::Input(0)])
}
