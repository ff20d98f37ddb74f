//! What a layer builder can fail with: the layer (or one of its parameter values) is
//! unsupported — collected with all others into one `ImportError::Unsupported` — or the
//! layer is invalid, which stops the import.

use crate::ImportError;
use nnac_ir::IrError;

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
