//! Typed errors of the ONNX importer's helpers: size limits, external tensor data and
//! unsupported graph inputs. The importer wraps them into [`crate::ImportError`]
//! (naming the node or tensor) with their text unchanged.

use std::fmt;
use std::path::PathBuf;

/// A shape or size attribute beyond the importer's limits (see `limits.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitError {
    /// More dimensions than `max`.
    Rank { rank: usize, max: usize },
    /// A negative dimension in `dims`.
    NegativeDim { dim: i64, dims: Vec<i64> },
    /// A dimension that does not fit in `usize`.
    DimTooLarge { dim: i64 },
    /// The element count overflows or exceeds the IR's limit.
    Elements(nnac_ir::ShapeError),
    /// An integer size attribute `what` outside `[min, max]`.
    Attr {
        what: String,
        value: i64,
        min: i64,
        max: i64,
    },
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitError::Rank { rank, max } => write!(f, "rank {rank} exceeds the limit {max}"),
            LimitError::NegativeDim { dim, dims } => {
                write!(f, "negative dimension {dim} in {dims:?}")
            }
            LimitError::DimTooLarge { dim } => write!(f, "dimension {dim} too large"),
            LimitError::Elements(e) => write!(f, "{e}"),
            LimitError::Attr {
                what,
                value,
                min,
                max,
            } => write!(f, "{what} {value} is out of range [{min}, {max}]"),
        }
    }
}

impl std::error::Error for LimitError {}

/// Tensor data stored outside the model file that cannot be read.
#[derive(Debug)]
pub enum ExternalError {
    /// The `offset` or `length` key is not a non-negative integer.
    BadNumber { key: &'static str, text: String },
    /// No `location` key.
    NoLocation,
    /// The model was not read from a file, so relative locations mean nothing.
    NoModelDir,
    /// The declared length disagrees with the tensor's size.
    Length { declared: u64, expected: usize },
    /// The location is empty or absolute.
    NotRelative { location: String },
    /// The location has `..` or a root component.
    LeavesDir { location: String },
    /// The location resolves (through symlinks) outside the model's directory.
    OutsideDir { location: String },
    /// The model directory or the data file cannot be read.
    Io {
        /// "model directory" or "external data file".
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is shorter than `offset + len`.
    TooShort {
        path: PathBuf,
        size: u64,
        len: usize,
        offset: u64,
    },
}

impl fmt::Display for ExternalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExternalError::BadNumber { key, text } => write!(
                f,
                "external data {key} '{text}' is not a non-negative integer"
            ),
            ExternalError::NoLocation => write!(f, "external data without a 'location' key"),
            ExternalError::NoModelDir => write!(
                f,
                "the tensor's data is in an external file, but no model directory is known"
            ),
            ExternalError::Length { declared, expected } => write!(
                f,
                "external data length {declared} does not match the {expected} bytes the tensor needs"
            ),
            ExternalError::NotRelative { location } => write!(
                f,
                "external data location '{location}' must be a relative path"
            ),
            ExternalError::LeavesDir { location } => write!(
                f,
                "external data location '{location}' leaves the model's directory"
            ),
            ExternalError::OutsideDir { location } => write!(
                f,
                "external data location '{location}' resolves outside the model's directory"
            ),
            ExternalError::Io { what, path, source } => {
                write!(f, "{what} {}: {source}", path.display())
            }
            ExternalError::TooShort {
                path,
                size,
                len,
                offset,
            } => write!(
                f,
                "external data file {} has {size} bytes; the tensor needs {len} bytes at offset {offset}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for ExternalError {}

/// Why a graph input is of a kind nnac does not import (collected with the other
/// unsupported nodes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnsupportedInput {
    /// A sequence, map or optional input.
    NotTensor,
    /// An element type without an IR dtype.
    Dtype { dtype: String },
    /// A shape with a zero dimension.
    Empty { shape: Vec<usize> },
}

impl fmt::Display for UnsupportedInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsupportedInput::NotTensor => write!(f, "only tensor inputs are supported"),
            UnsupportedInput::Dtype { dtype } => write!(f, "{dtype} inputs are not supported"),
            UnsupportedInput::Empty { shape } => write!(
                f,
                "input shape {shape:?} has no elements (empty tensors are not supported)"
            ),
        }
    }
}

impl std::error::Error for UnsupportedInput {}
