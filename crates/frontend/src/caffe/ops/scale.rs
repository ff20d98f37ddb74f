//! Scale and Bias: multiply (add) the input by a tensor covering input axes
//! `[axis, axis + k)` — a learned blob (`num_axes` axes, -1 for all remaining) or the
//! second bottom (its own rank; rank 0 is a scalar). Lowered to IR Mul/Add with the
//! operand reshaped to `[d_axis, ..., 1, 1]` so numpy broadcasting lines it up.
//! Scale's `bias_term` adds a learned bias of the same shape after the product.

use crate::caffe::error::LayerError;
use crate::caffe::layer::Layer;
use nnac_ir::{BinaryOp, Graph, Op, Value};

/// Where the operand applies: its shape and its broadcastable form.
struct Span {
    shape: Vec<usize>,
    broadcast: Vec<usize>,
}

/// The operand's span for a learned blob (`num_axes`) or the second bottom.
fn span(g: &Graph, l: &Layer, axis: i32, num_axes: i32) -> Result<Span, LayerError> {
    let x = l.shape(g, 0);
    let r = x.len();
    let (start, shape) = if l.bottoms.len() == 2 {
        let s = l.shape(g, 1);
        if s.is_empty() {
            return Ok(Span {
                shape: s,
                broadcast: vec![],
            });
        }
        let a = l.axis(axis.into(), r, "axis")?;
        if x.get(a..a + s.len()) != Some(s.as_slice()) {
            return Err(l.invalid(format!(
                "second bottom {s:?} does not match input {x:?} from axis {a}"
            )));
        }
        (a, s)
    } else {
        let a = l.axis(axis.into(), r, "axis")?;
        let end = match num_axes {
            -1 => r,
            n if n >= 0 && a + n as usize <= r => a + n as usize,
            n => {
                return Err(l.invalid(format!(
                    "num_axes {n} does not fit a rank-{r} input from axis {a}"
                )))
            }
        };
        (a, x[a..end].to_vec())
    };
    let broadcast = if shape.is_empty() {
        vec![]
    } else {
        shape
            .iter()
            .copied()
            .chain(std::iter::repeat_n(1, r - start - shape.len()))
            .collect()
    };
    Ok(Span { shape, broadcast })
}

/// Learned blob `idx` as a broadcastable constant.
fn blob_operand(
    g: &mut Graph,
    l: &Layer,
    idx: usize,
    role: &str,
    s: &Span,
) -> Result<Value, LayerError> {
    let mut t = l.weight(idx, role, &s.shape)?;
    t.shape = s.broadcast.clone();
    Ok(l.constant(g, role, t))
}

pub(in crate::caffe) fn scale(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 2)?;
    let p = l.param.scale_param.clone().unwrap_or_default();
    let s = span(g, l, p.axis(), p.num_axes())?;
    let factor = if l.bottoms.len() == 2 {
        l.reshape_to(g, "scale_shape", l.bottoms[1], s.broadcast.clone())?
    } else {
        blob_operand(g, l, 0, "scale", &s)?
    };
    let mul = Op::Binary(BinaryOp::Mul);
    if !p.bias_term() {
        return Ok(vec![l.node(g, mul, &[l.x(), factor])?]);
    }
    let product = l.helper(g, "mul", mul, &[l.x(), factor])?;
    // The bias is the layer's blob after the scale blob, or its only blob.
    let bias_blob = if l.bottoms.len() == 2 { 0 } else { 1 };
    let bias = blob_operand(g, l, bias_blob, "bias", &s)?;
    Ok(vec![l.node(
        g,
        Op::Binary(BinaryOp::Add),
        &[product, bias],
    )?])
}

pub(in crate::caffe) fn bias(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 2)?;
    let p = l.param.bias_param.clone().unwrap_or_default();
    let s = span(g, l, p.axis(), p.num_axes())?;
    let term = if l.bottoms.len() == 2 {
        l.reshape_to(g, "bias_shape", l.bottoms[1], s.broadcast.clone())?
    } else {
        blob_operand(g, l, 0, "bias", &s)?
    };
    Ok(vec![l.node(
        g,
        Op::Binary(BinaryOp::Add),
        &[l.x(), term],
    )?])
}
