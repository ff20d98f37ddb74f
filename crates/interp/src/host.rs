//! Host-op semantics, the one implementation shared by the quantized reference
//! interpreter (nnac-passes) and the simulator (nnac-runtime-sim): an op the NNA has
//! no instruction for runs on the CPU as "dequantize the 8-bit inputs with their
//! scale and zero point, run the float op with this crate's ONNX semantics, quantize
//! the result to the output type".
//!
//! Also the float <-> code conversions of the runtime (graph inputs and outputs).

use crate::{run_float, InterpError};
use nnac_ir::{DType, Graph, Op, Tensor, TensorType, Value};
use std::collections::BTreeMap;

/// Code range of an 8-bit dtype (`U8`: 0..=255, every other type: -128..=127).
pub fn code_range(d: DType) -> (i32, i32) {
    match d {
        DType::U8 => (0, 255),
        _ => (-128, 127),
    }
}

/// The one rule that turns a float into an 8-bit code, ONNX `QuantizeLinear`'s:
/// `saturate(round_half_to_even(x / scale) + zp)`, the division in float32 (as ONNX
/// Runtime computes it), saturated to the type's range ([`code_range`]). +inf and
/// -inf saturate to the range's ends; NaN gives `zp` (the code of 0.0: ONNX leaves
/// NaN undefined for integer types). docs/ISA.md ("Quantizing inputs") states it.
///
/// Used for every float -> code conversion at run time: program inputs (`nnac run`,
/// the simulator's callers), the quantized reference interpreter's graph inputs, and
/// the outputs of host ops.
pub fn quantize(x: f32, scale: f32, zp: i32, d: DType) -> i32 {
    let (lo, hi) = code_range(d);
    let q = x / scale;
    if q.is_nan() {
        return zp.clamp(lo, hi);
    }
    // Clamping before the conversion keeps `as i32` exact (and saturates infinities);
    // the bounds are integers, so clamping before or after the rounding is the same.
    let q = q
        .round_ties_even()
        .clamp((lo - zp) as f32, (hi - zp) as f32);
    q as i32 + zp
}

/// `(code - zp) * scale`.
pub fn dequantize(code: i32, scale: f32, zp: i32) -> f32 {
    (code - zp) as f32 * scale
}

/// The data of one host-op operand.
#[derive(Debug, Clone, PartialEq)]
pub enum HostData {
    /// Integer codes with their quantization (8-bit activations; integer constants
    /// use scale 1, zero point 0).
    Codes {
        codes: Vec<i32>,
        scale: f32,
        zero_point: i32,
    },
    /// Float values used as they are (float constants).
    F32(Vec<f32>),
}

/// One host-op operand: logical shape (row-major data) and data.
#[derive(Debug, Clone, PartialEq)]
pub struct HostInput {
    pub shape: Vec<usize>,
    pub data: HostData,
}

/// The quantization of a host op's output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostOutput {
    pub dtype: DType,
    pub scale: f32,
    pub zero_point: i32,
}

impl HostInput {
    /// The operand as an f32 tensor (codes dequantized).
    pub fn to_tensor(&self) -> Result<Tensor, InterpError> {
        let data = match &self.data {
            HostData::F32(v) => v.clone(),
            HostData::Codes {
                codes,
                scale,
                zero_point,
            } => codes
                .iter()
                .map(|&q| dequantize(q, *scale, *zero_point))
                .collect(),
        };
        let n = data.len();
        Tensor::f32(self.shape.clone(), data).ok_or_else(|| {
            InterpError::at(
                "",
                format!("operand of shape {:?} has {n} elements", self.shape),
            )
        })
    }
}

/// Evaluates one op on concrete f32 operands (a one-node graph through
/// [`run_float`], so shapes are inferred and checked exactly as in a whole graph).
pub fn eval_op(op: &Op, operands: &[Tensor]) -> Result<Tensor, InterpError> {
    let mut g = Graph::new("eval_op");
    let mut feed = BTreeMap::new();
    let mut ins = Vec::new();
    for (i, t) in operands.iter().enumerate() {
        let name = format!("in{i}");
        ins.push(g.add_input(name.clone(), TensorType::f32(t.shape.clone())));
        let data = Tensor::f32(t.shape.clone(), t.to_f32_vec())
            .ok_or_else(|| InterpError::at(&name, "element count does not match the shape"))?;
        feed.insert(name, data);
    }
    let node = match op {
        // A fused NNA op (a layer kept in float, `--float-layers`) declares its type.
        Op::Nna(n) => {
            let types: Vec<TensorType> = operands
                .iter()
                .map(|t| TensorType::f32(t.shape.clone()))
                .collect();
            let refs: Vec<&TensorType> = types.iter().collect();
            let shape = n
                .out_shape(&refs)
                .map_err(|e| InterpError::at("op", e.to_string()))?;
            g.add_node_typed("op", op.clone(), &ins, vec![TensorType::f32(shape)])
        }
        _ => g
            .add_node("op", op.clone(), &ins)
            .map_err(|e| InterpError::at("op", e.to_string()))?,
    };
    g.add_output("out", Value::new(node, 0));
    let mut out = run_float(&g, &feed)?;
    out.remove("out")
        .ok_or_else(|| InterpError::at("op", "no output"))
}

/// Whether the host runs op `op` (the simulator refuses a host-op record of any other):
/// a plain IR op, or a fused NNA compute op in float32 (a dot product, SCALE or ELTWISE
/// without requantization: a layer kept in float, `--float-layers`). Inputs,
/// constants and NNA ops that move codes are not host ops.
pub fn runs_on_host(op: &Op) -> bool {
    match op {
        Op::Input | Op::Constant(_) => false,
        Op::Nna(
            n @ (nnac_ir::NnaOp::Dot(_) | nnac_ir::NnaOp::Scale(_) | nnac_ir::NnaOp::Eltwise(_)),
        ) => n.epilogue().is_some_and(|e| e.requant.is_none()),
        Op::Nna(_) => false,
        _ => true,
    }
}

/// Runs host op `op` on `inputs` (codes dequantized) in float32, its result not
/// quantized: a layer kept in float whose output only other host ops read.
pub fn run_host_op_float(op: &Op, inputs: &[HostInput]) -> Result<Tensor, InterpError> {
    let operands = inputs
        .iter()
        .map(HostInput::to_tensor)
        .collect::<Result<Vec<_>, _>>()?;
    eval_op(op, &operands)
}

/// Runs host op `op`: dequantizes `inputs`, evaluates the op in float32 and returns
/// the output codes quantized to `out`, in row-major order of the output shape.
pub fn run_host_op(
    op: &Op,
    inputs: &[HostInput],
    out: &HostOutput,
) -> Result<(Vec<usize>, Vec<i32>), InterpError> {
    let t = run_host_op_float(op, inputs)?;
    let codes = t
        .to_f32_vec()
        .iter()
        .map(|&x| quantize(x, out.scale, out.zero_point, out.dtype))
        .collect();
    Ok((t.shape.clone(), codes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_rounds_half_to_even_and_saturates() {
        // Ties go to the even code: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2.
        assert_eq!(quantize(0.25, 0.5, 0, DType::I8), 0);
        assert_eq!(quantize(-0.25, 0.5, 0, DType::I8), 0);
        assert_eq!(quantize(0.75, 0.5, 0, DType::I8), 2);
        assert_eq!(quantize(-1.25, 0.5, 0, DType::I8), -2);
        assert_eq!(quantize(0.25f32.next_up(), 0.5, 0, DType::I8), 1);
        assert_eq!(quantize(1000.0, 0.5, 3, DType::I8), 127);
        assert_eq!(quantize(f32::INFINITY, 0.5, 3, DType::I8), 127);
        assert_eq!(quantize(f32::NEG_INFINITY, 0.5, 3, DType::U8), 0);
        assert_eq!(quantize(f32::from_bits(1), 1e-3, 5, DType::I8), 5);
        assert_eq!(quantize(-1.0, 0.5, 0, DType::U8), 0);
        assert_eq!(quantize(f32::NAN, 0.5, 7, DType::U8), 7);
        assert_eq!(dequantize(10, 0.5, 4), 3.0);
    }

    #[test]
    fn softmax_host_op_dequantizes_runs_and_quantizes() {
        let x = HostInput {
            shape: vec![1, 3],
            data: HostData::Codes {
                codes: vec![-2, 0, 2],
                scale: 0.5,
                zero_point: 0,
            },
        };
        let out = HostOutput {
            dtype: DType::U8,
            scale: 1.0 / 256.0,
            zero_point: 0,
        };
        let (shape, codes) = run_host_op(&Op::Softmax { axis: 1 }, &[x], &out).unwrap();
        assert_eq!(shape, vec![1, 3]);
        // softmax([-1, 0, 1]) = [0.0900, 0.2447, 0.6652] -> *256, rounded.
        assert_eq!(codes, vec![23, 63, 170]);
    }

    #[test]
    fn a_bad_operand_is_an_error() {
        let x = HostInput {
            shape: vec![2, 2],
            data: HostData::F32(vec![1.0]),
        };
        let out = HostOutput {
            dtype: DType::I8,
            scale: 1.0,
            zero_point: 0,
        };
        assert!(run_host_op(&Op::Identity, &[x], &out).is_err());
        let y = HostInput {
            shape: vec![1, 4],
            data: HostData::F32(vec![1.0; 4]),
        };
        assert!(run_host_op(
            &Op::Transpose {
                perm: vec![0, 1, 2]
            },
            &[y],
            &out
        )
        .is_err());
    }
}
