//! The validation suite: every real model through the whole toolchain, as a user
//! compiles it. For each model: import; compile with calibration on photographs that
//! are not the test image; lower to a program (the backend runs the static hazard
//! checker; the suite runs it again on the program read back from its bytes); compile
//! again and require byte-identical program bytes; run the program on the simulator
//! on the test image, under the eager and a random schedule, and require every output
//! byte to equal the quantized reference interpreter's; profile it with the cycle model. Prints one table row per model
//! (compile time, SQNR of the simulated int8 outputs against the float interpreter,
//! cycles, MAC utilization) and fails on any miss, after printing the whole table.
//!
//! Float-vs-reference checks of the same models live in tests/real_models_vs_ort.rs
//! and tests/caffe_vs_opencv.rs; the int8 accuracy targets in tests/quant_accuracy.rs.
//! Needs the cache and venv of `scripts/setup.sh` (the test command runs it first);
//! fails, never skips, without them.

mod common;

use common::{need, python, root, tempdir};
use nnac_frontend::ImportOptions;
use nnac_ir::{Tensor, TensorData};
use nnac_isa::{HwConfig, Program};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// How a model is fed: input name, NCHW shape, preprocessing of 0..255 pixels.
struct Case {
    name: String,
    model: PathBuf,
    weights: Option<PathBuf>,
    input: String,
    shape: [usize; 4],
    mean: &'static str,
    scale: &'static str,
    bgr: bool,
    /// Dynamic input dimensions fixed for import (`--input-shape`).
    fix_shape: bool,
}

const CALIB_IMAGES: [&str; 2] = ["coffee.png", "chelsea.png"];
/// Programs at least this big are compiled once (plus a second lowering).
const DETERMINISM_FULL: usize = 32 << 20;

fn cases() -> Vec<Case> {
    let light = root().join(".cache/models/light");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(need(light.join("manifest.json"))).unwrap()).unwrap();
    let mut v = Vec::new();
    for (name, m) in manifest.as_object().unwrap() {
        let shape: Vec<usize> = m["input"]["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        v.push(Case {
            name: name.clone(),
            model: need(light.join(m["file"].as_str().unwrap())),
            weights: None,
            input: m["input"]["name"].as_str().unwrap().to_string(),
            shape: [shape[0], shape[1], shape[2], shape[3]],
            mean: "123.7,116.3,103.5",
            scale: "0.0171",
            bgr: false,
            fix_shape: false,
        });
    }
    let ocr = root().join(".cache/models/rapidocr");
    v.push(Case {
        name: "ppocr_cls".into(),
        model: need(ocr.join("ch_ppocr_mobile_v2.0_cls_infer.onnx")),
        weights: None,
        input: "x".into(),
        shape: [1, 3, 48, 192],
        mean: "127.5,127.5,127.5",
        scale: "0.00784314",
        bgr: false,
        fix_shape: true,
    });
    v.push(Case {
        name: "ppocr_det".into(),
        model: need(ocr.join("ch_PP-OCRv4_det_infer.onnx")),
        weights: None,
        input: "x".into(),
        shape: [1, 3, 320, 320],
        mean: "123.7,116.3,103.5",
        scale: "0.0171",
        bgr: false,
        fix_shape: true,
    });
    v.push(Case {
        name: "open_nsfw".into(),
        model: need(root().join(".cache/models/nsfw/deploy.prototxt")),
        weights: Some(need(
            root().join(".cache/models/nsfw/resnet_50_1by2_nsfw.caffemodel"),
        )),
        input: "data".into(),
        shape: [1, 3, 224, 224],
        mean: "104,117,123",
        scale: "1",
        bgr: true,
        fix_shape: false,
    });
    v
}

/// Preprocesses a photograph with the project script into a float32 NCHW tensor.
fn frame(c: &Case, image: &str, dir: &Path) -> Tensor {
    let out = dir.join(format!("{}-{image}.npy", c.name));
    let size = format!("{}x{}", c.shape[2], c.shape[3]);
    let mut cmd = Command::new(python());
    cmd.arg(root().join("scripts/image_to_npy.py"))
        .arg(need(root().join(".cache/models/images").join(image)))
        .arg(&out)
        .args(["--size", &size, "--mean", c.mean, "--scale", c.scale]);
    if c.bgr {
        cmd.arg("--bgr");
    }
    let r = cmd.output().expect("spawn python");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    nnac_interp::npy::read_npy(&out).unwrap()
}

fn codes(t: &Tensor) -> Vec<u8> {
    match &t.data {
        TensorData::I8(v) => v.iter().map(|&x| x as u8).collect(),
        TensorData::U8(v) => v.clone(),
        other => panic!("unexpected raw output type {:?}", other.dtype()),
    }
}

fn sqnr_db(reference: &[f32], test: &[f32]) -> f64 {
    let sig: f64 = reference.iter().map(|&x| f64::from(x).powi(2)).sum();
    let err: f64 = reference
        .iter()
        .zip(test)
        .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
        .sum();
    10.0 * (sig / err.max(1e-30)).log10()
}

struct Row {
    name: String,
    compile_s: f64,
    program_kb: usize,
    sqnr_db: f64,
    cycles: u64,
    utilization: f64,
    misses: Vec<String>,
}

/// Compiles `c` (import, passes, backend); returns the quantized graph and program bytes.
fn compile(c: &Case, frames: &[nnac_passes::Frame]) -> Result<(nnac_ir::Graph, Vec<u8>), String> {
    let mut opts = ImportOptions::default();
    if c.fix_shape {
        opts.input_shapes.insert(c.input.clone(), c.shape.to_vec());
    }
    let graph = nnac_frontend::load_model(&c.model, c.weights.as_deref(), &opts)
        .map_err(|e| format!("import: {e}"))?;
    let compiled = nnac_passes::compile_graph(graph, frames, &Default::default())
        .map_err(|e| format!("passes: {e}"))?;
    let bytes = lower(c, &compiled.graph)?;
    Ok((compiled.graph, bytes))
}

/// The backend and container writer on a quantized graph: the program's bytes.
fn lower(c: &Case, qgraph: &nnac_ir::Graph) -> Result<Vec<u8>, String> {
    let (program, _) = nnac_backend_nna::lower(
        qgraph,
        &HwConfig::default(),
        &nnac_backend_nna::BackendOptions {
            source_model: c.name.clone(),
            ..Default::default()
        },
    )
    .map_err(|e| format!("backend: {e}"))?;
    program.write().map_err(|e| format!("container: {e}"))
}

fn validate(c: &Case, dir: &Path) -> Row {
    let mut row = Row {
        name: c.name.clone(),
        compile_s: 0.0,
        program_kb: 0,
        sqnr_db: f64::NAN,
        cycles: 0,
        utilization: f64::NAN,
        misses: Vec::new(),
    };
    let frames: Vec<nnac_passes::Frame> = CALIB_IMAGES
        .iter()
        .map(|img| {
            [(c.input.clone(), frame(c, img, dir))]
                .into_iter()
                .collect()
        })
        .collect();
    let test_image = if c.name.starts_with("ppocr") {
        "text.png"
    } else {
        "astronaut.png"
    };
    let test: nnac_passes::Frame = [(c.input.clone(), frame(c, test_image, dir))]
        .into_iter()
        .collect();

    let t = Instant::now();
    let (qgraph, bytes) = match compile(c, &frames) {
        Ok(x) => x,
        Err(e) => {
            row.misses.push(e);
            return row;
        }
    };
    row.compile_s = t.elapsed().as_secs_f64();
    row.program_kb = bytes.len() / 1024;
    // Determinism: the whole compile again for models whose program is under
    // DETERMINISM_FULL bytes (the big fully-connected nets would double the suite's
    // time); for every model the backend again on the same quantized graph.
    if bytes.len() < DETERMINISM_FULL {
        match compile(c, &frames) {
            Ok((_, again)) if again == bytes => {}
            Ok(_) => row.misses.push("two compiles give different bytes".into()),
            Err(e) => row.misses.push(format!("second compile: {e}")),
        }
    }
    match lower(c, &qgraph) {
        Ok(again) if again == bytes => {}
        Ok(_) => row.misses.push("two lowerings give different bytes".into()),
        Err(e) => row.misses.push(format!("second lowering: {e}")),
    }
    let program = match Program::read(&bytes) {
        Ok(p) => p,
        Err(e) => {
            row.misses.push(format!("reading the program back: {e}"));
            return row;
        }
    };
    match nnac_isa::hazard::check_program(&program) {
        Ok(r) if r.is_clean() => {}
        Ok(r) => row.misses.push(format!("hazard: {}", r.lines().join("; "))),
        Err(e) => row.misses.push(format!("hazard checker: {e}")),
    }
    match nnac_runtime_sim::timing::analyze(&program, None) {
        Ok(p) => {
            row.cycles = p.total_cycles;
            row.utilization = p.mac_utilization();
        }
        Err(e) => row.misses.push(format!("timing model: {}", e.0)),
    }

    // The simulator against the quantized reference interpreter, byte for byte.
    let want = match nnac_passes::run_quantized_raw(&qgraph, &test) {
        Ok(w) => w,
        Err(e) => {
            row.misses.push(format!("quantized interpreter: {e}"));
            return row;
        }
    };
    let input_desc = program
        .io
        .iter()
        .find(|d| d.name == c.input)
        .expect("program has the model's input");
    let x = test[&c.input].to_f32_vec();
    let in_codes: Vec<u8> = x
        .iter()
        .map(|&v| {
            let dt = match input_desc.dtype {
                nnac_isa::IoDtype::Uint8 => nnac_ir::DType::U8,
                _ => nnac_ir::DType::I8,
            };
            nnac_passes::quant::params::quantize(v, input_desc.scale, input_desc.zero_point, dt)
                as u8
        })
        .collect();
    let feed = [(c.input.clone(), in_codes)];
    let got = match nnac_runtime_sim::run(&program, &feed, &Default::default()) {
        Ok(r) => r,
        Err(e) => {
            row.misses.push(format!("simulator: {e}"));
            return row;
        }
    };
    // Another interleaving the flags allow: the same bytes.
    let random = nnac_runtime_sim::RunOptions {
        schedule: nnac_runtime_sim::Schedule::Random { seed: 7 },
        hw: None,
    };
    match nnac_runtime_sim::run(&program, &feed, &random) {
        Ok(r) if r.outputs == got.outputs => {}
        Ok(_) => row
            .misses
            .push("random schedule gives different bytes than eager".into()),
        Err(e) => row.misses.push(format!("simulator, random schedule: {e}")),
    }
    let float = nnac_interp::run_float(
        &nnac_frontend::load_model(&c.model, c.weights.as_deref(), &{
            let mut o = ImportOptions::default();
            if c.fix_shape {
                o.input_shapes.insert(c.input.clone(), c.shape.to_vec());
            }
            o
        })
        .unwrap(),
        &test,
    )
    .unwrap();
    let mut worst = f64::INFINITY;
    for out in &got.outputs {
        match want.get(&out.name) {
            Some(w) if codes(w) == out.data => {}
            Some(_) => row.misses.push(format!(
                "output {}: simulator != quantized interpreter",
                out.name
            )),
            None => row
                .misses
                .push(format!("output {} missing from the interpreter", out.name)),
        }
        let deq: Vec<f32> = out
            .data
            .iter()
            .map(|&b| {
                let q = match out.dtype {
                    nnac_isa::IoDtype::Int8 => i32::from(b as i8),
                    _ => i32::from(b),
                };
                (q - out.zero_point) as f32 * out.scale
            })
            .collect();
        if let Some(f) = float.get(&out.name) {
            worst = worst.min(sqnr_db(&f.to_f32_vec(), &deq));
        }
    }
    row.sqnr_db = worst;
    row
}

#[test]
fn every_real_model_compiles_runs_bit_exact_and_is_profiled() {
    let tmp = tempdir("validation");
    let rows: Vec<Row> = cases().iter().map(|c| validate(c, tmp.path())).collect();
    // Written to stderr directly (not through print!), so the table shows in the
    // test command's output even when the test passes.
    let mut table = String::new();
    table.push_str(&format!(
        "\n{:<14} {:>10} {:>11} {:>9} {:>14} {:>6}  result\n",
        "model", "compile s", "program KB", "SQNR dB", "cycles", "util"
    ));
    for r in &rows {
        table.push_str(&format!(
            "{:<14} {:>10.2} {:>11} {:>9.1} {:>14} {:>5.1}%  {}\n",
            r.name,
            r.compile_s,
            r.program_kb,
            r.sqnr_db,
            r.cycles,
            100.0 * r.utilization,
            if r.misses.is_empty() {
                "ok".to_string()
            } else {
                r.misses.join("; ")
            }
        ));
    }
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(table.as_bytes());
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.misses.is_empty())
        .map(|r| r.name.as_str())
        .collect();
    assert!(
        failed.is_empty(),
        "validation misses: {failed:?} (table above)"
    );
}
