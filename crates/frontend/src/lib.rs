//! nnac's front ends: ONNX and Caffe importers lowering into the graph IR.
//!
//! Importers are the only code that knows a framework's protobuf; they map each
//! source op through a registry of small builder functions (one per op family) and
//! hand back a shape-inferred [`nnac_ir::Graph`]. Front ends never depend on back
//! ends.

// The module docs are the crate's code map: they link private items, so read them
// with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub mod caffe;
mod error;
pub mod onnx;
pub mod proto;

pub use error::{ImportError, Unsupported};

use nnac_ir::Graph;
use std::collections::BTreeMap;
use std::path::Path;

/// Options shared by every importer.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Concrete shapes for graph inputs with dynamic dimensions (`--input-shape`),
    /// by input name. The batch dimension is always fixed to 1.
    pub input_shapes: BTreeMap<String, Vec<usize>>,
}

/// The model formats nnac reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFormat {
    Onnx,
    Caffe,
}

impl ModelFormat {
    /// Guesses the format from a model path's extension (`.onnx`; `.prototxt`).
    pub fn from_path(path: &Path) -> Option<ModelFormat> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "onnx" => Some(ModelFormat::Onnx),
            "prototxt" | "pbtxt" => Some(ModelFormat::Caffe),
            _ => None,
        }
    }
}

/// Loads a model by its extension: ONNX (`weights` must be `None`; external data is
/// found next to the model) or Caffe (`.prototxt` with an optional `.caffemodel`).
pub fn load_model(
    path: &Path,
    weights: Option<&Path>,
    opts: &ImportOptions,
) -> Result<Graph, ImportError> {
    match ModelFormat::from_path(path) {
        Some(ModelFormat::Onnx) => {
            if let Some(w) = weights {
                return Err(ImportError::Usage(format!(
                    "--weights {} is for Caffe models; ONNX models carry their weights",
                    w.display()
                )));
            }
            onnx::import_file(path, opts)
        }
        Some(ModelFormat::Caffe) => caffe::import_files(path, weights, opts),
        None => Err(ImportError::Usage(format!(
            "cannot tell the format of '{}': expected a .onnx or .prototxt file",
            path.display()
        ))),
    }
}
