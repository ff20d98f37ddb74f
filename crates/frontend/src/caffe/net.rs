//! The network walk: declares inputs, lowers every layer of the TEST phase in order and
//! names the graph outputs. Blob names map to the value that last wrote them, so
//! in-place layers (bottom == top) chain naturally. Unsupported layers are collected
//! (their tops are marked unknown and the layers depending on them skipped) and
//! reported together at the end.

use super::error::LayerError;
use super::inputs::{self, InputDecl};
use super::layer::Layer;
use super::model::Weights;
use super::phase::State;
use super::{ops, v1};
use crate::proto::caffe::{LayerParameter, NetParameter};
use crate::{ImportError, ImportOptions, Unsupported};
use nnac_ir::{Graph, TensorType, Value};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// Builds the IR graph of `net` with the trained blobs of `weights`.
pub(super) fn build(
    net: &NetParameter,
    weights: &Weights,
    opts: &ImportOptions,
) -> Result<Graph, ImportError> {
    if !net.layer.is_empty() && !net.layers.is_empty() {
        return Err(ImportError::Invalid {
            node: net.name().to_string(),
            msg: "the net mixes `layer` and V1 `layers` entries".into(),
        });
    }
    let layers: Vec<Cow<LayerParameter>> = if net.layers.is_empty() {
        net.layer.iter().map(Cow::Borrowed).collect()
    } else {
        net.layers
            .iter()
            .map(|l| Cow::Owned(v1::upgrade(l)))
            .collect()
    };
    let mut b = NetBuilder::new(net.name());
    for decl in inputs::net_inputs(net, opts)? {
        b.declare_input(decl)?;
    }
    let state = State::test(net.state.as_ref());
    for (index, layer) in layers.iter().enumerate() {
        if state.includes(&layer.include, &layer.exclude) {
            b.layer(index, layer, weights, opts)?;
        }
    }
    b.finish(opts)
}

struct NetBuilder {
    g: Graph,
    /// The value that last wrote each blob name.
    blobs: BTreeMap<String, Value>,
    /// Blobs whose producer is unsupported (their consumers are skipped).
    unknown: BTreeSet<String>,
    /// Caffe's `available_blobs`: produced and not consumed since, in production order.
    available: Vec<String>,
    input_names: Vec<String>,
    unsupported: Vec<Unsupported>,
}

impl NetBuilder {
    fn new(name: &str) -> Self {
        NetBuilder {
            g: Graph::new(name),
            blobs: BTreeMap::new(),
            unknown: BTreeSet::new(),
            available: Vec::new(),
            input_names: Vec::new(),
            unsupported: Vec::new(),
        }
    }

    fn declare_input(&mut self, decl: InputDecl) -> Result<(), ImportError> {
        if self.g.find(&decl.name).is_some() {
            return Err(ImportError::Invalid {
                node: decl.name,
                msg: "input declared twice".into(),
            });
        }
        let v = self
            .g
            .add_input(decl.name.clone(), TensorType::f32(decl.shape));
        self.input_names.push(decl.name.clone());
        self.produce(&decl.name, v);
        Ok(())
    }

    fn produce(&mut self, blob: &str, v: Value) {
        self.unknown.remove(blob);
        self.blobs.insert(blob.to_string(), v);
        self.available.retain(|b| b != blob);
        self.available.push(blob.to_string());
    }

    fn consume(&mut self, blob: &str) {
        self.available.retain(|b| b != blob);
    }

    fn layer(
        &mut self,
        index: usize,
        p: &LayerParameter,
        weights: &Weights,
        opts: &ImportOptions,
    ) -> Result<(), ImportError> {
        let ty = p.r#type();
        let name = match p.name() {
            "" => format!("{ty}#{index}"),
            n => n.to_string(),
        };
        if ty == "Input" {
            for decl in inputs::layer_inputs(p, opts)? {
                self.declare_input(decl)?;
            }
            return Ok(());
        }
        let Some(build) = ops::builder(ty) else {
            self.reject(&name, ty, "layer type not supported", p);
            return Ok(());
        };
        let Some(bottoms) = self.bottoms(&name, p)? else {
            self.mark_unknown(p);
            return Ok(());
        };
        let (blobs, blobs_from_model) = match weights.get(&name) {
            Some(b) => (b, true),
            None => (p.blobs.as_slice(), false),
        };
        let layer = Layer {
            name: &name,
            param: p,
            bottoms,
            blobs,
            blobs_from_model,
        };
        match build(&mut self.g, &layer) {
            Ok(tops) => self.finish_layer(&name, p, tops),
            Err(LayerError::Unsupported(reason)) => {
                self.reject(&name, ty, &reason, p);
                Ok(())
            }
            Err(LayerError::Import(e)) => Err(e),
        }
    }

    /// The current values of the layer's bottoms; `None` if one is unknown (produced
    /// by an unsupported layer).
    fn bottoms(
        &mut self,
        name: &str,
        p: &LayerParameter,
    ) -> Result<Option<Vec<Value>>, ImportError> {
        if p.bottom.iter().any(|b| self.unknown.contains(b)) {
            return Ok(None);
        }
        let mut values = Vec::with_capacity(p.bottom.len());
        for b in &p.bottom {
            let v = *self.blobs.get(b).ok_or_else(|| ImportError::Invalid {
                node: name.to_string(),
                msg: format!("bottom blob '{b}' is not produced by any earlier layer"),
            })?;
            values.push(v);
        }
        Ok(Some(values))
    }

    fn finish_layer(
        &mut self,
        name: &str,
        p: &LayerParameter,
        tops: Vec<Value>,
    ) -> Result<(), ImportError> {
        if tops.len() != p.top.len() {
            return Err(ImportError::Invalid {
                node: name.to_string(),
                msg: format!(
                    "the layer produces {} blob(s) but lists {} top(s)",
                    tops.len(),
                    p.top.len()
                ),
            });
        }
        for b in &p.bottom {
            self.consume(b);
        }
        for (top, v) in p.top.iter().zip(tops) {
            self.produce(top, v);
        }
        Ok(())
    }

    fn reject(&mut self, name: &str, ty: &str, reason: &str, p: &LayerParameter) {
        self.unsupported.push(Unsupported {
            node: name.to_string(),
            op_type: ty.to_string(),
            opset: 0,
            reason: reason.to_string(),
        });
        self.mark_unknown(p);
    }

    fn mark_unknown(&mut self, p: &LayerParameter) {
        for b in &p.bottom {
            self.consume(b);
        }
        for t in &p.top {
            self.available.retain(|b| b != t);
            self.unknown.insert(t.clone());
        }
    }

    fn finish(mut self, opts: &ImportOptions) -> Result<Graph, ImportError> {
        if !self.unsupported.is_empty() {
            return Err(ImportError::Unsupported(self.unsupported));
        }
        inputs::check_overrides(&self.input_names, opts)?;
        if self.input_names.is_empty() {
            return Err(ImportError::Invalid {
                node: self.g.name.clone(),
                msg: "the net declares no input".into(),
            });
        }
        for blob in &self.available {
            self.g.add_output(blob.clone(), self.blobs[blob]);
        }
        if self.g.outputs().is_empty() {
            return Err(ImportError::Invalid {
                node: self.g.name.clone(),
                msg: "the net has no output blob".into(),
            });
        }
        Ok(self.g)
    }
}
