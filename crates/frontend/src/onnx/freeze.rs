//! Turning graph inputs into constants: the ONNX backend node tests pass operands such
//! as `shape`, `axes`, `scales` or `pads` as graph inputs with test data; nnac needs
//! them constant. [`freeze_inputs`] rewrites a model so that chosen inputs become
//! initializers holding the given tensors.

use crate::proto::onnx::TensorProto;
use crate::ImportError;
use prost::bytes::Bytes;
use prost::Message;
use std::path::Path;

/// Returns `model` (serialized) with each named graph input bound to a serialized
/// `TensorProto` (as stored in a node test's `input_N.pb`). `name` labels the model in
/// errors.
pub fn freeze_inputs(
    model: &[u8],
    name: &str,
    frozen: &[(&str, &[u8])],
) -> Result<Vec<u8>, ImportError> {
    let malformed = |msg: String| ImportError::Malformed {
        path: Path::new(name).to_path_buf(),
        msg,
    };
    let mut m = super::model::decode(Bytes::copy_from_slice(model), Path::new(name))?;
    let g = m
        .graph
        .as_mut()
        .ok_or_else(|| malformed("the model has no graph".into()))?;
    for (input, bytes) in frozen {
        if !g.input.iter().any(|i| i.name() == *input) {
            return Err(malformed(format!("no graph input named '{input}'")));
        }
        let mut t = TensorProto::decode(*bytes)
            .map_err(|e| malformed(format!("tensor for '{input}': {e}")))?;
        t.name = Some(input.to_string());
        g.initializer.retain(|i| i.name() != *input);
        g.initializer.push(t);
    }
    Ok(m.encode_to_vec())
}
