//! Graphviz DOT output for looking at a graph (`nnac inspect --format dot`).
//!
//! One box per node (ids `"n<k>"`, k = position in [`Graph::topo_order`]) labelled
//! with its name, op mnemonic, attributes and output types; graph inputs and outputs
//! are ellipses (outputs get their own `"out<k>"` node). Edges carry the shape of the
//! tensor they move. `Constant` nodes consumed only by other nodes are folded into
//! their consumers' labels (`in1: const f32[64x3x7x7]`) so that big graphs stay
//! readable. The output is deterministic.

use crate::tagged::Tagged;
use crate::text::{dims_text, write_type};
use crate::{Graph, NodeId, Op, TensorData, Value};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Labels wrap after about this many characters of attributes.
const WRAP: usize = 48;

/// The graph in Graphviz DOT syntax.
pub fn to_dot(g: &Graph) -> String {
    let order = g.topo_order().unwrap_or_else(|_| g.node_ids());
    let folded: Vec<bool> = order.iter().map(|&id| is_folded(g, id)).collect();
    let ids: BTreeMap<NodeId, String> = order
        .iter()
        .zip(&folded)
        .enumerate()
        .filter(|(_, (_, &f))| !f)
        .map(|(k, (&id, _))| (id, format!("\"n{k}\"")))
        .collect();
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(&g.name));
    out.push_str("  graph [rankdir=TB];\n");
    out.push_str("  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for &id in &order {
        if let Some(dot_id) = ids.get(&id) {
            write_node(&mut out, g, id, dot_id);
        }
    }
    for &id in &order {
        if let Some(dot_id) = ids.get(&id) {
            for v in g.node_inputs(id) {
                if let Some(src) = ids.get(&v.node) {
                    let _ = writeln!(
                        out,
                        "  {src} -> {dot_id} [label={}];",
                        quote(&edge_label(g, v))
                    );
                }
            }
        }
    }
    for (k, o) in g.outputs().iter().enumerate() {
        let _ = writeln!(
            out,
            "  \"out{k}\" [label={}, shape=ellipse, style=filled];",
            quote(&format!("output {}", o.name))
        );
        if let Some(src) = ids.get(&o.value.node) {
            let _ = writeln!(
                out,
                "  {src} -> \"out{k}\" [label={}];",
                quote(&edge_label(g, o.value))
            );
        }
    }
    out.push_str("}\n");
    out
}

/// A constant node that only feeds other nodes is shown inside their labels.
fn is_folded(g: &Graph, id: NodeId) -> bool {
    let node = g.node(id);
    matches!(node.op, Op::Constant(_))
        && g.node_inputs(id).is_empty()
        && !g.outputs().iter().any(|o| o.value.node == id)
        && (0..node.outputs.len()).any(|p| !g.users(Value::new(id, p as u16)).is_empty())
}

fn write_node(out: &mut String, g: &Graph, id: NodeId, dot_id: &str) {
    let node = g.node(id);
    let mut lines = vec![node.name.clone()];
    lines.extend(op_lines(&node.op));
    for (slot, v) in g.node_inputs(id).into_iter().enumerate() {
        if is_folded(g, v.node) {
            lines.push(format!("in{slot}: {}", const_summary(g, v.node)));
        }
    }
    let types: Vec<String> = node
        .outputs
        .iter()
        .map(|t| {
            let mut s = String::new();
            write_type(&mut s, t);
            s
        })
        .collect();
    lines.push(format!("-> {}", types.join(", ")));
    let label: Vec<String> = lines.iter().map(|l| escape(l)).collect();
    let shape = if node.op == Op::Input {
        ", shape=ellipse"
    } else {
        ""
    };
    let _ = writeln!(out, "  {dot_id} [label=\"{}\"{shape}];", label.join("\\n"));
}

/// The op mnemonic, then its attributes wrapped into lines.
fn op_lines(op: &Op) -> Vec<String> {
    let (mnemonic, rec) = op.encode();
    let mut lines = vec![mnemonic.to_string()];
    let mut cur = String::new();
    for (k, _, v) in &rec.entries {
        let mut item = format!("{k}=");
        v.write(&mut item);
        if !cur.is_empty() && cur.len() + item.len() > WRAP {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&item);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// `const f32[64x3x7x7]`, with the values when there are at most four.
fn const_summary(g: &Graph, id: NodeId) -> String {
    let node = g.node(id);
    let mut s = String::from("const ");
    if let Some(t) = node.outputs.first() {
        write_type(&mut s, t);
    }
    if let Op::Constant(c) = node.op {
        if let Some(t) = g.constants().get(c.0 as usize).filter(|t| t.numel() <= 4) {
            let vals: Vec<String> = match &t.data {
                TensorData::F32(v) => v.iter().map(|x| format!("{x:?}")).collect(),
                _ => t
                    .to_i64_vec()
                    .unwrap_or_default()
                    .iter()
                    .map(|x| x.to_string())
                    .collect(),
            };
            let _ = write!(s, " = [{}]", vals.join(", "));
        }
    }
    s
}

fn edge_label(g: &Graph, v: Value) -> String {
    let shape = g
        .node(v.node)
        .outputs
        .get(usize::from(v.port))
        .map_or("?".to_string(), |t| dims_text(&t.shape));
    let shape = if shape.is_empty() {
        "scalar".to_string()
    } else {
        shape
    };
    if v.port == 0 {
        shape
    } else {
        format!("{}: {shape}", v.port)
    }
}

/// Escapes `"` and `\` (and control characters) inside a DOT string.
fn escape(s: &str) -> String {
    let mut e = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => e.push_str("\\\""),
            '\\' => e.push_str("\\\\"),
            c if c.is_control() => e.push(' '),
            c => e.push(c),
        }
    }
    e
}

/// `s` as a quoted DOT string (`"..."`, with `"` and `\\` escaped).
pub fn quote(s: &str) -> String {
    format!("\"{}\"", escape(s))
}
