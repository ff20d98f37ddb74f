//! The builders, one file per op family. Each builder reads its node's attributes and
//! inputs through [`Ctx`]/[`NodeCx`], folds when every input is a constant and the op
//! is a folding op, and otherwise adds IR nodes (named after the ONNX node).

pub mod constant;
pub mod conv;
pub mod elementwise;
pub mod folding;
pub mod linear;
pub mod misc;
pub mod norm;
pub mod pool;
pub mod quant;
pub mod resize;
pub mod shape;

use super::ctx::{invalid, Ctx, NResult, NodeCx, Out};
use super::limits::MAX_RANK;
use nnac_ir::{Op, Tensor, Value};

/// Input `i` with a new shape (same element count): a reshaped constant when it is
/// one, else an IR `Reshape` named `<node>/<suffix>`.
pub fn reshaped_input(
    ctx: &mut Ctx,
    cx: &NodeCx,
    i: usize,
    shape: Vec<usize>,
    suffix: &str,
) -> NResult<Value> {
    if let Some(t) = ctx.konst(cx, i) {
        ctx.charge_shape(&shape)?;
        let t = Tensor::new(shape, t.data.clone())
            .ok_or_else(|| invalid("reshape changes the element count"))?;
        return Ok(ctx.add_const(cx, suffix, t));
    }
    let v = ctx.value(cx, i)?;
    ctx.add(cx, suffix, Op::Reshape { shape }, &[v])
}

/// Normalises a possibly negative axis for a tensor of rank `rank`.
pub fn norm_axis(axis: i64, rank: usize) -> NResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(invalid(format!(
            "axis {axis} is out of range for rank {rank}"
        )));
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// Normalises a list of axes; duplicates are an error.
pub fn norm_axes(axes: &[i64], rank: usize) -> NResult<Vec<usize>> {
    if axes.len() > MAX_RANK {
        return Err(invalid(format!(
            "{} axes exceed the rank limit {MAX_RANK}",
            axes.len()
        )));
    }
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let a = norm_axis(a, rank)?;
        if out.contains(&a) {
            return Err(invalid(format!("axis {a} is repeated in {axes:?}")));
        }
        out.push(a);
    }
    Ok(out)
}

/// A single IR value as the node's only output.
pub fn one(v: Value) -> NResult<Vec<Out>> {
    Ok(vec![Out::Value(v)])
}

/// A single folded constant as the node's only output.
pub fn folded(t: Tensor) -> NResult<Vec<Out>> {
    Ok(vec![Out::Const(t)])
}

/// The value of a one-element constant as f32.
pub fn scalar_f32(t: &Tensor, what: &str) -> NResult<f32> {
    match t.to_f32_vec().as_slice() {
        [x] => Ok(*x),
        v => Err(invalid(format!(
            "{what} should hold one value, found {}",
            v.len()
        ))),
    }
}
