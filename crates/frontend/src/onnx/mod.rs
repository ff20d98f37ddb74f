//! ONNX importer: `ModelProto` (IR versions 3 to 14, default-domain opsets 7 to 27)
//! into the nnac graph IR.
//!
//! How a model is read:
//! 1. [`model`] decodes the protobuf and checks the IR version and opset imports.
//! 2. [`initializer`] turns every initializer (typed fields, `raw_data`, float16,
//!    float64, external data next to the model — see [`external`]) into an IR tensor.
//!    Initializers also listed as graph inputs (old IR versions) stay constants.
//! 3. [`inputs`] fixes the graph inputs' shapes (`ImportOptions::input_shapes`, batch
//!    dimension 1).
//! 4. [`import`] walks the nodes in order; each node goes through the builder the
//!    [`registry`] holds for its op type. Constants stay out of the graph until a
//!    runtime op consumes them, so the Shape/Gather/Slice/Concat/Cast chains exporters
//!    emit around Reshape fold away ([`fold`]).
//! 5. Every unsupported node or attribute is collected; the import fails with one
//!    [`ImportError::Unsupported`] listing all of them.
//!
//! Malformed input never panics: declared sizes are checked against the data before
//! anything is allocated, every shape is bounded ([`limits`]), and folding has a total
//! element budget.

mod attrs;
mod ctx;
mod dtype;
mod error;
mod external;
mod fold;
mod freeze;
mod import;
mod initializer;
mod inputs;
mod limits;
mod model;
mod ops;
mod padding;
mod registry;

use crate::{ImportError, ImportOptions};
use nnac_ir::Graph;
use prost::bytes::Bytes;
use std::path::Path;

pub use freeze::freeze_inputs;
pub use model::{MAX_IR_VERSION, MAX_OPSET, MIN_IR_VERSION, MIN_OPSET};
pub use registry::supported_op_types;

/// Imports the ONNX model at `path`. External data files are looked up relative to
/// the model's directory.
pub fn import_file(path: &Path, opts: &ImportOptions) -> Result<Graph, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    // The file's bytes are moved, not copied: the weights are decoded from them.
    import::import_model(Bytes::from(bytes), base, path, opts)
}

/// Imports an ONNX model from memory. `base_dir` is where external data files live
/// (models without external data may pass `None`); `name` names the model in errors
/// (a file name or any label).
pub fn import_bytes(
    bytes: &[u8],
    base_dir: Option<&Path>,
    name: &str,
    opts: &ImportOptions,
) -> Result<Graph, ImportError> {
    import::import_model(
        Bytes::copy_from_slice(bytes),
        base_dir,
        Path::new(name),
        opts,
    )
}
