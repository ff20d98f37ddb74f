//! The compiled graph as Graphviz DOT (`nnac compile --graph FILE.svg|.dot`): one box
//! per NNA op with its per-frame cycles (filled darker the larger its share of the
//! frame), every fused group (a dot product with the bias, activation and pooling it
//! absorbed, an ELTWISE with its activation) boxed as a cluster of the source nodes
//! it stands for, host ops in another colour, graph inputs and outputs as ellipses,
//! edges labelled with the shapes they carry. Constants (weights, biases) are not
//! drawn. The output is deterministic.

use nnac_ir::{dot_quote as q, shape_str, Graph, NnaOp, NodeId, Op};
use std::collections::BTreeMap;
use std::fmt::Write;

/// What the picture shows besides the graph.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphFacts {
    /// Fused node name -> the source nodes it stands for (itself first).
    pub fused: BTreeMap<String, Vec<String>>,
    /// Layer (node) name -> cycles of one frame.
    pub cycles: BTreeMap<String, u64>,
    /// Cycles of one frame.
    pub total_cycles: u64,
}

/// Fill colours of NNA ops by share of the frame's cycles (`<1%`, `<5%`, `<10%`,
/// `<20%`, more).
const HEAT: [&str; 5] = ["#eef4fb", "#cfe0f3", "#9ec3e6", "#6aa3d6", "#3a7fc1"];
const HOST: &str = "#ffd8a8";

fn heat(share: f64) -> &'static str {
    let k = [0.01, 0.05, 0.10, 0.20]
        .iter()
        .position(|&t| share < t)
        .unwrap_or(4);
    HEAT[k]
}

/// The DOT ids by which edges enter and leave a drawn node.
struct Ends {
    entry: String,
    exit: String,
}

/// A DOT label of several lines (`\\n` between them), each escaped by `dot_quote`.
fn lines(ls: &[&str]) -> String {
    let inner: Vec<String> = ls
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let quoted = q(l);
            quoted[1..quoted.len() - 1].to_string()
        })
        .collect();
    format!("\"{}\"", inner.join("\\n"))
}

fn is_drawn(g: &Graph, id: NodeId) -> bool {
    !matches!(g.node(id).op, Op::Constant(_)) || g.outputs().iter().any(|o| o.value.node == id)
}

/// The DOT text of compiled graph `g` with `facts`.
pub fn graph_dot(g: &Graph, facts: &GraphFacts) -> String {
    let order = g.topo_order().unwrap_or_else(|_| g.node_ids());
    let mut out = String::new();
    let total = facts.total_cycles.max(1) as f64;
    let host = order
        .iter()
        .filter(|&&id| matches!(g.node(id).op, Op::Nna(NnaOp::Host(_))))
        .count();
    let label = format!(
        "{}: {} NNA cycles per frame; boxes: fused groups; orange: {host} host op(s)",
        g.name, facts.total_cycles
    );
    let _ = writeln!(out, "digraph {} {{", q(&g.name));
    let _ = writeln!(
        out,
        "  graph [rankdir=TB, ranksep=0.3, nodesep=0.25, fontname=\"DejaVu Sans\", fontsize=12, labelloc=t, label={}];",
        q(&label)
    );
    out.push_str("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"DejaVu Sans\", fontsize=10];\n");
    out.push_str("  edge [fontname=\"DejaVu Sans\", fontsize=8, color=\"#555555\"];\n");
    let mut ends: BTreeMap<NodeId, Ends> = BTreeMap::new();
    for (k, &id) in order.iter().enumerate() {
        if !is_drawn(g, id) {
            continue;
        }
        let node = g.node(id);
        let cycles = facts.cycles.get(&node.name).copied();
        let cyc = cycles.filter(|&c| c > 0).map_or(String::new(), |c| {
            format!("{c} cycles ({:.1}%)", 100.0 * c as f64 / total)
        });
        let shape = node
            .outputs
            .first()
            .map_or(String::new(), |t| shape_str(&t.shape));
        let (fill, what) = match &node.op {
            Op::Nna(NnaOp::Host(op)) => (HOST, format!("host: {}", op.mnemonic())),
            Op::Input => ("#ffffff", "input".to_string()),
            op => (
                cycles.map_or("#ffffff", |c| heat(c as f64 / total)),
                op.mnemonic().to_string(),
            ),
        };
        let members = facts.fused.get(&node.name).filter(|m| m.len() > 1);
        match members {
            Some(m) => {
                let _ = writeln!(out, "  subgraph \"cluster_{k}\" {{");
                let _ = writeln!(
                    out,
                    "    label={}; style=\"rounded,filled\"; fillcolor={}; color=\"#3a5f8a\"; fontsize=10;",
                    lines(&[&node.name, &format!("{what} [{shape}]"), &cyc]),
                    q(fill)
                );
                for (j, name) in m.iter().enumerate() {
                    let _ = writeln!(out, "    \"n{k}_{j}\" [label={}, fontsize=8, height=0.2, margin=\"0.06,0.02\"];", q(name));
                }
                for j in 1..m.len() {
                    let _ = writeln!(
                        out,
                        "    \"n{k}_{}\" -> \"n{k}_{j}\" [style=dashed, arrowsize=0.5];",
                        j - 1
                    );
                }
                out.push_str("  }\n");
                ends.insert(
                    id,
                    Ends {
                        entry: format!("\"n{k}_0\""),
                        exit: format!("\"n{k}_{}\"", m.len() - 1),
                    },
                );
            }
            None => {
                let shape_attr = if matches!(node.op, Op::Input) {
                    ", shape=ellipse"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "  \"n{k}\" [label={}, fillcolor={}{shape_attr}];",
                    lines(&[&node.name, &format!("{what} [{shape}]"), &cyc]),
                    q(fill)
                );
                ends.insert(
                    id,
                    Ends {
                        entry: format!("\"n{k}\""),
                        exit: format!("\"n{k}\""),
                    },
                );
            }
        }
    }
    for &id in &order {
        let Some(dst) = ends.get(&id) else { continue };
        for v in g.node_inputs(id) {
            if let Some(src) = ends.get(&v.node) {
                let _ = writeln!(
                    out,
                    "  {} -> {} [label={}];",
                    src.exit,
                    dst.entry,
                    q(&shape_str(&g.value_type(v).shape))
                );
            }
        }
    }
    for (k, o) in g.outputs().iter().enumerate() {
        let _ = writeln!(
            out,
            "  \"out{k}\" [label={}, shape=ellipse];",
            q(&format!("output {}", o.name))
        );
        if let Some(src) = ends.get(&o.value.node) {
            let _ = writeln!(out, "  {} -> \"out{k}\";", src.exit);
        }
    }
    out.push_str("}\n");
    out
}
