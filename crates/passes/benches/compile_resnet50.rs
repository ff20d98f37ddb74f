//! Compile-time benchmark: ResNet-50 (the light ONNX topology, 224x224, random
//! weights) through import, every pass, calibration on one frame, quantization and
//! the quantization report, then the NNA backend (lowering, SRAM allocation,
//! emission, dependency flags, static hazard check). Prints the median wall time of
//! every stage over the runs and the total (the target is < 2 s on 2 cores).
//!
//! `cargo bench -p nnac-passes --bench compile_resnet50 [-- RUNS [MODEL.onnx [FRAME.npy]]]`
//!
//! The calibration frame is FRAME.npy (float32, the model's input shape) or, by
//! default, a deterministic synthetic image in the range of a normalised photo (the
//! arithmetic, and so the time, does not depend on the pixel values). The last line
//! is a digest of the quantized reference interpreter's raw outputs on that frame, so
//! two builds can be checked for bit-identical results.

use nnac_ir::Graph;
use nnac_passes::report::time_table;
use nnac_passes::{compile_graph, run_quantized_raw, Frame, PassOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn workspace_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// A smooth deterministic image in [-2, 2] (normalised-photo range) per input.
fn synthetic_frame(g: &Graph) -> Frame {
    g.inputs()
        .iter()
        .map(|&id| {
            let n = g.node(id);
            let shape = n.outputs[0].shape.clone();
            let count: usize = shape.iter().product();
            let data = (0..count)
                .map(|i| 2.0 * ((i as f32 * 0.013).sin() * (i as f32 * 0.0007).cos()))
                .collect();
            let t = nnac_ir::Tensor::f32(shape, data).expect("element count matches shape");
            (n.name.clone(), t)
        })
        .collect()
}

fn npy_frame(g: &Graph, path: &Path) -> Frame {
    let t = nnac_interp::npy::read_npy(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let id = g.inputs()[0];
    std::iter::once((g.node(id).name.clone(), t)).collect()
}

/// FNV-1a over the raw output bytes, by output name.
fn digest(outputs: &std::collections::BTreeMap<String, nnac_ir::Tensor>) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for (name, t) in outputs {
        let bytes = name
            .bytes()
            .chain(t.to_f32_vec().into_iter().flat_map(f32::to_le_bytes));
        for b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// One compile: every stage's wall time, in pipeline order.
fn compile_once(model: &Path, frame_path: Option<&Path>) -> (Vec<(String, f64)>, String) {
    let mut rows = Vec::new();
    let t = Instant::now();
    let g = nnac_frontend::load_model(model, None, &Default::default())
        .unwrap_or_else(|e| panic!("import {}: {e}", model.display()));
    rows.push(("import".to_string(), t.elapsed().as_secs_f64() * 1e3));
    let frame = match frame_path {
        Some(p) => npy_frame(&g, p),
        None => synthetic_frame(&g),
    };
    let compiled = compile_graph(g, std::slice::from_ref(&frame), &PassOptions::default())
        .unwrap_or_else(|e| panic!("passes: {e}"));
    rows.extend(compiled.report.pass_ms.iter().cloned());
    let hw = nnac_isa::HwConfig::fsd();
    let backend = match nnac_backend_nna::lower(&compiled.graph, &hw, &Default::default()) {
        Ok((_, rep)) => {
            rows.extend(
                rep.stage_us
                    .iter()
                    .map(|(s, us)| (format!("backend {s}"), *us as f64 / 1e3)),
            );
            "backend: ok".to_string()
        }
        Err(e) => format!("backend: stopped ({e})"),
    };
    let raw = run_quantized_raw(&compiled.graph, &frame).unwrap_or_else(|e| panic!("{e}"));
    let summary = format!(
        "{backend}\nquantized outputs digest {:016x}, accumulator overflows {}",
        digest(&raw),
        compiled.report.acc_overflows
    );
    (rows, summary)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let runs: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(3);
    let model = args
        .get(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_path(".cache/models/light/resnet50.onnx"));
    let frame = args.get(2).map(PathBuf::from);
    let mut all: Vec<Vec<(String, f64)>> = Vec::new();
    let mut summary = String::new();
    for _ in 0..runs.max(1) {
        let (rows, s) = compile_once(&model, frame.as_deref());
        all.push(rows);
        summary = s;
    }
    let med: Vec<(String, f64)> = all[0]
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.clone(), median(all.iter().map(|r| r[i].1).collect())))
        .collect();
    println!(
        "{} ({} run(s), {} threads, median per stage)",
        model.display(),
        all.len(),
        rayon::current_num_threads()
    );
    print!("{}", time_table(&med));
    println!("{summary}");
}
