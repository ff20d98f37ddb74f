//! Errors that name the node at fault.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct IrError {
    /// Source name of the node at fault (empty for graph-level errors).
    pub node: String,
    pub msg: String,
}

impl IrError {
    pub fn at(node: &str, msg: impl Into<String>) -> Self {
        IrError {
            node: node.to_string(),
            msg: msg.into(),
        }
    }
}

impl fmt::Display for IrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.node.is_empty() {
            f.write_str(&self.msg)
        } else {
            write!(f, "node '{}': {}", self.node, self.msg)
        }
    }
}

impl std::error::Error for IrError {}
