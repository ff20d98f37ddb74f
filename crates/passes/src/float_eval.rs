//! The one place that calls the float reference interpreter (`nnac-interp`): whole
//! graphs (calibration, reports) and single ops (constant folding, host ops in the
//! quantized reference interpreter).

use crate::PassError;
use nnac_ir::{Graph, Op, Tensor, Value};
use std::collections::BTreeMap;

pub use nnac_interp::Frame;

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

/// Evaluates one op on concrete operands (a one-node graph; `nnac_interp::host`).
pub fn eval_op(op: &Op, operands: &[Tensor], context: &str) -> Result<Tensor, PassError> {
    nnac_interp::host::eval_op(op, operands).map_err(|e| PassError::Interp {
        context: context.to_string(),
        msg: e.to_string(),
    })
}
