//! `nnac inspect`: import a model, verify it, and show its graph IR as text or DOT.
//!
//! The output starts with a summary (model, nodes by op, parameters, inputs and
//! outputs) written as `//` comments, which both the IR text parser and Graphviz
//! ignore. The text form elides constants with more than 16 elements unless `--full`
//! is given (only the full form parses back). With `--calib` the model is also
//! compiled (fold, fuse, calibrate, quantize) and the quantization table `compile`
//! prints (per-layer SQNR, cosine, scales, accumulator bounds; passes'
//! `Report::table()`) is appended as `//` comments.

use crate::cmd::common::{load, ModelArgs, QuantArgs};
use crate::cmd::compile::calib_frames;
use crate::cmd::frames::Preprocess;
use crate::error::{write_atomic, CliError};
use nnac_ir::{print_with, shape_str, to_dot, verify, Graph, PrintOptions, TensorType};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

/// Constants with more elements than this are elided from the text form by default.
const ELIDE_OVER: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The IR text form.
    Text,
    /// Graphviz DOT.
    Dot,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Print every constant's data (the text then parses back exactly).
    #[arg(long)]
    pub full: bool,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Calibration data (as `compile --calib`): adds the quantization table.
    #[arg(long, value_name = "[INPUT=]PATH")]
    pub calib: Vec<String>,
    #[command(flatten)]
    pub quant: QuantArgs,
    #[command(flatten)]
    pub pre: Preprocess,
}

/// The quantization table of `g` calibrated on `--calib`, as `//` comment lines.
fn quant_table(g: &Graph, args: &Args) -> Result<String, CliError> {
    let frames = calib_frames(&args.calib, &args.pre, g)?;
    let compiled = nnac_passes::compile_graph(g.clone(), &frames, &args.quant.pass_options())
        .map_err(CliError::from_pass)?;
    Ok(compiled
        .report
        .table()
        .lines()
        .map(|l| format!("// {l}\n"))
        .collect())
}

pub fn run(args: Args) -> Result<(), CliError> {
    let g = load(&args.model)?;
    if let Err(errors) = verify(&g) {
        return Err(CliError::user(format!(
            "the imported graph of '{}' is invalid ({} violation(s)):\n{}",
            args.model.model.display(),
            errors.len(),
            nnac_ir::verify::report(&errors)
        )));
    }
    let mut out = summary(&g, &args.model.model.display().to_string());
    if !args.calib.is_empty() {
        out.push_str(&quant_table(&g, &args)?);
    }
    match args.format {
        Format::Text => {
            let limit = (!args.full).then_some(ELIDE_OVER);
            out.push_str(&print_with(
                &g,
                PrintOptions {
                    elide_constants_over: limit,
                },
            ));
        }
        Format::Dot => out.push_str(&to_dot(&g)),
    }
    match &args.output {
        Some(path) => write_atomic(path, out.as_bytes()),
        None => {
            use std::io::Write as _;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(out.as_bytes())
                .map_err(|e| CliError::user(format!("cannot write to stdout: {e}")))
        }
    }
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
