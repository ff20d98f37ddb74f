//! The one place that calls the float reference interpreter (`nnac-interp`): whole
//! graphs (calibration, reports) and single ops (constant folding, host ops in the
//! quantized reference interpreter).

use crate::PassError;
use nnac_ir::{Graph, Op, Tensor, TensorType, Value};
use std::collections::BTreeMap;

/// One set of graph inputs, by input name (the interpreters' convention).
pub type Frame = BTreeMap<String, Tensor>;

/// Runs the float interpreter, calling `observe` with every value it computes.
pub fn run_observed(
    g: &Graph,
    inputs: &Frame,
    context: &str,
    observe: &mut dyn FnMut(Value, &Tensor),
) -> Result<BTreeMap<String, Tensor>, PassError> {
    nnac_interp::run_float_observed(g, inputs, observe).map_err(|e| PassError::Interp {
        context: context.to_string(),
        msg: e.to_string(),
    })
}

/// Evaluates one op on concrete operands (a one-node graph).
pub fn eval_op(op: &Op, operands: &[Tensor], context: &str) -> Result<Tensor, PassError> {
    let fail = |msg: String| PassError::Interp {
        context: context.to_string(),
        msg,
    };
    let mut g = Graph::new("eval_op");
    let mut feed = Frame::new();
    let mut ins = Vec::new();
    for (i, t) in operands.iter().enumerate() {
        let name = format!("in{i}");
        ins.push(g.add_input(name.clone(), TensorType::f32(t.shape.clone())));
        feed.insert(
            name,
            Tensor::f32(t.shape.clone(), t.to_f32_vec()).expect("same element count"),
        );
    }
    let node = g
        .add_node("op", op.clone(), &ins)
        .map_err(|e| fail(e.to_string()))?;
    g.add_output("out", Value::new(node, 0));
    let mut out = run_observed(&g, &feed, context, &mut |_, _| {})?;
    out.remove("out").ok_or_else(|| fail("no output".into()))
}
