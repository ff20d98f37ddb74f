//! What a layer builder can fail with: the layer (or one of its parameter values) is
//! unsupported — collected with all others into one `ImportError::Unsupported` — or the
//! layer is invalid, which stops the import.

use crate::ImportError;
use nnac_ir::{shape_str, IrError};

#[derive(Debug)]
pub(super) enum LayerError {
    /// nnac does not support this; the string says what (the op, or the attribute).
    Unsupported(String),
    /// A hard error (bad parameters, missing or mis-shaped blob, shape mismatch).
    Import(ImportError),
}

impl From<ImportError> for LayerError {
    fn from(e: ImportError) -> Self {
        LayerError::Import(e)
    }
}

impl From<IrError> for LayerError {
    fn from(e: IrError) -> Self {
        LayerError::Import(e.into())
    }
}

/// `Err(LayerError::Unsupported(..))` for a reason.
pub(super) fn unsupported<T>(reason: impl Into<String>) -> Result<T, LayerError> {
    Err(LayerError::Unsupported(reason.into()))
}

/// A weight blob that does not fit the layer (the layer builder prefixes the layer,
/// blob index and role).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum BlobError {
    /// The blob declares a negative dimension.
    NegativeDim { dims: Vec<i64> },
    /// The declared shape is not the one the layer needs.
    Shape {
        declared: Vec<usize>,
        expected: Vec<usize>,
    },
    /// The declared shape's element count overflows (the IR's message).
    Elements(nnac_ir::ShapeError),
    /// Another number of values than the shape needs.
    Count {
        values: usize,
        declared: Vec<usize>,
        numel: usize,
    },
    /// The tensor cannot be built in the expected shape.
    Hold { expected: Vec<usize> },
}

impl std::fmt::Display for BlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlobError::NegativeDim { dims } => write!(f, "has a negative dimension in {dims:?}"),
            BlobError::Shape { declared, expected } => write!(
                f,
                "has shape {}, expected {}",
                shape_str(declared),
                shape_str(expected)
            ),
            BlobError::Elements(e) => write!(f, "{e}"),
            BlobError::Count {
                values,
                declared,
                numel,
            } => write!(
                f,
                "holds {values} values but its shape {} needs {numel}",
                shape_str(declared)
            ),
            BlobError::Hold { expected } => {
                write!(f, "cannot hold shape {}", shape_str(expected))
            }
        }
    }
}

impl std::error::Error for BlobError {}
