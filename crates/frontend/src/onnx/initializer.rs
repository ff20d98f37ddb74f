//! `TensorProto` to IR [`Tensor`]: typed fields (`float_data`, `int32_data` — also
//! holding int8/uint8/int16/uint16/bool/float16/bfloat16 values —, `int64_data`,
//! `double_data`, `uint64_data`), little-endian `raw_data`, and external data.
//! float16, bfloat16 and float64 become f32; bool, uint32, uint64, int16 and uint16
//! become i64 or i32. The element count the dims declare is checked against the data
//! before anything is allocated.

use super::dtype::{self, *};
use super::external::read_external;
use super::limits::dims_to_shape;
use crate::proto::onnx::TensorProto;
use nnac_ir::{Tensor, TensorData};
use rayon::prelude::*;
use std::path::Path;

/// Why a tensor could not be converted.
#[derive(Debug)]
pub enum TensorError {
    /// A valid tensor of a kind nnac does not handle (string, complex, sparse...).
    Unsupported(String),
    /// Inconsistent data (size mismatch, bad external reference...).
    Invalid(String),
}

const EXTERNAL: i32 = 1;

/// Bytes per element in `raw_data` for the supported types.
fn raw_size(elem: i32) -> Option<usize> {
    match elem {
        UINT8 | INT8 | BOOL => Some(1),
        UINT16 | INT16 | FLOAT16 | BFLOAT16 => Some(2),
        FLOAT | INT32 | UINT32 => Some(4),
        INT64 | DOUBLE | UINT64 => Some(8),
        _ => None,
    }
}

/// Converts a tensor; `base_dir` locates external data.
pub fn tensor_from_proto(t: &TensorProto, base_dir: Option<&Path>) -> Result<Tensor, TensorError> {
    let elem = t.data_type();
    let size = raw_size(elem)
        .ok_or_else(|| TensorError::Unsupported(format!("{} tensors", dtype::name(elem))))?;
    if t.segment.is_some() {
        return Err(TensorError::Unsupported("segmented tensors".into()));
    }
    let shape = dims_to_shape(&t.dims).map_err(|e| TensorError::Invalid(e.to_string()))?;
    let n: usize = shape.iter().product();
    let data = if t.data_location() as i32 == EXTERNAL {
        let bytes = read_external(t, base_dir, n * size)
            .map_err(|e| TensorError::Invalid(e.to_string()))?;
        from_raw(elem, &bytes)
    } else if !t.raw_data().is_empty() {
        let raw = t.raw_data();
        if raw.len() != n * size {
            return Err(TensorError::Invalid(format!(
                "raw_data has {} bytes, but {:?} {} needs {}",
                raw.len(),
                shape,
                dtype::name(elem),
                n * size
            )));
        }
        from_raw(elem, raw)
    } else {
        from_typed(elem, t, n)?
    };
    Tensor::new(shape, data)
        .ok_or_else(|| TensorError::Invalid("element count does not match the dims".into()))
}

/// Little-endian f32s; payloads of at least [`PAR_BYTES`] are converted in parallel.
fn f32_from_le(b: &[u8]) -> Vec<f32> {
    let conv = |c: &[u8]| f32::from_le_bytes(c.try_into().expect("chunks_exact yields 4 bytes"));
    if b.len() < PAR_BYTES {
        return b.chunks_exact(4).map(conv).collect();
    }
    b.par_chunks_exact(4).map(conv).collect()
}

/// Smallest payload converted in parallel.
const PAR_BYTES: usize = 1 << 20;

fn chunks<const N: usize>(b: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    b.chunks_exact(N)
        .map(|c| c.try_into().expect("chunks_exact yields N bytes"))
}

/// Decodes little-endian raw bytes (length already checked).
fn from_raw(elem: i32, b: &[u8]) -> TensorData {
    match elem {
        FLOAT => TensorData::F32(f32_from_le(b)),
        FLOAT16 => TensorData::F32(
            chunks(b)
                .map(|c| f16_to_f32(u16::from_le_bytes(c)))
                .collect(),
        ),
        BFLOAT16 => TensorData::F32(
            chunks(b)
                .map(|c| bf16_to_f32(u16::from_le_bytes(c)))
                .collect(),
        ),
        DOUBLE => TensorData::F32(chunks(b).map(|c| f64::from_le_bytes(c) as f32).collect()),
        INT8 => TensorData::I8(b.iter().map(|&x| x as i8).collect()),
        UINT8 => TensorData::U8(b.to_vec()),
        BOOL => TensorData::I64(b.iter().map(|&x| i64::from(x != 0)).collect()),
        INT16 => TensorData::I32(
            chunks(b)
                .map(|c| i32::from(i16::from_le_bytes(c)))
                .collect(),
        ),
        UINT16 => TensorData::I32(
            chunks(b)
                .map(|c| i32::from(u16::from_le_bytes(c)))
                .collect(),
        ),
        INT32 => TensorData::I32(chunks(b).map(i32::from_le_bytes).collect()),
        UINT32 => TensorData::I64(
            chunks(b)
                .map(|c| i64::from(u32::from_le_bytes(c)))
                .collect(),
        ),
        INT64 => TensorData::I64(chunks(b).map(i64::from_le_bytes).collect()),
        // UINT64: values above i64::MAX wrap; they never occur as sizes or indices.
        _ => TensorData::I64(chunks(b).map(|c| u64::from_le_bytes(c) as i64).collect()),
    }
}

fn check_len(field: &str, got: usize, n: usize) -> Result<(), TensorError> {
    if got != n {
        return Err(TensorError::Invalid(format!(
            "{field} has {got} values, but the dims need {n}"
        )));
    }
    Ok(())
}

/// Decodes the typed repeated fields.
fn from_typed(elem: i32, t: &TensorProto, n: usize) -> Result<TensorData, TensorError> {
    Ok(match elem {
        FLOAT => {
            check_len("float_data", t.float_data.len(), n)?;
            TensorData::F32(t.float_data.clone())
        }
        DOUBLE => {
            check_len("double_data", t.double_data.len(), n)?;
            TensorData::F32(t.double_data.iter().map(|&x| x as f32).collect())
        }
        INT64 => {
            check_len("int64_data", t.int64_data.len(), n)?;
            TensorData::I64(t.int64_data.clone())
        }
        UINT32 | UINT64 => {
            check_len("uint64_data", t.uint64_data.len(), n)?;
            TensorData::I64(t.uint64_data.iter().map(|&x| x as i64).collect())
        }
        _ => {
            check_len("int32_data", t.int32_data.len(), n)?;
            from_int32_field(elem, &t.int32_data)
        }
    })
}

/// Types stored one value per `int32_data` entry (16-bit floats as their bits).
fn from_int32_field(elem: i32, v: &[i32]) -> TensorData {
    match elem {
        FLOAT16 => TensorData::F32(v.iter().map(|&x| f16_to_f32(x as u16)).collect()),
        BFLOAT16 => TensorData::F32(v.iter().map(|&x| bf16_to_f32(x as u16)).collect()),
        INT8 => TensorData::I8(v.iter().map(|&x| x as i8).collect()),
        UINT8 => TensorData::U8(v.iter().map(|&x| x as u8).collect()),
        BOOL => TensorData::I64(v.iter().map(|&x| i64::from(x != 0)).collect()),
        _ => TensorData::I32(v.to_vec()),
    }
}
