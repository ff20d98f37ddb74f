//! Quantization a pre-quantized model (QDQ / QOperator ONNX) fixes: the activation
//! scales and zero points and the int8 weight scales of its QuantizeLinear /
//! DequantizeLinear pairs, which the quantizer honours instead of calibrating
//! (`absorb_qdq` collects them, `quant` applies them).

use nnac_ir::{DType, Quant};
use std::collections::BTreeMap;

/// A value's quantization given by the file, in the form the NNA stores: uint8 with
/// zero point 0, or int8 with a zero point (a uint8 zero point `z != 0` becomes int8
/// with `z - 128`: the same real values, codes shifted by 128).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FixedAct {
    #[serde(serialize_with = "ser_dtype")]
    pub dtype: DType,
    pub scale: f32,
    pub zero_point: i32,
    /// The file's codes minus the NNA's: 128 for a uint8 value stored as int8, else 0
    /// (what `--requant onnxruntime` needs to compute on ONNX Runtime's codes).
    #[serde(skip)]
    pub onnx_code_shift: i32,
}

fn ser_dtype<S: serde::Serializer>(d: &DType, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(d.name())
}

impl FixedAct {
    /// The NNA form of an ONNX per-tensor (`dtype`, `scale`, `zero_point`).
    pub fn from_onnx(dtype: DType, scale: f32, zero_point: i32) -> FixedAct {
        match (dtype, zero_point) {
            (DType::U8, 0) => FixedAct {
                dtype: DType::U8,
                scale,
                zero_point: 0,
                onnx_code_shift: 0,
            },
            (DType::U8, z) => FixedAct {
                dtype: DType::I8,
                scale,
                zero_point: z - 128,
                onnx_code_shift: 128,
            },
            (d, z) => FixedAct {
                dtype: d,
                scale,
                zero_point: z,
                onnx_code_shift: 0,
            },
        }
    }

    /// The IR quantization of the value.
    pub fn quant(&self) -> Quant {
        Quant::PerTensor {
            scale: self.scale,
            zero_point: self.zero_point,
        }
    }
}

/// Symmetric int8 weights from the file: one scale per index of `axis` of the
/// constant (the output channels once the dot is formed), or one for all (`None`).
#[derive(Clone, Debug, PartialEq)]
pub struct FixedWeights {
    pub axis: Option<usize>,
    pub scales: Vec<f32>,
}

/// Everything the file fixes, by original node name (the names calibration statistics
/// use): activations by the node producing the value, weights by their constant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FixedQuant {
    pub acts: BTreeMap<String, FixedAct>,
    pub weights: BTreeMap<String, FixedWeights>,
}

impl FixedQuant {
    pub fn is_empty(&self) -> bool {
        self.acts.is_empty() && self.weights.is_empty()
    }
}

/// Whether `g` carries its own quantization (QuantizeLinear / DequantizeLinear or
/// QOperator ops imported as `Quantize` / `Dequantize`): calibration frames are then
/// optional.
pub fn is_pre_quantized(g: &nnac_ir::Graph) -> bool {
    g.node_ids().into_iter().any(|n| {
        matches!(
            g.node(n).op,
            nnac_ir::Op::Quantize(_) | nnac_ir::Op::Dequantize(_)
        )
    })
}
