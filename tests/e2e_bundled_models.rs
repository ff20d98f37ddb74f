//! End to end on the bundled models, as a user runs them. `models/tiny_cnn.onnx`:
//! the committed model is what its script makes; `nnac compile` is deterministic;
//! `nnac verify` passes; `nnac run` gives the same bytes under every schedule, and
//! they equal the quantized reference interpreter's, also for three frames run after
//! one load of the program (weights resident, prologue once); the float interpreter matches
//! ONNX Runtime. `models/gated_cnn.onnx` (SiLU, Split, squeeze-and-excitation,
//! nearest upsampling, Max): the same, and it compiles to a program without host ops.
//! Needs the cache and venv of `scripts/setup.sh` (the test command runs it first);
//! without them the tests fail, they are never skipped.

mod common;

use common::{ort_reference, python, root, run_ok, tempdir};
use nnac_ir::{Tensor, TensorData};
use std::path::{Path, PathBuf};
use std::process::Command;

fn image(name: &str) -> PathBuf {
    let p = root().join(".cache/models/images").join(name);
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

fn nnac() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nnac"))
}

/// Preprocesses a photograph into a 1x3x64x64 float32 .npy with the project script.
fn to_npy(img: &Path, out: &Path) {
    to_npy_sized(img, out, "64x64");
}

/// Preprocesses a photograph into a 1x3xHxW float32 .npy (`size` = `HxW`).
fn to_npy_sized(img: &Path, out: &Path, size: &str) {
    run_ok(
        Command::new(python())
            .arg(root().join("scripts/image_to_npy.py"))
            .arg(img)
            .arg(out)
            .args([
                "--size",
                size,
                "--mean",
                "123.7,116.3,103.5",
                "--scale",
                "0.0171",
            ]),
    );
}

/// Three calibration photographs (coffee, chelsea, coins) in `dir/calib` and a test
/// photograph (astronaut) as `dir/astronaut.npy`, preprocessed to `size` (`HxW`).
fn calib_and_input(dir: &Path, size: &str) -> (PathBuf, PathBuf) {
    let calib = dir.join("calib");
    std::fs::create_dir_all(&calib).unwrap();
    for name in ["coffee.png", "chelsea.png", "coins.png"] {
        to_npy_sized(
            &image(name),
            &calib.join(name.replace(".png", ".npy")),
            size,
        );
    }
    let input = dir.join("astronaut.npy");
    to_npy_sized(&image("astronaut.png"), &input, size);
    (calib, input)
}

/// `nnac compile MODEL --calib CALIB -o OUT --quiet`.
fn compile(model: &Path, calib: &Path, out: &Path) {
    run_ok(
        nnac()
            .arg("compile")
            .arg(model)
            .arg("--calib")
            .arg(calib)
            .arg("-o")
            .arg(out)
            .arg("--quiet"),
    );
}

#[test]
fn committed_models_are_what_their_scripts_make() {
    let tmp = tempdir("e2e-regen");
    let dir = tmp.path();
    for model in ["tiny_cnn", "gated_cnn"] {
        let out = dir.join(format!("{model}.onnx"));
        run_ok(
            Command::new(python())
                .arg(root().join(format!("models/make_{model}.py")))
                .arg(&out),
        );
        let committed = std::fs::read(root().join(format!("models/{model}.onnx"))).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == committed,
            "models/{model}.onnx differs from models/make_{model}.py's output"
        );
    }
}

#[test]
fn compiled_program_is_deterministic_race_free_and_bit_exact() {
    let tmp = tempdir("e2e-exact");
    let dir = tmp.path();
    let (calib, input) = calib_and_input(dir, "64x64");
    let model = root().join("models/tiny_cnn.onnx");

    // Compile twice: byte-identical programs.
    for out in ["a.nnab", "b.nnab"] {
        compile(&model, &calib, &dir.join(out));
    }
    let prog = std::fs::read(dir.join("a.nnab")).unwrap();
    assert!(
        prog == std::fs::read(dir.join("b.nnab")).unwrap(),
        "two compiles differ"
    );
    assert!(run_ok(nnac().arg("verify").arg(dir.join("a.nnab"))).contains("no race"));

    // Every schedule gives the same raw output bytes.
    let mut outputs = Vec::new();
    for sched in [
        vec!["--schedule", "serial"],
        vec!["--schedule", "eager"],
        vec!["--schedule", "random", "--seed", "1"],
        vec!["--schedule", "random", "--seed", "7"],
    ] {
        let od = dir.join(format!("out-{}", sched.join("-")));
        run_ok(
            nnac()
                .arg("run")
                .arg(dir.join("a.nnab"))
                .arg("--input")
                .arg(format!("image={}", input.display()))
                .args(&sched)
                .arg("--raw")
                .arg("--output-dir")
                .arg(&od),
        );
        outputs.push(nnac_interp::npy::read_npy(od.join("logits.npy")).unwrap());
    }
    assert!(
        outputs.windows(2).all(|w| w[0] == w[1]),
        "schedules disagree: {outputs:?}"
    );

    // The quantized reference interpreter on the same quantized graph gives the same bytes.
    let graph = nnac_frontend::load_model(&model, None, &Default::default()).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&calib)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let frames: Vec<nnac_passes::Frame> = files
        .iter()
        .map(|f| {
            [("image".to_string(), nnac_interp::npy::read_npy(f).unwrap())]
                .into_iter()
                .collect()
        })
        .collect();
    let compiled = nnac_passes::compile_graph(graph, &frames, &Default::default()).unwrap();
    let frame: nnac_passes::Frame = [(
        "image".to_string(),
        nnac_interp::npy::read_npy(&input).unwrap(),
    )]
    .into_iter()
    .collect();
    let want = nnac_passes::run_quantized_raw(&compiled.graph, &frame)
        .unwrap()
        .remove("logits")
        .unwrap();
    let bytes = |t: &Tensor| match &t.data {
        TensorData::I8(v) => v.iter().map(|&x| x as u8).collect::<Vec<u8>>(),
        TensorData::U8(v) => v.clone(),
        other => panic!("unexpected raw output type {:?}", other.dtype()),
    };
    assert_eq!(
        bytes(&outputs[0]),
        bytes(&want),
        "simulator output differs from the quantized reference interpreter"
    );

    // The weights are resident: a prologue loads them once, then three frames (the
    // calibration directory, three different images) run the body after one load,
    // each bit-exact against the reference interpreter.
    let listing = run_ok(nnac().arg("disasm").arg(dir.join("a.nnab")));
    assert!(listing.contains("; body: runs once per frame"), "{listing}");
    let od = dir.join("out-frames");
    let report = run_ok(
        nnac()
            .arg("run")
            .arg(dir.join("a.nnab"))
            .arg("--input")
            .arg(format!("image={}", calib.display()))
            .arg("--raw")
            .arg("--output-dir")
            .arg(&od),
    );
    assert!(report.contains("prologue (once per load)"), "{report}");
    assert!(report.contains("ran 3 frame(s)"), "{report}");
    let stacked = bytes(&nnac_interp::npy::read_npy(od.join("logits.npy")).unwrap());
    assert_eq!(stacked.len() % frames.len(), 0);
    let per = stacked.len() / frames.len();
    for (k, f) in frames.iter().enumerate() {
        let want = nnac_passes::run_quantized_raw(&compiled.graph, f)
            .unwrap()
            .remove("logits")
            .unwrap();
        assert_eq!(
            &stacked[k * per..(k + 1) * per],
            &bytes(&want)[..],
            "frame {k} ({}) differs from the quantized reference interpreter",
            files[k].display()
        );
    }
}

#[test]
fn float_interpreter_matches_onnx_runtime() {
    let tmp = tempdir("e2e-ort");
    let dir = tmp.path();
    let input = dir.join("coffee.npy");
    to_npy(&image("coffee.png"), &input);
    assert_float_matches_ort(&root().join("models/tiny_cnn.onnx"), &input, "logits", dir);
}

/// `nnac eval` of `model` on `input` (its input `image`) against ONNX Runtime, output
/// `out`, within 1e-4 of the largest magnitude; both write into `dir`.
fn assert_float_matches_ort(model: &Path, input: &Path, out: &str, dir: &Path) {
    let feed = format!("image={}", input.display());
    ort_reference(model, &dir.join("ort"), &feed);
    run_ok(
        nnac()
            .arg("eval")
            .arg(model)
            .arg("--input")
            .arg(&feed)
            .arg("--output-dir")
            .arg(dir.join("float")),
    );
    let file = format!("{out}.npy");
    let (worst, range) = max_diff(&dir.join("ort").join(&file), &dir.join("float").join(&file));
    assert!(
        worst <= 1e-4 * range.max(1.0),
        "nnac eval differs from ONNX Runtime by {worst} (range {range})"
    );
}

/// The largest difference between two float .npy files, and the largest magnitude of
/// the first.
fn max_diff(want: &Path, got: &Path) -> (f32, f32) {
    let want = nnac_interp::npy::read_npy(want).unwrap().to_f32_vec();
    let got = nnac_interp::npy::read_npy(got).unwrap().to_f32_vec();
    assert_eq!(want.len(), got.len());
    let range = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    (worst, range)
}

#[test]
fn gated_cnn_runs_without_host_ops_bit_exact_and_matches_onnx_runtime() {
    let tmp = tempdir("e2e-gated");
    let dir = tmp.path();
    let (calib, input) = calib_and_input(dir, "48x64");
    let model = root().join("models/gated_cnn.onnx");
    let feed = format!("image={}", input.display());

    // Float: nnac's interpreter against ONNX Runtime.
    assert_float_matches_ort(&model, &input, "mask", dir);

    // int8: every op on the NNA, the program race-free and bit-exact.
    let prog = dir.join("gated.nnab");
    compile(&model, &calib, &prog);
    assert!(run_ok(nnac().arg("verify").arg(&prog)).contains("no race"));
    let profile = run_ok(nnac().arg("profile").arg(&prog).arg("--json"));
    let profile: serde_json::Value = serde_json::from_str(&profile).expect("profile JSON");
    assert_eq!(profile["host_ops"], serde_json::json!([]), "host ops left");
    // The simulator's output (dequantized) equals the quantized reference
    // interpreter's (`eval --quantized`, same calibration), value for value.
    let od = dir.join("sim");
    run_ok(
        nnac()
            .args(["run", &prog.display().to_string(), "--input", &feed])
            .args(["--schedule", "random", "--seed", "3", "--output-dir"])
            .arg(&od),
    );
    let od_q = dir.join("quantized");
    run_ok(
        nnac()
            .args(["eval", &model.display().to_string(), "--input", &feed])
            .arg("--quantized")
            .arg("--calib")
            .arg(&calib)
            .arg("--output-dir")
            .arg(&od_q),
    );
    let sim = nnac_interp::npy::read_npy(od.join("mask.npy")).unwrap();
    let want = nnac_interp::npy::read_npy(od_q.join("mask.npy")).unwrap();
    assert_eq!(
        sim.to_f32_vec(),
        want.to_f32_vec(),
        "simulator differs from eval --quantized"
    );
    // And int8 stays close to float (the mask is a sigmoid: values in [0, 1]).
    let (worst, _) = max_diff(&dir.join("float/mask.npy"), &od_q.join("mask.npy"));
    assert!(worst < 0.1, "int8 differs from float by {worst}");
}
