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

/// Why a design cannot run one model of the workload (the point is infeasible;
/// the tuner records the text with the point).
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The backend cannot lower `model` for the design (e.g. a layer beyond its SRAM).
    Lower {
        model: String,
        error: nnac_backend_nna::BackendError,
    },
    /// The cycle model cannot time the lowered program.
    Timing {
        model: String,
        error: nnac_runtime_sim::timing::TimingError,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Lower { model, error } => write!(f, "{model}: {error}"),
            EvalError::Timing { model, error } => write!(f, "{model}: timing: {error}"),
        }
    }
}

impl std::error::Error for EvalError {}

/// A node of a model that the workload reader cannot turn into a layer shape (the
/// caller names the model and the layer).
#[derive(Debug, Clone, PartialEq)]
pub enum LayerShapeError {
    /// The NNA node has no input.
    NoInput,
    /// The NNA node has no output.
    NoOutput,
    /// Its epilogue has no SIMD program (the backend's reason).
    Epilogue(nnac_backend_nna::Refusal),
}

impl fmt::Display for LayerShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerShapeError::NoInput => write!(f, "no input"),
            LayerShapeError::NoOutput => write!(f, "no output"),
            LayerShapeError::Epilogue(r) => write!(f, "epilogue: {r}"),
        }
    }
}

impl std::error::Error for LayerShapeError {}

/// A value of a search-space axis that its key cannot take (the caller names the
/// key and the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AxisValueError {
    /// The key takes an integer.
    NotInteger { got: String },
    /// The integer does not fit the key's 32 bits.
    Not32Bits { value: u64 },
    /// The key takes a list of port widths.
    NotPorts { got: String },
    /// The key takes "auto" or "off".
    NotAutoOff { got: String },
    /// The key is not one the search space knows.
    UnknownKey,
}

impl fmt::Display for AxisValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AxisValueError::NotInteger { got } => write!(f, "expected an integer, got {got}"),
            AxisValueError::Not32Bits { value } => write!(f, "{value} does not fit 32 bits"),
            AxisValueError::NotPorts { got } => {
                write!(f, "expected a list of port widths, got {got}")
            }
            AxisValueError::NotAutoOff { got } => {
                write!(f, "expected \"auto\" or \"off\", got {got}")
            }
            AxisValueError::UnknownKey => write!(f, "not a key of the search space"),
        }
    }
}

impl std::error::Error for AxisValueError {}
