//! Constant (value, value_float(s), value_int(s)) and ConstantOfShape: both produce
//! constants that enter the graph only when a runtime op consumes them.

use super::folded;
use crate::onnx::ctx::{invalid, unsupported, Ctx, NResult, NodeCx, NodeError, Out};
use crate::onnx::fold::i64s;
use crate::onnx::initializer::{tensor_from_proto, TensorError};
use crate::onnx::limits::dims_to_shape;
use crate::proto::onnx::TensorProto;
use nnac_ir::{Tensor, TensorData};

fn convert(t: &TensorProto, ctx: &Ctx) -> NResult<Tensor> {
    tensor_from_proto(t, ctx.base_dir.as_deref()).map_err(|e| match e {
        TensorError::Unsupported(r) => NodeError::Unsupported(r),
        TensorError::Invalid(m) => NodeError::Invalid(m),
    })
}

/// Sparse and string constants are not supported.
pub fn check_constant(cx: &NodeCx) -> NResult<()> {
    for a in ["sparse_value", "value_string", "value_strings"] {
        if cx.attrs.has(a) {
            return Err(unsupported(format!("attribute '{a}'")));
        }
    }
    Ok(())
}

pub fn constant(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let a = &cx.attrs;
    let mut found = Vec::new();
    if let Some(t) = a.tensor("value")? {
        found.push(convert(t, ctx)?);
    }
    if let Some(v) = a.float("value_float")? {
        found.push(Tensor::scalar_f32(v));
    }
    if let Some(v) = a.floats("value_floats")? {
        found.push(Tensor {
            shape: vec![v.len()],
            data: TensorData::F32(v.to_vec()),
        });
    }
    if let Some(v) = a.int("value_int")? {
        found.push(Tensor {
            shape: vec![],
            data: TensorData::I64(vec![v]),
        });
    }
    if let Some(v) = a.ints("value_ints")? {
        found.push(Tensor {
            shape: vec![v.len()],
            data: TensorData::I64(v.to_vec()),
        });
    }
    match found.len() {
        1 => folded(found.pop().expect("one value")),
        n => Err(invalid(format!(
            "Constant needs exactly one value attribute, found {n}"
        ))),
    }
}

pub fn constant_of_shape(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let dims = i64s(ctx.const_input(cx, 0, "input")?, "shape")?;
    let shape = dims_to_shape(&dims).map_err(invalid)?;
    let value = match cx.attrs.tensor("value")? {
        Some(t) => convert(t, ctx)?,
        None => Tensor::scalar_f32(0.0),
    };
    if value.numel() != 1 {
        return Err(invalid(format!(
            "attribute 'value' must hold one element, found {}",
            value.numel()
        )));
    }
    let n = ctx.charge_shape(&shape)?;
    let data = match &value.data {
        TensorData::F32(v) => TensorData::F32(vec![v[0]; n]),
        TensorData::I8(v) => TensorData::I8(vec![v[0]; n]),
        TensorData::U8(v) => TensorData::U8(vec![v[0]; n]),
        TensorData::I32(v) => TensorData::I32(vec![v[0]; n]),
        TensorData::I64(v) => TensorData::I64(vec![v[0]; n]),
    };
    folded(Tensor { shape, data })
}
