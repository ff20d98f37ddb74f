//! The CLI's error type: every failure is either the user's (exit 1) or ours (exit 2).

use std::fmt;

#[derive(Debug)]
pub enum CliError {
    /// Bad input: missing file, malformed model, unsupported op, wrong shapes. Exit 1.
    User(String),
    /// A bug in nnac (an invariant broke). Exit 2.
    Internal(String),
}

impl CliError {
    pub fn user(msg: impl Into<String>) -> Self {
        CliError::User(msg.into())
    }
    pub fn internal(msg: impl Into<String>) -> Self {
        CliError::Internal(msg.into())
    }
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::User(_) => 1,
            CliError::Internal(_) => 2,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::User(m) => write!(f, "{m}"),
            CliError::Internal(m) => write!(f, "internal error (please report): {m}"),
        }
    }
}

/// Writes `bytes` to `path` atomically (temp file + rename), so a failed command
/// never leaves a partial output file behind.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<(), CliError> {
    let tmp = path.with_extension(match path.extension() {
        Some(e) => format!("{}.tmp", e.to_string_lossy()),
        None => "tmp".to_string(),
    });
    std::fs::write(&tmp, bytes)
        .map_err(|e| CliError::user(format!("cannot write {}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CliError::user(format!("cannot write {}: {e}", path.display()))
    })
}
