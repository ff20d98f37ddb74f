//! Decoding the `ModelProto` and checking the IR version and the opset imports.

use crate::proto::onnx::ModelProto;
use crate::{ImportError, Unsupported};
use prost::bytes::Bytes;
use prost::Message;
use std::collections::BTreeMap;
use std::path::Path;

/// Oldest ONNX IR version read (the first with `opset_import`).
pub const MIN_IR_VERSION: i64 = 3;
/// Newest ONNX IR version read (onnx 1.23).
pub const MAX_IR_VERSION: i64 = 14;
/// Oldest default-domain opset supported (6: the pytorch-converted ONNX backend
/// tests; its only differences from 7 for the supported ops are legacy broadcasting
/// attributes and `is_test`).
pub const MIN_OPSET: i64 = 6;
/// Newest default-domain opset supported (the newest ONNX Runtime 1.31 runs).
pub const MAX_OPSET: i64 = 27;

/// The opset versions a model imports, by domain (`""` is the default domain).
#[derive(Clone, Debug)]
pub struct Opsets {
    pub default: i64,
    others: BTreeMap<String, i64>,
}

impl Opsets {
    /// Whether `domain` names the default ONNX operator domain.
    pub fn is_default_domain(domain: &str) -> bool {
        domain.is_empty() || domain == "ai.onnx"
    }

    /// The imported version of a domain (0 if the model does not import it).
    pub fn version(&self, domain: &str) -> i64 {
        if Self::is_default_domain(domain) {
            self.default
        } else {
            self.others.get(domain).copied().unwrap_or(0)
        }
    }
}

/// Decodes the protobuf bytes of a model. `path` names the model in errors. Tensor
/// payloads (`raw_data`) are slices of `bytes`, not copies.
pub fn decode(bytes: Bytes, path: &Path) -> Result<ModelProto, ImportError> {
    ModelProto::decode(bytes).map_err(|e| ImportError::Malformed {
        path: path.to_path_buf(),
        msg: format!("protobuf decode error: {e}"),
    })
}

fn model_unsupported(op_type: &str, opset: i64, reason: String) -> ImportError {
    ImportError::Unsupported(vec![Unsupported {
        node: "<model>".into(),
        op_type: op_type.into(),
        opset,
        reason,
    }])
}

/// Checks the IR version and the default-domain opset; returns all imported opsets.
pub fn check_versions(model: &ModelProto, path: &Path) -> Result<Opsets, ImportError> {
    let ir = model.ir_version();
    if !(MIN_IR_VERSION..=MAX_IR_VERSION).contains(&ir) {
        return Err(model_unsupported(
            "ir_version",
            0,
            format!("IR version {ir}; nnac reads IR versions {MIN_IR_VERSION} to {MAX_IR_VERSION}"),
        ));
    }
    let mut default = None;
    let mut others = BTreeMap::new();
    for o in &model.opset_import {
        if Opsets::is_default_domain(o.domain()) {
            default = Some(default.map_or(o.version(), |d: i64| d.max(o.version())));
        } else {
            others.insert(o.domain().to_string(), o.version());
        }
    }
    let Some(default) = default else {
        return Err(ImportError::Malformed {
            path: path.to_path_buf(),
            msg: "the model imports no opset of the default ONNX domain".into(),
        });
    };
    if !(MIN_OPSET..=MAX_OPSET).contains(&default) {
        return Err(model_unsupported(
            "opset_import",
            default,
            format!(
                "default-domain opset {default}; nnac supports opsets {MIN_OPSET} to {MAX_OPSET}"
            ),
        ));
    }
    Ok(Opsets { default, others })
}
