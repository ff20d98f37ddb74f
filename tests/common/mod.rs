//! Shared by the integration tests of the `nnac` package (each test binary uses a
//! part of it).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `p`, which `scripts/setup.sh` provides (the venv, the model and data cache):
/// fails (never skips) when it is missing.
pub fn need(p: PathBuf) -> PathBuf {
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

/// The project's Python (`.venv`, with ONNX Runtime and OpenCV).
pub fn python() -> PathBuf {
    need(root().join(".venv/bin/python"))
}

/// Runs `cmd`, fails the test with its output unless it succeeds; returns its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// ONNX Runtime's outputs of `model` fed `feed` (`NAME=FILE.npy`), one `.npy` per
/// output in `out` (`scripts/ref_onnxruntime.py`).
pub fn ort_reference(model: &Path, out: &Path, feed: &str) {
    run_ok(
        Command::new(python())
            .arg(root().join("scripts/ref_onnxruntime.py"))
            .arg(model)
            .arg(out)
            .arg("--input")
            .arg(feed),
    );
}

/// A new, empty scratch directory `nnac-{tag}-XXXXXX` in the system's temp directory.
/// It is deleted with everything in it when the returned guard drops: at the end of
/// the test, and also when an assertion fails. Keep the guard alive while its path is
/// in use (`let tmp = tempdir("x"); let dir = tmp.path();`).
pub fn tempdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("nnac-{tag}-"))
        .tempdir()
        .expect("create a scratch directory")
}
