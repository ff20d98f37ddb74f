//! Host ops: the runtime dequantizes the 8-bit inputs, runs the float op on the CPU
//! (the float reference interpreter's semantics) and quantizes the result to the
//! op's output type. The semantics are `nnac_interp::host::run_host_op`, shared with
//! the simulator; this file only gathers the operands.

use super::QVal;
use crate::scale_zp;
use crate::QError;
use nnac_interp::host::{run_host_op, HostData, HostInput, HostOutput};
use nnac_ir::{Graph, NodeId, Op};
use std::collections::BTreeMap;

pub fn run(g: &Graph, id: NodeId, op: &Op, vals: &BTreeMap<NodeId, QVal>) -> Result<QVal, QError> {
    let node = g.node(id);
    let inputs: Vec<HostInput> = g
        .node_inputs(id)
        .iter()
        .map(|v| {
            let t = g.value_type(*v);
            let data = match &vals[&v.node] {
                QVal::F32(f) => HostData::F32(f.clone()),
                QVal::Codes(c) => {
                    let (scale, zero_point) = scale_zp(t);
                    HostData::Codes {
                        codes: c.clone(),
                        scale,
                        zero_point,
                    }
                }
            };
            HostInput {
                shape: t.shape.clone(),
                data,
            }
        })
        .collect();
    let t = &node.outputs[0];
    let fail = |e: nnac_interp::InterpError| QError::HostOp {
        node: node.name.clone(),
        msg: e.to_string(),
    };
    // A float layer's result that only host ops read stays float32.
    if t.dtype == nnac_ir::DType::F32 {
        let out = nnac_interp::host::run_host_op_float(op, &inputs).map_err(fail)?;
        return Ok(QVal::F32(out.to_f32_vec()));
    }
    let (scale, zero_point) = scale_zp(t);
    let out = HostOutput {
        dtype: t.dtype,
        scale,
        zero_point,
    };
    let (_, codes) = run_host_op(op, &inputs, &out).map_err(fail)?;
    Ok(QVal::Codes(codes))
}
