//! `nnac.InferenceSession` (shaped like ONNX Runtime's) and `nnac.evaluate`: a program
//! loaded once (checked, its prologue run: weights resident in SRAM), then one frame
//! per call on the persistent simulator state, the GIL released while it runs.

use crate::convert::{to_array, to_tensor, IntoPy};
use crate::program::{infos, program_arg, TensorInfo};
use crate::UserError;
use nnac_driver::compile::load_hw;
use nnac_driver::run::{run_frames, stack_outputs, tensor_inputs};
use nnac_driver::Error;
use nnac_ir::Tensor;
use nnac_isa::{IoDir, Program};
use nnac_runtime_sim::{RunOptions, RunStats, Schedule, Session, Simulator};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A program, its simulator and a session on it, owned together: the session borrows
/// the simulator, which borrows the program.
struct Loaded {
    /// Dropped first (in `Drop`), while what it borrows is alive.
    session: ManuallyDrop<Session<'static, 'static>>,
    /// `Box::into_raw` of the simulator; freed in `Drop` after the session.
    sim: *mut Simulator<'static>,
    /// Keeps the program alive (the simulator borrows it) until the end.
    program: Arc<Program>,
}

// SAFETY: every part is Send (checked below: Program, Simulator, Session); the raw
// pointer is owned exclusively by this struct and never shared.
unsafe impl Send for Loaded {}

#[allow(dead_code)]
fn parts_are_send() {
    fn send<T: Send>() {}
    send::<Program>();
    send::<Simulator<'static>>();
    send::<Session<'static, 'static>>();
}

impl Loaded {
    fn new(program: Arc<Program>, opts: &RunOptions, name: &str) -> Result<Loaded, Error> {
        // SAFETY: the program lives in the Arc's heap allocation, which `Loaded` keeps
        // (field `program`) until after the simulator and session are dropped.
        let p: &'static Program = unsafe { &*Arc::as_ptr(&program) };
        let sim = Box::into_raw(Box::new(
            Simulator::new(p, opts).map_err(nnac_driver::run::sim_err(name))?,
        ));
        // SAFETY: `sim` is a live heap allocation freed only in `Drop`, after the session.
        let s: &'static Simulator<'static> = unsafe { &*sim };
        let session = match s.session() {
            Ok(session) => session,
            Err(e) => {
                // SAFETY: nothing borrows the simulator any more.
                drop(unsafe { Box::from_raw(sim) });
                return Err(nnac_driver::run::sim_err(name)(e));
            }
        };
        Ok(Loaded {
            session: ManuallyDrop::new(session),
            sim,
            program,
        })
    }

    /// Runs every frame of `feeds`; the outputs stacked when the inputs were.
    fn run(
        &mut self,
        feeds: &[(String, Tensor)],
        raw: bool,
        name: &str,
        after_frame: &mut dyn FnMut(usize) -> Result<(), Error>,
    ) -> Result<(Vec<(String, Tensor)>, RunStats), Error> {
        // SAFETY: freed only in `Drop`; the session borrows it only immutably.
        let sim: &Simulator<'static> = unsafe { &*self.sim };
        let frames = tensor_inputs(sim, feeds)?;
        let (results, stats) = run_frames(&mut self.session, &frames, name, after_frame)?;
        Ok((stack_outputs(sim, &results, frames.stacked, raw)?, stats))
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        // SAFETY: the session is dropped once, before the simulator it borrows; the
        // simulator pointer came from `Box::into_raw` and is freed once.
        unsafe {
            ManuallyDrop::drop(&mut self.session);
            drop(Box::from_raw(self.sim));
        }
        let _ = &self.program;
    }
}

/// `schedule`/`seed` and `hw` as the simulator's options.
fn run_options(schedule: &str, seed: u64, hw: Option<PathBuf>) -> Result<RunOptions, Error> {
    let schedule = match schedule {
        "serial" => Schedule::Serial,
        "eager" => Schedule::Eager,
        "random" => Schedule::Random { seed },
        other => {
            return Err(Error::user(format!(
                "schedule '{other}': expected serial, eager or random"
            )))
        }
    };
    let hw = match hw {
        Some(p) => Some(load_hw(Some(&p))?),
        None => None,
    };
    Ok(RunOptions { schedule, hw })
}

/// The feed as `(name, tensor)` pairs: a dict name -> array, or for a program with one
/// input a bare array.
fn feeds(input_feed: &Bound<'_, PyAny>, inputs: &[TensorInfo]) -> PyResult<Vec<(String, Tensor)>> {
    if let Ok(d) = input_feed.cast::<PyDict>() {
        let mut out = Vec::new();
        for (k, v) in d.iter() {
            let name: String = k.extract()?;
            let t = to_tensor(&v, &format!("input '{name}'"))?;
            out.push((name, t));
        }
        return Ok(out);
    }
    match inputs {
        [only] => Ok(vec![(
            only.name.clone(),
            to_tensor(input_feed, &format!("input '{}'", only.name))?,
        )]),
        _ => Err(UserError::new_err(format!(
            "the program has inputs {:?}: pass a dict name -> array",
            inputs.iter().map(|i| &i.name).collect::<Vec<_>>()
        ))),
    }
}

/// Runs a compiled program on the bit-exact simulator, like ONNX Runtime's
/// `InferenceSession`: `run(output_names, input_feed)` takes and returns numpy arrays
/// (float32 in the model's layout, quantized on the way in and dequantized on the
/// way out; or raw int8/uint8 codes with `raw=True`). The program is loaded once (its
/// prologue run, weights resident); each call runs every frame on the persistent
/// state with the GIL released. An input with one extra leading axis N runs N
/// frames and returns outputs stacked the same way.
#[pyclass(module = "nnac", frozen)]
pub struct InferenceSession {
    loaded: Mutex<Loaded>,
    name: String,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
}

#[pymethods]
impl InferenceSession {
    /// `program_or_path`: an `nnac.Program` or a `.nnab` path; `hw`: a hardware TOML
    /// the program must have been compiled for; `schedule`: `"eager"` (default),
    /// `"serial"` or `"random"` (with `seed`).
    #[new]
    #[pyo3(signature = (program_or_path, hw=None, *, schedule="eager", seed=0))]
    fn new(
        py: Python<'_>,
        program_or_path: &Bound<'_, PyAny>,
        hw: Option<PathBuf>,
        schedule: &str,
        seed: u64,
    ) -> PyResult<InferenceSession> {
        let (program, name) = program_arg(program_or_path)?;
        let opts = run_options(schedule, seed, hw).py()?;
        let inputs = infos(&program, IoDir::Input);
        let outputs = infos(&program, IoDir::Output);
        let loaded = py.detach(|| Loaded::new(program, &opts, &name)).py()?;
        Ok(InferenceSession {
            loaded: Mutex::new(loaded),
            name,
            inputs,
            outputs,
        })
    }

    /// The program's inputs (name, shape, dtype, type, scale, zero_point).
    fn get_inputs(&self) -> Vec<TensorInfo> {
        self.inputs.clone()
    }

    /// The program's outputs.
    fn get_outputs(&self) -> Vec<TensorInfo> {
        self.outputs.clone()
    }

    /// Runs the inputs of `input_feed` (dict name -> numpy array; a bare array for a
    /// single-input program) and returns the outputs named in `output_names` (all, in
    /// program order, when `None`) as a list of numpy arrays.
    #[pyo3(signature = (output_names, input_feed, *, raw=false))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        output_names: Option<Vec<String>>,
        input_feed: &Bound<'py, PyAny>,
        raw: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let wanted = self.output_indices(output_names)?;
        let feeds = feeds(input_feed, &self.inputs)?;
        let name = &self.name;
        let mut loaded = self.loaded.lock().map_err(|_| {
            crate::InternalError::new_err("a previous run panicked; create a new session")
        })?;
        let loaded: &mut Loaded = &mut loaded;
        let (tensors, _) = py
            .detach(|| loaded.run(&feeds, raw, name, &mut |_| Ok(())))
            .py()?;
        let mut tensors: Vec<Option<Tensor>> = tensors.into_iter().map(|(_, t)| Some(t)).collect();
        let list = PyList::empty(py);
        for k in wanted {
            // `output_indices` refuses a name asked for twice.
            let t = tensors[k]
                .take()
                .ok_or_else(|| crate::InternalError::new_err(format!("output {k} taken twice")))?;
            list.append(to_array(py, t)?)?;
        }
        Ok(list)
    }

    fn __repr__(&self) -> String {
        let sim_prog = self
            .loaded
            .lock()
            .map(|l| l.program.instrs.len())
            .unwrap_or(0);
        format!(
            "InferenceSession({}: {sim_prog} instructions, inputs {:?}, outputs {:?})",
            self.name,
            self.inputs.iter().map(|i| &i.name).collect::<Vec<_>>(),
            self.outputs.iter().map(|i| &i.name).collect::<Vec<_>>()
        )
    }
}

impl InferenceSession {
    /// Indices into the program's outputs of the names asked for.
    fn output_indices(&self, names: Option<Vec<String>>) -> PyResult<Vec<usize>> {
        let Some(names) = names else {
            return Ok((0..self.outputs.len()).collect());
        };
        let mut seen = Vec::new();
        for n in names {
            let k = self
                .outputs
                .iter()
                .position(|o| o.name == n)
                .ok_or_else(|| {
                    UserError::new_err(format!(
                        "the program has no output '{n}' (outputs: {})",
                        self.outputs
                            .iter()
                            .map(|o| o.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            if seen.contains(&k) {
                return Err(UserError::new_err(format!("output '{n}' asked for twice")));
            }
            seen.push(k);
        }
        Ok(seen)
    }
}

/// Runs many frames through one loaded program (an accuracy sweep): `frames` is an
/// array of N stacked frames (single-input programs) or a dict name -> such arrays;
/// returns a dict output name -> the N stacked outputs (float32, or raw codes with
/// `raw=True`). Shows a progress bar on a terminal (`progress=False` hides it);
/// Ctrl-C stops between frames.
#[pyfunction]
#[pyo3(signature = (program, frames, *, hw=None, raw=false, progress=true))]
pub fn evaluate<'py>(
    py: Python<'py>,
    program: &Bound<'py, PyAny>,
    frames: &Bound<'py, PyAny>,
    hw: Option<PathBuf>,
    raw: bool,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let (program, name) = program_arg(program)?;
    let opts = run_options("eager", 0, hw).py()?;
    let inputs = infos(&program, IoDir::Input);
    let feeds = feeds(frames, &inputs)?;
    let total = feeds.first().map_or(1, |(n, t)| {
        let frame = inputs
            .iter()
            .find(|i| &i.name == n)
            .map_or(0, |i| i.shape.len());
        if t.shape.len() == frame + 1 {
            t.shape[0]
        } else {
            1
        }
    });
    let bar = if progress {
        indicatif::ProgressBar::new(total as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {pos}/{len} frames, {per_sec}, eta {eta}",
        )
        .map_err(|e| crate::InternalError::new_err(e.to_string()))?
        .progress_chars("#> "),
    );
    bar.set_message(name.clone());
    let result = py.detach(|| {
        let mut loaded = Loaded::new(program, &opts, &name)?;
        loaded.run(&feeds, raw, &name, &mut |done| {
            bar.set_position(done as u64);
            Python::attach(|py| py.check_signals())
                .map_err(|e| Error::user(format!("interrupted after {done} frame(s): {e}")))
        })
    });
    bar.finish_and_clear();
    let (tensors, _) = result.py()?;
    let out = PyDict::new(py);
    for (n, t) in tensors {
        out.set_item(n, to_array(py, t)?)?;
    }
    Ok(out)
}
