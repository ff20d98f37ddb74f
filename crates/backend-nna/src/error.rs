//! Backend errors. Every error names the node (layer) it is about.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendError {
    /// The graph fails `nnac_ir::verify` (one line per verifier error).
    Invalid(Vec<String>),
    /// A value the backend must place is not an 8-bit per-tensor quantized tensor.
    NotQuantized { node: String, detail: String },
    /// Nodes the NNA backend cannot lower yet: `(node, reason)`, all of them at once.
    Unsupported(Vec<(String, String)>),
    /// A layer does not fit in SRAM even split into its smallest pieces (one output
    /// row band, one weight group, activations spilled to DRAM).
    SramFull {
        node: String,
        needed: u64,
        sram: u64,
    },
    /// A field is out of the instruction's range, or an emitted instruction breaks
    /// `nnac_isa::checks::check_instr` (a backend bug; names the layer).
    Emit { node: String, detail: String },
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Invalid(v) => write!(f, "graph fails verification: {}", v.join("; ")),
            BackendError::NotQuantized { node, detail } => {
                write!(f, "node '{node}': not quantized: {detail}")
            }
            BackendError::Unsupported(v) => {
                let list: Vec<String> = v.iter().map(|(n, r)| format!("'{n}' ({r})")).collect();
                write!(
                    f,
                    "{} node(s) not supported by the NNA backend: {}",
                    v.len(),
                    list.join(", ")
                )
            }
            BackendError::SramFull { node, needed, sram } => write!(
                f,
                "layer '{node}': needs {needed} bytes of SRAM live at once (split into its smallest row band and weight group, activations in DRAM where possible), the SRAM has {sram}"
            ),
            BackendError::Emit { node, detail } => write!(f, "layer '{node}': {detail}"),
        }
    }
}

impl std::error::Error for BackendError {}

impl BackendError {
    /// Whether the error is a bug in nnac rather than a limit the model meets (the CLI
    /// exits 2 for these, 1 for the others): IR that fails verification or is not
    /// quantized never leaves the pass pipeline, and an instruction out of range is
    /// the backend's own doing. Every variant is decided here.
    pub fn is_internal(&self) -> bool {
        match self {
            BackendError::Invalid(_)
            | BackendError::NotQuantized { .. }
            | BackendError::Emit { .. } => true,
            BackendError::Unsupported(_) | BackendError::SramFull { .. } => false,
        }
    }

    /// The reason alone: for one unsupported node, its reason without the node
    /// count and name (a walk step reports it under that node already); else the
    /// whole message.
    pub fn detail(&self) -> String {
        match self {
            BackendError::Unsupported(v) if v.len() == 1 => v[0].1.clone(),
            e => e.to_string(),
        }
    }
}

pub(crate) fn emit_err(node: &str, detail: impl Into<String>) -> BackendError {
    BackendError::Emit {
        node: node.to_string(),
        detail: detail.into(),
    }
}
