//! Conversions at the boundary: numpy arrays to and from IR tensors, Python values to
//! driver options, and driver errors to the package's exceptions.

use crate::{InternalError, UserError};
use nnac_driver::Error;
use nnac_ir::{Tensor, TensorData};
use numpy::{PyArray1, PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::path::PathBuf;

/// A driver error as the Python exception of its kind, with the CLI's message.
pub fn py_err(e: Error) -> PyErr {
    match e {
        Error::User(m) => UserError::new_err(m),
        Error::Internal { .. } => InternalError::new_err(e.to_string()),
    }
}

/// `Result<T, Error>` -> `PyResult<T>`.
pub trait IntoPy<T> {
    /// Maps the driver error to its Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(py_err)
    }
}

/// A numpy array (float32, int8, uint8, int32 or int64) as an IR tensor (one copy).
pub fn to_tensor(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        UserError::new_err(format!(
            "{what}: expected a numpy array, got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let shape = arr.shape().to_vec();
    let data = if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'_, f32>>() {
        TensorData::F32(a.as_array().iter().copied().collect())
    } else if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'_, i8>>() {
        TensorData::I8(a.as_array().iter().copied().collect())
    } else if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'_, u8>>() {
        TensorData::U8(a.as_array().iter().copied().collect())
    } else if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'_, i32>>() {
        TensorData::I32(a.as_array().iter().copied().collect())
    } else if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'_, i64>>() {
        TensorData::I64(a.as_array().iter().copied().collect())
    } else {
        return Err(UserError::new_err(format!(
            "{what}: arrays of dtype {} are not supported (float32, or int8/uint8 codes)",
            arr.dtype()
        )));
    };
    Tensor::new(shape, data)
        .ok_or_else(|| InternalError::new_err(format!("{what}: element count and shape differ")))
}

/// An IR tensor as a new numpy array of its dtype and shape.
pub fn to_array<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let shape = t.shape.clone();
    let arr = match t.data {
        TensorData::F32(v) => PyArray1::from_vec(py, v).into_any(),
        TensorData::I8(v) => PyArray1::from_vec(py, v).into_any(),
        TensorData::U8(v) => PyArray1::from_vec(py, v).into_any(),
        TensorData::I32(v) => PyArray1::from_vec(py, v).into_any(),
        TensorData::I64(v) => PyArray1::from_vec(py, v).into_any(),
    };
    arr.call_method1("reshape", (shape,))
}

/// A path argument: `str` or any `os.PathLike`.
pub fn to_path(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    obj.extract::<PathBuf>()
}

/// Whether `obj` is a path (`str` or `os.PathLike`) rather than an array.
pub fn is_path(obj: &Bound<'_, PyAny>) -> bool {
    obj.extract::<PathBuf>().is_ok()
}

/// A JSON value as the Python object `json.loads` makes of it.
pub fn to_py_json<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| InternalError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}
