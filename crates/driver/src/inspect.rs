//! Showing a model's imported graph IR (`nnac inspect`, `nnac.inspect`): the verifier's
//! verdict, a summary (model, nodes by op, parameters, inputs and outputs) written as
//! `//` comments, which both the IR text parser and Graphviz ignore, the IR text
//! (constants with more than 16 elements elided unless `full`; only the full form
//! parses back) and, with calibration data, the quantization table `compile` prints.

use crate::error::Error;
use crate::model::QuantArgs;
use nnac_ir::{print_with, shape_str, verify, Graph, PrintOptions, TensorType};
use nnac_passes::Frame;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Constants with more elements than this are elided from the text unless `full`.
const ELIDE_OVER: usize = 16;

/// The verifier's verdict on an imported graph: every violation, as the user's error.
pub fn check(g: &Graph, path: &str) -> Result<(), Error> {
    verify(g).map_err(|errors| {
        Error::user(format!(
            "the imported graph of '{path}' is invalid ({} violation(s)):\n{}",
            errors.len(),
            nnac_ir::verify::report(&errors)
        ))
    })
}

/// The IR text, constants over 16 elements elided unless `full`.
pub fn ir_text(g: &Graph, full: bool) -> String {
    print_with(
        g,
        PrintOptions {
            elide_constants_over: (!full).then_some(ELIDE_OVER),
        },
    )
}

/// The per-layer quantization table (passes' `Report::table()`) as `//` comments,
/// after compiling the graph on the calibration frames.
pub fn quant_table(g: &Graph, frames: &[Frame], quant: &QuantArgs) -> Result<String, Error> {
    let compiled = nnac_passes::compile_graph(g.clone(), frames, &quant.pass_options()?)
        .map_err(Error::from_pass)?;
    Ok(compiled
        .report
        .table()
        .lines()
        .map(|l| format!("// {l}\n"))
        .collect())
}

/// The `//` comment header: model, node counts by op, parameters, inputs, outputs.
pub fn summary(g: &Graph, path: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// model: {} ({path})", g.name);
    let mut by_op: BTreeMap<&str, usize> = BTreeMap::new();
    for id in g.node_ids() {
        *by_op.entry(g.node(id).op.mnemonic()).or_insert(0) += 1;
    }
    let mut counts: Vec<(&str, usize)> = by_op.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = counts.iter().map(|(op, n)| format!("{op} {n}")).collect();
    let _ = writeln!(s, "// nodes: {} ({})", g.node_count(), list.join(", "));
    let params: usize = g.constants().iter().map(|t| t.numel()).sum();
    let bytes: usize = g
        .constants()
        .iter()
        .map(|t| t.numel() * t.dtype().size())
        .sum();
    let _ = writeln!(
        s,
        "// parameters: {params} in {} constants ({:.2} MB)",
        g.constants().len(),
        bytes as f64 / 1e6
    );
    for &id in g.inputs() {
        let n = g.node(id);
        let _ = writeln!(s, "// input {}: {}", n.name, types(&n.outputs));
    }
    for o in g.outputs() {
        let ty = g.node(o.value.node).outputs.get(usize::from(o.value.port));
        let _ = writeln!(
            s,
            "// output {}: {}",
            o.name,
            ty.map_or("?".to_string(), ty_str)
        );
    }
    s
}

fn ty_str(t: &TensorType) -> String {
    format!("{}[{}]", t.dtype, shape_str(&t.shape))
}

fn types(ts: &[TensorType]) -> String {
    let v: Vec<String> = ts.iter().map(ty_str).collect();
    v.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_ir::{Activation, Op, Tensor};

    #[test]
    fn summary_counts_ops_and_parameters() {
        let mut g = Graph::new("m");
        let x = g.add_input("x", TensorType::f32(vec![1, 3]));
        let c = g.add_constant("c", Tensor::f32(vec![1, 3], vec![1.0, 2.0, 3.0]).unwrap());
        let a = g
            .add_node("a", Op::Binary(nnac_ir::BinaryOp::Add), &[x, c])
            .unwrap();
        let r1 = g
            .add_node(
                "r1",
                Op::Act(Activation::Relu),
                &[nnac_ir::Value::new(a, 0)],
            )
            .unwrap();
        let r2 = g
            .add_node(
                "r2",
                Op::Act(Activation::Relu),
                &[nnac_ir::Value::new(r1, 0)],
            )
            .unwrap();
        g.add_output("y", nnac_ir::Value::new(r2, 0));
        let s = summary(&g, "m.onnx");
        assert!(s.contains("// model: m (m.onnx)\n"), "{s}");
        assert!(
            s.contains("// nodes: 5 (relu 2, add 1, const 1, input 1)\n"),
            "{s}"
        );
        assert!(
            s.contains("// parameters: 3 in 1 constants (0.00 MB)\n"),
            "{s}"
        );
        assert!(
            s.contains("// input x: f32[1x3]\n// output y: f32[1x3]\n"),
            "{s}"
        );
        let parsed = nnac_ir::parse(&(s + &nnac_ir::print(&g))).expect("comments are ignored");
        assert!(nnac_ir::graphs_equal(&parsed, &g));
    }
}
