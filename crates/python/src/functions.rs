//! The package's functions: `compile`, `profile`, `inspect`, `eval_float` and
//! `eval_quantized`, each one call into `nnac-driver` with the CLI's options as
//! keyword arguments.

use crate::convert::{is_path, to_array, to_path, to_py_json, to_tensor, IntoPy};
use crate::program::{program_arg, Program};
use crate::UserError;
use nnac_driver::calib::{calib_frames, graph_inputs, CalibSource, CalibSpec, Calibration};
use nnac_driver::compile::{self as stages, CompileOptions};
use nnac_driver::eval::{feed, frame_count, stack_outputs, Runner};
use nnac_driver::frames::Preprocess;
use nnac_driver::model::{load, ModelArgs, QuantArgs};
use nnac_ir::Graph;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The model arguments: path, Caffe weights, fixed input shapes.
fn model_args(
    model: &Bound<'_, PyAny>,
    weights: Option<PathBuf>,
    input_shapes: Option<BTreeMap<String, Vec<usize>>>,
) -> PyResult<ModelArgs> {
    Ok(ModelArgs {
        model: to_path(model)?,
        weights,
        input_shape: input_shapes.unwrap_or_default().into_iter().collect(),
    })
}

/// One calibration item: a path (file or directory) or an array.
fn calib_item(input: Option<String>, obj: &Bound<'_, PyAny>, k: usize) -> PyResult<CalibSpec> {
    let source = if is_path(obj) {
        CalibSource::Path(to_path(obj)?)
    } else {
        CalibSource::Tensor(to_tensor(obj, &format!("calibration data {k}"))?)
    };
    Ok(CalibSpec { input, source })
}

/// Calibration data: an array or path (N stacked frames, or one), a list of them, or a
/// dict input name -> any of these.
fn calib_specs(calib: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<CalibSpec>> {
    let Some(calib) = calib else {
        return Ok(Vec::new());
    };
    let mut specs = Vec::new();
    let mut add = |input: Option<String>, obj: &Bound<'_, PyAny>| -> PyResult<()> {
        if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            for item in obj.try_iter()? {
                let k = specs.len();
                specs.push(calib_item(input.clone(), &item?, k)?);
            }
        } else {
            let k = specs.len();
            specs.push(calib_item(input, obj, k)?);
        }
        Ok(())
    };
    if let Ok(d) = calib.cast::<PyDict>() {
        for (k, v) in d.iter() {
            add(Some(k.extract()?), &v)?;
        }
    } else {
        add(None, calib)?;
    }
    Ok(specs)
}

/// The quantization keywords (`calib_method=`, ..., `auto_float=`) as the driver's
/// options.
#[allow(clippy::too_many_arguments)]
fn quant_args(
    calib_method: &str,
    percentile: f32,
    bias_correction: &str,
    weight_rounding: &str,
    requant: &str,
    float_layers: Option<Vec<String>>,
    auto_float: Option<usize>,
) -> QuantArgs {
    QuantArgs {
        calib_method: calib_method.to_string(),
        percentile,
        bias_correction: bias_correction.to_string(),
        weight_rounding: weight_rounding.to_string(),
        requant: requant.to_string(),
        float_layers: float_layers.unwrap_or_default(),
        auto_float,
    }
}

/// Raises `w` as a Python `UserWarning` (the CLI prints it on stderr).
fn user_warning(py: Python<'_>, w: &str) -> PyResult<()> {
    let msg =
        std::ffi::CString::new(w).map_err(|e| crate::InternalError::new_err(e.to_string()))?;
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
        &msg,
        1,
    )
}

/// The image preprocessing options.
fn preprocess(mean: Option<Vec<f32>>, scale: f32, bgr: bool, resize: Option<String>) -> Preprocess {
    Preprocess {
        mean: mean.unwrap_or_default(),
        scale,
        bgr,
        resize,
    }
}

/// Compiles a model (ONNX `.onnx`, or Caffe `.prototxt` with `weights`) to an NNA
/// program, as `nnac compile` does: import, fold, fuse, calibrate on `calib`
/// (without it, on synthetic frames, with a `UserWarning`), quantize to int8, lower
/// with the ops the NNA cannot run on the host (`host_ops="deny"` refuses them). `calib`: an array (one frame or N stacked), a path (.npy,
/// PNG/JPEG or a directory of them), a list of those, or a dict input name -> those.
/// The other keywords are the CLI's options.
#[pyfunction]
#[pyo3(signature = (model, *, weights=None, calib=None, input_shapes=None, hw=None,
    calib_method="mse", percentile=99.99, bias_correction="depthwise",
    weight_rounding="nearest", requant="fixed", resident_weights="auto", verify_each=false,
    mean=None, scale=1.0, bgr=false, resize=None, dump_ir=None, dump_dir=None,
    quant_report=false, host_ops="allow", float_layers=None, auto_float=None,
    channels_on_rows=None))]
#[allow(clippy::too_many_arguments)]
pub fn compile(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    weights: Option<PathBuf>,
    calib: Option<&Bound<'_, PyAny>>,
    input_shapes: Option<BTreeMap<String, Vec<usize>>>,
    hw: Option<PathBuf>,
    calib_method: &str,
    percentile: f32,
    bias_correction: &str,
    weight_rounding: &str,
    requant: &str,
    resident_weights: &str,
    verify_each: bool,
    mean: Option<Vec<f32>>,
    scale: f32,
    bgr: bool,
    resize: Option<String>,
    dump_ir: Option<String>,
    dump_dir: Option<PathBuf>,
    quant_report: bool,
    host_ops: &str,
    float_layers: Option<Vec<String>>,
    auto_float: Option<usize>,
    channels_on_rows: Option<Vec<String>>,
) -> PyResult<Program> {
    let model = model_args(model, weights, input_shapes)?;
    let specs = calib_specs(calib)?;
    let pre = preprocess(mean, scale, bgr, resize);
    let stem = stages::model_stem(&model.model);
    let dump = dump_ir
        .map(|s| stages::dump_spec(&s, dump_dir, &stem))
        .transpose()
        .py()?;
    let hw = stages::load_hw(hw.as_deref()).py()?;
    let opts = CompileOptions {
        quant: quant_args(
            calib_method,
            percentile,
            bias_correction,
            weight_rounding,
            requant,
            float_layers,
            auto_float,
        ),
        verify_each,
        dump,
        measure: quant_report,
        progress: None,
        resident_weights: resident_weights.to_string(),
        source_model: model.model.display().to_string(),
        host_ops: stages::HostOps::parse(host_ops).py()?,
        channels_on_rows: channels_on_rows.unwrap_or_default(),
    };
    let r = py
        .detach(|| stages::compile(&model, &specs, &pre, &hw, &opts))
        .py()?;
    if let Some(w) = &r.warning {
        user_warning(py, w)?;
    }
    let report = if quant_report {
        Some(
            serde_json::to_value(&r.report)
                .map_err(|e| crate::InternalError::new_err(e.to_string()))?,
        )
    } else {
        None
    };
    Ok(Program {
        program: Arc::new(r.program),
        name: format!("<compiled {stem}>"),
        report,
    })
}

/// The cycle model's profile of a program (an `nnac.Program` or a `.nnab` path) as
/// the dict `nnac profile --json` prints; `hw` re-times it on another configuration.
#[pyfunction]
#[pyo3(signature = (program, hw=None, *, assume_packet_rule=false))]
pub fn profile<'py>(
    py: Python<'py>,
    program: &Bound<'py, PyAny>,
    hw: Option<PathBuf>,
    assume_packet_rule: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (program, name) = program_arg(program)?;
    let hw = hw.map(|p| stages::load_hw(Some(&p))).transpose().py()?;
    let json = py
        .detach(|| {
            let prof =
                nnac_driver::profile::analyze(&name, &program, hw.as_ref(), assume_packet_rule)?;
            Ok(nnac_driver::profile::to_json(&name, &program, &prof))
        })
        .py()?;
    to_py_json(py, &json)
}

/// The imported graph IR of a model as text, headed by the `//` summary, as `nnac
/// inspect` prints it (`full=True`: every constant; `format="dot"`: Graphviz).
#[pyfunction]
#[pyo3(signature = (model, *, weights=None, input_shapes=None, full=false, format="text"))]
pub fn inspect(
    model: &Bound<'_, PyAny>,
    weights: Option<PathBuf>,
    input_shapes: Option<BTreeMap<String, Vec<usize>>>,
    full: bool,
    format: &str,
) -> PyResult<String> {
    let args = model_args(model, weights, input_shapes)?;
    let g = load(&args).py()?;
    let path = args.model.display().to_string();
    nnac_driver::inspect::check(&g, &path).py()?;
    let mut out = nnac_driver::inspect::summary(&g, &path);
    match format {
        "text" => out.push_str(&nnac_driver::inspect::ir_text(&g, full)),
        "dot" => out.push_str(&nnac_ir::to_dot(&g)),
        other => {
            return Err(UserError::new_err(format!(
                "format '{other}': expected text or dot"
            )))
        }
    }
    Ok(out)
}

/// The feeds of `eval_*`: a dict input name -> array, or a bare array for a
/// single-input model; an extra leading axis N runs N frames.
fn eval_feeds(
    graph: &Graph,
    feeds: &Bound<'_, PyAny>,
) -> PyResult<BTreeMap<String, nnac_driver::eval::Feed>> {
    let specs = graph_inputs(graph);
    let mut given: BTreeMap<String, nnac_ir::Tensor> = BTreeMap::new();
    if let Ok(d) = feeds.cast::<PyDict>() {
        for (k, v) in d.iter() {
            let name: String = k.extract()?;
            if !specs.iter().any(|(n, _)| *n == name) {
                return Err(UserError::new_err(format!(
                    "the model has no input '{name}' (inputs: {})",
                    specs
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            let t = to_tensor(&v, &format!("input '{name}'"))?;
            given.insert(name, t);
        }
    } else if specs.len() == 1 {
        given.insert(
            specs[0].0.clone(),
            to_tensor(feeds, &format!("input '{}'", specs[0].0))?,
        );
    } else {
        return Err(UserError::new_err(format!(
            "the model has inputs {:?}: pass a dict name -> array",
            specs.iter().map(|(n, _)| n).collect::<Vec<_>>()
        )));
    }
    let mut out = BTreeMap::new();
    for (name, ty) in &specs {
        let t = given
            .remove(name)
            .ok_or_else(|| UserError::new_err(format!("missing input '{name}' (expected {ty})")))?;
        out.insert(name.clone(), feed(name, ty, t, "feeds").py()?);
    }
    Ok(out)
}

/// Runs `runner` on the feeds and returns dict output name -> float32 array.
fn run_eval<'py>(
    py: Python<'py>,
    graph: &Graph,
    runner: &Runner,
    feeds: &BTreeMap<String, nnac_driver::eval::Feed>,
) -> PyResult<Bound<'py, PyDict>> {
    let frames = frame_count(feeds).py()?;
    let outputs = py
        .detach(|| {
            let results = runner.run_frames(feeds, frames)?;
            stack_outputs(graph, results, frames)
        })
        .py()?;
    let d = PyDict::new(py);
    for (name, t) in outputs {
        d.set_item(name, to_array(py, t)?)?;
    }
    Ok(d)
}

/// Runs a model on the float32 reference interpreter (`nnac eval`): `feeds` is a dict
/// input name -> array (a bare array for one input); returns dict output name ->
/// float32 array.
#[pyfunction]
#[pyo3(signature = (model, feeds, *, weights=None, input_shapes=None))]
pub fn eval_float<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    feeds: &Bound<'py, PyAny>,
    weights: Option<PathBuf>,
    input_shapes: Option<BTreeMap<String, Vec<usize>>>,
) -> PyResult<Bound<'py, PyDict>> {
    let args = model_args(model, weights, input_shapes)?;
    let graph = load(&args).py()?;
    let feeds = eval_feeds(&graph, feeds)?;
    let runner = Runner::Float(graph.clone());
    run_eval(py, &graph, &runner, &feeds)
}

/// Calibrates and quantizes a model as `nnac.compile` does and runs the quantized
/// reference interpreter, the bit-exact oracle of the simulator (`nnac eval
/// --quantized`); outputs dequantized to float32.
#[pyfunction]
#[pyo3(signature = (model, feeds, *, calib, weights=None, input_shapes=None,
    calib_method="mse", percentile=99.99, bias_correction="depthwise",
    weight_rounding="nearest", requant="fixed", mean=None, scale=1.0, bgr=false, resize=None,
    float_layers=None, auto_float=None))]
#[allow(clippy::too_many_arguments)]
pub fn eval_quantized<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    feeds: &Bound<'py, PyAny>,
    calib: &Bound<'py, PyAny>,
    weights: Option<PathBuf>,
    input_shapes: Option<BTreeMap<String, Vec<usize>>>,
    calib_method: &str,
    percentile: f32,
    bias_correction: &str,
    weight_rounding: &str,
    requant: &str,
    mean: Option<Vec<f32>>,
    scale: f32,
    bgr: bool,
    resize: Option<String>,
    float_layers: Option<Vec<String>>,
    auto_float: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let args = model_args(model, weights, input_shapes)?;
    let graph = load(&args).py()?;
    let feeds = eval_feeds(&graph, feeds)?;
    let specs = calib_specs(Some(calib))?;
    let pre = preprocess(mean, scale, bgr, resize);
    let quant = quant_args(
        calib_method,
        percentile,
        bias_correction,
        weight_rounding,
        requant,
        float_layers,
        auto_float,
    );
    let runner = py
        .detach(|| {
            let frames = calib_frames(&specs, &pre, &graph)?;
            Runner::quantized(graph.clone(), &Calibration::real(frames), &quant)
        })
        .py()?;
    run_eval(py, &graph, &runner, &feeds)
}

/// Which layer lost the accuracy (`nnac analyze`): compiles the model as
/// `nnac.compile` does (calibrated on `calib`; `float_layers` / `auto_float`
/// honoured), runs `inputs` (as `calib`: arrays, paths, a list or a dict; default: the
/// calibration frames) through the float graph and the bit-exact int8 path, and
/// returns the dict `nnac analyze --json` writes: per layer the error accumulated from
/// the input (`entire`) and of the layer alone on float inputs (`single`), each as
/// cosine, SQNR and largest error, and the sensitivity `ranking`.
#[pyfunction]
#[pyo3(signature = (model, inputs=None, *, calib=None, weights=None, input_shapes=None,
    hw=None, calib_method="mse", percentile=99.99, bias_correction="depthwise",
    weight_rounding="nearest", requant="fixed", float_layers=None, auto_float=None, mean=None, scale=1.0,
    bgr=false, resize=None))]
#[allow(clippy::too_many_arguments)]
pub fn analyze<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    inputs: Option<&Bound<'py, PyAny>>,
    calib: Option<&Bound<'py, PyAny>>,
    weights: Option<PathBuf>,
    input_shapes: Option<BTreeMap<String, Vec<usize>>>,
    hw: Option<PathBuf>,
    calib_method: &str,
    percentile: f32,
    bias_correction: &str,
    weight_rounding: &str,
    requant: &str,
    float_layers: Option<Vec<String>>,
    auto_float: Option<usize>,
    mean: Option<Vec<f32>>,
    scale: f32,
    bgr: bool,
    resize: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let args = model_args(model, weights, input_shapes)?;
    let calib = calib_specs(calib)?;
    let inputs = calib_specs(inputs)?;
    let pre = preprocess(mean, scale, bgr, resize);
    let hw = stages::load_hw(hw.as_deref()).py()?;
    let opts = CompileOptions {
        quant: quant_args(
            calib_method,
            percentile,
            bias_correction,
            weight_rounding,
            requant,
            float_layers,
            auto_float,
        ),
        source_model: args.model.display().to_string(),
        ..CompileOptions::default()
    };
    let (json, warning) = py
        .detach(|| {
            let graph = load(&args)?;
            let calib = stages::calibration(&calib, &pre, &graph)?;
            let frames = if inputs.is_empty() {
                calib.frames.clone()
            } else {
                calib_frames(&inputs, &pre, &graph)?
            };
            let a = nnac_driver::analyze::analyze(&graph, &calib, &frames, &hw, &opts)?;
            let json = serde_json::to_value(&a).map_err(|e| {
                nnac_driver::Error::internal("serializing the analysis", e.to_string())
            })?;
            Ok((json, calib.warning()))
        })
        .py()?;
    if let Some(w) = &warning {
        user_warning(py, w)?;
    }
    to_py_json(py, &json)
}
