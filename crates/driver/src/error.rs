//! The one error type of every front end (the `nnac` CLI, the Python package): every
//! failure is either the user's (CLI exit 1, Python `nnac.UserError`) or ours (exit 2,
//! `nnac.InternalError`).

use std::fmt;

/// A failure of a driver function, by whose fault it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Bad input: missing file, malformed model, unsupported op, wrong shapes. Exit 1.
    User(String),
    /// A bug in nnac (an invariant broke) in `stage`. Exit 2; the message asks for a
    /// bug report.
    Internal { stage: String, msg: String },
}

impl Error {
    /// A user error (exit 1) with this message.
    pub fn user(msg: impl Into<String>) -> Self {
        Error::User(msg.into())
    }
    /// A bug in nnac found in `stage` (e.g. "backend", "encoding the program").
    pub fn internal(stage: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Internal {
            stage: stage.into(),
            msg: msg.into(),
        }
    }
    /// A pass-pipeline error: internal where [`nnac_passes::PassError::is_internal`]
    /// says so, else the user's.
    pub fn from_pass(e: nnac_passes::PassError) -> Self {
        if e.is_internal() {
            Error::internal("the pass pipeline", e.to_string())
        } else {
            Error::user(e.to_string())
        }
    }
    /// A backend error, classified by [`nnac_backend_nna::BackendError::is_internal`].
    pub fn from_backend(e: nnac_backend_nna::BackendError) -> Self {
        if e.is_internal() {
            Error::internal("the NNA backend", e.to_string())
        } else {
            Error::user(e.to_string())
        }
    }
    /// The CLI's exit code: 1 for the user's mistakes, 2 for nnac's bugs.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::User(_) => 1,
            Error::Internal { .. } => 2,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::User(m) => write!(f, "{m}"),
            Error::Internal { stage, msg } => write!(
                f,
                "internal error in {stage}: {msg}\nThis is a bug in nnac, not in your model: please report it with the command line and the model (nnac {}).",
                env!("CARGO_PKG_VERSION")
            ),
        }
    }
}

impl std::error::Error for Error {}

/// An input file's tensor that does not fit an input (always the user's; the
/// caller prefixes the file). One rule for `compile --calib`, `eval --input` and
/// `run --input` (see `frame_shape.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputFileError {
    /// A stacked tensor with a leading dimension of 0.
    NoFrames { input: String },
    /// A shape that is neither one frame nor `N` stacked frames.
    Shape {
        input: String,
        frame: Vec<usize>,
        got: Vec<usize>,
    },
    /// Data of a type the input cannot take (`wanted`: its own code type).
    Dtype {
        input: String,
        wanted: &'static str,
        got: &'static str,
    },
}

impl fmt::Display for InputFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputFileError::NoFrames { input } => {
                write!(f, "input '{input}': the file holds 0 frames")
            }
            InputFileError::Shape { input, frame, got } => write!(
                f,
                "input '{input}' expects shape {fr} (or Nx{fr} for N frames), the file has {}",
                nnac_ir::shape_str(got),
                fr = nnac_ir::shape_str(frame),
            ),
            InputFileError::Dtype { input, wanted, got } => write!(
                f,
                "input '{input}' needs float32 or {wanted} data, the file holds {got}"
            ),
        }
    }
}

impl std::error::Error for InputFileError {}

/// Writes `bytes` to `path` atomically (temp file + rename), so a failed command
/// never leaves a partial output file behind.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<(), Error> {
    let tmp = path.with_extension(match path.extension() {
        Some(e) => format!("{}.tmp", e.to_string_lossy()),
        None => "tmp".to_string(),
    });
    std::fs::write(&tmp, bytes)
        .map_err(|e| Error::user(format!("cannot write {}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::user(format!("cannot write {}: {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_backend_nna::BackendError;
    use nnac_passes::PassError;

    /// Every error class of the pass pipeline and the backend, forced one by one:
    /// the compiler's own bugs exit 2 with a request for a bug report naming the
    /// stage, the model's problems exit 1 with the message as it is.
    #[test]
    fn each_error_class_has_its_exit_code() {
        let passes = [
            (
                PassError::Verify {
                    pass: "fuse_dot".into(),
                    errors: vec!["x".into()],
                },
                2,
            ),
            (PassError::node("quantize", "conv1", "no stats"), 1),
            (
                PassError::Interp {
                    context: "calibration".into(),
                    msg: "m".into(),
                },
                1,
            ),
            (PassError::Calib("2 frames, 3 inputs".into()), 1),
            (PassError::Options("bad".into()), 1),
            (
                PassError::Dump {
                    path: "d".into(),
                    msg: "denied".into(),
                },
                1,
            ),
        ];
        for (e, code) in passes {
            let text = e.to_string();
            let c = Error::from_pass(e);
            assert_eq!(c.exit_code(), code, "{text}");
            let shown = c.to_string();
            assert!(shown.contains(&text), "{shown}");
            assert_eq!(
                code == 2,
                shown.contains("internal error in the pass pipeline"),
                "{shown}"
            );
            assert_eq!(code == 2, shown.contains("please report it"), "{shown}");
        }
        let backend = [
            (BackendError::Invalid(vec!["edge".into()]), 2),
            (
                BackendError::NotQuantized {
                    node: "a".into(),
                    detail: "f32".into(),
                },
                2,
            ),
            (
                BackendError::Emit {
                    node: "a".into(),
                    detail: "field".into(),
                },
                2,
            ),
            (
                BackendError::Unsupported(vec![nnac_backend_nna::UnsupportedNode::new(
                    "n",
                    nnac_backend_nna::Refusal::NotSlice,
                )]),
                1,
            ),
            (
                BackendError::SramFull {
                    node: "fc".into(),
                    needed: 9,
                    sram: 8,
                },
                1,
            ),
        ];
        for (e, code) in backend {
            let text = e.to_string();
            let c = Error::from_backend(e);
            assert_eq!(c.exit_code(), code, "{text}");
            let shown = c.to_string();
            assert_eq!(
                code == 2,
                shown.contains("internal error in the NNA backend"),
                "{shown}"
            );
        }
    }
}
