//! The quantization-facing CLI: `nnac eval --quantized --calib`, the quantization
//! table of `nnac inspect --calib`, and the calibration progress bar of `compile`
//! (hidden when stderr is not a terminal). Model: the PP-OCR orientation classifier
//! (real weights, from `scripts/setup.sh`'s cache), on seeded pseudo-random frames.

mod common;

use common::tempdir;
use nnac_interp::npy::{encode_npy, read_npy};
use nnac_ir::Tensor;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NNAC: &str = env!("CARGO_BIN_EXE_nnac");

fn model() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".cache/models/rapidocr/ch_ppocr_mobile_v2.0_cls_infer.onnx");
    assert!(
        p.is_file(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

/// `n` frames `N x 1 x 3 x 48 x 192` of smooth seeded values in [-1, 1].
fn frames(path: &Path, n: usize, seed: u32) {
    let per = 3 * 48 * 192;
    let data: Vec<f32> = (0..n * per)
        .map(|i| {
            let x = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
            ((i % 192) as f32 / 96.0 - 1.0) * 0.5 + (x % 1000) as f32 / 1000.0 - 0.5
        })
        .collect();
    let t = Tensor::f32(vec![n, 1, 3, 48, 192], data).unwrap();
    std::fs::write(path, encode_npy(&t)).unwrap();
}

fn nnac(args: &[&str]) -> Output {
    Command::new(NNAC).args(args).output().expect("run nnac")
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "nnac failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const SHAPE: &str = "x=1x3x48x192";

/// `nnac CMD MODEL --input-shape SHAPE REST...` on the classifier.
fn on_model(cmd: &str, rest: &[&str]) -> Output {
    let m = model();
    let mut args = vec![cmd, m.to_str().unwrap(), "--input-shape", SHAPE];
    args.extend_from_slice(rest);
    nnac(&args)
}

#[test]
fn eval_quantized_writes_dequantized_float32_close_to_float() {
    let tmp = tempdir("cli-quant-eval");
    let d = tmp.path();
    let (calib, input) = (d.join("calib.npy"), d.join("input.npy"));
    frames(&calib, 2, 1);
    frames(&input, 3, 7);
    let (fd, qd) = (d.join("float"), d.join("int8"));
    let s = ok(&on_model(
        "eval",
        &[
            "--input",
            input.to_str().unwrap(),
            "--output-dir",
            fd.to_str().unwrap(),
        ],
    ));
    assert!(s.contains("frame(s) float"), "{s}");
    let s = ok(&on_model(
        "eval",
        &[
            "--input",
            input.to_str().unwrap(),
            "--output-dir",
            qd.to_str().unwrap(),
            "--quantized",
            "--calib",
            calib.to_str().unwrap(),
        ],
    ));
    assert!(s.contains("frame(s) int8"), "{s}");
    let name = "save_infer_model_scale_0.tmp_1.npy";
    let (f, q) = (
        read_npy(fd.join(name)).unwrap(),
        read_npy(qd.join(name)).unwrap(),
    );
    assert_eq!(q.shape, vec![3, 1, 2]);
    assert_eq!(q.dtype(), nnac_ir::DType::F32);
    let (f, q) = (f.to_f32_vec(), q.to_f32_vec());
    let worst = f
        .iter()
        .zip(&q)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst < 0.1, "int8 vs float probabilities differ by {worst}");
    assert_ne!(f, q, "the quantized run must not be the float run");
}

#[test]
fn eval_calibration_flags_are_checked() {
    // `--calib` belongs to `--quantized`.
    let o = on_model("eval", &["--input", "missing.npy", "--calib", "c.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--quantized"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // `--quantized` without `--calib` calibrates on synthetic frames, as `compile`
    // does, and says so.
    let tmp = tempdir("cli-quant-synthetic");
    let input = tmp.path().join("input.npy");
    frames(&input, 1, 3);
    let o = on_model(
        "eval",
        &[
            "--input",
            input.to_str().unwrap(),
            "--output-dir",
            tmp.path().to_str().unwrap(),
            "--quantized",
        ],
    );
    assert!(ok(&o).contains("frame(s) int8"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: synthetic calibration")
            && err.contains("--calib PATH")
            && err.contains("bias correction is skipped"),
        "{err}"
    );
}

#[test]
fn inspect_with_calibration_shows_the_quantization_table() {
    let tmp = tempdir("cli-quant-inspect");
    let d = tmp.path();
    let calib = d.join("calib.npy");
    frames(&calib, 2, 3);
    let s = ok(&on_model("inspect", &["--calib", calib.to_str().unwrap()]));
    assert!(s.contains("// graph "), "{s}");
    assert!(
        s.contains(
            "2 calibration frame(s), method mse, weights nearest, bias correction on 11 dot layers"
        ),
        "{s}"
    );
    assert!(s.contains("SQNR dB") && s.contains("acc bound"), "{s}");
    let g = ok(&on_model(
        "inspect",
        &[
            "--calib",
            calib.to_str().unwrap(),
            "--weight-rounding",
            "gptq",
        ],
    ));
    assert!(g.contains("method mse, weights gptq"), "{g}");
    assert!(s.contains("nna.conv"), "{s}");
    assert!(
        s.contains("// accumulator overflows in the reference run: 0"),
        "{s}"
    );
    // The table is comments: the IR text that follows is unchanged.
    let ir = ok(&on_model("inspect", &[]));
    let body: String = ir
        .lines()
        .filter(|l| !l.starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!body.is_empty() && s.ends_with(&body));
}

#[test]
fn compile_progress_is_hidden_when_stderr_is_not_a_terminal() {
    let tmp = tempdir("cli-quant-progress");
    let d = tmp.path();
    let calib = d.join("calib.npy");
    frames(&calib, 2, 5);
    let o = on_model(
        "compile",
        &[
            "--calib",
            calib.to_str().unwrap(),
            "-o",
            d.join("m.nnab").to_str().unwrap(),
        ],
    );
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("calibrating"), "{err}");
    assert!(!err.contains('\r'), "{err}");
}

/// `--bias-correction=off`, `--bias-correction` (all dot products), `--calib-method
/// percentile` (with and without `--percentile`), `--calib-method minmax` and
/// `--weight-rounding gptq` reach the compiler and `eval --quantized`, each on its
/// own: the program compiled with one of them differs from the default options'
/// program (MSE ranges, bias correction of the depthwise convolutions) and every
/// other one, its output from the default's, and it runs on the simulator
/// bit-exactly like `eval --quantized` with the same option;
/// `--bias-correction=depthwise` is the default.
#[test]
fn bias_correction_and_percentile_options_run_bit_exact_on_the_simulator() {
    let tmp = tempdir("cli-quant-bias-correction");
    let d = tmp.path();
    let (calib, input) = (d.join("calib.npy"), d.join("input.npy"));
    frames(&calib, 3, 5);
    frames(&input, 2, 11);
    let name = "save_infer_model_scale_0.tmp_1.npy";
    let mut runs = Vec::new();
    for (tag, extra) in [
        ("plain", &[][..]),
        ("no-bc", &["--bias-correction=off"][..]),
        ("bc-all", &["--bias-correction"][..]),
        ("percentile", &["--calib-method", "percentile"][..]),
        (
            "percentile-99.9",
            &["--calib-method", "percentile", "--percentile", "99.9"][..],
        ),
        ("minmax", &["--calib-method", "minmax"][..]),
        ("gptq", &["--weight-rounding", "gptq"][..]),
    ] {
        let prog = d.join(format!("{tag}.nnab"));
        let mut args = vec![
            "--calib",
            calib.to_str().unwrap(),
            "-q",
            "-o",
            prog.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        ok(&on_model("compile", &args));
        let (sim, ev) = (d.join(format!("{tag}-sim")), d.join(format!("{tag}-eval")));
        ok(&nnac(&[
            "run",
            prog.to_str().unwrap(),
            "--input",
            &format!("x={}", input.to_str().unwrap()),
            "--output-dir",
            sim.to_str().unwrap(),
        ]));
        let mut args = vec![
            "--input",
            input.to_str().unwrap(),
            "--output-dir",
            ev.to_str().unwrap(),
            "--quantized",
            "--calib",
            calib.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        ok(&on_model("eval", &args));
        let (s, e) = (
            read_npy(sim.join(name)).unwrap().to_f32_vec(),
            read_npy(ev.join(name)).unwrap().to_f32_vec(),
        );
        assert_eq!(s, e, "{tag}: simulator and quantized interpreter differ");
        runs.push((tag, std::fs::read(&prog).unwrap(), e));
    }
    let (_, plain_prog, plain_out) = &runs[0];
    let mut distinct: Vec<&Vec<u8>> = vec![plain_prog];
    for (tag, prog, out) in &runs[1..] {
        assert!(
            !distinct.contains(&prog),
            "{tag}: the program equals another option's"
        );
        distinct.push(prog);
        assert_ne!(
            prog, plain_prog,
            "{tag}: the option did not change the program"
        );
        // The eval side: a dropped option would give the default output.
        assert_ne!(
            out, plain_out,
            "{tag}: the option did not change eval's output"
        );
    }
    let back = d.join("back.nnab");
    ok(&on_model(
        "compile",
        &[
            "--calib",
            calib.to_str().unwrap(),
            "--bias-correction=off",
            "--bias-correction=depthwise",
            "-q",
            "-o",
            back.to_str().unwrap(),
        ],
    ));
    assert_eq!(
        &std::fs::read(&back).unwrap(),
        plain_prog,
        "--bias-correction=depthwise (the last one given) is the default"
    );
    let o = on_model(
        "compile",
        &["--calib", calib.to_str().unwrap(), "--percentile", "0"],
    );
    assert_eq!(o.status.code(), Some(1));
    let o = on_model(
        "compile",
        &[
            "--calib",
            calib.to_str().unwrap(),
            "--weight-rounding",
            "up",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nearest"));
}
