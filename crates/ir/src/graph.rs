//! The graph: nodes (an op, a source name, output types) on a petgraph
//! `StableDiGraph` whose edges carry data flow. Edges are the one source of truth for
//! a node's inputs: edge `(producer -> consumer, Edge { port, slot })` says that input
//! `slot` of the consumer is output `port` of the producer.

use crate::{infer, ConstId, IrError, Op, Tensor, TensorType};
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use petgraph::Direction;

pub type NodeId = NodeIndex<u32>;

/// One output of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value {
    pub node: NodeId,
    pub port: u16,
}

impl Value {
    pub fn new(node: NodeId, port: u16) -> Self {
        Value { node, port }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The name from the source model (ONNX node name or output name, Caffe layer
    /// name); unique within the graph.
    pub name: String,
    pub op: Op,
    /// The type of each output port.
    pub outputs: Vec<TensorType>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Output port of the producer.
    pub port: u16,
    /// Input slot of the consumer.
    pub slot: u16,
}

/// A named graph output.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphOutput {
    pub name: String,
    pub value: Value,
}

#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub name: String,
    dag: StableDiGraph<Node, Edge, u32>,
    /// Input nodes in model order.
    inputs: Vec<NodeId>,
    outputs: Vec<GraphOutput>,
    constants: Vec<Tensor>,
}

impl Graph {
    pub fn new(name: impl Into<String>) -> Self {
        Graph {
            name: name.into(),
            ..Default::default()
        }
    }

    // ---- construction -------------------------------------------------------------

    /// Adds a graph input (an `Op::Input` node named `name`).
    pub fn add_input(&mut self, name: impl Into<String>, ty: TensorType) -> Value {
        let id = self.dag.add_node(Node {
            name: name.into(),
            op: Op::Input,
            outputs: vec![ty],
        });
        self.inputs.push(id);
        Value::new(id, 0)
    }

    /// Stores `tensor` once in the constant pool and adds a node producing it.
    pub fn add_constant(&mut self, name: impl Into<String>, tensor: Tensor) -> Value {
        let ty = tensor.ty();
        let cid = ConstId(self.constants.len() as u32);
        self.constants.push(tensor);
        let id = self.dag.add_node(Node {
            name: name.into(),
            op: Op::Constant(cid),
            outputs: vec![ty],
        });
        Value::new(id, 0)
    }

    /// Adds a node, inferring its output types from its inputs.
    pub fn add_node(
        &mut self,
        name: impl Into<String>,
        op: Op,
        inputs: &[Value],
    ) -> Result<NodeId, IrError> {
        let name = name.into();
        let types: Vec<&TensorType> = inputs.iter().map(|&v| self.value_type(v)).collect();
        let outputs = infer::infer_types(&op, &types).map_err(|msg| IrError::at(&name, msg))?;
        for t in &outputs {
            crate::checked_numel(&t.shape).map_err(|msg| IrError::at(&name, msg))?;
        }
        Ok(self.add_node_typed(name, op, inputs, outputs))
    }

    /// Adds a node with the given output types (no inference; the verifier checks).
    pub fn add_node_typed(
        &mut self,
        name: impl Into<String>,
        op: Op,
        inputs: &[Value],
        outputs: Vec<TensorType>,
    ) -> NodeId {
        let id = self.dag.add_node(Node {
            name: name.into(),
            op,
            outputs,
        });
        for (slot, v) in inputs.iter().enumerate() {
            self.dag.add_edge(
                v.node,
                id,
                Edge {
                    port: v.port,
                    slot: slot as u16,
                },
            );
        }
        id
    }

    pub fn add_output(&mut self, name: impl Into<String>, value: Value) {
        self.outputs.push(GraphOutput {
            name: name.into(),
            value,
        });
    }

    /// Adds a constant to the pool without a node (for ops that are rebuilt later).
    pub fn push_constant(&mut self, tensor: Tensor) -> ConstId {
        self.constants.push(tensor);
        ConstId(self.constants.len() as u32 - 1)
    }

    // ---- queries ------------------------------------------------------------------

    pub fn node(&self, id: NodeId) -> &Node {
        &self.dag[id]
    }

    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.dag[id]
    }

    pub fn contains(&self, id: NodeId) -> bool {
        self.dag.contains_node(id)
    }

    /// All node ids in ascending index order (deterministic).
    pub fn node_ids(&self) -> Vec<NodeId> {
        let mut ids: Vec<NodeId> = self.dag.node_indices().collect();
        ids.sort();
        ids
    }

    pub fn node_count(&self) -> usize {
        self.dag.node_count()
    }

    pub fn inputs(&self) -> &[NodeId] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[GraphOutput] {
        &self.outputs
    }

    pub fn outputs_mut(&mut self) -> &mut Vec<GraphOutput> {
        &mut self.outputs
    }

    pub fn constants(&self) -> &[Tensor] {
        &self.constants
    }

    pub fn constant(&self, id: ConstId) -> &Tensor {
        &self.constants[id.0 as usize]
    }

    /// The inputs of a node, ordered by slot.
    pub fn node_inputs(&self, id: NodeId) -> Vec<Value> {
        self.input_edges(id).into_iter().map(|(_, v)| v).collect()
    }

    /// Raw input edges `(slot, value)` of a node, sorted by slot (the verifier's view).
    pub fn input_edges(&self, id: NodeId) -> Vec<(u16, Value)> {
        let mut e: Vec<(u16, Value)> = self
            .dag
            .edges_directed(id, Direction::Incoming)
            .map(|e| (e.weight().slot, Value::new(e.source(), e.weight().port)))
            .collect();
        e.sort();
        e
    }

    /// Consumers of a value: `(node, slot)`, sorted.
    pub fn users(&self, v: Value) -> Vec<(NodeId, u16)> {
        let mut u: Vec<(NodeId, u16)> = self
            .dag
            .edges_directed(v.node, Direction::Outgoing)
            .filter(|e| e.weight().port == v.port)
            .map(|e| (e.target(), e.weight().slot))
            .collect();
        u.sort();
        u
    }

    /// Whether a value is a graph output.
    pub fn is_output(&self, v: Value) -> bool {
        self.outputs.iter().any(|o| o.value == v)
    }

    /// Whether only host ops (`nna.host`) read value `v`: it has readers, all of them
    /// host ops, and it is not a graph output. Such a value never needs NNA codes (a
    /// run of layers kept in float passes it on as float32).
    pub fn only_host_ops_read(&self, v: Value) -> bool {
        let users = self.users(v);
        !users.is_empty()
            && !self.is_output(v)
            && users
                .iter()
                .all(|&(u, _)| matches!(self.dag[u].op, Op::Nna(crate::NnaOp::Host(_))))
    }

    pub fn value_type(&self, v: Value) -> &TensorType {
        &self.dag[v.node].outputs[v.port as usize]
    }

    /// The constant a value holds, if it is produced by a `Constant` node.
    pub fn const_of(&self, v: Value) -> Option<&Tensor> {
        match self.dag[v.node].op {
            Op::Constant(c) => Some(self.constant(c)),
            _ => None,
        }
    }

    /// Node ids in a deterministic topological order (inputs before users, ties broken
    /// by node index). Errors name a node on a cycle.
    pub fn topo_order(&self) -> Result<Vec<NodeId>, IrError> {
        use std::collections::BTreeSet;
        let ids = self.node_ids();
        let mut indeg: std::collections::BTreeMap<NodeId, usize> = ids
            .iter()
            .map(|&n| (n, self.dag.edges_directed(n, Direction::Incoming).count()))
            .collect();
        let mut ready: BTreeSet<NodeId> = indeg
            .iter()
            .filter(|(_, &d)| d == 0)
            .map(|(&n, _)| n)
            .collect();
        let mut order = Vec::with_capacity(ids.len());
        while let Some(n) = ready.pop_first() {
            order.push(n);
            for e in self.dag.edges_directed(n, Direction::Outgoing) {
                let d = indeg.get_mut(&e.target()).expect("edge target is a node");
                *d -= 1;
                if *d == 0 {
                    ready.insert(e.target());
                }
            }
        }
        if order.len() != ids.len() {
            let stuck = indeg
                .iter()
                .find(|(_, &d)| d > 0)
                .map(|(&n, _)| n)
                .expect("a node remains");
            return Err(IrError::at(
                &self.dag[stuck].name,
                "graph has a cycle through this node",
            ));
        }
        Ok(order)
    }

    // ---- rewriting ----------------------------------------------------------------

    /// Makes every consumer of `old` (and every graph output naming it) use `new`.
    pub fn replace_uses(&mut self, old: Value, new: Value) {
        for (user, slot) in self.users(old) {
            let edge = self
                .dag
                .edges_connecting(old.node, user)
                .find(|e| e.weight().port == old.port && e.weight().slot == slot)
                .map(|e| e.id())
                .expect("edge listed by users()");
            self.dag.remove_edge(edge);
            self.dag.add_edge(
                new.node,
                user,
                Edge {
                    port: new.port,
                    slot,
                },
            );
        }
        for o in &mut self.outputs {
            if o.value == old {
                o.value = new;
            }
        }
    }

    /// Replaces the inputs of `id` by `inputs` (slots renumbered from 0).
    pub fn set_node_inputs(&mut self, id: NodeId, inputs: &[Value]) {
        let old: Vec<_> = self
            .dag
            .edges_directed(id, Direction::Incoming)
            .map(|e| e.id())
            .collect();
        for e in old {
            self.dag.remove_edge(e);
        }
        for (slot, v) in inputs.iter().enumerate() {
            self.dag.add_edge(
                v.node,
                id,
                Edge {
                    port: v.port,
                    slot: slot as u16,
                },
            );
        }
    }

    /// Moves the tensor out of the constant node producing `v` for a rewrite that
    /// replaces it, when nothing else can see it: `user` consumes it in exactly one
    /// slot and nothing else does, it is not a graph output, and no other node shares
    /// its pool entry (`None` otherwise: copy instead). The node is left holding an
    /// empty f32 tensor of shape `[0]` (its type updated to match); the caller rewires
    /// `user` away from it and [`Graph::remove_dead`] drops it.
    pub fn take_constant(&mut self, v: Value, user: NodeId) -> Option<Tensor> {
        let Op::Constant(c) = self.dag[v.node].op else {
            return None;
        };
        let only_use = matches!(self.users(v)[..], [(u, _)] if u == user);
        let shared = self
            .dag
            .node_indices()
            .any(|n| n != v.node && matches!(self.dag[n].op, Op::Constant(d) if d == c));
        if !only_use || shared || self.is_output(v) {
            return None;
        }
        let empty = Tensor::f32(vec![0], Vec::new()).expect("no elements");
        self.dag[v.node].outputs[0] = empty.ty();
        Some(std::mem::replace(&mut self.constants[c.0 as usize], empty))
    }

    /// Removes a node and its edges. Its users must have been rewired first; the
    /// verifier reports any consumer left with a missing input slot.
    pub fn remove_node(&mut self, id: NodeId) {
        self.inputs.retain(|&n| n != id);
        self.dag.remove_node(id);
    }

    /// Removes every node whose outputs reach no graph output, and constants no node
    /// uses (constant ids are renumbered). Returns the number of nodes removed.
    pub fn remove_dead(&mut self) -> usize {
        let mut live = std::collections::BTreeSet::new();
        let mut stack: Vec<NodeId> = self.outputs.iter().map(|o| o.value.node).collect();
        stack.extend(self.inputs.iter().copied());
        while let Some(n) = stack.pop() {
            if live.insert(n) {
                stack.extend(
                    self.dag
                        .edges_directed(n, Direction::Incoming)
                        .map(|e| e.source()),
                );
            }
        }
        let dead: Vec<NodeId> = self
            .node_ids()
            .into_iter()
            .filter(|n| !live.contains(n))
            .collect();
        for &n in &dead {
            self.dag.remove_node(n);
        }
        self.compact_constants();
        dead.len()
    }

    fn compact_constants(&mut self) {
        let mut remap = vec![None; self.constants.len()];
        let mut kept = Vec::new();
        for id in self.node_ids() {
            if let Op::Constant(c) = self.dag[id].op {
                let i = c.0 as usize;
                let new = *remap[i].get_or_insert_with(|| {
                    kept.push(i);
                    ConstId(kept.len() as u32 - 1)
                });
                self.dag[id].op = Op::Constant(new);
            }
        }
        let old = std::mem::take(&mut self.constants);
        let mut old: Vec<Option<Tensor>> = old.into_iter().map(Some).collect();
        self.constants = kept
            .into_iter()
            .map(|i| old[i].take().expect("kept once"))
            .collect();
    }

    /// A fresh node name derived from `base` that no node uses yet.
    pub fn fresh_name(&self, base: &str) -> String {
        let taken = |s: &str| self.dag.node_weights().any(|n| n.name == s);
        if !taken(base) {
            return base.to_string();
        }
        (1..)
            .map(|i| format!("{base}.{i}"))
            .find(|s| !taken(s))
            .expect("unbounded")
    }

    /// Finds a node by its source name.
    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.node_ids()
            .into_iter()
            .find(|&n| self.dag[n].name == name)
    }

    /// The underlying petgraph, for algorithms (read-only).
    pub fn petgraph(&self) -> &StableDiGraph<Node, Edge, u32> {
        &self.dag
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BinaryOp, DType};

    #[test]
    fn take_constant_only_when_nothing_else_sees_it() {
        let mut g = Graph::new("g");
        let x = g.add_input("x", TensorType::new(DType::F32, vec![2]));
        let c = g.add_constant("c", Tensor::f32(vec![2], vec![1.0, 2.0]).unwrap());
        let shared = g.add_constant("s", Tensor::f32(vec![2], vec![3.0, 4.0]).unwrap());
        let add = |g: &mut Graph, n: &str, a: Value, b: Value| {
            Value::new(
                g.add_node(n, Op::Binary(BinaryOp::Add), &[a, b]).unwrap(),
                0,
            )
        };
        let y = add(&mut g, "y", x, c);
        let z = add(&mut g, "z", y, shared);
        let twice = add(&mut g, "twice", z, shared);
        g.add_output("out", twice);
        // `s` has two users; `c` is not used by `z`.
        assert!(g.take_constant(shared, z.node).is_none());
        assert!(g.take_constant(c, z.node).is_none());
        assert!(g.take_constant(x, y.node).is_none());
        let t = g.take_constant(c, y.node).unwrap();
        assert_eq!(t.as_f32(), Some(&[1.0, 2.0][..]));
        assert_eq!(g.value_type(c).shape, vec![0]);
        assert_eq!(g.const_of(c).unwrap().numel(), 0);
        // Rewired away, the emptied node is dead.
        let c2 = g.add_constant("c2", t);
        g.set_node_inputs(y.node, &[x, c2]);
        assert_eq!(g.remove_dead(), 1);
        assert_eq!(g.constants().len(), 2);
    }
}
