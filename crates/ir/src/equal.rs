//! Canonical graph equality, independent of node indices (a parsed graph numbers its
//! nodes in printed order, the original in creation order).
//!
//! Two graphs are equal when they have the same name, the same constant pool
//! (element-wise, f32 compared bit for bit), and a one-to-one matching of their nodes
//! under which matched nodes have the same name, op, output types and inputs (slot by
//! slot, matched producer and port), the input lists match in order and the outputs
//! match in order (name and value). Nodes are matched by name when names are unique
//! in both graphs, otherwise by position in [`Graph::topo_order`] (node-index order
//! for cyclic graphs). Floats inside ops and types compare by their shortest
//! round-trip representation, so a NaN attribute equals itself and `-0.0 != 0.0`.

use crate::{Graph, NodeId, Tensor, TensorData, Value};
use std::collections::BTreeMap;

/// Whether `a` and `b` are the same graph up to node numbering (see the module doc).
pub fn graphs_equal(a: &Graph, b: &Graph) -> bool {
    if a.name != b.name
        || a.node_count() != b.node_count()
        || !pools_equal(a.constants(), b.constants())
    {
        return false;
    }
    let Some(map) = match_nodes(a, b) else {
        return false;
    };
    let mv = |v: &Value| map.get(&v.node).map(|&n| Value::new(n, v.port));
    let nodes_ok = map.iter().all(|(&na, &nb)| {
        let (x, y) = (a.node(na), b.node(nb));
        let edges_a: Vec<_> = a
            .input_edges(na)
            .into_iter()
            .map(|(s, v)| (s, mv(&v)))
            .collect();
        let edges_b: Vec<_> = b
            .input_edges(nb)
            .into_iter()
            .map(|(s, v)| (s, Some(v)))
            .collect();
        x.name == y.name
            && format!("{:?}", x.op) == format!("{:?}", y.op)
            && format!("{:?}", x.outputs) == format!("{:?}", y.outputs)
            && edges_a == edges_b
    });
    let inputs_ok = a.inputs().len() == b.inputs().len()
        && a.inputs()
            .iter()
            .zip(b.inputs())
            .all(|(x, y)| map.get(x) == Some(y));
    let outputs_ok = a.outputs().len() == b.outputs().len()
        && a.outputs()
            .iter()
            .zip(b.outputs())
            .all(|(x, y)| x.name == y.name && mv(&x.value) == Some(y.value));
    nodes_ok && inputs_ok && outputs_ok
}

/// Node matching `a -> b`, or `None` if no matching of the node sets exists.
fn match_nodes(a: &Graph, b: &Graph) -> Option<BTreeMap<NodeId, NodeId>> {
    if let (Some(na), Some(nb)) = (unique_names(a), unique_names(b)) {
        return na
            .iter()
            .map(|(name, &ia)| nb.get(name).map(|&ib| (ia, ib)))
            .collect();
    }
    let order = |g: &Graph| g.topo_order().unwrap_or_else(|_| g.node_ids());
    Some(order(a).into_iter().zip(order(b)).collect())
}

fn unique_names(g: &Graph) -> Option<BTreeMap<&str, NodeId>> {
    let mut m = BTreeMap::new();
    for id in g.node_ids() {
        if m.insert(g.node(id).name.as_str(), id).is_some() {
            return None;
        }
    }
    Some(m)
}

fn pools_equal(a: &[Tensor], b: &[Tensor]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.shape == y.shape && data_equal(&x.data, &y.data))
}

fn data_equal(a: &TensorData, b: &TensorData) -> bool {
    match (a, b) {
        (TensorData::F32(x), TensorData::F32(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        _ => a == b,
    }
}
