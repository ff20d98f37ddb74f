//! Small graph queries and rewrites shared by the passes.

use nnac_ir::{Graph, NodeId, Op, Tensor, Value};

/// A chain `Reshape -> Transpose -> Reshape` ending at a node, whose two
/// intermediate values have that one reader each (and are not graph outputs): the
/// form data movement takes in exported graphs (channel shuffle, depth-to-space).
pub struct ReshapeTransposeReshape<'g> {
    /// The first reshape's input.
    pub x: Value,
    /// The first reshape's target, the transpose's permutation, the final shape.
    pub split: &'g [usize],
    pub perm: &'g [usize],
    pub out: &'g [usize],
}

/// The chain ending at the reshape `r2`, if it is one.
pub fn reshape_transpose_reshape(g: &Graph, r2: NodeId) -> Option<ReshapeTransposeReshape<'_>> {
    let Op::Reshape { shape: out } = &g.node(r2).op else {
        return None;
    };
    let t = g.node_inputs(r2)[0];
    let Op::Transpose { perm } = &g.node(t.node).op else {
        return None;
    };
    single_user(g, t)?;
    let r1 = g.node_inputs(t.node)[0];
    let Op::Reshape { shape: split } = &g.node(r1.node).op else {
        return None;
    };
    single_user(g, r1)?;
    Some(ReshapeTransposeReshape {
        x: g.node_inputs(r1.node)[0],
        split,
        perm,
        out,
    })
}

/// Whether a pre-quantized file rounds a value strictly between `x` and `last` (the
/// gate of a hard-swish or SiLU, `x + 3`, the product before the division): the
/// file's roundings stay, so such a pattern keeps its ops (`PassCtx::file_rounds`).
pub fn rounds_inside(g: &Graph, ctx: &crate::PassCtx, x: Value, last: NodeId) -> bool {
    let mut stack = g.node_inputs(last);
    while let Some(v) = stack.pop() {
        if v == x || matches!(g.node(v.node).op, Op::Constant(_)) {
            continue;
        }
        if ctx.file_rounds(&g.node(v.node).name) {
            return true;
        }
        stack.extend(g.node_inputs(v.node));
    }
    false
}

/// The only consumer of `v`, if it has exactly one and is not a graph output.
pub fn single_user(g: &Graph, v: Value) -> Option<NodeId> {
    match g.users(v).as_slice() {
        [(n, _)] if !g.is_output(v) => Some(*n),
        _ => None,
    }
}

/// The f32 elements of a constant value.
pub fn const_f32(g: &Graph, v: Value) -> Option<Vec<f32>> {
    g.const_of(v).map(Tensor::to_f32_vec)
}

/// A constant that, broadcast against an activation of shape `x_shape`, varies only
/// along axis 1 (or is a scalar): its value per channel.
pub fn per_channel_const(g: &Graph, c: Value, x_shape: &[usize]) -> Option<Vec<f32>> {
    let t = g.const_of(c)?;
    let vals = t.to_f32_vec();
    let channels = *x_shape.get(1)?;
    if t.shape.len() > x_shape.len() {
        return None;
    }
    // Right-align the constant's shape with x's.
    let lead = x_shape.len() - t.shape.len();
    let mut along = None;
    for (i, &d) in t.shape.iter().enumerate() {
        if d != 1 {
            if i + lead != 1 || d != channels {
                return None;
            }
            along = Some(d);
        }
    }
    match along {
        Some(_) => Some(vals),
        None => Some(vec![vals[0]; channels]),
    }
}

/// Adds a constant node named after `owner` and returns its value.
pub fn add_const(g: &mut Graph, owner: &str, what: &str, t: Tensor) -> Value {
    let name = g.fresh_name(&format!("{owner}.{what}"));
    g.add_constant(name, t)
}

/// Removes `node` after its single output has been replaced by `by`.
pub fn bypass(g: &mut Graph, node: NodeId, by: Value) {
    g.replace_uses(Value::new(node, 0), by);
    g.remove_node(node);
}

/// Number of output channels of a dot-product op from its weight shape.
pub fn dot_out_channels(op: &Op, wshape: &[usize]) -> Option<usize> {
    match op {
        Op::Conv(_) => wshape.first().copied(),
        Op::ConvTranspose(a) => wshape.get(1).map(|m| m * a.group),
        Op::Gemm(a) if wshape.len() == 2 => Some(if a.trans_b { wshape[0] } else { wshape[1] }),
        _ => None,
    }
}

/// Whether `op` is a dot product whose weights (and bias, if any) are constants.
pub fn is_const_dot(g: &Graph, n: NodeId) -> bool {
    let node = g.node(n);
    let ins = g.node_inputs(n);
    let dot = match &node.op {
        Op::Conv(_) | Op::ConvTranspose(_) => true,
        Op::Gemm(a) => {
            a.alpha == 1.0 && a.beta == 1.0 && !a.trans_a && g.value_type(ins[0]).shape.len() == 2
        }
        _ => false,
    };
    dot && ins.iter().skip(1).all(|&v| g.const_of(v).is_some())
}
