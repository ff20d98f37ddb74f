//! `import nnac`: the Python package, a thin pyo3 layer over `nnac-driver` (the
//! library the `nnac` CLI calls too). Modules: `convert.rs` (numpy arrays <-> IR
//! tensors, driver errors -> `nnac.UserError` / `nnac.InternalError`), `program.rs`
//! (`nnac.Program`, `nnac.TensorInfo`), `session.rs` (`nnac.InferenceSession`,
//! `nnac.evaluate`), `functions.rs` (`nnac.compile`, `profile`, `inspect`,
//! `eval_float`, `eval_quantized`). The type stubs are `nnac.pyi` beside this crate's
//! Cargo.toml.

mod convert;
mod functions;
mod program;
mod session;

use pyo3::prelude::*;

pyo3::create_exception!(
    nnac,
    UserError,
    pyo3::exceptions::PyException,
    "Bad input: a missing file, a malformed model or program, an unsupported op, wrong shapes (the CLI's exit code 1)."
);
pyo3::create_exception!(
    nnac,
    InternalError,
    pyo3::exceptions::PyException,
    "A bug in nnac: an invariant broke (the CLI's exit code 2). Please report it."
);

/// nnac: ahead-of-time compiler for an FSD-style 96x96 int8 NPU, with a bit-exact
/// simulator. `nnac.compile` turns an ONNX or Caffe model into an `nnac.Program`;
/// `nnac.InferenceSession` runs one like ONNX Runtime's session.
#[pymodule(name = "nnac")]
fn nnac_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("UserError", py.get_type::<UserError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_class::<program::Program>()?;
    m.add_class::<program::TensorInfo>()?;
    m.add_class::<session::InferenceSession>()?;
    m.add_function(wrap_pyfunction!(functions::compile, m)?)?;
    m.add_function(wrap_pyfunction!(functions::profile, m)?)?;
    m.add_function(wrap_pyfunction!(functions::inspect, m)?)?;
    m.add_function(wrap_pyfunction!(functions::eval_float, m)?)?;
    m.add_function(wrap_pyfunction!(functions::eval_quantized, m)?)?;
    m.add_function(wrap_pyfunction!(functions::analyze, m)?)?;
    m.add_function(wrap_pyfunction!(session::evaluate, m)?)?;
    Ok(())
}
