//! Eltwise: SUM (optionally with one coefficient per bottom), PROD or MAX of
//! same-shaped bottoms, lowered to a chain of IR binary ops. A coefficient of 1 adds, -1
//! subtracts, any other value scales the bottom first (IR Power with power 1). The last
//! op of the chain carries the layer's name.

use crate::caffe::error::LayerError;
use crate::caffe::layer::Layer;
use crate::proto::caffe::eltwise_parameter::EltwiseOp;
use nnac_ir::{BinaryOp, Graph, Op, Value};

pub(in crate::caffe) fn eltwise(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, usize::MAX)?;
    let p = l.param.eltwise_param.clone().unwrap_or_default();
    let raw = p.operation.unwrap_or(EltwiseOp::Sum as i32);
    let op = EltwiseOp::try_from(raw)
        .map_err(|_| l.invalid(format!("unknown eltwise operation {raw}")))?;
    let n = l.bottoms.len();
    if !p.coeff.is_empty() && (op != EltwiseOp::Sum || p.coeff.len() != n) {
        return Err(l.invalid(format!(
            "{} coefficient(s) for {n} bottoms of a {} (only SUM takes one per bottom)",
            p.coeff.len(),
            op.as_str_name()
        )));
    }
    let x = l.shape(g, 0);
    if let Some(i) = (1..n).find(|&i| l.shape(g, i) != x) {
        return Err(l.invalid(format!(
            "bottom {i} has shape {:?}, bottom 0 has {x:?}",
            l.shape(g, i)
        )));
    }
    let coeff = |i: usize| p.coeff.get(i).copied().unwrap_or(1.0);
    let mut acc = scaled(g, l, 0, coeff(0))?;
    for i in 1..n {
        let (bop, operand) = match (op, coeff(i)) {
            (EltwiseOp::Prod, _) => (BinaryOp::Mul, l.bottoms[i]),
            (EltwiseOp::Max, _) => (BinaryOp::Max, l.bottoms[i]),
            (EltwiseOp::Sum, -1.0) => (BinaryOp::Sub, l.bottoms[i]),
            (EltwiseOp::Sum, c) => (BinaryOp::Add, scaled(g, l, i, c)?),
        };
        let inputs = [acc, operand];
        acc = if i + 1 == n {
            l.node(g, Op::Binary(bop), &inputs)?
        } else {
            l.helper(
                g,
                &format!("{}{i}", bop.mnemonic()),
                Op::Binary(bop),
                &inputs,
            )?
        };
    }
    if n == 1 {
        acc = l.node(g, Op::Identity, &[acc])?;
    }
    Ok(vec![acc])
}

/// Bottom `i` times `c` (the bottom itself when `c` is 1).
fn scaled(g: &mut Graph, l: &Layer, i: usize, c: f32) -> Result<Value, LayerError> {
    if c == 1.0 {
        return Ok(l.bottoms[i]);
    }
    l.helper(
        g,
        &format!("coeff{i}"),
        Op::Power {
            power: 1.0,
            scale: c,
            shift: 0.0,
        },
        &[l.bottoms[i]],
    )
}
