//! The mapping knob in the backend (`nnac compile --channels-on-rows`, what `nnac
//! tune`'s `mapping = "auto"` applies per layer): a 1x1, stride-1 convolution runs
//! with its output channels on the MAC array's rows and its pixels on the columns
//! (`crates/backend-nna/src/lower/channels_on_rows.rs`). On a 192 x 96 array the late
//! 1x1 layers of ResNet-50 (7 x 7 = 49 pixels fill a quarter of the rows) take about
//! half the cycles, and the program's outputs are byte-identical to the compiler's
//! orientation's on the simulator (eager and random schedules), whose programs the
//! other end-to-end tests check bit for bit against the quantized reference; `nnac
//! verify` proves the turned program race-free. A stride-2 layer is named but kept,
//! and a name the model does not have is an error naming it (exit 1).

mod common;

use common::{need, root, run_ok, tempdir};
use std::path::Path;
use std::process::Command;

const NNAC: &str = env!("CARGO_BIN_EXE_nnac");

/// The light ResNet-50's 1x1 layers of the last stage (n148 is the stride-2
/// projection shortcut, which cannot turn) and one 14x14 layer (n140).
const LAYERS: &str = "n140,n146,n148,n152,n158,n162,n168";
const TURNED: &str = "n140, n146, n152, n158, n162, n168";

fn total_cycles(prog: &Path, hw: &Path) -> u64 {
    let out = run_ok(
        Command::new(NNAC)
            .arg("profile")
            .arg("--json")
            .arg(prog)
            .arg("--hw")
            .arg(hw),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["total_cycles"].as_u64().unwrap()
}

fn run_raw(prog: &Path, hw: &Path, input: &Path, out: &Path, schedule: &[&str]) -> Vec<u8> {
    run_ok(
        Command::new(NNAC)
            .arg("run")
            .arg(prog)
            .arg("--hw")
            .arg(hw)
            .arg("--input")
            .arg(format!("gpu_0/data_0={}", input.display()))
            .arg("--raw")
            .arg("--output-dir")
            .arg(out)
            .args(schedule),
    );
    let file = std::fs::read_dir(out).unwrap().next().unwrap().unwrap();
    std::fs::read(file.path()).unwrap()
}

#[test]
fn late_resnet50_layers_turn_faster_and_bit_identical() {
    let model = need(root().join(".cache/models/light/resnet50.onnx"));
    let dir = tempdir("cor");
    let hw = dir.path().join("r192.toml");
    std::fs::write(&hw, "mac_rows = 192\nsimd_width = 192\n").unwrap();
    let compile = |out: &Path, extra: &[&str]| {
        run_ok(
            Command::new(NNAC)
                .arg("compile")
                .arg(&model)
                .arg("--hw")
                .arg(&hw)
                .arg("-o")
                .arg(out)
                .args(extra),
        )
    };
    let base = dir.path().join("base.nnab");
    let turned = dir.path().join("turned.nnab");
    compile(&base, &["-q"]);
    let summary = compile(&turned, &["--channels-on-rows", LAYERS]);
    assert!(
        summary.contains(&format!("channels on rows: {TURNED}\n")),
        "{summary}"
    );
    assert!(summary.contains("or split): n148\n"), "{summary}");

    // Measured: 610,808 -> 578,592 cycles per frame (n146: 11,296 -> 5,664).
    let (cb, ct) = (total_cycles(&base, &hw), total_cycles(&turned, &hw));
    assert!(ct * 100 < cb * 97, "turned {ct} cycles vs {cb}");

    let frames: Vec<f32> = (0..2 * 3 * 224 * 224)
        .map(|i| ((i * 7919 % 1000) as f32 / 250.0) - 2.0)
        .collect();
    let input = dir.path().join("x.npy");
    let t = nnac_ir::Tensor::f32(vec![2, 1, 3, 224, 224], frames).unwrap();
    nnac_interp::npy::write_npy(&input, &t).unwrap();
    let want = run_raw(&base, &hw, &input, &dir.path().join("ob"), &[]);
    let got = run_raw(&turned, &hw, &input, &dir.path().join("ot"), &[]);
    assert!(got == want, "the turned program's outputs differ");
    let random = ["--schedule", "random", "--seed", "7"];
    let got = run_raw(&turned, &hw, &input, &dir.path().join("or"), &random);
    assert!(
        got == want,
        "the turned program's outputs differ (random schedule)"
    );

    let v = run_ok(
        Command::new(NNAC)
            .arg("verify")
            .arg(&turned)
            .arg("--hw")
            .arg(&hw),
    );
    assert!(v.starts_with("OK:"), "{v}");
}

#[test]
fn an_unknown_layer_is_named() {
    let dir = tempdir("cor-err");
    let out = Command::new(NNAC)
        .arg("compile")
        .arg(root().join("models/tiny_cnn.onnx"))
        .args(["-q", "-o"])
        .arg(dir.path().join("p.nnab"))
        .args(["--channels-on-rows", "no_such_layer"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--channels-on-rows: no NNA layer named 'no_such_layer'"),
        "{err}"
    );
}

/// `nnac tune`'s exact tier compiles the layers the analytical model turns: on a
/// 192 x 96 array the design with `mapping = "auto"` is exactly faster than the same
/// design without, and its front TOML names the layers for `nnac compile`.
/// Measured: 610,808 -> 567,304 cycles, 20 layers.
#[test]
fn tune_confirms_the_knob_exactly() {
    let model = need(root().join(".cache/models/light/resnet50.onnx"));
    let dir = tempdir("cor-tune");
    let space = dir.path().join("space.toml");
    std::fs::write(
        &space,
        "[hw]\nmac_rows = [192]\n[compiler]\nmapping = [\"off\", \"auto\"]\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    run_ok(
        Command::new(NNAC)
            .arg("tune")
            .arg("--model")
            .arg(&model)
            .args([
                "--random-calib",
                "2",
                "--tuner",
                "exhaustive",
                "--cost",
                "exact",
            ])
            .args(["--jobs", "1", "--space"])
            .arg(&space)
            .arg("-o")
            .arg(&out),
    );
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    let exact = |values: &str| {
        let p = r["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["values"] == values)
            .unwrap();
        p["exact"]["metrics"]["models"][0].clone()
    };
    let (off, auto) = (
        exact("mac_rows=192 mapping=off"),
        exact("mac_rows=192 mapping=auto"),
    );
    let cycles = |m: &serde_json::Value| m["cycles"].as_u64().unwrap();
    assert!(cycles(&auto) * 100 < cycles(&off) * 95, "{auto} vs {off}");
    assert!(off.get("channels_on_rows").is_none());
    let turned = auto["channels_on_rows"].as_array().unwrap();
    assert!(
        turned.len() >= 10 && turned.iter().any(|l| l == "n146"),
        "{turned:?}"
    );
    let front = std::fs::read_to_string(out.join("hw/front-00.toml")).unwrap();
    assert!(
        front.contains("#   resnet50: --channels-on-rows n"),
        "{front}"
    );
}
