//! The import context: the IR graph being built, what each ONNX value name stands for
//! (a pending constant, an IR value, or nothing usable), unique node names, and the
//! folding budget. Builders reach their node's inputs through it.

use super::attrs::Attrs;
use super::limits::{check_rank, checked_numel, FOLD_BUDGET};
use crate::proto::onnx::NodeProto;
use crate::Unsupported;
use nnac_ir::{Graph, Op, Tensor, TensorType, Value};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Why one node could not be lowered.
#[derive(Debug)]
pub enum NodeError {
    /// The op, an attribute value or a runtime input nnac does not support.
    Unsupported(String),
    /// The node contradicts the ONNX spec or its inputs (shape mismatch...).
    Invalid(String),
}

pub type NResult<T> = Result<T, NodeError>;

pub fn invalid(msg: impl std::fmt::Display) -> NodeError {
    NodeError::Invalid(msg.to_string())
}

pub fn unsupported(msg: impl Into<String>) -> NodeError {
    NodeError::Unsupported(msg.into())
}

/// What an ONNX value name stands for.
#[derive(Clone, Debug)]
pub enum Slot {
    /// A constant known at import time, not yet in the graph (added when a runtime
    /// op first consumes it, so folded shape arithmetic never reaches the IR).
    Pending(Rc<Tensor>),
    /// An IR value (possibly a `Constant` node).
    Graph(Value),
    /// Produced by a node that failed; the failure is already recorded.
    Dead,
    /// An optional output nnac cannot compute; reported if anything uses it.
    Unavailable(Unsupported),
}

/// One result of a builder, for the node's output at the same position.
pub enum Out {
    Value(Value),
    Const(Tensor),
    /// The same as the node's input at this index (Identity, inference Dropout).
    Input(usize),
}

/// The node being lowered.
pub struct NodeCx<'a> {
    pub proto: &'a NodeProto,
    /// Unique IR name for the node's main IR node.
    pub name: String,
    /// Opset of the node's domain.
    pub opset: i64,
    pub attrs: Attrs<'a>,
}

impl NodeCx<'_> {
    pub fn op_type(&self) -> &str {
        self.proto.op_type()
    }

    /// The name of input `i`, `None` when absent or empty (an omitted optional input).
    pub fn input_name(&self, i: usize) -> Option<&str> {
        self.proto
            .input
            .get(i)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    pub fn has_input(&self, i: usize) -> bool {
        self.input_name(i).is_some()
    }

    pub fn num_inputs(&self) -> usize {
        self.proto.input.len()
    }
}

/// Unique node names in the style of `Graph::fresh_name` (`base`, `base.1`, ...), in
/// O(log n) per name.
#[derive(Default)]
struct NameSet {
    taken: BTreeSet<String>,
    next: BTreeMap<String, usize>,
}

impl NameSet {
    fn fresh(&mut self, base: &str) -> String {
        if self.taken.insert(base.to_string()) {
            return base.to_string();
        }
        let mut i = self.next.get(base).copied().unwrap_or(1);
        loop {
            let cand = format!("{base}.{i}");
            i += 1;
            if self.taken.insert(cand.clone()) {
                self.next.insert(base.to_string(), i);
                return cand;
            }
        }
    }
}

pub struct Ctx {
    pub graph: Graph,
    slots: BTreeMap<String, Slot>,
    names: NameSet,
    budget: Cell<usize>,
    /// Where external tensor data lives (the model's directory).
    pub base_dir: Option<PathBuf>,
}

impl Ctx {
    pub fn new(graph_name: &str, base_dir: Option<&Path>) -> Self {
        Ctx {
            graph: Graph::new(graph_name),
            slots: BTreeMap::new(),
            names: NameSet::default(),
            budget: Cell::new(FOLD_BUDGET),
            base_dir: base_dir.map(Path::to_path_buf),
        }
    }

    /// A node name derived from `base` that no node uses yet.
    pub fn fresh(&mut self, base: &str) -> String {
        self.names.fresh(base)
    }

    pub fn slot(&self, name: &str) -> Option<&Slot> {
        self.slots.get(name)
    }

    pub fn set(&mut self, name: &str, slot: Slot) {
        self.slots.insert(name.to_string(), slot);
    }

    /// Takes `n` elements from the folding budget.
    pub fn charge(&self, n: usize) -> NResult<()> {
        let left = self.budget.get().checked_sub(n).ok_or_else(|| {
            unsupported(format!(
                "folding would create more than {FOLD_BUDGET} constant elements in total"
            ))
        })?;
        self.budget.set(left);
        Ok(())
    }

    /// Checks a folded result's shape and takes its elements from the budget.
    pub fn charge_shape(&self, shape: &[usize]) -> NResult<usize> {
        let n = checked_numel(shape).map_err(invalid)?;
        self.charge(n)?;
        Ok(n)
    }

    /// The constant held by a value name, if it is one.
    pub fn const_of_name(&self, name: &str) -> Option<&Tensor> {
        match self.slots.get(name)? {
            Slot::Pending(t) => Some(t),
            Slot::Graph(v) => self.graph.const_of(*v),
            _ => None,
        }
    }

    /// The constant at input `i`, `None` when the input is absent or a runtime value.
    pub fn konst(&self, cx: &NodeCx, i: usize) -> Option<&Tensor> {
        self.const_of_name(cx.input_name(i)?)
    }

    /// Whether every present input is a constant.
    pub fn all_const(&self, cx: &NodeCx) -> bool {
        (0..cx.num_inputs()).all(|i| !cx.has_input(i) || self.konst(cx, i).is_some())
    }

    /// An optional input that must be constant when present.
    pub fn opt_const(&self, cx: &NodeCx, i: usize, what: &str) -> NResult<Option<&Tensor>> {
        match cx.input_name(i) {
            None => Ok(None),
            Some(n) => self.const_of_name(n).map(Some).ok_or_else(|| {
                unsupported(format!(
                    "input '{what}' ({n}) is computed at run time; nnac needs a constant"
                ))
            }),
        }
    }

    /// A required input that must be constant.
    pub fn const_input(&self, cx: &NodeCx, i: usize, what: &str) -> NResult<&Tensor> {
        self.opt_const(cx, i, what)?
            .ok_or_else(|| invalid(format!("missing input '{what}' (#{i})")))
    }

    /// The IR value of input `i`, adding a pending constant to the graph if needed.
    pub fn opt_value(&mut self, cx: &NodeCx, i: usize) -> NResult<Option<Value>> {
        let Some(name) = cx.input_name(i) else {
            return Ok(None);
        };
        self.value_of_name(name).map(Some)
    }

    pub fn value(&mut self, cx: &NodeCx, i: usize) -> NResult<Value> {
        self.opt_value(cx, i)?
            .ok_or_else(|| invalid(format!("missing input #{i}")))
    }

    /// The IR value of a value name (materialising a pending constant).
    pub fn value_of_name(&mut self, name: &str) -> NResult<Value> {
        match self.slots.get(name) {
            Some(Slot::Graph(v)) => Ok(*v),
            Some(Slot::Pending(_)) => {
                let Some(Slot::Pending(rc)) = self.slots.remove(name) else {
                    unreachable!("checked above")
                };
                let tensor = Rc::try_unwrap(rc).unwrap_or_else(|rc| (*rc).clone());
                let node_name = self.fresh(name);
                let v = self.graph.add_constant(node_name, tensor);
                self.slots.insert(name.to_string(), Slot::Graph(v));
                Ok(v)
            }
            _ => Err(invalid(format!("value '{name}' is not available"))),
        }
    }

    /// The type of input `i` (constant or runtime).
    pub fn ty(&self, cx: &NodeCx, i: usize) -> NResult<TensorType> {
        let name = cx
            .input_name(i)
            .ok_or_else(|| invalid(format!("missing input #{i}")))?;
        match self.slots.get(name) {
            Some(Slot::Pending(t)) => Ok(t.ty()),
            Some(Slot::Graph(v)) => Ok(self.graph.value_type(*v).clone()),
            _ => Err(invalid(format!("value '{name}' is not available"))),
        }
    }

    /// The shape of input `i`.
    pub fn shape(&self, cx: &NodeCx, i: usize) -> NResult<Vec<usize>> {
        Ok(self.ty(cx, i)?.shape)
    }

    /// Adds an IR node named after the ONNX node (`suffix` distinguishes helper nodes
    /// of one ONNX node) and checks its output size.
    pub fn add(&mut self, cx: &NodeCx, suffix: &str, op: Op, inputs: &[Value]) -> NResult<Value> {
        let base = if suffix.is_empty() {
            cx.name.clone()
        } else {
            format!("{}/{suffix}", cx.name)
        };
        let name = if suffix.is_empty() {
            base
        } else {
            self.fresh(&base)
        };
        let id = self
            .graph
            .add_node(name, op, inputs)
            .map_err(|e| invalid(e.msg))?;
        // `add_node` refused any output beyond the IR's element limit.
        for ty in &self.graph.node(id).outputs {
            check_rank(&ty.shape).map_err(invalid)?;
        }
        Ok(Value::new(id, 0))
    }

    /// Adds a constant node for a helper tensor of an ONNX node.
    pub fn add_const(&mut self, cx: &NodeCx, suffix: &str, t: Tensor) -> Value {
        let name = self.fresh(&format!("{}/{suffix}", cx.name));
        self.graph.add_constant(name, t)
    }
}
