//! Graph inputs: their element type and a concrete shape. A dynamic dimension
//! (symbolic, 0, negative or missing) is fixed by `ImportOptions::input_shapes`; without
//! it, a dynamic batch dimension (axis 0) becomes 1 and any other dynamic dimension is
//! an [`ImportError::DynamicInput`].

use super::ctx::{Ctx, Slot};
use super::dtype;
use super::error::UnsupportedInput;
use super::limits::checked_numel;
use crate::proto::onnx::tensor_shape_proto::dimension::Value as Dim;
use crate::proto::onnx::{type_proto, ValueInfoProto};
use crate::{ImportError, ImportOptions, Unsupported};
use nnac_ir::TensorType;
use std::collections::BTreeSet;

/// One dimension as the model declares it: a size, or a dynamic dimension with its
/// symbolic name (empty if none).
enum Declared {
    Fixed(usize),
    Dynamic(String),
}

/// Adds every graph input that is not an initializer. Inputs of a type nnac cannot
/// handle are returned (and left out of the graph).
pub fn add_inputs(
    ctx: &mut Ctx,
    inputs: &[ValueInfoProto],
    initializers: &BTreeSet<String>,
    opts: &ImportOptions,
) -> Result<Vec<Unsupported>, ImportError> {
    let mut unsupported = Vec::new();
    let real: Vec<&ValueInfoProto> = inputs
        .iter()
        .filter(|i| !initializers.contains(i.name()))
        .collect();
    for name in opts.input_shapes.keys() {
        if !real.iter().any(|i| i.name() == name) {
            let names: Vec<&str> = real.iter().map(|i| i.name()).collect();
            return Err(ImportError::Usage(format!(
                "--input-shape names '{name}', but the model's inputs are {names:?}"
            )));
        }
    }
    for vi in real {
        match input_type(vi, opts)? {
            Ok(ty) => {
                let node = ctx.fresh(vi.name());
                let v = ctx.graph.add_input(node, ty);
                ctx.set(vi.name(), Slot::Graph(v));
            }
            Err(reason) => {
                let u = Unsupported {
                    node: vi.name().into(),
                    op_type: "graph input".into(),
                    opset: 0,
                    reason: reason.to_string(),
                };
                unsupported.push(u.clone());
                ctx.set(vi.name(), Slot::Unavailable(u));
            }
        }
    }
    Ok(unsupported)
}

/// The IR type of one input; the inner `Err` is an unsupported-type reason.
fn input_type(
    vi: &ValueInfoProto,
    opts: &ImportOptions,
) -> Result<Result<TensorType, UnsupportedInput>, ImportError> {
    let name = vi.name();
    let Some(type_proto::Value::TensorType(t)) = vi.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        return Ok(Err(UnsupportedInput::NotTensor));
    };
    let Some(dt) = dtype::ir_dtype(t.elem_type()) else {
        return Ok(Err(UnsupportedInput::Dtype {
            dtype: dtype::name(t.elem_type()),
        }));
    };
    let declared: Option<Vec<Declared>> = t.shape.as_ref().map(|s| {
        s.dim
            .iter()
            .map(|d| match &d.value {
                Some(Dim::DimValue(v)) if *v > 0 => match usize::try_from(*v) {
                    Ok(v) => Declared::Fixed(v),
                    Err(_) => Declared::Dynamic(v.to_string()),
                },
                Some(Dim::DimParam(p)) => Declared::Dynamic(p.clone()),
                _ => Declared::Dynamic(String::new()),
            })
            .collect()
    });
    let shape = match (opts.input_shapes.get(name), declared) {
        (Some(given), Some(decl)) => check_given(name, given, &decl)?,
        (Some(given), None) => given.clone(),
        (None, Some(decl)) => fix_batch(name, &decl)?,
        (None, None) => {
            return Err(ImportError::DynamicInput {
                input: name.into(),
                shape: "of unknown rank".into(),
            });
        }
    };
    let numel = checked_numel(&shape).map_err(|e| ImportError::Invalid {
        node: name.into(),
        msg: e.to_string(),
    })?;
    if numel == 0 {
        return Ok(Err(UnsupportedInput::Empty { shape }));
    }
    Ok(Ok(TensorType::new(dt, shape)))
}

fn shape_text(decl: &[Declared]) -> String {
    let parts: Vec<String> = decl
        .iter()
        .map(|d| match d {
            Declared::Fixed(v) => v.to_string(),
            Declared::Dynamic(p) if p.is_empty() => "?".into(),
            Declared::Dynamic(p) => p.clone(),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// A user-given shape must have the declared rank and keep the declared sizes.
fn check_given(name: &str, given: &[usize], decl: &[Declared]) -> Result<Vec<usize>, ImportError> {
    let fits = given.len() == decl.len()
        && given.iter().zip(decl).all(|(g, d)| match d {
            Declared::Fixed(v) => g == v,
            Declared::Dynamic(_) => true,
        });
    if !fits {
        return Err(ImportError::Usage(format!(
            "--input-shape {name}={} does not fit the model's input shape {}",
            nnac_ir::shape_str(given),
            shape_text(decl)
        )));
    }
    Ok(given.to_vec())
}

fn fix_batch(name: &str, decl: &[Declared]) -> Result<Vec<usize>, ImportError> {
    decl.iter()
        .enumerate()
        .map(|(i, d)| match d {
            Declared::Fixed(v) => Ok(*v),
            Declared::Dynamic(_) if i == 0 => Ok(1),
            Declared::Dynamic(_) => Err(ImportError::DynamicInput {
                input: name.into(),
                shape: shape_text(decl),
            }),
        })
        .collect()
}
