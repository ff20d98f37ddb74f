//! The graph verifier: checks every structural and typing invariant of a [`Graph`] and
//! reports all violations, each naming the node (source name) and the invariant.
//!
//! Invariants checked ([`Invariant`] variant in brackets):
//!
//! 1. [`NodeName`](Invariant::NodeName): every node name is non-empty and unique.
//! 2. [`InputSlots`](Invariant::InputSlots): the input edges of a node use slots
//!    `0..n`, each exactly once (no gaps, no duplicates).
//! 3. [`SourcePort`](Invariant::SourcePort): every input edge reads an output port
//!    that exists on its producer.
//! 4. [`Arity`](Invariant::Arity): the number of inputs lies within
//!    [`Op::arity`] (so `Input` and `Constant` nodes have no inputs).
//! 5. [`Acyclic`](Invariant::Acyclic): the graph has no cycle; one violation per
//!    cycle (strongly connected component), named after its first node.
//! 6. [`GraphInputs`](Invariant::GraphInputs): the `Input` nodes are exactly the
//!    graph's input list (each once), and each has exactly one output type.
//! 7. [`ConstantRef`](Invariant::ConstantRef): a `Constant` node's pool id is in
//!    range and its single output type has the constant's dtype and shape
//!    (quantization parameters on it are allowed: they describe the stored integers).
//! 8. [`ConstantData`](Invariant::ConstantData): every pool constant holds exactly as
//!    many elements as its shape says.
//! 9. [`Size`](Invariant::Size): every output type and pool constant holds at most
//!    [`MAX_ELEMENTS`](crate::MAX_ELEMENTS) elements and its byte size fits in `usize`
//!    (so no size computation can overflow).
//! 10. [`Types`](Invariant::Types): for every node other than `Input`/`Constant`
//!     whose inputs are well-formed (2–4 and 9 hold), the output types agree with the
//!     producers' declared input types: for IR ops, dtype and shape equal what
//!     [`infer::infer_types`] computes (quantization parameters are not inferred:
//!     passes set them) and the attributes are valid for those inputs; NNA ops carry
//!     explicit types (see [`types_set_explicitly`]) and are checked by
//!     [`NnaOp::check`](crate::NnaOp::check) instead.
//! 11. [`Outputs`](Invariant::Outputs): the graph has at least one output; output
//!     names are non-empty and unique; each refers to an existing node and port.
//! 12. [`Quant`](Invariant::Quant): a quantized type has an integer dtype (i8, u8,
//!     i32); a per-tensor scale is positive and finite and its zero point fits the
//!     dtype; a per-channel axis is within the rank, the number of scales equals
//!     that axis' dimension, and every scale is positive and finite.
//!
//! Deliberately allowed: pool constants that no node references (passes stage
//! constants with [`Graph::push_constant`]; [`Graph::remove_dead`] drops them), several
//! `Constant` nodes sharing one pool entry, and nodes whose outputs nothing uses.
//!
//! Violations come in a deterministic order: per node in ascending node-index order
//! (invariants 1–4, 6, 7, 9, 10, 12 for that node), then cycles, the input list, the
//! outputs and the constant pool.

use crate::{infer, DType, Graph, NodeId, Op, Quant, TensorType};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Which invariant a violation breaks (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Invariant {
    NodeName,
    InputSlots,
    SourcePort,
    Arity,
    Acyclic,
    GraphInputs,
    ConstantRef,
    ConstantData,
    Size,
    Types,
    Outputs,
    Quant,
}

impl Invariant {
    /// A short kebab-case name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::NodeName => "node-name",
            Invariant::InputSlots => "input-slots",
            Invariant::SourcePort => "source-port",
            Invariant::Arity => "arity",
            Invariant::Acyclic => "acyclic",
            Invariant::GraphInputs => "graph-inputs",
            Invariant::ConstantRef => "constant-ref",
            Invariant::ConstantData => "constant-data",
            Invariant::Size => "size",
            Invariant::Types => "types",
            Invariant::Outputs => "outputs",
            Invariant::Quant => "quant",
        }
    }
}

/// One violation: the node at fault (its source name; empty when no node is
/// involved), the invariant, and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyError {
    pub node: String,
    pub invariant: Invariant,
    pub msg: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.node.is_empty() {
            write!(f, "[{}] {}", self.invariant.name(), self.msg)
        } else {
            write!(
                f,
                "node '{}': [{}] {}",
                self.node,
                self.invariant.name(),
                self.msg
            )
        }
    }
}

impl std::error::Error for VerifyError {}

/// All violations, one per line (for error messages).
pub fn report(errors: &[VerifyError]) -> String {
    let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    lines.join("\n")
}

/// Ops whose output types the pass creating them sets explicitly instead of
/// [`infer::infer_types`] computing them (the NNA compound ops); invariant 10 checks
/// them with [`check_explicit_types`].
pub fn types_set_explicitly(op: &Op) -> bool {
    matches!(op, Op::Nna(_))
}

/// The type check of an op listed by [`types_set_explicitly`].
pub fn check_explicit_types(
    op: &Op,
    ins: &[&TensorType],
    outs: &[TensorType],
) -> Result<(), crate::NnaTypeError> {
    match op {
        Op::Nna(n) => n.check(ins, outs),
        _ => Err(crate::NnaTypeError::NoRule(op.mnemonic())),
    }
}

/// Checks every invariant; `Err` lists all violations in a deterministic order.
pub fn verify(g: &Graph) -> Result<(), Vec<VerifyError>> {
    let mut v = Verifier {
        g,
        errors: Vec::new(),
    };
    let ids = g.node_ids();
    let names = name_counts(g, &ids);
    for &id in &ids {
        v.node(id, &names);
    }
    v.cycles();
    v.graph_inputs();
    v.outputs();
    v.constant_pool();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

fn name_counts<'a>(g: &'a Graph, ids: &[NodeId]) -> BTreeMap<&'a str, usize> {
    let mut m = BTreeMap::new();
    for &id in ids {
        *m.entry(g.node(id).name.as_str()).or_insert(0) += 1;
    }
    m
}

struct Verifier<'a> {
    g: &'a Graph,
    errors: Vec<VerifyError>,
}

impl<'a> Verifier<'a> {
    fn err(&mut self, node: &str, invariant: Invariant, msg: impl Into<String>) {
        self.errors.push(VerifyError {
            node: node.to_string(),
            invariant,
            msg: msg.into(),
        });
    }

    fn name(&self, id: NodeId) -> &'a str {
        &self.g.node(id).name
    }

    fn node(&mut self, id: NodeId, names: &BTreeMap<&str, usize>) {
        let name = self.name(id);
        if name.is_empty() {
            self.err(
                name,
                Invariant::NodeName,
                format!("node #{} has an empty name", id.index()),
            );
        } else if names.get(name).copied().unwrap_or(0) > 1 {
            self.err(
                name,
                Invariant::NodeName,
                "name is used by more than one node",
            );
        }
        let inputs_ok = self.input_edges(id);
        self.kind_specific(id);
        let sizes_ok = self.sizes(id);
        if inputs_ok && sizes_ok {
            self.types(id);
        }
        self.quant(id);
    }

    /// Invariants 2–4; true when the inputs are well-formed enough to infer types.
    fn input_edges(&mut self, id: NodeId) -> bool {
        let name = self.name(id);
        let edges = self.g.input_edges(id);
        let mut ok = true;
        for (i, (slot, _)) in edges.iter().enumerate() {
            if usize::from(*slot) != i {
                let msg = match i.checked_sub(1).map(|p| edges[p].0) {
                    Some(prev) if prev == *slot => {
                        format!("input slot {slot} is connected more than once")
                    }
                    _ => format!("input slot {i} is missing (next connected slot is {slot})"),
                };
                self.err(name, Invariant::InputSlots, msg);
                ok = false;
                break;
            }
        }
        for (slot, v) in &edges {
            let producer = self.g.node(v.node);
            if usize::from(v.port) >= producer.outputs.len() {
                let msg = format!(
                    "input slot {slot} reads output port {} of '{}', which has {} output(s)",
                    v.port,
                    producer.name,
                    producer.outputs.len()
                );
                self.err(name, Invariant::SourcePort, msg);
                ok = false;
            }
        }
        let op = &self.g.node(id).op;
        let (lo, hi) = op.arity();
        if edges.len() < lo || edges.len() > hi {
            let want = if hi == usize::MAX {
                format!("at least {lo}")
            } else {
                format!("{lo}..={hi}")
            };
            let msg = format!("{} takes {want} inputs, has {}", op.mnemonic(), edges.len());
            self.err(name, Invariant::Arity, msg);
            ok = false;
        }
        ok
    }

    /// Invariants 6 (node side) and 7.
    fn kind_specific(&mut self, id: NodeId) {
        let node = self.g.node(id);
        let name = node.name.as_str();
        match node.op {
            Op::Input => {
                if !self.g.inputs().contains(&id) {
                    self.err(
                        name,
                        Invariant::GraphInputs,
                        "input node is not in the graph's input list",
                    );
                }
                if node.outputs.len() != 1 {
                    let msg = format!(
                        "input node has {} output types, expected 1",
                        node.outputs.len()
                    );
                    self.err(name, Invariant::GraphInputs, msg);
                }
            }
            Op::Constant(c) => {
                let Some(t) = self.g.constants().get(c.0 as usize) else {
                    let msg = format!(
                        "constant #{} is out of range (pool has {})",
                        c.0,
                        self.g.constants().len()
                    );
                    return self.err(name, Invariant::ConstantRef, msg);
                };
                let ok = matches!(node.outputs.as_slice(), [ty] if ty.dtype == t.dtype() && ty.shape == t.shape);
                if !ok {
                    let declared: Vec<String> =
                        node.outputs.iter().map(|t| t.to_string()).collect();
                    let msg = format!(
                        "declared type ({}) differs from constant #{} ({})",
                        declared.join(", "),
                        c.0,
                        t.ty()
                    );
                    self.err(name, Invariant::ConstantRef, msg);
                }
            }
            _ => {}
        }
    }

    /// Invariant 9 for the node's output types.
    fn sizes(&mut self, id: NodeId) -> bool {
        let node = self.g.node(id);
        let mut ok = true;
        for (port, t) in node.outputs.iter().enumerate() {
            if byte_size(t.dtype, &t.shape).is_none() {
                let msg = format!(
                    "output {port} shape {:?} has more than {} elements",
                    t.shape,
                    crate::MAX_ELEMENTS
                );
                self.err(&node.name, Invariant::Size, msg);
                ok = false;
            }
        }
        ok
    }

    /// Invariant 10.
    fn types(&mut self, id: NodeId) {
        let node = self.g.node(id);
        if matches!(node.op, Op::Input | Op::Constant(_)) {
            return;
        }
        let inputs = self.g.node_inputs(id);
        let tys: Vec<&TensorType> = inputs.iter().map(|&v| self.g.value_type(v)).collect();
        if tys.iter().any(|t| byte_size(t.dtype, &t.shape).is_none()) {
            return; // reported at the producer (invariant 9)
        }
        if types_set_explicitly(&node.op) {
            if let Err(e) = check_explicit_types(&node.op, &tys, &node.outputs) {
                self.err(&node.name, Invariant::Types, e);
            }
            return;
        }
        let msg = match infer::infer_types(&node.op, &tys) {
            Err(e) => format!("invalid for its inputs: {e}"),
            Ok(want) if !same_dtype_shape(&want, &node.outputs) => format!(
                "declared output types ({}) differ from the inferred ({})",
                type_list(&node.outputs),
                type_list(&want)
            ),
            Ok(_) => return,
        };
        self.err(&node.name, Invariant::Types, msg);
    }

    /// Invariant 12 for the node's output types.
    fn quant(&mut self, id: NodeId) {
        let node = self.g.node(id);
        for (port, t) in node.outputs.iter().enumerate() {
            if let Some(q) = &t.quant {
                if let Err(e) = check_quant(t, q) {
                    self.err(&node.name, Invariant::Quant, format!("output {port}: {e}"));
                }
            }
        }
    }

    /// Invariant 5: one violation per strongly connected component that is a cycle.
    fn cycles(&mut self) {
        let dag = self.g.petgraph();
        let mut cycles: Vec<Vec<NodeId>> = petgraph::algo::tarjan_scc(dag)
            .into_iter()
            .filter(|c| c.len() > 1 || dag.edges_connecting(c[0], c[0]).next().is_some())
            .map(|mut c| {
                c.sort();
                c
            })
            .collect();
        cycles.sort();
        for c in cycles {
            let members: Vec<&str> = c.iter().map(|&n| self.name(n)).collect();
            let msg = format!("cycle through {}", members.join(" -> "));
            self.err(self.name(c[0]), Invariant::Acyclic, msg);
        }
    }

    /// Invariant 6, graph side: every listed input is an existing `Input` node, once.
    fn graph_inputs(&mut self) {
        let mut seen = BTreeSet::new();
        for (i, &id) in self.g.inputs().iter().enumerate() {
            if !self.g.contains(id) {
                self.err(
                    "",
                    Invariant::GraphInputs,
                    format!("graph input {i} refers to a removed node"),
                );
                continue;
            }
            let name = self.name(id);
            if !seen.insert(id) {
                self.err(
                    name,
                    Invariant::GraphInputs,
                    "listed more than once as a graph input",
                );
            }
            if self.g.node(id).op != Op::Input {
                let msg = format!(
                    "listed as graph input {i} but is a {} node",
                    self.g.node(id).op
                );
                self.err(name, Invariant::GraphInputs, msg);
            }
        }
    }

    /// Invariant 11.
    fn outputs(&mut self) {
        if self.g.outputs().is_empty() {
            self.err("", Invariant::Outputs, "the graph has no outputs");
        }
        let mut seen = BTreeSet::new();
        for o in self.g.outputs() {
            if !self.g.contains(o.value.node) {
                self.err(
                    "",
                    Invariant::Outputs,
                    format!("output '{}' refers to a removed node", o.name),
                );
                continue;
            }
            let node = self.g.node(o.value.node);
            if o.name.is_empty() {
                self.err(
                    &node.name,
                    Invariant::Outputs,
                    "a graph output of this node has an empty name",
                );
            } else if !seen.insert(o.name.as_str()) {
                self.err(
                    &node.name,
                    Invariant::Outputs,
                    format!("output name '{}' is used twice", o.name),
                );
            }
            if usize::from(o.value.port) >= node.outputs.len() {
                let msg = format!(
                    "output '{}' reads port {}, the node has {} output(s)",
                    o.name,
                    o.value.port,
                    node.outputs.len()
                );
                self.err(&node.name, Invariant::Outputs, msg);
            }
        }
    }

    /// Invariants 8 and 9 for the constant pool; named after the first user, if any.
    fn constant_pool(&mut self) {
        let mut users: BTreeMap<usize, &str> = BTreeMap::new();
        for id in self.g.node_ids() {
            if let Op::Constant(c) = self.g.node(id).op {
                users.entry(c.0 as usize).or_insert(self.name(id));
            }
        }
        for (i, t) in self.g.constants().iter().enumerate() {
            let node = users.get(&i).copied().unwrap_or("");
            let numel = t.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            if byte_size(t.dtype(), &t.shape).is_none() {
                let msg = format!(
                    "constant #{i} shape {:?} has more than {} elements",
                    t.shape,
                    crate::MAX_ELEMENTS
                );
                self.err(node, Invariant::Size, msg);
            } else if numel != Some(t.data.len()) {
                let msg = format!(
                    "constant #{i} has shape {:?} but {} elements",
                    t.shape,
                    t.data.len()
                );
                self.err(node, Invariant::ConstantData, msg);
            }
        }
    }
}

/// The byte size of a tensor, `None` if its element count is not a valid IR one
/// ([`crate::checked_numel`]: at most [`crate::MAX_ELEMENTS`]) or the bytes overflow.
fn byte_size(dtype: DType, shape: &[usize]) -> Option<usize> {
    crate::checked_numel(shape).ok()?.checked_mul(dtype.size())
}

fn same_dtype_shape(a: &[TensorType], b: &[TensorType]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.dtype == y.dtype && x.shape == y.shape)
}

fn type_list(ts: &[TensorType]) -> String {
    let v: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
    v.join(", ")
}

/// Why a quantized type breaks invariant 12.
#[derive(Debug, Clone, PartialEq)]
pub enum QuantError {
    /// Float and int64 tensors carry no quantization.
    NotQuantizable(DType),
    /// A scale that is not positive and finite (`channel`: per-channel index).
    Scale { channel: Option<usize>, scale: f32 },
    /// A zero point outside the dtype's range.
    ZeroPoint { zero_point: i32, dtype: DType },
    /// A per-channel axis beyond the tensor's rank.
    Axis { axis: usize, rank: usize },
    /// Another number of per-channel scales than the axis has channels.
    ScaleCount {
        count: usize,
        axis: usize,
        dim: usize,
    },
}

impl fmt::Display for QuantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuantError::NotQuantizable(d) => write!(f, "{d} tensors cannot be quantized"),
            QuantError::Scale {
                channel: None,
                scale,
            } => write!(f, "scale {scale:?} is not positive and finite"),
            QuantError::Scale {
                channel: Some(i),
                scale,
            } => write!(
                f,
                "per-channel scale {i} ({scale:?}) is not positive and finite"
            ),
            QuantError::ZeroPoint { zero_point, dtype } => {
                write!(f, "zero point {zero_point} does not fit {dtype}")
            }
            QuantError::Axis { axis, rank } => {
                write!(f, "per-channel axis {axis} is out of range for rank {rank}")
            }
            QuantError::ScaleCount { count, axis, dim } => {
                write!(
                    f,
                    "{count} per-channel scales for axis {axis} of size {dim}"
                )
            }
        }
    }
}

/// Invariant 12 for one quantized type.
fn check_quant(t: &TensorType, q: &Quant) -> Result<(), QuantError> {
    let range = match t.dtype {
        DType::I8 => i8::MIN as i64..=i8::MAX as i64,
        DType::U8 => 0..=u8::MAX as i64,
        DType::I32 => i32::MIN as i64..=i32::MAX as i64,
        d @ (DType::F32 | DType::I64) => return Err(QuantError::NotQuantizable(d)),
    };
    let bad_scale = |s: f32| !(s.is_finite() && s > 0.0);
    match q {
        Quant::PerTensor { scale, zero_point } => {
            if bad_scale(*scale) {
                return Err(QuantError::Scale {
                    channel: None,
                    scale: *scale,
                });
            }
            if !range.contains(&i64::from(*zero_point)) {
                return Err(QuantError::ZeroPoint {
                    zero_point: *zero_point,
                    dtype: t.dtype,
                });
            }
        }
        Quant::PerChannel { axis, scales } => {
            let Some(&dim) = t.shape.get(*axis) else {
                return Err(QuantError::Axis {
                    axis: *axis,
                    rank: t.rank(),
                });
            };
            if scales.len() != dim {
                return Err(QuantError::ScaleCount {
                    count: scales.len(),
                    axis: *axis,
                    dim,
                });
            }
            if let Some((i, &s)) = scales.iter().enumerate().find(|(_, &s)| bad_scale(s)) {
                return Err(QuantError::Scale {
                    channel: Some(i),
                    scale: s,
                });
            }
        }
    }
    Ok(())
}
