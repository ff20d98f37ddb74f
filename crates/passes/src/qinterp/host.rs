//! Host ops: the runtime dequantizes the 8-bit inputs, runs the float op on the CPU
//! (the float reference interpreter's semantics) and quantizes the result to the
//! op's output type.

use super::QVal;
use crate::float_eval::eval_op;
use crate::quant::params::{dequantize, quantize, scale_zp};
use crate::PassError;
use nnac_ir::{Graph, NodeId, Op, Tensor};
use std::collections::BTreeMap;

pub fn run(
    g: &Graph,
    id: NodeId,
    op: &Op,
    vals: &BTreeMap<NodeId, QVal>,
) -> Result<Vec<i32>, PassError> {
    let node = g.node(id);
    let operands: Vec<Tensor> = g
        .node_inputs(id)
        .iter()
        .map(|v| {
            let t = g.value_type(*v);
            let data = match &vals[&v.node] {
                QVal::F32(f) => f.clone(),
                QVal::Codes(c) => {
                    let (s, zp) = scale_zp(t);
                    c.iter().map(|&q| dequantize(q, s, zp)).collect()
                }
            };
            Tensor::f32(t.shape.clone(), data).expect("shape")
        })
        .collect();
    let out = eval_op(op, &operands, &format!("host op '{}'", node.name))?;
    let t = &node.outputs[0];
    let (s, zp) = scale_zp(t);
    Ok(out
        .to_f32_vec()
        .iter()
        .map(|&x| quantize(x, s, zp, t.dtype))
        .collect())
}
