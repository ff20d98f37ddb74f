//! Folds per-channel constant Mul / Div / Add / Sub that follow a dot product (Conv,
//! ConvTranspose, normalized Gemm) with constant weights into its weights and bias.
//! Caffe's BatchNorm + Scale and ONNX BatchNormalization arrive here as Mul + Add.
//! A dot product whose output a pre-quantized file rounds (`PassCtx::file_rounds`)
//! keeps the following op apart, so that the rounding between them stays.

use crate::channels::WeightChannels;
use crate::util::{
    add_const, bypass, const_f32, dot_out_channels, is_const_dot, per_channel_const, single_user,
};
use crate::{PassCtx, PassError};
use nnac_ir::{BinaryOp, Graph, NodeId, Op, Tensor, TensorData, Value};

pub fn fold_scale_bias(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("fold_scale_bias", &e.node, e.msg))?;
    for id in order {
        if !g.contains(id) {
            continue;
        }
        let Some((dot, k, per_ch)) = match_foldable(g, id) else {
            continue;
        };
        if ctx.file_rounds(&g.node(dot).name) {
            // A pre-quantized file rounds the dot's output before this op.
            continue;
        }
        let (mul, add) = match k {
            BinaryOp::Mul => (per_ch, None),
            BinaryOp::Div => (per_ch.iter().map(|s| 1.0 / s).collect(), None),
            BinaryOp::Add => (vec![], Some(per_ch)),
            BinaryOp::Sub => (vec![], Some(per_ch.iter().map(|s| -s).collect())),
            _ => continue,
        };
        apply(g, dot, &mul, add.as_deref());
        let name = g.node(id).name.clone();
        let dot_name = g.node(dot).name.clone();
        bypass(g, id, Value::new(dot, 0));
        ctx.note(
            &name,
            format!("per-channel {} folded into '{dot_name}'", k.mnemonic()),
        );
    }
    g.remove_dead();
    Ok(())
}

/// `id` is `x (op) c` with per-channel constant `c` and `x` from a foldable dot.
fn match_foldable(g: &Graph, id: NodeId) -> Option<(NodeId, BinaryOp, Vec<f32>)> {
    let Op::Binary(k) = g.node(id).op else {
        return None;
    };
    let ins = g.node_inputs(id);
    let (x, c) = if g.const_of(ins[1]).is_some() {
        (ins[0], ins[1])
    } else if matches!(k, BinaryOp::Mul | BinaryOp::Add) && g.const_of(ins[0]).is_some() {
        (ins[1], ins[0])
    } else {
        return None;
    };
    let shape = &g.value_type(x).shape;
    if g.node(id).outputs[0].shape != *shape || !is_const_dot(g, x.node) || single_user(g, x)? != id
    {
        return None;
    }
    let per_ch = per_channel_const(g, c, shape)?;
    if k == BinaryOp::Div && per_ch.contains(&0.0) {
        return None;
    }
    Some((x.node, k, per_ch))
}

/// Rewrites the dot's weights (`w *= mul[c]`) and bias (`b = b * mul[c] + add[c]`).
/// The weights are scaled in place when the dot is their only user (the old constant
/// node is left empty and dropped as dead), else copied.
fn apply(g: &mut Graph, dot: NodeId, mul: &[f32], add: Option<&[f32]>) {
    let ins = g.node_inputs(dot);
    let op = g.node(dot).op.clone();
    let name = g.node(dot).name.clone();
    let shape = g.const_of(ins[1]).expect("const dot").shape.clone();
    let m = dot_out_channels(&op, &shape).expect("dot op");
    let mut bias = ins
        .get(2)
        .and_then(|&b| const_f32(g, b))
        .unwrap_or_else(|| vec![0.0; m]);
    let mut new_ins = vec![ins[0], ins[1]];
    if !mul.is_empty() {
        let mut w = match g.take_constant(ins[1], dot) {
            Some(Tensor {
                data: TensorData::F32(w),
                ..
            }) => w,
            Some(t) => t.to_f32_vec(),
            None => g.const_of(ins[1]).expect("const dot").to_f32_vec(),
        };
        WeightChannels::of(&op, &shape)
            .expect("dot op")
            .scale_in_place(&mut w, mul);
        new_ins[1] = add_const(
            g,
            &name,
            "weight",
            Tensor::f32(shape, w).expect("same shape"),
        );
        bias.iter_mut().zip(mul).for_each(|(b, s)| *b *= s);
    }
    if let Some(add) = add {
        bias.iter_mut().zip(add).for_each(|(b, a)| *b += a);
    }
    new_ins.push(add_const(
        g,
        &name,
        "bias",
        Tensor::f32(vec![m], bias).expect("m elements"),
    ));
    g.set_node_inputs(dot, &new_ins);
}
