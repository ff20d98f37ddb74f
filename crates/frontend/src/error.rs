//! Import errors. Every variant names what is at fault (file, byte offset, node or
//! layer) so the CLI can print one clear message.

use std::fmt;
use std::path::PathBuf;

/// One unsupported node or attribute, reported together with all others.
#[derive(Clone, Debug, PartialEq)]
pub struct Unsupported {
    /// Node (ONNX) or layer (Caffe) name.
    pub node: String,
    /// Source op type (`Conv`, `LSTM`, `Convolution`...).
    pub op_type: String,
    /// ONNX opset of the op's domain (0 for Caffe).
    pub opset: i64,
    /// What is unsupported: the op itself, or the attribute/value at fault.
    pub reason: String,
}

#[derive(Debug)]
pub enum ImportError {
    /// The file could not be read.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The bytes are not a valid model (protobuf decode error, text-format syntax
    /// error with line/column, inconsistent graph).
    Malformed { path: PathBuf, msg: String },
    /// One or more nodes use ops or attributes nnac does not support: all listed.
    Unsupported(Vec<Unsupported>),
    /// A node is well-formed protobuf but semantically invalid (shape mismatch,
    /// missing weight blob...).
    Invalid { node: String, msg: String },
    /// A graph input has dynamic dimensions and no `--input-shape` was given.
    DynamicInput { input: String, shape: String },
    /// Bad usage of the importer (wrong file kind, conflicting options).
    Usage(String),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Io { path, source } => write!(f, "cannot read '{}': {source}", path.display()),
            ImportError::Malformed { path, msg } => write!(f, "'{}' is not a valid model: {msg}", path.display()),
            ImportError::Unsupported(list) => {
                writeln!(f, "the model uses {} unsupported node(s):", list.len())?;
                for (i, u) in list.iter().enumerate() {
                    let opset = if u.opset > 0 { format!(" (opset {})", u.opset) } else { String::new() };
                    write!(f, "  node '{}': {}{}: {}", u.node, u.op_type, opset, u.reason)?;
                    if i + 1 < list.len() {
                        writeln!(f)?;
                    }
                }
                Ok(())
            }
            ImportError::Invalid { node, msg } => write!(f, "node '{node}': {msg}"),
            ImportError::DynamicInput { input, shape } => write!(
                f,
                "input '{input}' has dynamic shape {shape}; fix it with --input-shape {input}=1x3xHxW"
            ),
            ImportError::Usage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ImportError {}

impl From<nnac_ir::IrError> for ImportError {
    fn from(e: nnac_ir::IrError) -> Self {
        ImportError::Invalid {
            node: e.node,
            msg: e.msg,
        }
    }
}
