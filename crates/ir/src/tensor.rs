//! Constant tensor data (weights, biases, folded shape tensors).

use crate::{DType, TensorType};

/// Typed element storage of a constant.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    F32(Vec<f32>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

impl TensorData {
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F32(_) => DType::F32,
            TensorData::I8(_) => DType::I8,
            TensorData::U8(_) => DType::U8,
            TensorData::I32(_) => DType::I32,
            TensorData::I64(_) => DType::I64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::I8(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::I64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A constant: a shape and its elements in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: TensorData,
}

impl Tensor {
    /// Builds a tensor; `None` if the element count does not match the shape.
    pub fn new(shape: Vec<usize>, data: TensorData) -> Option<Tensor> {
        (shape.iter().product::<usize>() == data.len()).then_some(Tensor { shape, data })
    }

    pub fn f32(shape: Vec<usize>, data: Vec<f32>) -> Option<Tensor> {
        Tensor::new(shape, TensorData::F32(data))
    }

    pub fn scalar_f32(v: f32) -> Tensor {
        Tensor {
            shape: vec![],
            data: TensorData::F32(vec![v]),
        }
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub fn numel(&self) -> usize {
        self.data.len()
    }

    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype(), self.shape.clone())
    }

    /// The elements as f32 (integers converted), for passes that fold constants.
    pub fn to_f32_vec(&self) -> Vec<f32> {
        match &self.data {
            TensorData::F32(v) => v.clone(),
            TensorData::I8(v) => v.iter().map(|&x| x as f32).collect(),
            TensorData::U8(v) => v.iter().map(|&x| x as f32).collect(),
            TensorData::I32(v) => v.iter().map(|&x| x as f32).collect(),
            TensorData::I64(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }

    /// The elements as i64 (floats must be integral), for shape/index tensors.
    pub fn to_i64_vec(&self) -> Option<Vec<i64>> {
        match &self.data {
            TensorData::I64(v) => Some(v.clone()),
            TensorData::I32(v) => Some(v.iter().map(|&x| x as i64).collect()),
            TensorData::I8(v) => Some(v.iter().map(|&x| x as i64).collect()),
            TensorData::U8(v) => Some(v.iter().map(|&x| x as i64).collect()),
            TensorData::F32(v) => v
                .iter()
                .map(|&x| (x.fract() == 0.0 && x.abs() < 9.0e15).then_some(x as i64))
                .collect(),
        }
    }

    pub fn as_f32(&self) -> Option<&[f32]> {
        match &self.data {
            TensorData::F32(v) => Some(v),
            _ => None,
        }
    }
}
