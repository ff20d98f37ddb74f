//! `nnac tune` on Ray: starts a local Ray head on 127.0.0.1 (`ray start --head`, from
//! scripts/requirements-ray.txt, which scripts/test.sh installs), runs a small search
//! through `scripts/tune_ray.py` (its exact evaluations as two Ray tasks, joined with
//! `nnac tune merge`) and compares the results with the same search run locally with
//! `--jobs 1`: identical, wall-clock figures aside. The head is stopped at the end,
//! also when an assertion fails.

mod common;

use common::{python, root, run_ok, tempdir};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Ray head this test started; stopped (SIGTERM to `ray start --block`, which
/// stops the processes it started) when dropped.
struct Head(Child);

impl Drop for Head {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
        unsafe {
            libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM);
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ray_bin() -> std::path::PathBuf {
    common::need(root().join(".venv/bin/ray"))
}

fn results(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.as_object_mut().unwrap().remove("timing");
    v
}

#[test]
fn a_search_on_a_local_ray_head_equals_the_local_run() {
    let tmp = tempdir("tune-ray");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Ray's socket paths must stay short: a temp dir of its own directly in /tmp.
    let ray_tmp = tempfile::Builder::new()
        .prefix("nnacray")
        .tempdir_in("/tmp")
        .unwrap();
    let head = Command::new(ray_bin())
        .args([
            "start",
            "--head",
            "--block",
            "--node-ip-address",
            "127.0.0.1",
            "--num-cpus",
            "2",
        ])
        .args(["--include-dashboard", "false", "--disable-usage-stats"])
        .arg(format!("--port={port}"))
        .arg(format!("--temp-dir={}", ray_tmp.path().display()))
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Ray head");
    let _head = Head(head);
    let address = format!("127.0.0.1:{port}");
    let t = Instant::now();
    loop {
        let st = Command::new(ray_bin())
            .args(["status", "--address", &address])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        if st.success() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the Ray head did not come up"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let space = tmp.path().join("space.toml");
    std::fs::write(
        &space,
        "[hw]\nmac_rows = [32, 64, 96, 128]\nmac_cols = [32, 64, 96]\nsram_bytes = [262144, 1048576]\n[compiler]\nresident_weights = [\"auto\", \"off\"]\n",
    )
    .unwrap();
    let model = root().join("models/tiny_cnn.onnx");
    let search = [
        "--model",
        model.to_str().unwrap(),
        "--random-calib",
        "2",
        "--space",
        space.to_str().unwrap(),
        "--tuner",
        "nsga2",
        "--budget",
        "30",
        "--confirm",
        "6",
        "--seed",
        "11",
    ];
    let local = tmp.path().join("local");
    run_ok(
        Command::new(env!("CARGO_BIN_EXE_nnac"))
            .arg("tune")
            .args(search)
            .args(["--jobs", "1", "-q", "-o"])
            .arg(&local),
    );
    let on_ray = tmp.path().join("ray");
    run_ok(
        Command::new(python())
            .arg(root().join("scripts/tune_ray.py"))
            .args([
                "--address",
                &address,
                "--shards",
                "2",
                "--nnac",
                env!("CARGO_BIN_EXE_nnac"),
                "-o",
            ])
            .arg(&on_ray)
            .arg("--")
            .args(search)
            .env("RAY_USAGE_STATS_ENABLED", "0"),
    );
    let (a, b) = (results(&local), results(&on_ray));
    assert!(a == b, "Ray run differs from the local one");
    assert_eq!(b["exact_order"].as_array().unwrap().len(), 6);
}
