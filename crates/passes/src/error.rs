//! Errors of the pass pipeline; each names the pass and, where there is one, the node.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum PassError {
    /// A pass found something it cannot handle at a node.
    Node {
        pass: &'static str,
        node: String,
        msg: String,
    },
    /// The verifier rejected the graph after a pass.
    Verify { pass: String, errors: Vec<String> },
    /// The float interpreter failed (calibration, constant folding, host ops).
    Interp { context: String, msg: String },
    /// Bad calibration data (shape, count).
    Calib(String),
    /// Bad pass options (e.g. an unknown dump stage).
    Options(String),
    /// Writing an IR dump failed.
    Dump { path: String, msg: String },
}

impl PassError {
    /// Whether the error is a bug in nnac rather than a problem of the model or the
    /// options (the CLI exits 2 for these, 1 for the others): the verifier rejecting
    /// a pass's output is the only such class. Every variant is decided here.
    pub fn is_internal(&self) -> bool {
        match self {
            PassError::Verify { .. } => true,
            PassError::Node { .. }
            | PassError::Interp { .. }
            | PassError::Calib(_)
            | PassError::Options(_)
            | PassError::Dump { .. } => false,
        }
    }

    pub fn node(pass: &'static str, node: &str, msg: impl Into<String>) -> Self {
        PassError::Node {
            pass,
            node: node.to_string(),
            msg: msg.into(),
        }
    }
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PassError::Node { pass, node, msg } => write!(f, "{pass}: node '{node}': {msg}"),
            PassError::Verify { pass, errors } => {
                write!(f, "IR verification failed after pass '{pass}':")?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
            PassError::Interp { context, msg } => write!(f, "float interpreter ({context}): {msg}"),
            PassError::Calib(msg) => write!(f, "calibration: {msg}"),
            PassError::Options(msg) => f.write_str(msg),
            PassError::Dump { path, msg } => write!(f, "cannot write IR dump {path}: {msg}"),
        }
    }
}

impl std::error::Error for PassError {}
