//! The quantized reference interpreter's errors: each names the node (or the frame)
//! it is about, so callers can match on the kind and report the place.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QError {
    /// A node the interpreter cannot run as it stands (not quantized, not an op of
    /// the quantized IR, inputs of the wrong length or batch).
    Node { node: String, msg: String },
    /// A host op failed in the float interpreter.
    HostOp { node: String, msg: String },
    /// The graph has a cycle (names a node on it).
    Cycle { node: String, msg: String },
    /// A frame does not give every graph input with its element count.
    Frame { index: usize, msg: String },
}

impl QError {
    pub(crate) fn node(node: &str, msg: impl Into<String>) -> Self {
        QError::Node {
            node: node.to_string(),
            msg: msg.into(),
        }
    }
}

impl fmt::Display for QError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QError::Node { node, msg } => {
                write!(f, "quantized interpreter: node '{node}': {msg}")
            }
            QError::HostOp { node, msg } => {
                write!(f, "quantized interpreter: host op '{node}': {msg}")
            }
            QError::Cycle { node, msg } => write!(f, "quantized interpreter: node '{node}': {msg}"),
            QError::Frame { index, msg } => write!(f, "frame {index}: {msg}"),
        }
    }
}

impl std::error::Error for QError {}
