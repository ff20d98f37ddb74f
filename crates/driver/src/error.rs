//! The one error type of every front end (the `nnac` CLI, the Python package): every
//! failure is either the user's (CLI exit 1, Python `nnac.UserError`) or ours (exit 2,
//! `nnac.InternalError`).

use std::fmt;

/// A failure of a driver function, by whose fault it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Bad input: missing file, malformed model, unsupported op, wrong shapes. Exit 1.
    User(String),
    /// A bug in nnac (an invariant broke). Exit 2.
    Internal(String),
}

impl Error {
    /// A user error (exit 1) with this message.
    pub fn user(msg: impl Into<String>) -> Self {
        Error::User(msg.into())
    }
    /// An internal error (exit 2) with this message.
    pub fn internal(msg: impl Into<String>) -> Self {
        Error::Internal(msg.into())
    }
    /// The CLI's exit code: 1 for the user's mistakes, 2 for nnac's bugs.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::User(_) => 1,
            Error::Internal(_) => 2,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::User(m) => write!(f, "{m}"),
            Error::Internal(m) => write!(f, "internal error (please report): {m}"),
        }
    }
}

impl std::error::Error for Error {}

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
