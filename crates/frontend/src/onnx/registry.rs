//! The op registry: a table sorted by ONNX op type. Each entry lists the attributes
//! the builder understands (any other attribute is reported unsupported), an optional
//! check of attribute values that runs even for nodes that cannot be built, and the
//! builder. Opset differences are handled inside the builders.

use super::ctx::{Ctx, NResult, NodeCx, Out};
use super::ops::{
    constant, conv, elementwise as ew, folding, linear, misc, norm, pool, quant, resize, shape,
};

pub type Builder = fn(&mut Ctx, &NodeCx) -> NResult<Vec<Out>>;
pub type Check = fn(&NodeCx) -> NResult<()>;

pub struct OpDef {
    pub op_type: &'static str,
    pub attrs: &'static [&'static str],
    pub check: Option<Check>,
    pub build: Builder,
}

const fn op(op_type: &'static str, attrs: &'static [&'static str], build: Builder) -> OpDef {
    OpDef {
        op_type,
        attrs,
        check: None,
        build,
    }
}

const fn checked(
    op_type: &'static str,
    attrs: &'static [&'static str],
    check: Check,
    build: Builder,
) -> OpDef {
    OpDef {
        op_type,
        attrs,
        check: Some(check),
        build,
    }
}

/// Opset-6 binary ops carry legacy broadcasting attributes.
const LEGACY_BIN: &[&str] = &["axis", "broadcast"];
const CONV: &[&str] = &[
    "auto_pad",
    "dilations",
    "group",
    "kernel_shape",
    "pads",
    "strides",
];
const CONV_T: &[&str] = &[
    "auto_pad",
    "dilations",
    "group",
    "kernel_shape",
    "output_padding",
    "output_shape",
    "pads",
    "strides",
];
const MAX_POOL: &[&str] = &[
    "auto_pad",
    "ceil_mode",
    "dilations",
    "kernel_shape",
    "pads",
    "storage_order",
    "strides",
];
const AVG_POOL: &[&str] = &[
    "auto_pad",
    "ceil_mode",
    "count_include_pad",
    "dilations",
    "kernel_shape",
    "pads",
    "strides",
];
const RESIZE: &[&str] = &[
    "antialias",
    "axes",
    "coordinate_transformation_mode",
    "cubic_coeff_a",
    "exclude_outside",
    "extrapolation_value",
    "keep_aspect_ratio_policy",
    "mode",
    "nearest_mode",
];
const CONSTANT: &[&str] = &[
    "sparse_value",
    "value",
    "value_float",
    "value_floats",
    "value_int",
    "value_ints",
    "value_string",
    "value_strings",
];

/// Sorted by op type (a unit test checks it).
static OPS: &[OpDef] = &[
    op("Abs", &[], ew::abs),
    op("Add", LEGACY_BIN, ew::add),
    op("AveragePool", AVG_POOL, pool::average_pool),
    checked(
        "BatchNormalization",
        &["epsilon", "is_test", "momentum", "spatial", "training_mode"],
        norm::check_batch_norm,
        norm::batch_norm,
    ),
    op("Cast", &["saturate", "to"], folding::cast),
    op("Ceil", &[], ew::ceil),
    op("Clip", &["max", "min"], ew::clip),
    op("Concat", &["axis"], shape::concat),
    checked(
        "Constant",
        CONSTANT,
        constant::check_constant,
        constant::constant,
    ),
    op("ConstantOfShape", &["value"], constant::constant_of_shape),
    op("Conv", CONV, conv::conv),
    op("ConvInteger", CONV, quant::conv_integer),
    op("ConvTranspose", CONV_T, conv::conv_transpose),
    op(
        "DepthToSpace",
        &["blocksize", "mode"],
        shape::depth_to_space,
    ),
    op(
        "DequantizeLinear",
        &["axis", "block_size", "output_dtype"],
        quant::dequantize_linear,
    ),
    op("Div", LEGACY_BIN, ew::div),
    op("Dropout", &["is_test", "ratio", "seed"], misc::dropout),
    op("Equal", &[], folding::equal),
    op("Expand", &[], folding::expand),
    op("Flatten", &["axis"], shape::flatten),
    op("Floor", &[], ew::floor),
    op("Gather", &["axis"], folding::gather),
    op(
        "Gemm",
        &["alpha", "beta", "broadcast", "transA", "transB"],
        linear::gemm,
    ),
    op("GlobalAveragePool", &[], pool::global_average_pool),
    op("GlobalMaxPool", &[], pool::global_max_pool),
    op("Greater", &[], folding::greater),
    op("HardSigmoid", &["alpha", "beta"], ew::hard_sigmoid),
    op("HardSwish", &[], ew::hard_swish),
    op("Identity", &[], misc::identity),
    op("LRN", &["alpha", "beta", "bias", "size"], norm::lrn),
    op("LeakyRelu", &["alpha"], ew::leaky_relu),
    op("Less", &[], folding::less),
    op("MatMul", &[], linear::matmul),
    op("MatMulInteger", &[], quant::matmul_integer),
    op("Max", &[], ew::max),
    op("MaxPool", MAX_POOL, pool::max_pool),
    op("Mean", &[], ew::mean),
    op("Min", &[], ew::min),
    op("Mul", LEGACY_BIN, ew::mul),
    op("Neg", &[], ew::neg),
    op("Not", &[], ew::not),
    op("PRelu", &[], ew::prelu),
    checked(
        "Pad",
        &["mode", "pads", "value"],
        misc::check_pad,
        misc::pad,
    ),
    op("Pow", &[], ew::pow),
    op("QLinearConv", CONV, quant::qlinear_conv),
    op("QLinearMatMul", &[], quant::qlinear_matmul),
    op(
        "QuantizeLinear",
        &[
            "axis",
            "block_size",
            "output_dtype",
            "precision",
            "saturate",
        ],
        quant::quantize_linear,
    ),
    op("Range", &[], folding::range),
    op("Reciprocal", &[], ew::reciprocal),
    op(
        "ReduceMax",
        &["axes", "keepdims", "noop_with_empty_axes"],
        pool::reduce_max,
    ),
    op(
        "ReduceMean",
        &["axes", "keepdims", "noop_with_empty_axes"],
        pool::reduce_mean,
    ),
    op("Relu", &[], ew::relu),
    op("Reshape", &["allowzero", "shape"], shape::reshape),
    checked("Resize", RESIZE, resize::check_resize, resize::resize),
    op("Shape", &["end", "start"], folding::shape),
    op("Sigmoid", &[], ew::sigmoid),
    op("Size", &[], folding::size),
    op("Slice", &["axes", "ends", "starts"], folding::slice),
    op("Softmax", &["axis"], norm::softmax),
    op("SpaceToDepth", &["blocksize"], shape::space_to_depth),
    op("Split", &["axis", "num_outputs", "split"], folding::split),
    op("Sqrt", &[], ew::sqrt),
    op("Squeeze", &["axes"], shape::squeeze),
    op("Sub", LEGACY_BIN, ew::sub),
    op("Sum", &[], ew::sum),
    op("Tanh", &[], ew::tanh),
    op("Transpose", &["perm"], shape::transpose),
    op("Unsqueeze", &["axes"], shape::unsqueeze),
    checked(
        "Upsample",
        &["mode", "scales"],
        resize::check_resize,
        resize::upsample,
    ),
    op("Where", &[], folding::where_),
];

/// The entry for an op type of the default domain.
pub fn lookup(op_type: &str) -> Option<&'static OpDef> {
    OPS.binary_search_by(|d| d.op_type.cmp(op_type))
        .ok()
        .map(|i| &OPS[i])
}

/// Every supported default-domain op type, sorted.
pub fn supported_op_types() -> impl Iterator<Item = &'static str> {
    OPS.iter().map(|d| d.op_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for w in OPS.windows(2) {
            assert!(
                w[0].op_type < w[1].op_type,
                "{} must sort before {}",
                w[0].op_type,
                w[1].op_type
            );
        }
        for d in OPS {
            assert!(lookup(d.op_type).is_some());
            let mut a = d.attrs.to_vec();
            a.sort();
            assert_eq!(a, d.attrs, "attributes of {} must be sorted", d.op_type);
        }
        assert!(lookup("LSTM").is_none());
    }
}
