//! End to end on the bundled `models/tiny_cnn.onnx`, as a user runs it:
//! the committed model is what its script makes; `nnac compile` is deterministic;
//! `nnac verify` passes; `nnac run` gives the same bytes under every schedule, and
//! they equal the quantized reference interpreter's, also for three frames run after
//! one load of the program (weights resident, prologue once); the float interpreter matches
//! ONNX Runtime. Needs the cache and venv of `scripts/setup.sh` (the test command
//! runs it first); without them the tests fail, they are never skipped.

mod common;

use common::tempdir;
use nnac_ir::{Tensor, TensorData};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    let p = root().join(".venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

fn image(name: &str) -> PathBuf {
    let p = root().join(".cache/models/images").join(name);
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn nnac() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nnac"))
}

/// Preprocesses a photograph into a 1x3x64x64 float32 .npy with the project script.
fn to_npy(img: &Path, out: &Path) {
    run_ok(
        Command::new(python())
            .arg(root().join("scripts/image_to_npy.py"))
            .arg(img)
            .arg(out)
            .args([
                "--size",
                "64x64",
                "--mean",
                "123.7,116.3,103.5",
                "--scale",
                "0.0171",
            ]),
    );
}

#[test]
fn committed_model_is_what_its_script_makes() {
    let tmp = tempdir("e2e-regen");
    let dir = tmp.path();
    let out = dir.join("tiny_cnn.onnx");
    run_ok(
        Command::new(python())
            .arg(root().join("models/make_tiny_cnn.py"))
            .arg(&out),
    );
    let committed = std::fs::read(root().join("models/tiny_cnn.onnx")).unwrap();
    assert!(
        std::fs::read(&out).unwrap() == committed,
        "models/tiny_cnn.onnx differs from models/make_tiny_cnn.py's output"
    );
}

#[test]
fn compiled_program_is_deterministic_race_free_and_bit_exact() {
    let tmp = tempdir("e2e-exact");
    let dir = tmp.path();
    let calib = dir.join("calib");
    std::fs::create_dir_all(&calib).unwrap();
    for name in ["coffee.png", "chelsea.png", "coins.png"] {
        to_npy(&image(name), &calib.join(name.replace(".png", ".npy")));
    }
    let input = dir.join("astronaut.npy");
    to_npy(&image("astronaut.png"), &input);
    let model = root().join("models/tiny_cnn.onnx");

    // Compile twice: byte-identical programs.
    for out in ["a.nnab", "b.nnab"] {
        run_ok(
            nnac()
                .arg("compile")
                .arg(&model)
                .arg("--calib")
                .arg(&calib)
                .arg("-o")
                .arg(dir.join(out))
                .arg("--quiet"),
        );
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
    let model = root().join("models/tiny_cnn.onnx");
    run_ok(
        Command::new(python())
            .arg(root().join("scripts/ref_onnxruntime.py"))
            .arg(&model)
            .arg(dir.join("ort"))
            .arg("--input")
            .arg(format!("image={}", input.display())),
    );
    run_ok(
        nnac()
            .arg("eval")
            .arg(&model)
            .arg("--input")
            .arg(format!("image={}", input.display()))
            .arg("--output-dir")
            .arg(dir.join("nnac")),
    );
    let want = nnac_interp::npy::read_npy(dir.join("ort/logits.npy"))
        .unwrap()
        .to_f32_vec();
    let got = nnac_interp::npy::read_npy(dir.join("nnac/logits.npy"))
        .unwrap()
        .to_f32_vec();
    let range = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(
        worst <= 1e-4 * range.max(1.0),
        "nnac eval differs from ONNX Runtime by {worst} (range {range})"
    );
}
