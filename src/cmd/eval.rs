//! `nnac eval`: run a model on the float reference interpreter, or with `--quantized`
//! (and `--calib`, as for `compile`) on the quantized reference interpreter over the
//! compiled int8 graph; its outputs are dequantized to float32 (same convention).
//!
//! Inputs come from `.npy` files (`--input NAME=FILE.npy`, or just `FILE.npy` for a
//! single-input model). A file may carry one extra leading axis `N`: the model then
//! runs `N` frames one after another (inputs without the extra axis are reused for
//! every frame) and each output is stacked the same way. Every graph output is
//! written as float32 `<output name>.npy` into `--output-dir` (the naming rule of
//! `nnac run`, `outputs.rs`), only once every frame has run.

use crate::cmd::common::{load, ModelArgs, QuantArgs};
use crate::cmd::compile::calib_frames;
use crate::cmd::frames::Preprocess;
use crate::cmd::outputs::write_outputs;
use crate::error::CliError;
use nnac_interp::npy::read_npy;
use nnac_interp::run_float;
use nnac_ir::{shape_str, Graph, Tensor, TensorData, TensorType};
use nnac_passes::{run_quantized, PassOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
    /// Run the int8 model: fold, fuse, calibrate on `--calib` and quantize as `compile`
    /// does, then run the quantized reference interpreter (outputs dequantized).
    #[arg(long, requires = "calib")]
    pub quantized: bool,
    /// Calibration data for `--quantized` (as `compile --calib`).
    #[arg(long, value_name = "[INPUT=]PATH")]
    pub calib: Vec<String>,
    #[command(flatten)]
    pub quant: QuantArgs,
    #[command(flatten)]
    pub pre: Preprocess,
}

/// The model `eval` runs: the float graph, or the compiled int8 graph.
enum Runner {
    Float(Graph),
    Quantized(Graph),
}

impl Runner {
    fn new(graph: Graph, args: &Args) -> Result<Runner, CliError> {
        if !args.quantized {
            if !args.calib.is_empty() {
                return Err(CliError::user("--calib is only used with --quantized"));
            }
            return Ok(Runner::Float(graph));
        }
        let frames = calib_frames(&args.calib, &args.pre, &graph)?;
        let opts = PassOptions {
            // Only the quantized graph is used: no accuracy report.
            measure: false,
            ..args.quant.pass_options()
        };
        let compiled =
            nnac_passes::compile_graph(graph, &frames, &opts).map_err(CliError::from_pass)?;
        Ok(Runner::Quantized(compiled.graph))
    }

    fn run(&self, inputs: &BTreeMap<String, Tensor>) -> Result<BTreeMap<String, Tensor>, CliError> {
        match self {
            Runner::Float(g) => run_float(g, inputs).map_err(|e| e.to_string()),
            Runner::Quantized(g) => run_quantized(g, inputs).map_err(|e| e.to_string()),
        }
        .map_err(|e| CliError::user(format!("evaluation failed: {e}")))
    }
}

/// One graph input's data: a single frame or `frames` stacked along a new axis 0.
struct Feed {
    tensor: Tensor,
    frames: Option<usize>,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let graph = load(&args.model)?;
    let specs = input_specs(&graph);
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
    let runner = Runner::new(graph.clone(), &args)?;
    let start = Instant::now();
    let mut results: BTreeMap<String, Vec<Tensor>> = BTreeMap::new();
    for f in 0..frames.unwrap_or(1) {
        let inputs: BTreeMap<String, Tensor> = feeds
            .iter()
            .map(|(n, feed)| (n.clone(), frame_of(feed, f)))
            .collect();
        let out = runner.run(&inputs)?;
        for (name, t) in out {
            results.entry(name).or_default().push(t);
        }
    }
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

/// Graph inputs in model order: name and declared type.
fn input_specs(graph: &Graph) -> Vec<(String, TensorType)> {
    graph
        .inputs()
        .iter()
        .map(|&id| {
            (
                graph.node(id).name.clone(),
                graph.node(id).outputs[0].clone(),
            )
        })
        .collect()
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

fn read_feed(name: &str, ty: &TensorType, path: &Path) -> Result<Feed, CliError> {
    let t = read_npy(path).map_err(|e| CliError::user(format!("input '{name}': {e}")))?;
    if t.dtype() != ty.dtype {
        return Err(CliError::user(format!(
            "{}: input '{name}' needs {} data, the file holds {}",
            path.display(),
            ty.dtype,
            t.dtype()
        )));
    }
    let (n, stacked) = crate::cmd::frame_shape::frames_in(name, &t.shape, &ty.shape)
        .map_err(|m| CliError::user(format!("{}: {m}", path.display())))?;
    Ok(Feed {
        tensor: t,
        frames: stacked.then_some(n),
    })
}

/// The common frame count of all framed inputs (`None` if no input is framed).
fn frame_count(feeds: &BTreeMap<String, Feed>) -> Result<Option<usize>, CliError> {
    let mut frames: Option<(usize, &str)> = None;
    for (name, f) in feeds {
        match (f.frames, frames) {
            (Some(n), Some((m, other))) if n != m => {
                return Err(CliError::user(format!(
                    "input '{name}' has {n} frames but input '{other}' has {m}"
                )));
            }
            (Some(n), None) => frames = Some((n, name)),
            _ => {}
        }
    }
    Ok(frames.map(|(n, _)| n))
}

/// Frame `f` of a feed (the whole tensor when it is not framed).
fn frame_of(feed: &Feed, f: usize) -> Tensor {
    let Some(n) = feed.frames else {
        return feed.tensor.clone();
    };
    let shape = feed.tensor.shape[1..].to_vec();
    let len = feed.tensor.numel() / n;
    let range = f * len..(f + 1) * len;
    let data = match &feed.tensor.data {
        TensorData::F32(v) => TensorData::F32(v[range].to_vec()),
        TensorData::I8(v) => TensorData::I8(v[range].to_vec()),
        TensorData::U8(v) => TensorData::U8(v[range].to_vec()),
        TensorData::I32(v) => TensorData::I32(v[range].to_vec()),
        TensorData::I64(v) => TensorData::I64(v[range].to_vec()),
    };
    Tensor { shape, data }
}

/// Name and stacked tensor of every graph output, in graph output order.
fn stack_outputs(
    graph: &Graph,
    mut results: BTreeMap<String, Vec<Tensor>>,
    frames: Option<usize>,
) -> Result<Vec<(String, Tensor)>, CliError> {
    let mut out = Vec::new();
    for o in graph.outputs() {
        let parts = results.remove(&o.name).ok_or_else(|| {
            CliError::internal("eval", format!("output '{}' was not produced", o.name))
        })?;
        let tensor = match frames {
            None => parts
                .into_iter()
                .next()
                .ok_or_else(|| CliError::internal("eval", "no frame ran"))?,
            Some(n) => {
                let mut shape = vec![n];
                shape.extend_from_slice(&parts[0].shape);
                let data: Vec<f32> = parts.iter().flat_map(|t| t.to_f32_vec()).collect();
                Tensor::f32(shape, data).ok_or_else(|| {
                    CliError::internal(
                        "eval",
                        format!("frames of output '{}' differ in size", o.name),
                    )
                })?
            }
        };
        let tensor = Tensor {
            shape: tensor.shape.clone(),
            data: TensorData::F32(tensor.to_f32_vec()),
        };
        out.push((o.name.clone(), tensor));
    }
    Ok(out)
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
    fn frames_split_and_top5_orders_scores() {
        let feed = Feed {
            tensor: Tensor::f32(vec![3, 1, 2], vec![1., 2., 3., 4., 5., 6.]).unwrap(),
            frames: Some(3),
        };
        assert_eq!(
            frame_of(&feed, 1),
            Tensor::f32(vec![1, 2], vec![3., 4.]).unwrap()
        );
        assert_eq!(
            top5(&[0.1, 0.5, 0.2, 0.5]),
            "1 (0.5000), 3 (0.5000), 2 (0.2000), 0 (0.1000)"
        );
    }
}
