//! The view of one layer a builder works with: its parameters, resolved bottoms and
//! weight blobs, plus helpers that add nodes and constants named after the layer.

use super::blob;
use super::error::LayerError;
use crate::proto::caffe::{BlobProto, LayerParameter};
use crate::ImportError;
use nnac_ir::{Graph, Op, Tensor, Value};

pub(super) struct Layer<'a> {
    pub name: &'a str,
    pub param: &'a LayerParameter,
    /// The current value of each bottom blob, in order.
    pub bottoms: Vec<Value>,
    /// Weight blobs: from the caffemodel, else from the prototxt layer itself.
    pub blobs: &'a [BlobProto],
    /// Whether the blobs came from a caffemodel (for error messages).
    pub blobs_from_model: bool,
}

impl Layer<'_> {
    /// A hard error about this layer.
    pub fn invalid(&self, msg: impl Into<String>) -> LayerError {
        LayerError::Import(ImportError::Invalid {
            node: self.name.to_string(),
            msg: msg.into(),
        })
    }

    /// Checks the number of bottoms is in `min..=max`.
    pub fn expect_bottoms(&self, min: usize, max: usize) -> Result<(), LayerError> {
        let n = self.bottoms.len();
        if n < min || n > max {
            let want = if min == max {
                min.to_string()
            } else if max == usize::MAX {
                format!("at least {min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(self.invalid(format!("takes {want} bottom blob(s), got {n}")));
        }
        Ok(())
    }

    /// The first bottom (the layer's main input); call `expect_bottoms` first.
    pub fn x(&self) -> Value {
        self.bottoms[0]
    }

    /// The shape of bottom `i`.
    pub fn shape(&self, g: &Graph, i: usize) -> Vec<usize> {
        g.value_type(self.bottoms[i]).shape.clone()
    }

    /// A Caffe axis (negative counts from the end) as an index into a rank-`rank` shape.
    pub fn axis(&self, axis: i64, rank: usize, what: &str) -> Result<usize, LayerError> {
        let r = rank as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a < 0 || a >= r {
            return Err(self.invalid(format!(
                "{what} {axis} is out of range for a rank-{rank} input"
            )));
        }
        Ok(a as usize)
    }

    /// Weight blob `idx` as a tensor of shape `expected`. A missing blob, a shape
    /// mismatch or a wrong element count is an error naming the layer and blob.
    pub fn weight(&self, idx: usize, role: &str, expected: &[usize]) -> Result<Tensor, LayerError> {
        let Some(b) = self.blobs.get(idx) else {
            let source = match (self.blobs_from_model, self.blobs.len()) {
                (false, 0) => "no caffemodel blobs for this layer".to_string(),
                (_, n) => format!("the layer has {n} blob(s)"),
            };
            return Err(self.invalid(format!("weight blob {idx} ({role}) is missing: {source}")));
        };
        blob::to_tensor(b, expected)
            .map_err(|m| self.invalid(format!("weight blob {idx} ({role}) {m}")))
    }

    /// Adds weight blob `idx` to the graph as a constant named `<layer>/<role>`.
    pub fn weight_const(
        &self,
        g: &mut Graph,
        idx: usize,
        role: &str,
        expected: &[usize],
    ) -> Result<Value, LayerError> {
        let t = self.weight(idx, role, expected)?;
        Ok(self.constant(g, role, t))
    }

    /// Adds a constant named `<layer>/<role>`.
    pub fn constant(&self, g: &mut Graph, role: &str, t: Tensor) -> Value {
        let name = g.fresh_name(&format!("{}/{role}", self.name));
        g.add_constant(name, t)
    }

    /// Adds the node that stands for the layer (named after it).
    pub fn node(&self, g: &mut Graph, op: Op, inputs: &[Value]) -> Result<Value, LayerError> {
        let name = g.fresh_name(self.name);
        Ok(Value::new(g.add_node(name, op, inputs)?, 0))
    }

    /// Adds a helper node named `<layer>/<role>`.
    pub fn helper(
        &self,
        g: &mut Graph,
        role: &str,
        op: Op,
        inputs: &[Value],
    ) -> Result<Value, LayerError> {
        let name = g.fresh_name(&format!("{}/{role}", self.name));
        Ok(Value::new(g.add_node(name, op, inputs)?, 0))
    }

    /// Reshapes `v` to `shape` with a helper node, unless it already has that shape.
    pub fn reshape_to(
        &self,
        g: &mut Graph,
        role: &str,
        v: Value,
        shape: Vec<usize>,
    ) -> Result<Value, LayerError> {
        if g.value_type(v).shape == shape {
            return Ok(v);
        }
        self.helper(g, role, Op::Reshape { shape }, &[v])
    }
}

/// Product of dimensions with overflow reported as an error message.
pub(super) fn numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}
