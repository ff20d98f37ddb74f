//! The errors of `nnac tune`: every one names the key, file, model or point at fault.

use std::fmt;

/// A tuning run that cannot start or continue.
#[derive(Debug, Clone, PartialEq)]
pub enum TuneError {
    /// The search-space file is malformed or a key's values are out of range.
    Space { key: String, message: String },
    /// The area / energy model file is malformed.
    CostModel { key: String, message: String },
    /// An objective or constraint no point can meet, or a bad option value.
    Options { option: String, message: String },
    /// A model of the workload could not be read into layer shapes.
    Workload { model: String, message: String },
    /// A results file (`--resume`, `merge`) is unreadable or does not match the run.
    Results { file: String, message: String },
    /// The exact model failed on a point in a way that is not the point's fault.
    Internal(String),
}

impl fmt::Display for TuneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TuneError::Space { key, message } => write!(f, "search space: key `{key}`: {message}"),
            TuneError::CostModel { key, message } => {
                write!(f, "area/energy model: key `{key}`: {message}")
            }
            TuneError::Options { option, message } => write!(f, "{option}: {message}"),
            TuneError::Workload { model, message } => write!(f, "model {model}: {message}"),
            TuneError::Results { file, message } => write!(f, "results file {file}: {message}"),
            TuneError::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for TuneError {}

impl TuneError {
    /// Whether the user caused it (exit code 1) rather than a bug (exit code 2).
    pub fn is_user(&self) -> bool {
        !matches!(self, TuneError::Internal(_))
    }

    pub(crate) fn space(key: &str, message: impl Into<String>) -> TuneError {
        TuneError::Space {
            key: key.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn options(option: &str, message: impl Into<String>) -> TuneError {
        TuneError::Options {
            option: option.to_string(),
            message: message.into(),
        }
    }
}
