//! Precision the user controls, from the command line: `nnac analyze` (per-layer
//! int8 error against float, accumulated and alone, and the sensitivity ranking) and
//! hybrid precision (`--float-layers`, `--auto-float`): the layers kept in float32
//! run on the host, the program stays bit-exact with the quantized reference
//! interpreter, and keeping layers in float brings the output closer to float.
//! Model: models/tiny_cnn.onnx (conv, residual add, pooling, inner product).

mod common;

use common::tempdir;
use nnac_interp::npy::{encode_npy, read_npy};
use nnac_ir::Tensor;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NNAC: &str = env!("CARGO_BIN_EXE_nnac");

fn model() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/tiny_cnn.onnx")
}

/// `n` frames `N x 1 x 3 x 64 x 64` of seeded values in [-2, 2).
fn frames(path: &Path, n: usize, seed: u32) {
    let per = 3 * 64 * 64;
    let data: Vec<f32> = (0..n * per)
        .map(|i| {
            let x = (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed.wrapping_mul(40_503));
            ((x >> 8) % 4000) as f32 / 1000.0 - 2.0
        })
        .collect();
    let t = Tensor::f32(vec![n, 1, 3, 64, 64], data).unwrap();
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

fn fails(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(1), "expected a user error");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

struct Data {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    calib: String,
    input: String,
}

fn data(tag: &str) -> Data {
    let d = tempdir(tag);
    let dir = d.path().to_path_buf();
    let calib = dir.join("calib.npy");
    let input = dir.join("input.npy");
    frames(&calib, 6, 1);
    frames(&input, 4, 2);
    Data {
        _dir: d,
        calib: calib.display().to_string(),
        input: input.display().to_string(),
        dir,
    }
}

fn analysis(d: &Data, extra: &[&str]) -> serde_json::Value {
    let json = d.dir.join(format!("a{}.json", extra.len()));
    let m = model();
    let mut args = vec![
        "analyze",
        m.to_str().unwrap(),
        "--calib",
        &d.calib,
        "--input",
        &d.input,
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ok(&nnac(&args));
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

fn layer<'a>(a: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    a["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no layer {name} in {a}"))
}

fn output_sqnr(a: &serde_json::Value) -> f64 {
    a["outputs"][0]["entire"]["sqnr_db"].as_f64().unwrap()
}

#[test]
fn analyze_reports_entire_and_single_error_per_layer_and_a_ranking() {
    let d = data("analyze");
    let m = model();
    let text = ok(&nnac(&[
        "analyze",
        m.to_str().unwrap(),
        "--calib",
        &d.calib,
        "--input",
        &d.input,
        "--top",
        "3",
    ]));
    assert!(text.contains("graph tiny_cnn: 4 frame(s)"), "{text}");
    assert!(text.contains("most sensitive"), "{text}");
    let a = analysis(&d, &[]);
    assert_eq!(a["frames"], 4);
    // The first layer reads the graph input: accumulated and alone are the same.
    let conv1 = layer(&a, "conv1");
    assert_eq!(conv1["entire"], conv1["single"]);
    // Deeper layers accumulate error: entire is worse than single.
    let fc = layer(&a, "fc");
    let (e, s) = (
        fc["entire"]["sqnr_db"].as_f64().unwrap(),
        fc["single"]["sqnr_db"].as_f64().unwrap(),
    );
    assert!(e < s, "fc: entire {e} dB, single {s} dB");
    for l in a["layers"].as_array().unwrap() {
        let c = l["entire"]["cosine"].as_f64().unwrap();
        assert!(c > 0.99 && c <= 1.0 + 1e-9, "{l}");
        assert!(l["entire"]["max_abs_error"].as_f64().unwrap() >= 0.0);
    }
    // The ranking names every compute layer with error to remove, most first.
    let ranking: Vec<&str> = a["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        ranking.len() >= 5 && !ranking.contains(&"flatten"),
        "{ranking:?}"
    );
    let removable: Vec<f64> = ranking
        .iter()
        .map(|n| layer(&a, n)["removable"].as_f64().unwrap())
        .collect();
    assert!(removable.windows(2).all(|w| w[0] >= w[1]), "{removable:?}");
    // The text table shows the top 3 of the same ranking.
    assert!(text.contains(&ranking[..3].join(", ")), "{text}");
}

#[test]
fn float_layers_run_on_the_host_bit_exact_with_the_quantized_reference() {
    let d = data("float_layers");
    let m = model();
    let m = m.to_str().unwrap();
    let prog = d.dir.join("p.nnab");
    // res_a feeds only res_b: both in float, the value between them stays float32.
    let layers = "conv1,res_a,res_b";
    let summary = ok(&nnac(&[
        "compile",
        m,
        "--calib",
        &d.calib,
        "--float-layers",
        layers,
        "-o",
        prog.to_str().unwrap(),
    ]));
    for l in ["conv1", "res_a", "res_b"] {
        assert!(
            summary.contains(&format!("{l} (nna.conv): kept in float32 (--float-layers)")),
            "{summary}"
        );
    }
    let disasm = ok(&nnac(&["disasm", prog.to_str().unwrap()]));
    // res_a's result, read only by res_b, stays float32 in DRAM.
    assert!(
        disasm.contains("out name=\"res_a\" dtype=float32"),
        "{disasm}"
    );
    let (run_dir, eval_dir) = (d.dir.join("run"), d.dir.join("eval"));
    let input = format!("image={}", d.input);
    ok(&nnac(&[
        "run",
        prog.to_str().unwrap(),
        "--input",
        &input,
        "--output-dir",
        run_dir.to_str().unwrap(),
    ]));
    ok(&nnac(&[
        "eval",
        m,
        "--quantized",
        "--calib",
        &d.calib,
        "--float-layers",
        layers,
        "--input",
        &d.input,
        "--output-dir",
        eval_dir.to_str().unwrap(),
    ]));
    let a = read_npy(run_dir.join("logits.npy")).unwrap();
    let b = read_npy(eval_dir.join("logits.npy")).unwrap();
    assert_eq!(a.shape, vec![4, 1, 10]);
    assert_eq!(a, b, "simulator and quantized reference differ");
    // `nnac verify` proves the program with its float32 host tensor race-free.
    ok(&nnac(&["verify", prog.to_str().unwrap()]));
}

#[test]
fn float_layers_bring_the_output_closer_to_float() {
    let d = data("float_gain");
    // Plain rounding: bias correction fits the int8 layers' mean error on the
    // calibration frames (with `--bias-correction`, this small net's int8 output is
    // closer to float than with res_a and res_b in float: 47.3 against 46.4 dB on the
    // test frames), and the comparison would measure the correction, not the float
    // layers.
    let base = output_sqnr(&analysis(&d, &["--bias-correction=off"]));
    let hybrid = analysis(
        &d,
        &["--bias-correction=off", "--float-layers", "res_a,res_b"],
    );
    let some = output_sqnr(&hybrid);
    // res_a's value stays float32 (only res_b, a float layer, reads it): still measured.
    for l in ["res_a", "res_b"] {
        assert_eq!(layer(&hybrid, l)["on_host"], true, "{l}");
        assert!(layer(&hybrid, l)["entire"]["cosine"].as_f64().unwrap() > 0.99);
    }
    let all = output_sqnr(&analysis(
        &d,
        &[
            "--bias-correction=off",
            "--float-layers",
            "conv1,res_a,res_b,res_add,conv2,gap,fc",
        ],
    ));
    assert!(some > base, "two float layers: {some} dB, none: {base} dB");
    assert!(all > base + 3.0, "all float: {all} dB, none: {base} dB");
}

#[test]
fn auto_float_keeps_the_most_sensitive_layers_in_float() {
    let d = data("auto_float");
    let m = model();
    let m = m.to_str().unwrap();
    // The ranking on the calibration frames (what --auto-float ranks on).
    let json = d.dir.join("rank.json");
    ok(&nnac(&[
        "analyze",
        m,
        "--calib",
        &d.calib,
        "--json",
        json.to_str().unwrap(),
    ]));
    let a: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let top: Vec<&str> = a["ranking"].as_array().unwrap()[..2]
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let prog = d.dir.join("auto.nnab");
    let summary = ok(&nnac(&[
        "compile",
        m,
        "--calib",
        &d.calib,
        "--auto-float",
        "2",
        "-o",
        prog.to_str().unwrap(),
    ]));
    assert!(summary.contains("host ops: 2 ("), "{summary}");
    for (k, l) in top.iter().enumerate() {
        let reason = format!(
            "kept in float32 (--auto-float: sensitivity rank {} of the analysis)",
            k + 1
        );
        let found = summary
            .lines()
            .any(|s| s.starts_with(&format!("  {l} (")) && s.ends_with(&reason));
        assert!(found, "{l}: '{reason}' missing: {summary}");
    }
}

#[test]
fn precision_options_name_what_is_wrong() {
    let d = data("precision_errors");
    let m = model();
    let m = m.to_str().unwrap();
    let e = fails(&nnac(&[
        "compile",
        m,
        "--calib",
        &d.calib,
        "--float-layers",
        "conv1,nope,also_nope",
    ]));
    assert!(
        e.contains("--float-layers: no layer named 'also_nope', 'nope'"),
        "{e}"
    );
    let e = fails(&nnac(&[
        "compile",
        m,
        "--calib",
        &d.calib,
        "--float-layers",
        "flatten",
    ]));
    assert!(e.contains("'flatten' (reshape)"), "{e}");
    // A name of a node a layer absorbed selects the layer (conv1/relu is in conv1).
    let prog = d.dir.join("relu.nnab");
    let s = ok(&nnac(&[
        "compile",
        m,
        "--calib",
        &d.calib,
        "--float-layers",
        "conv1/relu",
        "-o",
        prog.to_str().unwrap(),
    ]));
    assert!(s.contains("conv1 (nna.conv): kept in float32"), "{s}");
    let e = fails(&nnac(&[
        "analyze",
        m,
        "--calib",
        &d.calib,
        "--input",
        "x=missing.npy",
    ]));
    assert!(e.contains("missing.npy"), "{e}");
}
