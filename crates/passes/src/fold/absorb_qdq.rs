//! Takes a pre-quantized model's quantization apart into a float graph plus the
//! parameters it fixes (`PassCtx::fixed`), which the quantizer then honours instead
//! of calibrating:
//!
//! - `Dequantize` of a constant (int8 weights, int32 biases) and `Quantize` ->
//!   `Dequantize` of a constant (fake-quantized float weights, as PyTorch exports
//!   them) become the float constant; symmetric int8 weights record their scales.
//! - `Quantize` -> `Dequantize` of a run-time value (a QDQ pair) disappears: the
//!   readers of the `Dequantize` read the value itself, whose quantization the pair
//!   fixes. Where the pair's range starts at 0 after a dot product or an addition
//!   (ONNX Runtime drops a ReLU there, the pair's saturation doing its work), a ReLU
//!   takes the pair's place, so that the float graph computes what the file does.
//!
//! A `Quantize` or `Dequantize` left after this (integer codes read by a float op,
//! a graph input or output of codes) is refused, naming it.

use crate::fixed::{FixedAct, FixedWeights};
use crate::float_eval::eval_op;
use crate::util::bypass;
use crate::{PassCtx, PassError};
use nnac_ir::{Activation, BinaryOp, DType, Graph, NodeId, Op, QdqAttrs, Tensor, Value};

const PASS: &str = "absorb_qdq";

pub fn absorb_qdq(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node(PASS, &e.node, e.msg))?;
    for id in order {
        if !g.contains(id) {
            continue;
        }
        match g.node(id).op.clone() {
            Op::Dequantize(q) => {
                let x = g.node_inputs(id)[0];
                if let Some(t) = g.const_of(x).cloned() {
                    fold_weights(g, ctx, id, &q, &t, &[])?;
                }
            }
            Op::Quantize(q) => absorb_pair(g, ctx, id, &q)?,
            _ => {}
        }
    }
    g.remove_dead();
    if let Some(id) = g
        .node_ids()
        .into_iter()
        .find(|&n| matches!(g.node(n).op, Op::Quantize(_) | Op::Dequantize(_)))
    {
        let node = g.node(id);
        return Err(PassError::node(
            PASS,
            &node.name,
            format!(
                "{} of {} is not part of a QuantizeLinear -> DequantizeLinear pair or of \
                 constant weights: nnac compiles the float ops of a QDQ model on int8 \
                 codes it chooses itself, not integer tensors in the graph",
                node.op.mnemonic(),
                g.value_type(g.node_inputs(id)[0])
            ),
        ));
    }
    Ok(())
}

/// Replaces `id` (a `Dequantize` of constant codes `t`, or with `pre` a `Quantize`
/// of float constants followed by it) by the float constant, recording the weights'
/// scales when they are symmetric int8.
fn fold_weights(
    g: &mut Graph,
    ctx: &mut PassCtx,
    id: NodeId,
    q: &QdqAttrs,
    t: &Tensor,
    pre: &[NodeId],
) -> Result<(), PassError> {
    let name = g.node(id).name.clone();
    let what = format!("dequantizing the constant of '{name}'");
    let vals = eval_op(&Op::Dequantize(q.clone()), std::slice::from_ref(t), &what)?;
    let c = g.add_constant(g.fresh_name(&format!("{name}.w")), vals);
    bypass(g, id, c);
    for &p in pre {
        if g.contains(p) && g.users(Value::new(p, 0)).is_empty() && !g.is_output(Value::new(p, 0)) {
            g.remove_node(p);
        }
    }
    let symmetric = q.dtype == DType::I8 && q.zero_points.iter().all(|&z| z == 0);
    if symmetric {
        let cname = g.node(c.node).name.clone();
        ctx.fixed.weights.insert(
            cname,
            FixedWeights {
                axis: q.axis,
                scales: q.scales.clone(),
            },
        );
        ctx.note(&name, "weights keep the file's int8 codes and scales");
    } else if q.dtype != DType::I32 {
        ctx.note(
            &name,
            format!(
                "asymmetric {} weights: dequantized, requantized symmetric per channel",
                q.dtype
            ),
        );
    }
    Ok(())
}

/// Ops after which an ONNX Runtime QDQ export leaves out a ReLU the pair's range
/// implies.
fn fuses_relu(op: &Op) -> bool {
    matches!(
        op,
        Op::Conv(_) | Op::ConvTranspose(_) | Op::Gemm(_) | Op::MatMul | Op::Binary(BinaryOp::Add)
    )
}

/// Removes the `Quantize` node `id` and the `Dequantize` nodes with the same
/// parameters reading it.
fn absorb_pair(
    g: &mut Graph,
    ctx: &mut PassCtx,
    id: NodeId,
    q: &QdqAttrs,
) -> Result<(), PassError> {
    let qv = Value::new(id, 0);
    let dqs: Vec<NodeId> = g
        .users(qv)
        .into_iter()
        .map(|(u, _)| u)
        .filter(|&u| matches!(&g.node(u).op, Op::Dequantize(d) if d == q))
        .collect();
    if dqs.is_empty() {
        return Ok(());
    }
    let x = g.node_inputs(id)[0];
    let name = g.node(id).name.clone();
    if let Some(t) = g.const_of(x).cloned() {
        // Fake-quantized float weights: their grid values, then as int8 weights.
        let what = format!("quantizing the constant of '{name}'");
        let codes = eval_op(&Op::Quantize(q.clone()), &[t], &what)?;
        for d in dqs {
            fold_weights(g, ctx, d, q, &codes, &[id])?;
        }
        return Ok(());
    }
    let mut x_new = x;
    if q.axis.is_none() {
        let fixed = FixedAct::from_onnx(q.dtype, q.scales[0], q.zero_points[0]);
        let from_zero = match fixed.dtype {
            DType::U8 => true,
            _ => fixed.zero_point == -128,
        };
        let producer = &g.node(x.node);
        let key = if from_zero && fuses_relu(&producer.op) {
            let relu = g.fresh_name(&format!("{name}.relu"));
            let r = g
                .add_node(relu.clone(), Op::Act(Activation::Relu), &[x])
                .map_err(|e| PassError::node(PASS, &name, e.msg))?;
            x_new = Value::new(r, 0);
            relu
        } else {
            producer.name.clone()
        };
        match ctx.fixed.acts.get(&key) {
            Some(f) if *f != fixed => ctx.note(
                &name,
                format!("value '{key}' has two quantizations in the file; the first is kept"),
            ),
            _ => {
                ctx.note(
                    &name,
                    format!(
                        "fixes '{key}': {} scale {:e} zero point {}",
                        fixed.dtype, fixed.scale, fixed.zero_point
                    ),
                );
                ctx.fixed.acts.insert(key, fixed);
            }
        }
    } else {
        ctx.note(
            &name,
            "per-axis activation quantization: the NNA has one scale per tensor; calibrated",
        );
    }
    for d in dqs {
        bypass(g, d, x_new);
    }
    if g.users(qv).is_empty() && !g.is_output(qv) {
        g.remove_node(id);
    }
    Ok(())
}
