//! Graph inputs: the deprecated net-level `input:` with `input_shape` or `input_dim`,
//! and `Input` layers. Shapes come from the model or from `--input-shape`; the batch
//! dimension is fixed to 1.

use crate::proto::caffe::{BlobShape, LayerParameter, NetParameter};
use crate::{ImportError, ImportOptions};
use nnac_ir::shape_str;

/// A graph input to declare: blob name and concrete shape.
pub(super) struct InputDecl {
    pub name: String,
    pub shape: Vec<usize>,
}

/// The inputs declared by `input:` fields of the net.
pub(super) fn net_inputs(
    net: &NetParameter,
    opts: &ImportOptions,
) -> Result<Vec<InputDecl>, ImportError> {
    let n = net.input.len();
    let dims: Vec<Option<Vec<i64>>> = if !net.input_shape.is_empty() {
        if net.input_shape.len() != n {
            return Err(invalid_net(format!(
                "{n} input(s) but {} input_shape(s)",
                net.input_shape.len()
            )));
        }
        net.input_shape
            .iter()
            .map(|s| Some(s.dim.clone()))
            .collect()
    } else if !net.input_dim.is_empty() {
        if net.input_dim.len() != 4 * n {
            return Err(invalid_net(format!(
                "{n} input(s) need {} input_dim values, got {}",
                4 * n,
                net.input_dim.len()
            )));
        }
        net.input_dim
            .chunks(4)
            .map(|c| Some(c.iter().map(|&d| i64::from(d)).collect()))
            .collect()
    } else {
        vec![None; n]
    };
    net.input
        .iter()
        .zip(dims)
        .map(|(name, d)| {
            Ok(InputDecl {
                name: name.clone(),
                shape: resolve(name, d.as_deref(), opts)?,
            })
        })
        .collect()
}

/// The inputs an `Input` layer declares: one shape for all tops, or one per top.
pub(super) fn layer_inputs(
    layer: &LayerParameter,
    opts: &ImportOptions,
) -> Result<Vec<InputDecl>, ImportError> {
    let shapes: &[BlobShape] = layer.input_param.as_ref().map_or(&[], |p| &p.shape);
    let tops = &layer.top;
    if shapes.len() > 1 && shapes.len() != tops.len() {
        return Err(ImportError::Invalid {
            node: layer.name().to_string(),
            msg: format!("{} input shapes for {} tops", shapes.len(), tops.len()),
        });
    }
    tops.iter()
        .enumerate()
        .map(|(i, name)| {
            let dims = shapes.get(i).or(shapes.first()).map(|s| s.dim.as_slice());
            Ok(InputDecl {
                name: name.clone(),
                shape: resolve(name, dims, opts)?,
            })
        })
        .collect()
}

/// The concrete shape of input `name`: `--input-shape` if given, else the model's
/// dims with the batch fixed to 1. Unknown or non-positive dims are dynamic.
fn resolve(
    name: &str,
    dims: Option<&[i64]>,
    opts: &ImportOptions,
) -> Result<Vec<usize>, ImportError> {
    if let Some(s) = opts.input_shapes.get(name) {
        return Ok(s.clone());
    }
    let dynamic = |shape: String| ImportError::DynamicInput {
        input: name.to_string(),
        shape,
    };
    let Some(dims) = dims else {
        return Err(dynamic("(not given)".into()));
    };
    let shape: Option<Vec<usize>> = dims
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            if i == 0 {
                Some(1)
            } else {
                usize::try_from(d).ok().filter(|&d| d > 0)
            }
        })
        .collect();
    let shape = shape.filter(|s| !s.is_empty()).ok_or_else(|| {
        let shown: Vec<String> = dims
            .iter()
            .map(|d| if *d > 0 { d.to_string() } else { "?".into() })
            .collect();
        dynamic(if shown.is_empty() {
            "(empty)".into()
        } else {
            shown.join("x")
        })
    })?;
    // Every later size computation multiplies dimensions: refuse absurd shapes here.
    if shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .is_none_or(|n| n > MAX_INPUT_ELEMENTS)
    {
        return Err(ImportError::Invalid {
            node: name.to_string(),
            msg: format!("input shape {} is too large", shape_str(&shape)),
        });
    }
    Ok(shape)
}

/// Inputs beyond 2^32 elements (16 GiB of f32) are certainly corrupt.
const MAX_INPUT_ELEMENTS: usize = 1 << 32;

fn invalid_net(msg: String) -> ImportError {
    ImportError::Invalid {
        node: "(net inputs)".into(),
        msg,
    }
}

/// Checks every `--input-shape` names a graph input.
pub(super) fn check_overrides(
    declared: &[String],
    opts: &ImportOptions,
) -> Result<(), ImportError> {
    for (name, shape) in &opts.input_shapes {
        if !declared.contains(name) {
            return Err(ImportError::Usage(format!(
                "--input-shape {name}={} names no input of the network (inputs: {})",
                shape_str(shape),
                declared.join(", ")
            )));
        }
    }
    Ok(())
}
