//! `nnac tune` through the binary, on the bundled tiny CNN (small spaces, small
//! budgets: seconds): errors name the key or option and exit 1; a seed gives the same
//! results for any --jobs; shards merged equal the whole run; --resume continues a
//! search to the same result as a longer one; every front point's HwConfig TOML
//! compiles with `nnac compile --hw`.

mod common;

use common::{root, run_ok, tempdir};
use std::path::Path;
use std::process::Command;

const SPACE: &str = "[hw]\nmac_rows = [32, 64, 96, 128]\nmac_cols = [32, 64, 96]\nsram_bytes = [262144, 1048576]\n[compiler]\nresident_weights = [\"auto\", \"off\"]\nmapping = [\"off\", \"auto\"]\n";

fn nnac() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nnac"))
}

fn tiny() -> String {
    format!("{},weight=2", root().join("models/tiny_cnn.onnx").display())
}

/// `nnac tune` on the tiny CNN with `extra` arguments, into `out`.
fn tune(space: &Path, out: &Path, extra: &[&str]) -> String {
    run_ok(
        nnac()
            .args(["tune", "--model", &tiny(), "--random-calib", "2", "--space"])
            .arg(space)
            .arg("-o")
            .arg(out)
            .args(extra),
    )
}

/// results.json without its wall-clock figures.
fn results(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.as_object_mut().unwrap().remove("timing");
    v
}

/// Asserts two results documents are equal, naming the first field that differs
/// (the documents themselves are too long for a message).
fn same(a: &serde_json::Value, b: &serde_json::Value, what: &str) {
    if a == b {
        return;
    }
    let (oa, ob) = (a.as_object().unwrap(), b.as_object().unwrap());
    let key = oa
        .keys()
        .chain(ob.keys())
        .find(|k| oa.get(*k) != ob.get(*k))
        .unwrap();
    let show = |v: Option<&serde_json::Value>| {
        let s = v.map_or("absent".to_string(), |v| v.to_string());
        s.chars().take(600).collect::<String>()
    };
    panic!(
        "{what}: `{key}` differs:\n{}\n{}",
        show(oa.get(key)),
        show(ob.get(key))
    );
}

fn write_space(dir: &Path, text: &str) -> std::path::PathBuf {
    let p = dir.join("space.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_search_writes_its_outputs_and_is_deterministic_for_any_jobs() {
    let tmp = tempdir("tune-det");
    let space = write_space(tmp.path(), SPACE);
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let base = [
        "--tuner",
        "nsga2",
        "--budget",
        "40",
        "--confirm",
        "5",
        "--seed",
        "3",
    ];
    let out = tune(&space, &a, &[&base[..], &["--jobs", "1"]].concat());
    tune(&space, &b, &[&base[..], &["--jobs", "2", "-q"]].concat());
    same(&results(&a), &results(&b), "same seed, different --jobs");
    assert!(out.contains("Spearman"), "{out}");
    assert!(out.contains("FSD"), "{out}");
    let r = results(&a);
    assert_eq!(r["trace"].as_array().unwrap().len(), 40);
    let front = r["front"].as_array().unwrap();
    assert!(!front.is_empty());
    // The outputs: CSV with one row per front point, an SVG, one TOML per point.
    let csv = std::fs::read_to_string(a.join("front.csv")).unwrap();
    assert_eq!(csv.lines().count(), front.len() + 1);
    let svg = std::fs::read_to_string(a.join("front.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<title>front-").count(), front.len());
    // Every front point compiles with `nnac compile --hw`, to the configuration named.
    for (k, idx) in front.iter().enumerate() {
        let hw = a.join(format!("hw/front-{k:02}.toml"));
        let text = std::fs::read_to_string(&hw).unwrap();
        let resident = if text.contains("--resident-weights off") {
            "off"
        } else {
            "auto"
        };
        let prog = tmp.path().join(format!("p{k}.nnab"));
        run_ok(
            nnac()
                .arg("compile")
                .arg(root().join("models/tiny_cnn.onnx"))
                .arg("--calib")
                .arg(calib_npy(tmp.path()))
                .arg("--hw")
                .arg(&hw)
                .args(["--resident-weights", resident])
                .arg("-q")
                .arg("-o")
                .arg(&prog),
        );
        let prof = run_ok(nnac().arg("profile").arg(&prog).arg("--json"));
        let cycles =
            serde_json::from_str::<serde_json::Value>(&prof).unwrap()["total_cycles"].as_u64();
        let idx = idx.as_u64().unwrap() as usize;
        let exact = &r["points"][idx]["exact"]["metrics"]["models"][0]["cycles"];
        assert_eq!(
            cycles,
            exact.as_u64(),
            "front-{k}: profile of the compiled TOML"
        );
    }
    // Another seed searches differently.
    let c = tmp.path().join("c");
    tune(
        &space,
        &c,
        &[
            "--tuner",
            "nsga2",
            "--budget",
            "40",
            "--confirm",
            "5",
            "--seed",
            "4",
            "-q",
        ],
    );
    assert!(
        results(&a)["points"] != results(&c)["points"],
        "seeds 3 and 4 searched alike"
    );
}

/// A calibration .npy of the tiny CNN's input shape (1x3x32x32? read from the model).
fn calib_npy(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("calib.npy");
    if !p.exists() {
        let py = common::python();
        run_ok(Command::new(py).arg("-c").arg(format!(
            "import onnx, numpy as np\nm = onnx.load('{}')\nd = [x.dim_value for x in m.graph.input[0].type.tensor_type.shape.dim]\nnp.save('{}', np.random.default_rng(0).uniform(-1, 1, d).astype(np.float32))",
            root().join("models/tiny_cnn.onnx").display(),
            p.display()
        )));
    }
    p
}

#[test]
fn shards_merged_equal_the_whole_run() {
    let tmp = tempdir("tune-shard");
    let space = write_space(tmp.path(), SPACE);
    let args = [
        "--tuner",
        "anneal",
        "--budget",
        "30",
        "--confirm",
        "6",
        "--seed",
        "1",
        "-q",
    ];
    let whole = tmp.path().join("whole");
    tune(&space, &whole, &args);
    let mut files = Vec::new();
    for k in 0..3 {
        let d = tmp.path().join(format!("s{k}"));
        tune(
            &space,
            &d,
            &[&args[..], &["--shard", &format!("{k}/3")]].concat(),
        );
        files.push(d.join("results.json"));
    }
    let merged = tmp.path().join("merged");
    run_ok(
        nnac()
            .args(["tune", "merge", "-q", "-o"])
            .arg(&merged)
            .args(&files),
    );
    same(&results(&whole), &results(&merged), "3 shards merged");
    // A shard missing or given twice is refused, naming it.
    let out = nnac()
        .args(["tune", "merge", "-o"])
        .arg(tmp.path().join("x"))
        .args(&files[..2])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("shard 2/3 is missing"));
    // Exact-tier sharding of the random tuner's own evaluations.
    let ex = [
        "--cost", "exact", "--tuner", "random", "--budget", "8", "--seed", "2", "-q",
    ];
    let whole = tmp.path().join("ewhole");
    tune(&space, &whole, &ex);
    let mut files = Vec::new();
    for k in 0..2 {
        let d = tmp.path().join(format!("e{k}"));
        tune(
            &space,
            &d,
            &[&ex[..], &["--shard", &format!("{k}/2")]].concat(),
        );
        files.push(d.join("results.json"));
    }
    let merged = tmp.path().join("emerged");
    run_ok(
        nnac()
            .args(["tune", "merge", "-q", "-o"])
            .arg(&merged)
            .args(&files),
    );
    same(
        &results(&whole),
        &results(&merged),
        "exact tier, 2 shards merged",
    );
}

#[test]
fn resume_continues_to_the_longer_search() {
    let tmp = tempdir("tune-resume");
    let space = write_space(tmp.path(), SPACE);
    let (short, resumed, long) = (
        tmp.path().join("short"),
        tmp.path().join("resumed"),
        tmp.path().join("long"),
    );
    let args = |b: &'static str| {
        vec![
            "--tuner",
            "progressive",
            "--budget",
            b,
            "--confirm",
            "4",
            "--seed",
            "5",
            "-q",
        ]
    };
    tune(&space, &short, &args("20"));
    let prev = short.join("results.json");
    tune(
        &space,
        &resumed,
        &[args("45"), vec!["--resume", prev.to_str().unwrap()]].concat(),
    );
    tune(&space, &long, &args("45"));
    same(
        &results(&resumed),
        &results(&long),
        "resumed against one longer run",
    );
    // Another seed's results cannot be resumed.
    let out = nnac()
        .args(["tune", "--model", &tiny(), "--random-calib", "2", "--space"])
        .arg(&space)
        .args([
            "--seed",
            "6",
            "--tuner",
            "progressive",
            "--budget",
            "45",
            "--resume",
        ])
        .arg(&prev)
        .arg("-o")
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another search"));
}

#[test]
fn compare_tuners_reports_every_tuner() {
    let tmp = tempdir("tune-cmp");
    let space = write_space(tmp.path(), SPACE);
    let out = tune(
        &space,
        &tmp.path().join("o"),
        &["--budget", "96", "--confirm", "0", "--compare-tuners"],
    );
    for t in ["exhaustive", "random", "anneal", "progressive", "nsga2"] {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(t) && l.contains("hv")),
            "{t}:\n{out}"
        );
    }
    let r = results(&tmp.path().join("o"));
    let ex = r["compare"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tuner"] == "exhaustive")
        .unwrap()
        .clone();
    // Exhaustive saw all 96 points: no tuner finds a better point or a larger front.
    let best = |c: &serde_json::Value| {
        c["best_at"].as_array().unwrap().last().unwrap()[1]
            .as_f64()
            .unwrap()
    };
    for c in r["compare"].as_array().unwrap() {
        assert!(best(c) >= best(&ex) - 1e-15, "{c}");
        assert!(c["hypervolume"].as_f64().unwrap() <= ex["hypervolume"].as_f64().unwrap() + 1e-12);
    }
}

#[test]
fn bad_input_names_the_key_and_exits_1() {
    let tmp = tempdir("tune-err");
    let cases: [(&str, &[&str], &str); 7] = [
        ("[hw]\nmac_rows = [96, 2048]\n", &[], "hw.mac_rows"),
        ("[hw]\nmac_colz = [96]\n", &[], "hw.mac_colz"),
        ("[hw]\nsram_bytes = []\n", &[], "hw.sram_bytes"),
        ("", &[], "space is empty"),
        (SPACE, &["--max-area-mm2", "0.5"], "--max-area-mm2"),
        (SPACE, &["--max-sram", "1000"], "--max-sram"),
        (SPACE, &["--shard", "3/3"], "--shard"),
    ];
    for (text, extra, needle) in cases {
        let space = write_space(tmp.path(), text);
        let out = nnac()
            .args(["tune", "--model", &tiny(), "--random-calib", "1", "--space"])
            .arg(&space)
            .arg("-o")
            .arg(tmp.path().join("o"))
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text:?} {extra:?}: {err}");
        assert!(err.contains(needle), "{text:?} {extra:?}: {err}");
    }
    // Exhaustive over a space above the budget names --budget; no calibration names the model.
    let space = write_space(tmp.path(), SPACE);
    let out = nnac()
        .args([
            "tune",
            "--model",
            &tiny(),
            "--random-calib",
            "1",
            "--tuner",
            "exhaustive",
            "--budget",
            "10",
            "--space",
        ])
        .arg(&space)
        .arg("-o")
        .arg(tmp.path().join("o"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--budget"));
    let out = nnac()
        .args(["tune", "--model", &tiny(), "--space"])
        .arg(&space)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--random-calib"));
}
