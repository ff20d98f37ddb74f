//! Elementwise ops: activations (Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid,
//! HardSwish, Clip), PRelu, binary arithmetic with broadcasting, the n-ary Sum, Max,
//! Min and Mean (chains of binary ops), Pow with a constant exponent and the unary
//! ops that map onto `Power`. All fold when every input is a constant.

use super::{folded, one, scalar_f32};
use crate::onnx::ctx::{invalid, unsupported, Ctx, NResult, NodeCx, Out};
use crate::onnx::fold::{self, Bin, Un};
use nnac_ir::{Activation, BinaryOp, Op, Tensor};

fn act(ctx: &mut Ctx, cx: &NodeCx, a: Activation) -> NResult<Vec<Out>> {
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", Op::Act(a), &[x])?)
}

pub fn relu(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    act(ctx, cx, Activation::Relu)
}

pub fn sigmoid(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    act(ctx, cx, Activation::Sigmoid)
}

pub fn tanh(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    act(ctx, cx, Activation::Tanh)
}

pub fn hard_swish(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    act(ctx, cx, Activation::HardSwish)
}

pub fn leaky_relu(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let alpha = cx.attrs.float_or("alpha", 0.01)?;
    act(ctx, cx, Activation::LeakyRelu { alpha })
}

pub fn hard_sigmoid(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let alpha = cx.attrs.float_or("alpha", 0.2)?;
    let beta = cx.attrs.float_or("beta", 0.5)?;
    act(ctx, cx, Activation::HardSigmoid { alpha, beta })
}

/// Clip: bounds are attributes before opset 11 and optional constant inputs since.
pub fn clip(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (min, max) = if cx.opset < 11 {
        (
            cx.attrs.float_or("min", f32::NEG_INFINITY)?,
            cx.attrs.float_or("max", f32::INFINITY)?,
        )
    } else {
        let bound = |i: usize, what: &str, default: f32| -> NResult<f32> {
            ctx.opt_const(cx, i, what)?
                .map_or(Ok(default), |t| scalar_f32(t, what))
        };
        (
            bound(1, "min", f32::NEG_INFINITY)?,
            bound(2, "max", f32::INFINITY)?,
        )
    };
    act(ctx, cx, Activation::Clip { min, max })
}

/// PRelu. Before opset 7 a 1-D slope of size C is per channel (axis 1); it is
/// reshaped to `[C, 1, ...]` for numpy broadcasting.
pub fn prelu(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (xs, ss) = (ctx.shape(cx, 0)?, ctx.shape(cx, 1)?);
    let x = ctx.value(cx, 0)?;
    let slope = if cx.opset < 7 && xs.len() > 2 && ss.len() == 1 && ss[0] == xs[1] && ss[0] != 1 {
        let mut shape = ss;
        shape.extend(std::iter::repeat_n(1, xs.len() - 2));
        super::reshaped_input(ctx, cx, 1, shape, "slope")?
    } else {
        ctx.value(cx, 1)?
    };
    one(ctx.add(cx, "", Op::PRelu, &[x, slope])?)
}

/// Opset < 7 `broadcast = 1`: B matches a contiguous run of A's axes starting at
/// `axis` (default: A's trailing axes). Returns B's shape for numpy broadcasting.
fn legacy_broadcast_shape(ctx: &Ctx, cx: &NodeCx) -> NResult<Option<Vec<usize>>> {
    if cx.opset >= 7 || cx.attrs.int_or("broadcast", 0)? == 0 {
        return Ok(None);
    }
    let (ra, sb) = (ctx.shape(cx, 0)?.len(), ctx.shape(cx, 1)?);
    let axis = match cx.attrs.int("axis")? {
        Some(a) => super::norm_axis(a, ra)?,
        None => ra
            .checked_sub(sb.len())
            .ok_or_else(|| invalid("B has a higher rank than A"))?,
    };
    let trailing = ra.checked_sub(axis + sb.len()).ok_or_else(|| {
        invalid(format!(
            "B {sb:?} does not fit A's rank {ra} at axis {axis}"
        ))
    })?;
    let mut shape = sb;
    shape.extend(std::iter::repeat_n(1, trailing));
    Ok(Some(shape))
}

fn binary(ctx: &mut Ctx, cx: &NodeCx, op: BinaryOp, fop: Bin) -> NResult<Vec<Out>> {
    let b_shape = legacy_broadcast_shape(ctx, cx)?;
    if ctx.all_const(cx) {
        let (a, b) = (ctx.const_input(cx, 0, "A")?, ctx.const_input(cx, 1, "B")?);
        let reshaped = b_shape.map(|shape| Tensor {
            shape,
            data: b.data.clone(),
        });
        return folded(fold::binary(ctx, fop, a, reshaped.as_ref().unwrap_or(b))?);
    }
    let a = ctx.value(cx, 0)?;
    let b = match b_shape {
        Some(shape) => super::reshaped_input(ctx, cx, 1, shape, "broadcast")?,
        None => ctx.value(cx, 1)?,
    };
    one(ctx.add(cx, "", Op::Binary(op), &[a, b])?)
}

pub fn add(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    binary(ctx, cx, BinaryOp::Add, Bin::Add)
}

pub fn sub(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    binary(ctx, cx, BinaryOp::Sub, Bin::Sub)
}

pub fn mul(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    binary(ctx, cx, BinaryOp::Mul, Bin::Mul)
}

pub fn div(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    binary(ctx, cx, BinaryOp::Div, Bin::Div)
}

/// Sum/Max/Min/Mean of n inputs as a left-to-right chain of binary ops.
fn nary(ctx: &mut Ctx, cx: &NodeCx, op: BinaryOp, fop: Bin, mean: bool) -> NResult<Vec<Out>> {
    let k = cx.num_inputs();
    if k == 0 || (0..k).any(|i| !cx.has_input(i)) {
        return Err(invalid(format!(
            "{} needs one or more present inputs",
            cx.op_type()
        )));
    }
    if ctx.all_const(cx) {
        let mut acc = ctx.const_input(cx, 0, "data_0")?.clone();
        for i in 1..k {
            acc = fold::binary(ctx, fop, &acc, ctx.const_input(cx, i, "data")?)?;
        }
        if mean {
            acc = fold::binary(ctx, Bin::Div, &acc, &Tensor::scalar_f32(k as f32))?;
        }
        return folded(acc);
    }
    if k == 1 && !mean {
        return Ok(vec![Out::Input(0)]);
    }
    let mut acc = ctx.value(cx, 0)?;
    for i in 1..k {
        let v = ctx.value(cx, i)?;
        let suffix = if i == k - 1 && !mean {
            String::new()
        } else {
            format!("{i}")
        };
        acc = ctx.add(cx, &suffix, Op::Binary(op), &[acc, v])?;
    }
    if mean {
        let count = ctx.add_const(cx, "count", Tensor::scalar_f32(k as f32));
        acc = ctx.add(cx, "", Op::Binary(BinaryOp::Div), &[acc, count])?;
    }
    one(acc)
}

pub fn sum(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    nary(ctx, cx, BinaryOp::Add, Bin::Add, false)
}

pub fn max(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    nary(ctx, cx, BinaryOp::Max, Bin::Max, false)
}

pub fn min(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    nary(ctx, cx, BinaryOp::Min, Bin::Min, false)
}

pub fn mean(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    nary(ctx, cx, BinaryOp::Add, Bin::Add, true)
}

/// Pow: folded on constants; on a runtime base the exponent must be a constant scalar.
pub fn pow(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    if ctx.all_const(cx) {
        let (a, b) = (ctx.const_input(cx, 0, "X")?, ctx.const_input(cx, 1, "Y")?);
        return folded(fold::binary(ctx, Bin::Pow, a, b)?);
    }
    let power = scalar_f32(ctx.const_input(cx, 1, "Y")?, "exponent Y")?;
    power_op(ctx, cx, power, 1.0)
}

fn power_op(ctx: &mut Ctx, cx: &NodeCx, power: f32, scale: f32) -> NResult<Vec<Out>> {
    let x = ctx.value(cx, 0)?;
    one(ctx.add(
        cx,
        "",
        Op::Power {
            power,
            scale,
            shift: 0.0,
        },
        &[x],
    )?)
}

/// Unary ops: folded on constants; Sqrt, Reciprocal and Neg of runtime values map to
/// `Power`, the others are fold-only.
fn unary(ctx: &mut Ctx, cx: &NodeCx, op: Un) -> NResult<Vec<Out>> {
    if let Some(t) = ctx.konst(cx, 0) {
        return folded(fold::unary(ctx, op, t)?);
    }
    match op {
        Un::Sqrt => power_op(ctx, cx, 0.5, 1.0),
        Un::Reciprocal => power_op(ctx, cx, -1.0, 1.0),
        Un::Neg => power_op(ctx, cx, 1.0, -1.0),
        _ => Err(unsupported(format!(
            "{} of a runtime tensor (only constants are folded)",
            cx.op_type()
        ))),
    }
}

pub fn floor(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    unary(ctx, cx, Un::Floor)
}

pub fn ceil(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    unary(ctx, cx, Un::Ceil)
}

pub fn neg(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    unary(ctx, cx, Un::Neg)
}

pub fn abs(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    unary(ctx, cx, Un::Abs)
}

pub fn sqrt(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    unary(ctx, cx, Un::Sqrt)
}

pub fn reciprocal(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    unary(ctx, cx, Un::Reciprocal)
}

pub fn not(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    unary(ctx, cx, Un::Not)
}
