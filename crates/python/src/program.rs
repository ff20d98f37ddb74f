//! `nnac.Program` (a compiled `.nnab` program) and `nnac.TensorInfo` (one of its
//! inputs or outputs, shaped like ONNX Runtime's `NodeArg`).

use crate::convert::{to_path, to_py_json, IntoPy};
use crate::UserError;
use nnac_driver::error::write_atomic;
use nnac_isa::{IoDesc, IoDir};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Arc;

/// One input or output of a program: its name, shape and quantization. Inputs are
/// fed (and outputs returned) as float32 in `shape`, quantized as
/// `code = saturate(round_half_even(x / scale) + zero_point)` to `dtype` codes, or as
/// those codes themselves with `raw=True`.
#[pyclass(module = "nnac", frozen, get_all)]
#[derive(Clone)]
pub struct TensorInfo {
    /// The tensor's name in the source model.
    pub name: String,
    /// Its dimensions (batch 1), e.g. `[1, 3, 224, 224]`.
    pub shape: Vec<usize>,
    /// The code type on the NNA: `"int8"` or `"uint8"`.
    pub dtype: String,
    /// The ONNX Runtime type string of the float interface: `"tensor(float)"`.
    pub r#type: String,
    /// Quantization scale: `x = scale * (code - zero_point)`.
    pub scale: f32,
    /// Quantization zero point.
    pub zero_point: i32,
}

#[pymethods]
impl TensorInfo {
    fn __repr__(&self) -> String {
        format!(
            "TensorInfo(name={:?}, shape={:?}, dtype={:?}, scale={}, zero_point={})",
            self.name, self.shape, self.dtype, self.scale, self.zero_point
        )
    }
}

impl TensorInfo {
    /// The descriptor's facts.
    pub fn of(d: &IoDesc) -> TensorInfo {
        TensorInfo {
            name: d.name.clone(),
            shape: d.shape.iter().map(|&s| s as usize).collect(),
            dtype: d.dtype.name().to_string(),
            r#type: "tensor(float)".to_string(),
            scale: d.scale,
            zero_point: d.zero_point,
        }
    }
}

/// The descriptors of one direction, in program order.
pub fn infos(p: &nnac_isa::Program, dir: IoDir) -> Vec<TensorInfo> {
    p.io.iter()
        .filter(|d| d.dir == dir)
        .map(TensorInfo::of)
        .collect()
}

/// A compiled NNA program (`.nnab`): made by `nnac.compile` or read by
/// `nnac.Program.load`; run it with `nnac.InferenceSession`.
#[pyclass(module = "nnac", frozen)]
pub struct Program {
    pub program: Arc<nnac_isa::Program>,
    /// Where it came from, for messages (the file, or `<compiled MODEL>`).
    pub name: String,
    /// The quantization report of `nnac.compile(..., quant_report=True)`.
    pub report: Option<serde_json::Value>,
}

#[pymethods]
impl Program {
    /// Reads a `.nnab` program file; a malformed file raises `UserError` naming the
    /// byte offset.
    #[staticmethod]
    fn load(path: &Bound<'_, PyAny>) -> PyResult<Program> {
        let path = to_path(path)?;
        let program = nnac_driver::run::read_program(&path).py()?;
        Ok(Program {
            program: Arc::new(program),
            name: path.display().to_string(),
            report: None,
        })
    }

    /// Decodes a program from its `.nnab` bytes.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Program> {
        let program = nnac_isa::Program::read(data)
            .map_err(|e| UserError::new_err(format!("<bytes>: {e}")))?;
        Ok(Program {
            program: Arc::new(program),
            name: "<bytes>".to_string(),
            report: None,
        })
    }

    /// Writes the program as a `.nnab` file (atomically: no partial file on failure).
    fn save(&self, path: &Bound<'_, PyAny>) -> PyResult<()> {
        let path = to_path(path)?;
        let bytes = nnac_driver::compile::encode(&self.program).py()?;
        write_atomic(&path, &bytes).py()
    }

    /// The program's `.nnab` bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = nnac_driver::compile::encode(&self.program).py()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The program's inputs, in order.
    #[getter]
    fn inputs(&self) -> Vec<TensorInfo> {
        infos(&self.program, IoDir::Input)
    }

    /// The program's outputs, in order.
    #[getter]
    fn outputs(&self) -> Vec<TensorInfo> {
        infos(&self.program, IoDir::Output)
    }

    /// The model the program was compiled from, as recorded in its metadata.
    #[getter]
    fn source_model(&self) -> String {
        self.program.meta.source_model.clone()
    }

    /// The per-layer quantization report (what `nnac compile --quant-report` writes)
    /// when compiled with `quant_report=True`, else `None`.
    #[getter]
    fn quant_report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.report.as_ref().map(|r| to_py_json(py, r)).transpose()
    }

    /// The instruction table `nnac disasm` prints.
    fn disasm(&self) -> String {
        nnac_isa::listing::table::listing(&self.program)
    }

    /// Proves the program race-free, deadlock-free and (with a prologue) free of
    /// resident overwrites, as `nnac verify` does; returns its `OK: ...` line, raises
    /// `UserError` listing every finding.
    fn verify(&self) -> PyResult<String> {
        match nnac_driver::verify::verify(&self.program, &self.name).py()? {
            Ok(summary) => Ok(summary),
            Err(findings) => {
                let e = nnac_driver::verify::failure(&self.name, &findings);
                Err(UserError::new_err(format!("{e}:\n{}", findings.join("\n"))))
            }
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Program({}: {} instructions, inputs {:?}, outputs {:?})",
            self.name,
            self.program.instrs.len(),
            self.program
                .io
                .iter()
                .filter(|d| d.dir == IoDir::Input)
                .map(|d| &d.name)
                .collect::<Vec<_>>(),
            self.program
                .io
                .iter()
                .filter(|d| d.dir == IoDir::Output)
                .map(|d| &d.name)
                .collect::<Vec<_>>()
        )
    }
}

/// `program_or_path`: an `nnac.Program` (shared, not copied) or the path of a `.nnab`.
pub fn program_arg(obj: &Bound<'_, PyAny>) -> PyResult<(Arc<nnac_isa::Program>, String)> {
    if let Ok(p) = obj.cast::<Program>() {
        let p = p.get();
        return Ok((p.program.clone(), p.name.clone()));
    }
    let path = to_path(obj).map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(
            "expected an nnac.Program or the path of a .nnab file",
        )
    })?;
    let program = nnac_driver::run::read_program(&path).py()?;
    Ok((Arc::new(program), path.display().to_string()))
}
