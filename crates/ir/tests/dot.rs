//! DOT output: structural checks (no snapshots) and syntax sanity.

mod common;

use common::{all_ops_graph, nna_graph, tiny_graph};
use nnac_ir::*;

/// Braces and brackets balance outside quoted strings; every quote closes.
fn assert_well_formed(dot: &str) {
    let (mut depth, mut brackets, mut in_str, mut escaped) = (0i32, 0i32, false, false);
    for c in dot.chars() {
        if in_str {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => escaped = false,
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => depth -= 1,
            '[' => brackets += 1,
            ']' => brackets -= 1,
            _ => {}
        }
        assert!(depth >= 0 && brackets >= 0, "unbalanced:\n{dot}");
    }
    assert!(!in_str && depth == 0 && brackets == 0, "unbalanced:\n{dot}");
    for line in dot.lines().skip(1) {
        let t = line.trim();
        assert!(
            t == "}" || t.ends_with(';'),
            "statement without ';': {line}"
        );
        assert!(
            t == "}"
                || t.starts_with('"')
                || t.starts_with("graph ")
                || t.starts_with("node ")
                || t.starts_with("edge "),
            "unquoted id: {line}"
        );
    }
}

#[test]
fn tiny_graph_nodes_and_edges() {
    let dot = to_dot(&tiny_graph());
    assert_well_formed(&dot);
    assert!(dot.starts_with("digraph \"tiny\" {\n"), "{dot}");
    // x, w, b, conv, relu in topological order: w and b are folded into conv.
    assert!(
        dot.contains("  \"n0\" [label=\"x\\ninput\\n-> f32[1x3x8x8]\", shape=ellipse];\n"),
        "{dot}"
    );
    assert!(dot.contains("\"n3\" [label=\"conv\\nconv\\nkernel=[1, 1] strides=[1, 1] pads=[0, 0, 0, 0]\\ndilations=[1, 1] group=1\\nin1: const f32[2x3x1x1]\\nin2: const f32[2] = [0.5, -1.0]\\n-> f32[1x2x8x8]\"];"), "{dot}");
    assert!(
        dot.contains("  \"n0\" -> \"n3\" [label=\"1x3x8x8\"];\n"),
        "{dot}"
    );
    assert!(
        dot.contains("  \"n3\" -> \"n4\" [label=\"1x2x8x8\"];\n"),
        "{dot}"
    );
    assert!(
        dot.contains("  \"out0\" [label=\"output y\", shape=ellipse, style=filled];\n"),
        "{dot}"
    );
    assert!(
        dot.contains("  \"n4\" -> \"out0\" [label=\"1x2x8x8\"];\n"),
        "{dot}"
    );
    assert!(
        !dot.contains("\"n1\"") && !dot.contains("\"n2\""),
        "constants should be folded:\n{dot}"
    );
}

#[test]
fn big_graphs_are_well_formed_and_deterministic() {
    for g in [all_ops_graph(), nna_graph()] {
        let dot = to_dot(&g);
        assert_well_formed(&dot);
        assert_eq!(dot, to_dot(&g));
        let non_const = g
            .node_ids()
            .into_iter()
            .filter(|&id| !matches!(g.node(id).op, Op::Constant(_)))
            .count();
        let drawn = dot
            .lines()
            .filter(|l| l.starts_with("  \"n") && l.contains(" [label=") && !l.contains("\" -> \""))
            .count();
        assert!(
            drawn >= non_const,
            "{drawn} node lines for {non_const} non-constant nodes"
        );
    }
}

#[test]
fn names_are_escaped() {
    let dot = to_dot(&all_ops_graph());
    assert!(dot.starts_with("digraph \"all \\\"ops\\\"\" {"), "{dot}");
    assert!(dot.contains("label=\"é identity\\nidentity\\n"), "{dot}");
    assert!(dot.contains("label=\"output pooled:max\""), "{dot}");
}

#[test]
fn unused_or_output_constants_are_drawn() {
    let mut g = tiny_graph();
    let b = Value::new(g.find("b").unwrap(), 0);
    g.add_output("bias", b);
    let dot = to_dot(&g);
    assert!(
        dot.contains("[label=\"b\\nconst\\nid=1\\n-> f32[2]\"];"),
        "{dot}"
    );
    assert_well_formed(&dot);
}
