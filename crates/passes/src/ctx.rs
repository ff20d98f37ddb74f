//! State the passes hand to each other: which original nodes each fused node absorbed
//! (so calibration statistics of the float graph map onto fused values), host ops,
//! and a log of what every pass did.

use std::collections::BTreeMap;

/// The original (pre-fusion) nodes a fused NNA node stands for.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Fused {
    /// Absorbed node names in data-flow order (the first is the node itself).
    pub members: Vec<String>,
    /// The original node whose value is the SIMD output (before the pooling unit).
    pub simd_out: String,
}

/// One rewrite a pass made, for the report.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Rewrite {
    pub pass: String,
    pub node: String,
    pub what: String,
}

#[derive(Clone, Debug, Default)]
pub struct PassCtx {
    /// Fused node name -> what it absorbed.
    pub fused: BTreeMap<String, Fused>,
    pub log: Vec<Rewrite>,
    /// The pass currently running (set by the pipeline).
    pub pass: String,
    /// Nodes to run on the host and why (`PassOptions::host_nodes`; `force_host`),
    /// and the reason of every host op `mark_host` made.
    pub host_reasons: BTreeMap<String, String>,
    /// Layers to keep in float32 on the host (`PassOptions::float_layers`;
    /// `float_layers`).
    pub float_layers: BTreeMap<String, String>,
    /// Quantization the model file fixes (pre-quantized models, `absorb_qdq`).
    pub fixed: crate::fixed::FixedQuant,
}

impl PassCtx {
    pub fn note(&mut self, node: &str, what: impl Into<String>) {
        self.log.push(Rewrite {
            pass: self.pass.clone(),
            node: node.to_string(),
            what: what.into(),
        });
    }

    /// Records that `node` absorbed `member`; `simd` says whether member's value is
    /// (now) the SIMD output, i.e. it is not a pooling stage.
    pub fn absorb(&mut self, node: &str, member: &str, simd: bool) {
        let f = self.fused.entry(node.to_string()).or_insert_with(|| Fused {
            members: vec![node.to_string()],
            simd_out: node.to_string(),
        });
        f.members.push(member.to_string());
        if simd {
            f.simd_out = member.to_string();
        }
    }

    /// The original node whose value a node's output stands for.
    pub fn out_name<'a>(&'a self, node: &'a str) -> &'a str {
        self.fused
            .get(node)
            .and_then(|f| f.members.last())
            .map_or(node, |s| s.as_str())
    }

    /// Why node `node` runs on the host: the backend's reason recorded by
    /// `force_host`, else that the NNA has no instruction for `op`.
    pub fn host_reason(&self, node: &str, op: &str) -> String {
        self.host_reasons
            .get(node)
            .cloned()
            .unwrap_or_else(|| format!("no NNA instruction for {op}"))
    }

    /// Whether a pre-quantized model's file rounds the value of original node `node`
    /// to its own int8 grid (a QuantizeLinear -> DequantizeLinear pair on it): a
    /// fusion that would skip that rounding changes the file's arithmetic.
    pub fn file_rounds(&self, node: &str) -> bool {
        self.fixed.acts.contains_key(node)
    }

    /// The original node whose value is the node's SIMD output.
    pub fn simd_name<'a>(&'a self, node: &'a str) -> &'a str {
        self.fused.get(node).map_or(node, |f| f.simd_out.as_str())
    }
}
