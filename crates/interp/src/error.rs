//! Interpreter errors: each names the node (its source-model name) at fault.

use crate::kernels::KernelError;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct InterpError {
    /// Source name of the node at fault (empty for errors about the whole graph or
    /// the set of inputs).
    pub node: String,
    pub msg: String,
    /// The kernel's own error when a kernel refused the node (`msg` then holds the
    /// op and this error's text), for callers that match on it.
    pub kernel: Option<KernelError>,
}

impl InterpError {
    /// An error about node `node` (its source name).
    pub fn at(node: &str, msg: impl Into<String>) -> Self {
        InterpError {
            node: node.to_string(),
            msg: msg.into(),
            kernel: None,
        }
    }
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.node.is_empty() {
            f.write_str(&self.msg)
        } else {
            write!(f, "node '{}': {}", self.node, self.msg)
        }
    }
}

impl std::error::Error for InterpError {}

impl From<nnac_ir::IrError> for InterpError {
    fn from(e: nnac_ir::IrError) -> Self {
        InterpError {
            node: e.node,
            msg: e.msg,
            kernel: None,
        }
    }
}
