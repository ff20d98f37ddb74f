//! The registry of layer builders: one small function per Caffe layer type (grouped
//! by family in the files of this module). A builder gets the graph and the layer and
//! returns the values of the layer's tops, in order.

mod activation;
mod alias;
mod batch_norm;
mod conv;
mod eltwise;
mod inner_product;
mod lrn;
mod pool;
mod scale;
mod shape;

use super::error::LayerError;
use super::layer::Layer;
use nnac_ir::{Graph, Value};

pub(super) type Build = fn(&mut Graph, &Layer) -> Result<Vec<Value>, LayerError>;

/// The builder for a layer type (Caffe's type string), if nnac supports it. `Input`
/// layers are handled by the net builder, which owns the graph inputs.
pub(super) fn builder(layer_type: &str) -> Option<Build> {
    let b: Build = match layer_type {
        "Convolution" => conv::convolution,
        "Deconvolution" => conv::deconvolution,
        "InnerProduct" => inner_product::inner_product,
        "Pooling" => pool::pooling,
        "ReLU" => activation::relu,
        "PReLU" => activation::prelu,
        "Sigmoid" => activation::sigmoid,
        "TanH" => activation::tanh,
        "Power" => activation::power,
        "BatchNorm" => batch_norm::batch_norm,
        "Scale" => scale::scale,
        "Bias" => scale::bias,
        "Eltwise" => eltwise::eltwise,
        "Concat" => shape::concat,
        "Softmax" => shape::softmax,
        "Flatten" => shape::flatten,
        "Reshape" => shape::reshape,
        "LRN" => lrn::lrn,
        "Split" => alias::split,
        "Dropout" => alias::dropout,
        _ => return None,
    };
    Some(b)
}
