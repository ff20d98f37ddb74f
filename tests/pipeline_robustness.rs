//! The whole pipeline on hostile models: seeded random semantic mutations of a small
//! model go through import, the float interpreter, fold/fuse/quantize, the quantized
//! interpreter, the backend and the simulator. Each step may refuse the model with an
//! error; none may panic. Two campaigns: the bundled tiny CNN (models/tiny_cnn.onnx)
//! with attribute values out of range or NaN, ops swapped for others, inputs dropped
//! or rewired into cycles, initializers with the wrong shape or NaN, input shapes of 0
//! or 100,000 and integer input types; a small Caffe network (`caffe_net/`) with
//! edits of its prototxt; the same ONNX mutations of the bundled gated CNN
//! (models/gated_cnn.onnx: SiLU, Split, ReduceMean, broadcast Mul, nearest Resize).
//! About half of the mutated models of these three are quantized with GPTQ weight
//! rounding (its input Hessians see the mutated shapes and values). A
//! further campaign edits the tiny CNN's compiled program
//! (fields, flags, order) and runs it through the hazard checker, the listings, the
//! timing model with its roofline and timeline pictures, and the simulator. (The importers' byte-level corruption tests live in
//! crates/frontend/tests/*_robustness.rs; these mutations decode cleanly, so they
//! reach the passes and the backend.)

use nnac_backend_nna::BackendOptions;
use nnac_frontend::proto::onnx::{AttributeProto, ModelProto, NodeProto, TensorProto};
use nnac_frontend::{caffe, onnx::import_bytes, ImportError, ImportOptions};
use nnac_ir::{Graph, Tensor, Value};
use nnac_isa::{container::IoDir, HwConfig};
use nnac_passes::{Frame, PassOptions, WeightRounding};
use nnac_runtime_sim::{RunOptions, Schedule};
use prost::Message;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Mutex;

mod caffe_net;

/// Cases run per format: every one is a fresh mutation of the base model.
const CASES: u64 = 1000;
/// Largest input (elements) the case builds a calibration frame for.
const MAX_FRAME: usize = 1 << 20;

/// xorshift64*: the seeds below reproduce every case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())]
    }
}

const INTS: [i64; 12] = [
    0,
    -1,
    1,
    2,
    3,
    5,
    7,
    64,
    100,
    i32::MAX as i64,
    i32::MIN as i64,
    1 << 40,
];
const FLOATS: [f32; 6] = [0.0, -1.0, f32::NAN, f32::INFINITY, 1e30, 1e-30];
const OPS: [&str; 31] = [
    "Conv",
    "ConvTranspose",
    "MaxPool",
    "AveragePool",
    "Relu",
    "Sigmoid",
    "LeakyRelu",
    "HardSwish",
    "HardSigmoid",
    "Clip",
    "PRelu",
    "Add",
    "Mul",
    "Concat",
    "Flatten",
    "Reshape",
    "Gemm",
    "MatMul",
    "Softmax",
    "GlobalMaxPool",
    "BatchNormalization",
    "Transpose",
    "Resize",
    "LRN",
    "Sub",
    "Div",
    "Pad",
    "Squeeze",
    "ReduceMean",
    "Slice",
    "Split",
];
/// The integer attributes each op of the tiny CNN (or swapped in) reads, so that a
/// new one reaches the op's builder instead of its unknown-attribute check.
fn int_attrs(op: &str) -> &'static [&'static str] {
    match op {
        "Conv" | "ConvTranspose" => &[
            "dilations",
            "group",
            "kernel_shape",
            "strides",
            "pads",
            "output_padding",
        ],
        "MaxPool" | "AveragePool" => &[
            "kernel_shape",
            "strides",
            "pads",
            "ceil_mode",
            "count_include_pad",
            "dilations",
            "storage_order",
        ],
        "Gemm" => &["transA", "transB"],
        "Flatten" | "Concat" | "Softmax" => &["axis"],
        "LRN" => &["size"],
        "ReduceMean" => &["keepdims"],
        _ => &[],
    }
}

/// The float attributes each op reads.
fn float_attrs(op: &str) -> &'static [&'static str] {
    match op {
        "BatchNormalization" => &["epsilon", "momentum"],
        "Gemm" | "LRN" | "HardSigmoid" | "LeakyRelu" => &["alpha", "beta", "bias"],
        "Clip" => &["min", "max"],
        _ => &[],
    }
}

/// ONNX AttributeProto types.
const FLOAT: i32 = 1;
const INT: i32 = 2;
const INTS_TYPE: i32 = 7;

fn set_attr(n: &mut NodeProto, a: AttributeProto) {
    n.attribute.retain(|b| b.name != a.name);
    n.attribute.push(a);
}

/// One mutation of `m`.
fn mutate(m: &mut ModelProto, r: &mut Rng) {
    let g = m.graph.as_mut().expect("the tiny CNN has a graph");
    let outputs: Vec<String> = g.node.iter().flat_map(|n| n.output.clone()).collect();
    let inits: Vec<String> = g
        .initializer
        .iter()
        .filter_map(|t| t.name.clone())
        .collect();
    let ni = r.below(g.node.len());
    match r.below(9) {
        // An existing list attribute: one element out of range.
        0 => {
            let n = &mut g.node[ni];
            if let Some(a) = n.attribute.iter_mut().find(|a| !a.ints.is_empty()) {
                let k = r.below(a.ints.len());
                a.ints[k] = r.pick(&INTS);
            }
        }
        // A new (or replaced) attribute the op reads: integers (a value or a list of 1
        // to 5) or a float NaN, infinite, negative or 0.
        1 | 2 => {
            let n = &mut g.node[ni];
            let op = n.op_type.clone().unwrap_or_default();
            let (ints, floats) = (int_attrs(&op), float_attrs(&op));
            let a = if !ints.is_empty() && (floats.is_empty() || r.below(2) == 0) {
                let list = r.below(2) == 0;
                let v: Vec<i64> = (0..1 + r.below(5)).map(|_| r.pick(&INTS)).collect();
                AttributeProto {
                    name: Some(r.pick(ints).to_string()),
                    r#type: Some(if list { INTS_TYPE } else { INT }),
                    i: (!list).then_some(v[0]),
                    ints: if list { v } else { vec![] },
                    ..AttributeProto::default()
                }
            } else if !floats.is_empty() {
                AttributeProto {
                    name: Some(r.pick(floats).to_string()),
                    r#type: Some(FLOAT),
                    f: Some(r.pick(&FLOATS)),
                    ..AttributeProto::default()
                }
            } else {
                return;
            };
            set_attr(n, a);
        }
        // An initializer: a NaN or huge element, truncated data, or another shape.
        3 => {
            let k = r.below(g.initializer.len());
            let t: &mut TensorProto = &mut g.initializer[k];
            match r.below(3) {
                0 if t.raw_data.as_ref().is_some_and(|d| d.len() >= 4) => {
                    let mut d = t.raw_data.as_ref().unwrap().to_vec();
                    let at = 4 * r.below(d.len() / 4);
                    let v = r.pick(&[f32::NAN, f32::INFINITY, -f32::INFINITY, 1e30]);
                    d[at..at + 4].copy_from_slice(&v.to_le_bytes());
                    t.raw_data = Some(d.into());
                }
                1 => {
                    if let Some(d) = t.raw_data.as_mut() {
                        let cut = d.len().saturating_sub(1 + r.below(8));
                        d.truncate(cut);
                    }
                }
                _ => {
                    let rank = r.pick(&[0usize, 1, 2, 4, 5]);
                    t.dims = (0..rank).map(|_| r.pick(&[0, 1, 2, 3, 96, 97])).collect();
                }
            }
        }
        // The input's shape: one dimension 0, tiny or huge.
        4 => {
            use nnac_frontend::proto::onnx::tensor_shape_proto::dimension::Value as Dim;
            use nnac_frontend::proto::onnx::type_proto::Value as Ty;
            if let Some(Ty::TensorType(t)) =
                g.input[0].r#type.as_mut().and_then(|t| t.value.as_mut())
            {
                if let Some(s) = t.shape.as_mut() {
                    let k = r.below(s.dim.len());
                    let v = r.pick(&[0, 1, 2, 3, 5, 7, 100, 4096, 100_000]);
                    s.dim[k].value = Some(Dim::DimValue(v));
                }
            }
        }
        // Another op in the node's place, same inputs and attributes.
        5 => g.node[ni].op_type = Some(r.pick(&OPS).to_string()),
        // An input dropped, or one added (any value, an initializer, or a dangling name).
        6 => {
            let n = &mut g.node[ni];
            if !n.input.is_empty() && r.below(2) == 0 {
                let k = r.below(n.input.len());
                n.input.remove(k);
            } else {
                let mut names = outputs.clone();
                names.extend(inits.iter().cloned());
                names.push("nope".to_string());
                n.input.push(names[r.below(names.len())].clone());
            }
        }
        // An input rewired to any node's output: forward, backward (a cycle) or itself.
        7 => {
            let n = &mut g.node[ni];
            if !n.input.is_empty() {
                let k = r.below(n.input.len());
                n.input[k] = outputs[r.below(outputs.len())].clone();
            }
        }
        // The input's element type: integer, double, half, bool.
        _ => {
            use nnac_frontend::proto::onnx::type_proto::Value as Ty;
            if let Some(Ty::TensorType(t)) =
                g.input[0].r#type.as_mut().and_then(|t| t.value.as_mut())
            {
                t.elem_type = Some(r.pick(&[1, 2, 3, 6, 7, 9, 10, 11]));
            }
        }
    }
}

/// With `NNAC_FUZZ_VERBOSE` set, prints why a case stopped (to review the messages).
fn verbose(stage: &str, e: &dyn std::fmt::Display) {
    if std::env::var_os("NNAC_FUZZ_VERBOSE").is_some() {
        println!("{stage}: {e}");
    }
}

/// How far a case got: imported, quantized, lowered to a program, run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Refused,
    Imported,
    Quantized,
    Lowered,
    Simulated,
}

/// An ONNX case through every stage.
fn onnx_case(bytes: &[u8], opts: &PassOptions) -> Stage {
    let imported = import_bytes(bytes, None, "mutated.onnx", &ImportOptions::default());
    stages(imported, opts)
}

/// A Caffe case (prototxt text, caffemodel bytes) through every stage.
fn caffe_case(prototxt: &str, caffemodel: &[u8], opts: &PassOptions) -> Stage {
    let imported = caffe::import_bytes(
        prototxt.as_bytes(),
        Some(caffemodel),
        &ImportOptions::default(),
    );
    stages(imported, opts)
}

/// The pass options of a mutated case: the defaults, or (every other case, drawn
/// after the mutations so they do not depend on it) GPTQ weight rounding, whose
/// Hessians see the mutated shapes and values.
fn case_options(r: &mut Rng) -> PassOptions {
    let weight_rounding = if r.below(2) == 0 {
        WeightRounding::Nearest
    } else {
        WeightRounding::Gptq
    };
    PassOptions {
        weight_rounding,
        ..PassOptions::default()
    }
}

/// An imported graph through every later stage (the program through [`consume`]); an `Err` at any stage ends it (a
/// refusal is fine).
fn stages(imported: Result<Graph, ImportError>, opts: &PassOptions) -> Stage {
    let g = match imported {
        Ok(g) => g,
        Err(e) => {
            verbose("import", &e);
            return Stage::Refused;
        }
    };
    let frames: Vec<Frame> = frame_for(&g).into_iter().collect();
    for f in &frames {
        let _ = nnac_interp::run_float(&g, f);
    }
    let c = match nnac_passes::compile_graph(g, &frames, opts) {
        Ok(c) => c,
        Err(e) => {
            verbose("passes", &e);
            return Stage::Imported;
        }
    };
    for f in &frames {
        let _ = nnac_passes::run_quantized(&c.graph, f);
    }
    let hw = HwConfig::fsd();
    let program = match nnac_backend_nna::lower(&c.graph, &hw, &BackendOptions::default()) {
        Ok((p, _)) => p,
        Err(e) => {
            // A refusal names the model's problem; a failed self-check is a backend bug.
            let text = e.to_string();
            verbose("backend", &text);
            assert!(!text.contains("backend bug"), "{text}");
            return Stage::Quantized;
        }
    };
    consume(&program)
}

/// A calibration frame for the graph's first input (deterministic values in 0..1),
/// `None` without an input or when it has more than [`MAX_FRAME`] elements.
fn frame_for(g: &Graph) -> Option<Frame> {
    let id = *g.inputs().first()?;
    let shape = g.value_type(Value::new(id, 0)).shape.clone();
    let n = shape.iter().product::<usize>();
    if n > MAX_FRAME {
        return None;
    }
    let data = (0..n).map(|i| ((i * 7919) % 255) as f32 / 255.0).collect();
    let t = Tensor::f32(shape, data)?;
    Some([(g.node(id).name.clone(), t)].into())
}

/// The panic hook is process-wide: one campaign at a time silences it.
static HOOK: Mutex<()> = Mutex::new(());

/// Runs `case(seed)` for seeds `1..=CASES` (each builds its own mutation from an
/// [`Rng`] of that seed) and asserts that none panics, that the unmutated `base`
/// gets through every stage, and that at least `1/imported` of the cases get past
/// the importer and `1/simulated` all the way (or the later stages go untested).
fn campaign(
    what: &str,
    base: impl Fn() -> Stage,
    case: impl Fn(&mut Rng) -> Stage,
    imported: u64,
    simulated: u64,
) {
    let _one = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(
        catch_unwind(AssertUnwindSafe(&base)).ok(),
        Some(Stage::Simulated),
        "{what}: the unmutated model"
    );
    // Silence the default hook's backtraces; failures are collected below.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut panics = Vec::new();
    let mut reached = BTreeMap::<Stage, u64>::new();
    for seed in 1..=CASES {
        let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        match catch_unwind(AssertUnwindSafe(|| case(&mut r))) {
            Ok(stage) => *reached.entry(stage).or_default() += 1,
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panics.push(format!("seed {seed}: {msg}"));
            }
        }
    }
    std::panic::set_hook(hook);
    println!(
        "{what}: {CASES} mutated cases, last stage reached: {reached:?}; {} panics",
        panics.len()
    );
    let past = |s: Stage| reached.range(s..).map(|(_, n)| n).sum::<u64>();
    assert!(
        past(Stage::Imported) * imported >= CASES,
        "{what}: {reached:?}"
    );
    assert!(
        past(Stage::Simulated) * simulated >= CASES,
        "{what}: {reached:?}"
    );
    assert!(panics.is_empty(), "{what}: panics:\n{}", panics.join("\n"));
}

/// The ONNX campaign on the bundled model `models/{file}`: 1 to 3 mutations per case.
fn onnx_campaign(what: &str, file: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("models").join(file);
    let base = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let base = ModelProto::decode(base.as_slice()).expect("the bundled model decodes");
    let case = |r: &mut Rng| {
        let mut m = base.clone();
        for _ in 0..1 + r.below(3) {
            mutate(&mut m, r);
        }
        let opts = case_options(r);
        onnx_case(&m.encode_to_vec(), &opts)
    };
    let defaults = PassOptions::default();
    campaign(
        what,
        || onnx_case(&base.encode_to_vec(), &defaults),
        case,
        5,
        10,
    );
}

#[test]
fn mutated_onnx_models_are_refused_or_compiled_never_a_panic() {
    onnx_campaign("ONNX", "tiny_cnn.onnx");
}

#[test]
fn mutated_gated_models_are_refused_or_compiled_never_a_panic() {
    // The bundled gated CNN: SiLU, Split, ReduceMean, broadcast Mul, nearest Resize,
    // Max (models/make_gated_cnn.py), mutated the same ways.
    onnx_campaign("ONNX gated", "gated_cnn.onnx");
}

#[test]
fn mutated_caffe_networks_are_refused_or_compiled_never_a_panic() {
    let weights = caffe_net::weights();
    let case = |r: &mut Rng| {
        let mut text = caffe_net::NET.to_string();
        for _ in 0..1 + r.below(3) {
            text = caffe_net::mutate(&text, r);
        }
        let opts = case_options(r);
        caffe_case(&text, &weights, &opts)
    };
    // Most changed numbers change a blob's shape, which the importer refuses.
    campaign(
        "Caffe",
        || caffe_case(caffe_net::NET, &weights, &PassOptions::default()),
        case,
        10,
        20,
    );
}

/// The tiny CNN compiled in-process (the ONNX campaign's base model).
fn tiny_program() -> nnac_isa::Program {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let g = nnac_frontend::load_model(
        &root.join("models/tiny_cnn.onnx"),
        None,
        &ImportOptions::default(),
    )
    .expect("the tiny CNN imports");
    let frame = frame_for(&g).expect("the tiny CNN has a small input");
    let c = nnac_passes::compile_graph(g, &[frame], &PassOptions::default()).expect("quantizes");
    nnac_backend_nna::lower(&c.graph, &HwConfig::fsd(), &BackendOptions::default())
        .expect("lowers")
        .0
}

/// Every consumer of a program: the static hazard checker, both listings, the timing
/// model and its pictures (roofline, timeline), and the simulator under two schedules.
fn consume(p: &nnac_isa::Program) -> Stage {
    let _ = nnac_isa::hazard::check_program(p);
    let _ = nnac_isa::listing::table::listing(p);
    let _ = nnac_isa::listing::disassemble(p, None);
    if let Ok(prof) = nnac_runtime_sim::timing::analyze(p, None) {
        let r = nnac_pictures::roofline_figures("mutant", p, &prof, |_| None);
        let _ = nnac_pictures::roofline_svg(&r);
        let _ = nnac_pictures::timeline_svg("mutant", &prof);
    }
    let inputs: Vec<(String, Vec<u8>)> =
        p.io.iter()
            .filter(|d| d.dir == IoDir::Input)
            .map(|d| {
                let n = nnac_runtime_sim::numel(d) as usize;
                (d.name.clone(), vec![3; n * d.dtype.size() as usize])
            })
            .collect();
    let mut ran = true;
    for schedule in [Schedule::Eager, Schedule::Random { seed: 1 }] {
        let opts = RunOptions { schedule, hw: None };
        ran &= nnac_runtime_sim::run(p, &inputs, &opts).is_ok();
    }
    if ran {
        Stage::Simulated
    } else {
        Stage::Lowered
    }
}

/// One edit of a program that still encodes: a table field set to its minimum, its
/// maximum or another value in range; a flag operation added (flag indices up to
/// two beyond the configuration) or the flag operations dropped; two instructions
/// swapped.
fn mutate_program(p: &mut nnac_isa::Program, r: &mut Rng) {
    let i = r.below(p.instrs.len());
    match r.below(6) {
        0 => {
            let k = r.below(p.meta.hw.flags as usize + 2) as u32;
            let f = *p.instrs[i].flags_mut();
            *p.instrs[i].flags_mut() = match r.below(5) {
                0 => f.set(k),
                1 => f.wait(k),
                2 => f.clear(k),
                3 => f.wait_clear(k),
                _ => nnac_isa::FlagOps::new(),
            };
        }
        1 => {
            let j = r.below(p.instrs.len());
            p.instrs.swap(i, j);
        }
        _ => {
            let body = p.instrs[i].body_mut();
            let specs = body.specs();
            if specs.is_empty() {
                return;
            }
            let spec = &specs[r.below(specs.len())];
            let span = (spec.max - spec.min) as u64;
            let v = match r.below(4) {
                0 => spec.min,
                1 => spec.max,
                2 => spec.min + (r.next() % 300) as i64,
                _ => spec.min + (r.next() % span.max(1)) as i64,
            };
            let v = v.clamp(spec.min, spec.max);
            let v = if spec.names.is_empty() {
                v
            } else {
                v.min(spec.names.len() as i64 - 1)
            };
            body.set(spec.name, v).expect("in range");
        }
    }
}

#[test]
fn mutated_programs_are_refused_or_run_never_a_panic() {
    let base = tiny_program();
    let case = |r: &mut Rng| {
        let mut p = base.clone();
        for _ in 0..1 + r.below(3) {
            mutate_program(&mut p, r);
        }
        consume(&p)
    };
    // Every program "imports"; most still run (a changed field is often harmless).
    campaign("program", || consume(&base), case, 1, 10);
}
