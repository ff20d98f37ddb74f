//! Elementwise layers: ReLU (with `negative_slope` it is a leaky ReLU), PReLU (one
//! slope per channel, or one shared), Sigmoid, TanH and Power.

use crate::caffe::error::LayerError;
use crate::caffe::layer::Layer;
use nnac_ir::{Activation, Graph, Op, Value};

fn act(g: &mut Graph, l: &Layer, a: Activation) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    Ok(vec![l.node(g, Op::Act(a), &[l.x()])?])
}

pub(in crate::caffe) fn relu(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    let slope = l
        .param
        .relu_param
        .as_ref()
        .map_or(0.0, |p| p.negative_slope());
    if slope == 0.0 {
        act(g, l, Activation::Relu)
    } else {
        act(g, l, Activation::LeakyRelu { alpha: slope })
    }
}

pub(in crate::caffe) fn sigmoid(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    act(g, l, Activation::Sigmoid)
}

pub(in crate::caffe) fn tanh(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    act(g, l, Activation::Tanh)
}

pub(in crate::caffe) fn power(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let p = l.param.power_param.unwrap_or_default();
    let op = Op::Power {
        power: p.power(),
        scale: p.scale(),
        shift: p.shift(),
    };
    Ok(vec![l.node(g, op, &[l.x()])?])
}

/// Slopes `[C]` (or `[1]` with `channel_shared`), stored as `[C, 1, ...]` so they
/// broadcast over the spatial axes.
pub(in crate::caffe) fn prelu(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let x = l.shape(g, 0);
    if x.len() < 2 {
        return Err(l.invalid(format!("PReLU needs an input of rank >= 2, got {x:?}")));
    }
    let shared = l
        .param
        .prelu_param
        .as_ref()
        .is_some_and(|p| p.channel_shared());
    let channels = if shared { 1 } else { x[1] };
    let mut slope = l.weight(0, "slope", &[channels])?;
    slope.shape.extend(std::iter::repeat_n(1, x.len() - 2));
    let slope = l.constant(g, "slope", slope);
    Ok(vec![l.node(g, Op::PRelu, &[l.x(), slope])?])
}
