//! Layers that only rename blobs at inference time: Split (every top is the bottom)
//! and Dropout (identity in the TEST phase). They add no node.

use crate::caffe::error::LayerError;
use crate::caffe::layer::Layer;
use nnac_ir::{Graph, Value};

pub(in crate::caffe) fn split(_g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    Ok(vec![l.x(); l.param.top.len()])
}

pub(in crate::caffe) fn dropout(_g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    Ok(vec![l.x()])
}
