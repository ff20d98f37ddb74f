//! Simulator speed against ONNX Runtime int8, in one run: compiles ResNet-50 (the
//! light ONNX topology, 224x224, calibrated on one frame), simulates the program
//! (eager schedule, 2 rayon threads) RUNS times, runs `scripts/bench_ort_int8.py`
//! (the same model quantized to int8 by ONNX Runtime's `quantize_static`, 2 intra-op
//! threads, the same frame) and prints both medians and their ratio. The target of
//! issue 7 is a ratio of at most 5 for a fresh load per run (prologue + body).
//!
//! Issue 26's targets, measured in the same run: the steady state of a loaded session
//! (`Session::run`, one frame per call on persistent state: what
//! `nnac.InferenceSession.run` does) at most 2x ONNX Runtime's per-frame time, and one
//! whole `nnac run` process of one frame (program load, prologue, input and output
//! files included; `target/release/nnac`, built by `cargo build --release`) at most 4x.
//!
//! `cargo bench -p nnac-runtime-sim --bench resnet50_vs_ort [-- RUNS [MODEL.onnx]]`
//!
//! Besides the medians it prints the best times and the CPU time per frame of the
//! session and of ONNX Runtime, and their ratios: on a shared machine the wall-clock
//! medians move with the load, the CPU times much less.
//!
//! Also checks that the simulator's outputs equal the quantized reference
//! interpreter's bit for bit on the frame, and prints the load average (the machine
//! must not be busy for the numbers to mean anything). NNAC_PYTHON overrides the
//! Python interpreter (default: the project venv's).

use nnac_ir::{DType, Graph, Tensor};
use nnac_isa::{IoDir, IoDtype, Program};
use nnac_runtime_sim::{RunOptions, Schedule, Simulator};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a reference timing (the CLI process, ONNX Runtime) was not measured.
#[derive(Debug)]
enum BenchError {
    /// A tool the measurement runs is not there.
    Missing { path: PathBuf },
    /// A file or process could not be made or started.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The program could not be encoded.
    Encode(nnac_isa::ContainerError),
    /// The frame could not be written as `.npy`.
    Npy(nnac_interp::npy::NpyError),
    /// The tool ran and failed.
    Failed { tool: &'static str, stderr: String },
    /// The tool's JSON line lacks `key`.
    NoField { key: String, stdout: String },
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Missing { path } => {
                write!(f, "{} missing: cargo build --release", path.display())
            }
            BenchError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            BenchError::Encode(e) => write!(f, "{e}"),
            BenchError::Npy(e) => write!(f, "{e}"),
            BenchError::Failed { tool, stderr } => write!(f, "{tool} failed: {stderr}"),
            BenchError::NoField { key, stdout } => write!(f, "no {key} in {stdout:?}"),
        }
    }
}

/// An I/O error on `path`.
fn io_err(path: &Path) -> impl Fn(std::io::Error) -> BenchError + '_ {
    move |source| BenchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

const THREADS: usize = 2;

fn workspace_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// A smooth deterministic image in [-2, 2] (normalised-photo range).
fn synthetic_frame(g: &Graph) -> (String, Tensor) {
    let id = g.inputs()[0];
    let n = g.node(id);
    let shape = n.outputs[0].shape.clone();
    let count: usize = shape.iter().product();
    let data = (0..count)
        .map(|i| 2.0 * ((i as f32 * 0.013).sin() * (i as f32 * 0.0007).cos()))
        .collect();
    let t = Tensor::f32(shape, data).expect("element count matches shape");
    (n.name.clone(), t)
}

/// Imports, compiles and lowers the model; returns the program, the frame and the
/// quantized reference interpreter's raw outputs on it.
fn compile(model: &Path) -> (Program, (String, Tensor), Vec<Vec<u8>>) {
    let g = nnac_frontend::load_model(model, None, &Default::default())
        .unwrap_or_else(|e| panic!("import {}: {e}", model.display()));
    let (name, frame) = synthetic_frame(&g);
    let feed: nnac_passes::Frame = std::iter::once((name.clone(), frame.clone())).collect();
    let compiled = nnac_passes::compile_graph(g, std::slice::from_ref(&feed), &Default::default())
        .unwrap_or_else(|e| panic!("passes: {e}"));
    let hw = nnac_isa::HwConfig::fsd();
    let (program, _) = nnac_backend_nna::lower(&compiled.graph, &hw, &Default::default())
        .unwrap_or_else(|e| panic!("backend: {e}"));
    let want = nnac_passes::run_quantized_raw(&compiled.graph, &feed)
        .unwrap_or_else(|e| panic!("quantized reference: {e}"));
    let want = want
        .values()
        .map(|t| match &t.data {
            nnac_ir::TensorData::I8(v) => v.iter().map(|&b| b as u8).collect(),
            nnac_ir::TensorData::U8(v) => v.clone(),
            _ => Vec::new(),
        })
        .collect();
    (program, (name, frame), want)
}

/// The frame as the program's raw input codes.
fn input_codes(program: &Program, name: &str, frame: &Tensor) -> Vec<(String, Vec<u8>)> {
    let d = program
        .io
        .iter()
        .find(|d| d.dir == IoDir::Input && d.name == name)
        .unwrap_or_else(|| panic!("the program has no input '{name}'"));
    let dtype = match d.dtype {
        IoDtype::Uint8 => DType::U8,
        _ => DType::I8,
    };
    let codes = frame
        .to_f32_vec()
        .iter()
        .map(|&x| nnac_interp::host::quantize(x, d.scale, d.zero_point, dtype) as u8)
        .collect();
    vec![(name.to_string(), codes)]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU time (user + system, all threads) of this process so far, in ms.
fn cpu_ms() -> f64 {
    // /proc/self/stat fields 14 and 15 (after the parenthesised command name) are
    // utime and stime in clock ticks (100 per second on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum::<f64>() * 10.0
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Runs the simulator `runs` times after one warm-up; returns the median ms.
fn time_sim(program: &Program, inputs: &[(String, Vec<u8>)], want: &[Vec<u8>], runs: usize) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .expect("thread pool");
    let opts = RunOptions {
        schedule: Schedule::Eager,
        hw: None,
    };
    let sim = Simulator::new(program, &opts).unwrap_or_else(|e| panic!("simulator: {e}"));
    let first = pool
        .install(|| sim.run(inputs))
        .unwrap_or_else(|e| panic!("run: {e}"));
    let got: Vec<Vec<u8>> = first.outputs.iter().map(|o| o.data.clone()).collect();
    println!(
        "simulator outputs bit-exact with the quantized reference interpreter: {}",
        if got == want { "yes" } else { "NO" }
    );
    let cpu0 = cpu_ms();
    let times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            pool.install(|| sim.run(inputs)).expect("ran before");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    println!(
        "simulator: {} instructions, {:.2} GMAC, best {:.1} ms, CPU time {:.1} ms per run",
        first.stats.instructions,
        first.stats.macs as f64 / 1e9,
        times.iter().copied().fold(f64::MAX, f64::min),
        (cpu_ms() - cpu0) / runs as f64
    );
    median(times)
}

/// Wall-clock times of repeated runs and the CPU time they took.
struct Timing {
    median_ms: f64,
    best_ms: f64,
    /// CPU time (all threads) per run.
    cpu_ms: f64,
}

/// One loaded session, one frame per call after one warm-up frame (the steady state
/// of `nnac.InferenceSession.run`).
fn time_session(
    program: &Program,
    inputs: &[(String, Vec<u8>)],
    want: &[Vec<u8>],
    runs: usize,
) -> Timing {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(THREADS)
        .build()
        .expect("thread pool");
    let sim = Simulator::new(program, &RunOptions::default())
        .unwrap_or_else(|e| panic!("simulator: {e}"));
    let mut session = pool
        .install(|| sim.session())
        .unwrap_or_else(|e| panic!("prologue: {e}"));
    let mut frame = |k: usize| {
        let t = Instant::now();
        let r = pool
            .install(|| session.run(inputs))
            .unwrap_or_else(|e| panic!("frame {k}: {e}"));
        let got: Vec<Vec<u8>> = r.outputs.into_iter().map(|o| o.data).collect();
        assert!(
            got == want,
            "frame {k} of the session differs from the reference"
        );
        t.elapsed().as_secs_f64() * 1e3
    };
    frame(0);
    let cpu0 = cpu_ms();
    let times: Vec<f64> = (1..=runs).map(&mut frame).collect();
    Timing {
        cpu_ms: (cpu_ms() - cpu0) / runs as f64,
        best_ms: times.iter().copied().fold(f64::MAX, f64::min),
        median_ms: median(times),
    }
}

/// Whole `nnac run` processes of one frame (the CLI binary, 2 rayon threads); returns
/// the median wall ms, after checking the raw outputs against the reference.
fn time_cli(
    program: &Program,
    name: &str,
    frame: &Tensor,
    want: &[Vec<u8>],
    runs: usize,
) -> Result<f64, BenchError> {
    let nnac = workspace_path("target/release/nnac");
    if !nnac.exists() {
        return Err(BenchError::Missing { path: nnac });
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("resnet50_vs_ort");
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let prog = dir.join("resnet50.nnab");
    std::fs::write(&prog, program.write().map_err(BenchError::Encode)?).map_err(io_err(&prog))?;
    let npy = dir.join("frame.npy");
    nnac_interp::npy::write_npy(&npy, frame).map_err(BenchError::Npy)?;
    let out = dir.join("cli-out");
    let mut times = Vec::new();
    for _ in 0..runs.clamp(1, 5) {
        let t = Instant::now();
        let o = std::process::Command::new(&nnac)
            .arg("run")
            .arg(&prog)
            .arg("--input")
            .arg(format!("{name}={}", npy.display()))
            .arg("--raw")
            .arg("--output-dir")
            .arg(&out)
            .env("RAYON_NUM_THREADS", THREADS.to_string())
            .output()
            .map_err(io_err(&nnac))?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        if !o.status.success() {
            return Err(BenchError::Failed {
                tool: "nnac run",
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            });
        }
    }
    let got: Vec<Vec<u8>> = program
        .io
        .iter()
        .filter(|d| d.dir == IoDir::Output)
        .map(|d| {
            let file = out.join(format!(
                "{}.npy",
                d.name.replace(
                    |c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)),
                    "_"
                )
            ));
            match nnac_interp::npy::read_npy(&file).map(|t| t.data) {
                Ok(nnac_ir::TensorData::I8(v)) => v.iter().map(|&b| b as u8).collect(),
                Ok(nnac_ir::TensorData::U8(v)) => v,
                _ => Vec::new(),
            }
        })
        .collect();
    println!(
        "nnac run outputs bit-exact with the quantized reference interpreter: {}",
        if got == want { "yes" } else { "NO" }
    );
    Ok(median(times))
}

/// Runs the ONNX Runtime script; returns its timing.
fn time_ort(model: &Path, frame: &Tensor, runs: usize) -> Result<Timing, BenchError> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("resnet50_vs_ort");
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let npy = dir.join("frame.npy");
    nnac_interp::npy::write_npy(&npy, frame).map_err(BenchError::Npy)?;
    let python = std::env::var_os("NNAC_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_path(".venv/bin/python"));
    let out = std::process::Command::new(&python)
        .arg(workspace_path("scripts/bench_ort_int8.py"))
        .arg(model)
        .arg(&npy)
        .args([
            "--runs",
            &runs.to_string(),
            "--threads",
            &THREADS.to_string(),
        ])
        .arg("--workdir")
        .arg(&dir)
        .output()
        .map_err(io_err(&python))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(BenchError::Failed {
            tool: "bench_ort_int8.py",
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let field = |key: &str| {
        json_number(&stdout, key).ok_or_else(|| BenchError::NoField {
            key: key.to_string(),
            stdout: stdout.to_string(),
        })
    };
    Ok(Timing {
        median_ms: field("median_ms")?,
        best_ms: field("best_ms")?,
        cpu_ms: field("cpu_ms")?,
    })
}

/// The number after `"key":` in a one-line JSON object.
fn json_number(s: &str, key: &str) -> Option<f64> {
    let rest = &s[s.find(&format!("\"{key}\""))? + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | 'E' | '+')))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let runs: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(10)
        .max(1);
    let model = args
        .get(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_path(".cache/models/light/resnet50.onnx"));
    println!("load average before: {}", loadavg());
    let (program, (name, frame), want) = compile(&model);
    let inputs = input_codes(&program, &name, &frame);
    let sim_ms = time_sim(&program, &inputs, &want, runs);
    println!(
        "simulator ({THREADS} threads), fresh load per run: median {sim_ms:.1} ms over {runs} runs"
    );
    let session = time_session(&program, &inputs, &want, runs);
    println!(
        "simulator ({THREADS} threads), loaded session: median {:.1} ms per frame over {runs} frames (best {:.1} ms, CPU time {:.1} ms per frame)",
        session.median_ms, session.best_ms, session.cpu_ms
    );
    let cli_ms = time_cli(&program, &name, &frame, &want, runs);
    match &cli_ms {
        Ok(ms) => println!("nnac run, whole process, one frame: median {ms:.1} ms"),
        Err(e) => println!("nnac run: not measured ({e})"),
    }
    match time_ort(&model, &frame, runs) {
        Ok(ort) => {
            println!(
                "ONNX Runtime int8 ({THREADS} threads): median {:.1} ms over {runs} runs (best {:.1} ms, CPU time {:.1} ms per run)",
                ort.median_ms, ort.best_ms, ort.cpu_ms
            );
            println!(
                "ratio simulator (fresh load) / ONNX Runtime: {:.2} (target <= 5)",
                sim_ms / ort.median_ms
            );
            println!(
                "ratio session per frame / ONNX Runtime: {:.2} (target <= 2; best/best {:.2}, CPU/CPU {:.2})",
                session.median_ms / ort.median_ms,
                session.best_ms / ort.best_ms,
                session.cpu_ms / ort.cpu_ms
            );
            if let Ok(ms) = cli_ms {
                println!(
                    "ratio nnac run process / ONNX Runtime per frame: {:.2} (target <= 4)",
                    ms / ort.median_ms
                );
            }
        }
        Err(e) => println!("ONNX Runtime: not measured ({e})"),
    }
    println!("load average after: {}", loadavg());
}
