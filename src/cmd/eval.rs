//! `nnac eval`: run a model on the float reference interpreter, or with `--quantized`
//! (and `--calib`, as for `compile`) on the quantized reference interpreter over the
//! compiled int8 graph; its outputs are dequantized to float32 (same convention).
//!
//! Inputs come from `.npy` files (`--input NAME=FILE.npy`, or just `FILE.npy` for a
//! single-input model). A file may carry one extra leading axis `N`: the model then
//! runs `N` frames one after another (inputs without the extra axis are reused for
//! every frame) and each output is stacked the same way. Every graph output is
//! written as float32 `<output name>.npy` into `--output-dir` (the naming rule of
//! `nnac run`, `nnac_driver::outputs`), only once every frame has run.

use crate::error::CliError;
use nnac_driver::calib::graph_inputs;
use nnac_driver::compile::calibration_args;
use nnac_driver::eval::{frame_count, read_feed, stack_outputs, Runner};
use nnac_driver::frames::Preprocess;
use nnac_driver::model::{load, ModelArgs, QuantArgs};
use nnac_driver::outputs::write_outputs;
use nnac_ir::{shape_str, Graph, Tensor, TensorType};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// An input tensor, `NAME=FILE.npy` (repeatable, one per graph input), or
    /// `FILE.npy` when the model has a single input.
    #[arg(long = "input", value_name = "NAME=FILE.npy", required = true)]
    pub input: Vec<String>,
    /// Directory for the `<output>.npy` files (created if missing).
    #[arg(long = "output-dir", value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,
    /// Run the int8 model: fold, fuse, calibrate on `--calib` (without it, on the
    /// synthetic frames `compile` uses; a pre-quantized (QDQ) model keeps the file's
    /// quantization) and quantize as `compile` does, with the same ops on the host,
    /// then run the quantized reference interpreter (outputs dequantized).
    #[arg(long)]
    pub quantized: bool,
    /// Calibration data for `--quantized` (as `compile --calib`).
    #[arg(long, value_name = "[INPUT=]PATH", requires = "quantized")]
    pub calib: Vec<String>,
    #[command(flatten)]
    pub quant: QuantArgs,
    #[command(flatten)]
    pub pre: Preprocess,
}

/// The float graph, or with `--quantized` the compiled int8 graph.
fn runner(graph: Graph, args: &Args) -> Result<Runner, CliError> {
    if !args.quantized {
        return Ok(Runner::Float(graph));
    }
    let calib = calibration_args(&args.calib, &args.pre, &graph)?;
    if let Some(w) = calib.warning() {
        eprintln!("{w}");
    }
    Runner::quantized(graph, &calib, &args.quant)
}

pub fn run(args: Args) -> Result<(), CliError> {
    let graph = load(&args.model)?;
    // The quantization options first: a missing `--calib` is named before the inputs.
    let runner = runner(graph.clone(), &args)?;
    let specs = graph_inputs(&graph);
    let files = assign_inputs(&args.input, &specs)?;
    let mut feeds = BTreeMap::new();
    for (name, ty) in &specs {
        let path = files.get(name).ok_or_else(|| {
            CliError::user(format!(
                "missing --input for graph input '{name}' (expected {ty})"
            ))
        })?;
        feeds.insert(name.clone(), read_feed(name, ty, path)?);
    }
    let frames = frame_count(&feeds)?;
    let start = Instant::now();
    let results = runner.run_frames(&feeds, frames)?;
    let elapsed = start.elapsed();
    let outputs = stack_outputs(&graph, results, frames)?;
    let files = write_outputs(&args.output_dir, &outputs)?;
    let n = frames.unwrap_or(1);
    println!(
        "ran {n} frame(s) {} in {:.1} ms ({:.1} ms per frame)",
        if args.quantized { "int8" } else { "float" },
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e3 / n as f64
    );
    for ((name, t), file) in outputs.iter().zip(&files) {
        print_summary(name, file, t, frames);
    }
    Ok(())
}

/// Maps each `--input` argument to a graph input name.
fn assign_inputs(
    args: &[String],
    specs: &[(String, TensorType)],
) -> Result<BTreeMap<String, PathBuf>, CliError> {
    let names: Vec<&str> = specs.iter().map(|(n, _)| n.as_str()).collect();
    let mut files = BTreeMap::new();
    for arg in args {
        let named = arg
            .match_indices('=')
            .map(|(i, _)| (&arg[..i], &arg[i + 1..]))
            .find(|(n, _)| names.contains(n));
        let (name, file) = match named {
            Some((n, f)) => (n.to_string(), f),
            None if names.len() == 1 && !arg.contains('=') => (names[0].to_string(), arg.as_str()),
            None => {
                return Err(CliError::user(format!(
                "--input '{arg}': expected NAME=FILE.npy with NAME one of the model's inputs: {}",
                names.join(", ")
            )))
            }
        };
        if files.insert(name.clone(), PathBuf::from(file)).is_some() {
            return Err(CliError::user(format!("--input given twice for '{name}'")));
        }
    }
    Ok(files)
}

fn print_summary(name: &str, file: &str, t: &Tensor, frames: Option<usize>) {
    let v = t.as_f32().unwrap_or(&[]);
    let (min, max) = v
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len().max(1) as f64;
    println!(
        "{name}: {} -> {file}  min {min:.6} max {max:.6} mean {mean:.6}",
        shape_str(&t.shape)
    );
    let per_frame = match frames {
        Some(_) => &t.shape[1..],
        None => &t.shape[..],
    };
    let classes = match per_frame {
        [1, n] | [n] => *n,
        _ => return,
    };
    if classes < 2 {
        return;
    }
    for (f, scores) in v.chunks_exact(classes).enumerate() {
        let label = if frames.is_some() {
            format!("  frame {f} top-5:")
        } else {
            "  top-5:".to_string()
        };
        println!("{label} {}", top5(scores));
    }
}

/// The five highest scores as `index (score)`, ties by lower index.
fn top5(scores: &[f32]) -> String {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    idx.iter()
        .take(5)
        .map(|&i| format!("{i} ({:.4})", scores[i]))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(names: &[&str]) -> Vec<(String, TensorType)> {
        names
            .iter()
            .map(|n| (n.to_string(), TensorType::f32(vec![1, 2])))
            .collect()
    }

    #[test]
    fn input_arguments_map_to_graph_inputs() {
        let one = specs(&["data"]);
        assert_eq!(
            assign_inputs(&["x.npy".into()], &one).unwrap()["data"],
            PathBuf::from("x.npy")
        );
        assert_eq!(
            assign_inputs(&["data=a=b.npy".into()], &one).unwrap()["data"],
            PathBuf::from("a=b.npy")
        );
        let two = specs(&["a", "b=c"]);
        let m = assign_inputs(&["b=c=f.npy".into(), "a=g.npy".into()], &two).unwrap();
        assert_eq!(m["b=c"], PathBuf::from("f.npy"));
        assert_eq!(m["a"], PathBuf::from("g.npy"));
        assert!(assign_inputs(&["x.npy".into()], &two)
            .unwrap_err()
            .to_string()
            .contains("a, b=c"));
        assert!(assign_inputs(&["a=1.npy".into(), "a=2.npy".into()], &two)
            .unwrap_err()
            .to_string()
            .contains("twice"));
    }

    #[test]
    fn top5_orders_scores() {
        assert_eq!(
            top5(&[0.1, 0.5, 0.2, 0.5]),
            "1 (0.5000), 3 (0.5000), 2 (0.2000), 0 (0.1000)"
        );
    }
}
