//! `nnac profile` on the bundled tiny CNN, as a user runs it: the text report, the
//! `--json` fields docs/PERFORMANCE.md documents, the Chrome trace, `--hw`, and user
//! errors. Needs the image cache of `scripts/setup.sh` (the test command runs it
//! first); without it the test fails, it is never skipped.

mod common;

use common::tempdir;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn nnac(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nnac"))
        .args(args)
        .output()
        .expect("spawn nnac")
}

fn ok(args: &[&str]) -> String {
    let out = nnac(args);
    assert!(
        out.status.success(),
        "nnac {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Compiles models/tiny_cnn.onnx into `dir/tiny.nnab`.
fn compile_tiny(dir: &std::path::Path) -> String {
    let img = root().join(".cache/models/images/astronaut.png");
    assert!(
        img.exists(),
        "{} is missing: run scripts/setup.sh first",
        img.display()
    );
    let out = dir.join("tiny.nnab");
    let model = root().join("models/tiny_cnn.onnx");
    ok(&[
        "compile",
        model.to_str().unwrap(),
        "--calib",
        img.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    out.to_str().unwrap().to_string()
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing or not an integer in {v}"))
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number in {v}"))
}

/// `nnac profile --json PROG --hw DIR/NAME` with `toml` written to that file.
fn profile_json(dir: &std::path::Path, prog: &str, name: &str, toml: &str) -> Value {
    let hw = dir.join(name);
    std::fs::write(&hw, toml).unwrap();
    let out = ok(&["profile", "--json", prog, "--hw", hw.to_str().unwrap()]);
    serde_json::from_str(&out).expect("valid JSON")
}

#[test]
fn profile_of_the_tiny_cnn() {
    let tmp = tempdir("profile-tiny");
    let dir = tmp.path();
    let prog = compile_tiny(dir);

    let text = ok(&["profile", &prog]);
    // The tiny CNN's weights are resident: per-frame figures are the body's, the
    // prologue (once per load) is reported apart.
    for want in [
        "per frame (body):",
        "prologue (once per load):",
        "cycles",
        "frames/s",
        "MAC utilization",
        "DRAM per frame: read",
        "SRAM peak",
        "schedule floor:",
        "conv1",
    ] {
        assert!(text.contains(want), "text report lacks {want:?}:\n{text}");
    }

    let j: Value = serde_json::from_str(&ok(&["profile", "--json", &prog])).expect("valid JSON");
    let total = u(&j, "total_cycles");
    assert!(total > 0);
    let util = f(&j, "mac_utilization");
    assert!(util > 0.0 && util <= 1.0, "{util}");
    let fps = f(&j, "fps");
    assert!(
        (fps - 2e9 / total as f64).abs() < 1e-6 * fps,
        "fps {fps} at 2 GHz"
    );
    let dram = &j["dram_bytes"];
    // Per frame the input comes in and the logits go out; the weights come in once,
    // in the prologue.
    assert!(u(dram, "read") > 0 && u(dram, "written") > 0 && u(dram, "lower_bound") > 0);
    let io = u(dram, "io");
    let pro = &j["prologue"];
    assert!(u(pro, "cycles") > 0 && u(pro, "segments") == 1, "{pro}");
    let weights = u(&pro["dram_bytes"], "read");
    assert!(
        weights > 0 && weights + io <= u(dram, "lower_bound"),
        "{pro}"
    );
    assert!(
        u(dram, "read") < weights,
        "a frame reads less than the weights"
    );
    let segments = j["segments"].as_array().expect("segments");
    assert_eq!(
        u(&segments[1], "end") - u(&segments[1], "start"),
        total,
        "the body's segment is the frame"
    );
    // The schedule floor: the body's segment's busiest unit, never above its cycles.
    let floor = &segments[1]["floor"];
    let busiest = ["dma", "mac", "simd"].iter().map(|k| u(floor, k)).max();
    assert_eq!(Some(u(floor, "cycles")), busiest, "{floor}");
    assert!(["DMA", "MAC", "SIMD"].contains(&floor["limit"].as_str().unwrap_or("")));
    assert_eq!(u(&j, "floor_cycles"), u(floor, "cycles"));
    assert!(0 < u(&j, "floor_cycles") && u(&j, "floor_cycles") <= total);
    assert!(u(&j, "sram_peak_bytes") > 0);
    let causes = &j["cycles_by_cause"];
    let by_cause: u64 = [
        "mac_busy",
        "simd_work",
        "dma",
        "flags",
        "sram_ports",
        "simd_unload",
    ]
    .iter()
    .map(|k| u(causes, k))
    .sum();
    assert_eq!(by_cause, total, "cycles by cause must add up to the total");

    let layers = j["layers"].as_array().expect("layers array");
    assert!(layers.len() >= 4, "{layers:?}");
    let names: Vec<&str> = layers.iter().map(|l| l["name"].as_str().unwrap()).collect();
    for node in ["conv1", "res_a", "conv2", "fc"] {
        assert!(
            names.iter().any(|n| n.contains(node)),
            "no layer named after {node}: {names:?}"
        );
    }
    let mut layer_cycles = 0;
    let mut layer_macs = 0;
    for l in layers {
        layer_cycles += u(l, "cycles");
        layer_macs += u(l, "macs");
        for k in ["dma", "flags", "sram_ports", "simd_unload"] {
            u(&l["stalls"], k);
        }
        u(&l["dram_bytes"], "read");
        u(&l["dram_bytes"], "written");
        let lu = f(l, "utilization");
        match l["shape_bound"].as_f64() {
            Some(b) => assert!(lu <= b + 1e-12, "{}: {lu} > bound {b}", l["name"]),
            None => assert_eq!(u(l, "macs"), 0, "a layer with MACs has a shape bound: {l}"),
        }
        if let Some(h) = l["hardware_bound"].as_f64() {
            let s = f(l, "shape_bound");
            assert!(
                h > 0.0 && h <= s + 1e-12,
                "{}: hardware bound {h} > shape bound {s}",
                l["name"]
            );
        }
    }
    assert_eq!(layer_cycles, total);
    assert_eq!(layer_macs, u(&j, "macs"));
    // The hardware bound (docs/PERFORMANCE.md 3.1): no program beats it.
    let hw = u(&j, "hw_bound_cycles");
    assert!(
        hw > 0 && hw <= total,
        "hardware bound {hw} cycles > the frame's {total}"
    );
    let hb = f(&j, "hardware_bound");
    assert!(f(&j, "mac_utilization") <= hb + 1e-12 && hb <= f(&j, "shape_bound") + 1e-12);
    let work = &j["hw_work"];
    let busiest = [
        u(work, "mac") + u(work, "simd_only"),
        u(work, "unload") + u(work, "simd_only"),
        u(work, "dram"),
        u(work, "shift_register"),
    ];
    assert_eq!(busiest.into_iter().max().unwrap(), hw, "{work}");
    // The shift register's pairing is never below either unit's work alone.
    assert!(
        u(work, "shift_register") >= u(work, "mac").max(u(work, "unload")) + u(work, "simd_only")
    );

    // The trace: valid JSON, both queue tracks, one slice per DMA/compute instruction.
    let trace = dir.join("trace.json");
    ok(&["profile", &prog, "--trace", trace.to_str().unwrap()]);
    let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).expect("trace is JSON");
    let ev = t["traceEvents"].as_array().expect("traceEvents");
    let track = |tid: u64| {
        ev.iter()
            .filter(|e| e["ph"] == "X" && e["tid"].as_u64() == Some(tid))
            .count()
    };
    let tracks: Vec<&str> = ev
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tracks, ["DMA queue", "compute queue"]);
    let stops = ev.iter().filter(|e| e["name"] == "STOP").count();
    assert!(track(1) > 0 && track(2) > 0);
    assert_eq!(track(1) + track(2) + stops, u(&j, "instructions") as usize);
    assert!(ev
        .iter()
        .filter(|e| e["ph"] == "X")
        .all(|e| e["dur"].as_f64().unwrap() > 0.0 && e["ts"].as_f64().unwrap() >= 0.0));

    // Twice the DRAM bandwidth: never more cycles.
    let fast = profile_json(dir, &prog, "fast.toml", "dram_share_percent = 100\n");
    assert!(u(&fast, "total_cycles") <= total);
    assert_eq!(u(&fast["hw"], "dram_bytes_per_s"), 68_000_000_000);
    // Another clock: fps follows it.
    let clk = profile_json(dir, &prog, "clock.toml", "clock_hz = 1000000000\n");
    let fps = f(&clk, "fps");
    assert!((fps - 1e9 / u(&clk, "total_cycles") as f64).abs() < 1e-6 * fps);
}

#[test]
fn profile_user_errors() {
    let tmp = tempdir("profile-errors");
    let dir = tmp.path();
    let missing = dir.join("missing.nnab");
    let out = nnac(&["profile", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));

    let garbage = dir.join("garbage.nnab");
    std::fs::write(&garbage, b"NNAB\r\n\x1a\nnot a program").unwrap();
    let out = nnac(&["profile", garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("garbage.nnab"));

    let prog = compile_tiny(dir);
    let hw = dir.join("other.toml");
    std::fs::write(&hw, "mac_rows = 64\nsimd_width = 64\n").unwrap();
    let out = nnac(&["profile", &prog, "--hw", hw.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mac_rows"));
}
