//! Why shape inference ([`crate::infer`]) refuses an op for its input types, or a
//! shape is not a valid IR shape: one variant per rule, carrying the shapes and
//! attribute values involved. The node is named by the caller ([`crate::IrError`],
//! [`crate::VerifyError`]).

use crate::MAX_ELEMENTS;
use std::fmt;

/// A shape rule an op's inputs or attributes break.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// Too few or too many inputs (`max` is `usize::MAX` when unbounded).
    Arity {
        op: &'static str,
        min: usize,
        max: usize,
        got: usize,
    },
    /// `Input` and `Constant` have no inferred type.
    OwnType,
    /// NNA ops carry explicit types (checked by `NnaOp::check`).
    ExplicitType,
    /// An `axis` attribute beyond the input's rank.
    Axis { axis: usize, rank: usize },
    /// Two shapes that do not broadcast (numpy rules).
    Broadcast { a: Vec<usize>, b: Vec<usize> },
    /// A shape with more than [`MAX_ELEMENTS`] elements (or an overflowing product).
    TooManyElements { shape: Vec<usize> },
    /// A PReLU slope that does not broadcast to the input.
    PreluSlope {
        slope: Vec<usize>,
        input: Vec<usize>,
    },
    /// A reshape to another element count.
    Reshape {
        from: Vec<usize>,
        numel: usize,
        to: Vec<usize>,
    },
    /// Slice attribute lists of different lengths.
    SliceLengths { strided: bool },
    /// Slice axes that repeat or exceed the rank.
    SliceAxes {
        strided: bool,
        axes: Vec<usize>,
        rank: usize,
    },
    /// An empty or out-of-range slice of one axis (`step` for strided slices).
    SliceRange {
        start: usize,
        end: usize,
        step: Option<usize>,
        axis: usize,
        size: usize,
    },
    /// A transpose `perm` that is not a permutation of the axes.
    Perm { perm: Vec<usize>, rank: usize },
    /// Resize `sizes`/`scales` not one per axis.
    ResizeRank { rank: usize },
    /// A resize to a shape with a zero axis.
    ResizeEmpty { sizes: Vec<usize> },
    /// A quantize/dequantize `axis` beyond the rank.
    QdqAxis { axis: usize, rank: usize },
    /// Quantize/dequantize parameters not one per channel.
    QdqCount {
        scales: usize,
        zero_points: usize,
        channels: usize,
    },
    /// `pads` not two per axis.
    PadCount { needed: usize, got: usize },
    /// Padding that overflows the shape.
    PadOverflow { pads: Vec<usize>, shape: Vec<usize> },
    /// An op needing `[N, C, spatial...]` got a lower rank.
    SpatialInput { op: &'static str, shape: Vec<usize> },
    /// Window attributes not one per spatial axis.
    SpatialAttrs {
        axes: usize,
        kernel: Vec<usize>,
        strides: Vec<usize>,
        pads: Vec<usize>,
        dilations: Vec<usize>,
    },
    /// A zero kernel, stride or dilation.
    ZeroWindow,
    /// Window arithmetic that overflows `usize`.
    WindowOverflow {
        input: usize,
        kernel: usize,
        pad_begin: usize,
        pad_end: usize,
        dilation: usize,
    },
    /// A dilated window larger than the padded input.
    WindowTooLarge { window: usize, padded: usize },
    /// Weight and input ranks differ.
    WeightRank { weight: usize, input: usize },
    /// Convolution input channels that do not fit the weight and group.
    ConvChannels {
        channels: usize,
        weight: Vec<usize>,
        group: usize,
    },
    /// Weight spatial extents other than `kernel`.
    WeightKernel {
        weight: Vec<usize>,
        kernel: Vec<usize>,
    },
    /// A bias that is not one value per output channel.
    Bias { shape: Vec<usize>, channels: usize },
    /// Transposed-convolution `output_padding` not one per spatial axis.
    OutputPadding {
        output_padding: Vec<usize>,
        axes: usize,
    },
    /// Transposed-convolution weight that does not fit the input and group.
    DeconvWeight {
        weight: Vec<usize>,
        input: Vec<usize>,
        group: usize,
    },
    /// Transposed-convolution output channels overflow.
    DeconvChannels { weight: Vec<usize>, group: usize },
    /// Transposed-convolution output size empty or overflowing.
    DeconvOutput { input: Vec<usize> },
    /// Pads that remove a whole transposed-convolution output axis.
    PadsRemoveOutput { pads: Vec<usize>, full: usize },
    /// Gemm inputs that are not 2-D.
    GemmRank { a: Vec<usize>, b: Vec<usize> },
    /// Gemm or MatMul inner dimensions that differ.
    InnerDims {
        op: &'static str,
        a: Vec<usize>,
        b: Vec<usize>,
    },
    /// A Gemm C that does not broadcast to the output.
    GemmC { c: Vec<usize>, m: usize, n: usize },
    /// A MatMul input of rank 0.
    MatMulRank,
    /// BatchNorm input below rank 2.
    BatchNormRank { shape: Vec<usize> },
    /// A BatchNorm parameter that is not one value per channel.
    BatchNormParam {
        index: usize,
        shape: Vec<usize>,
        channels: usize,
    },
    /// Concat inputs that differ off the axis.
    ConcatShapes {
        a: Vec<usize>,
        b: Vec<usize>,
        axis: usize,
    },
    /// Concat size overflowing `usize`.
    ConcatOverflow,
    /// Pool pads not smaller than the window.
    PoolPads {
        pads: Vec<usize>,
        kernel: Vec<usize>,
    },
}

fn arity_str(lo: usize, hi: usize) -> String {
    match (lo, hi) {
        (l, h) if l == h => l.to_string(),
        (l, usize::MAX) => format!("at least {l}"),
        (l, h) => format!("{l} to {h}"),
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ShapeError::*;
        match self {
            Arity { op, min, max, got } => {
                write!(f, "{op} takes {} inputs, got {got}", arity_str(*min, *max))
            }
            OwnType => f.write_str("inputs and constants carry their own type"),
            ExplicitType => {
                f.write_str("NNA ops carry explicit types (checked by NnaOp::check)")
            }
            Axis { axis, rank } => write!(f, "axis {axis} out of range for rank {rank}"),
            Broadcast { a, b } => write!(f, "shapes {a:?} and {b:?} do not broadcast"),
            TooManyElements { shape } => {
                write!(f, "shape {shape:?} has more than {MAX_ELEMENTS} elements")
            }
            PreluSlope { slope, input } => write!(
                f,
                "prelu slope {slope:?} does not broadcast to input {input:?}"
            ),
            Reshape { from, numel, to } => {
                write!(f, "cannot reshape {from:?} ({numel} elements) to {to:?}")
            }
            SliceLengths { strided: false } => {
                f.write_str("slice axes, starts and ends differ in length")
            }
            SliceLengths { strided: true } => {
                f.write_str("strided slice axes, starts, ends and steps differ in length")
            }
            SliceAxes {
                strided,
                axes,
                rank,
            } => write!(
                f,
                "{}slice axes {axes:?} are not distinct axes of rank {rank}",
                if *strided { "strided " } else { "" }
            ),
            SliceRange {
                start,
                end,
                step: None,
                axis,
                size,
            } => write!(
                f,
                "slice {start}..{end} of axis {axis} (size {size}) is empty or out of range"
            ),
            SliceRange {
                start,
                end,
                step: Some(step),
                axis,
                size,
            } => write!(
                f,
                "strided slice {start}..{end} step {step} of axis {axis} (size {size}) is empty or out of range"
            ),
            Perm { perm, rank } => write!(
                f,
                "transpose perm {perm:?} is not a permutation of rank {rank}"
            ),
            ResizeRank { rank } => write!(f, "resize sizes/scales must have rank {rank}"),
            ResizeEmpty { sizes } => write!(f, "resize to an empty shape {sizes:?}"),
            QdqAxis { axis, rank } => write!(f, "axis {axis} is out of range for rank {rank}"),
            QdqCount {
                scales,
                zero_points,
                channels,
            } => write!(
                f,
                "{scales} scales and {zero_points} zero points for {channels} channels"
            ),
            PadCount { needed, got } => write!(f, "pad needs {needed} pad values, got {got}"),
            PadOverflow { pads, shape } => {
                write!(f, "pads {pads:?} overflow the shape {shape:?}")
            }
            SpatialInput { op, shape } => write!(
                f,
                "{op} needs an input of rank >= 3 (N, C, spatial...), got {shape:?}"
            ),
            SpatialAttrs {
                axes,
                kernel,
                strides,
                pads,
                dilations,
            } => write!(
                f,
                "attributes do not match {axes} spatial axes (kernel {kernel:?}, strides {strides:?}, pads {pads:?}, dilations {dilations:?})"
            ),
            ZeroWindow => f.write_str("kernel, strides and dilations must be positive"),
            WindowOverflow {
                input,
                kernel,
                pad_begin,
                pad_end,
                dilation,
            } => write!(
                f,
                "window arithmetic overflows (input {input}, kernel {kernel}, pads {pad_begin}/{pad_end}, dilation {dilation})"
            ),
            WindowTooLarge { window, padded } => write!(
                f,
                "window {window} is larger than the padded input {padded}"
            ),
            WeightRank { weight, input } => write!(
                f,
                "weight rank {weight} does not match input rank {input}"
            ),
            ConvChannels {
                channels,
                weight,
                group,
            } => write!(
                f,
                "input channels {channels} do not match weight {weight:?} with group {group}"
            ),
            WeightKernel { weight, kernel } => write!(
                f,
                "weight spatial shape {weight:?} does not match kernel {kernel:?}"
            ),
            Bias { shape, channels } => {
                write!(f, "bias shape {shape:?} should be [{channels}]")
            }
            OutputPadding {
                output_padding,
                axes,
            } => write!(
                f,
                "output_padding {output_padding:?} does not match {axes} spatial axes"
            ),
            DeconvWeight {
                weight,
                input,
                group,
            } => write!(
                f,
                "weight {weight:?} does not match input {input:?} with group {group}"
            ),
            DeconvChannels { weight, group } => {
                write!(f, "weight {weight:?} with group {group} overflows")
            }
            DeconvOutput { input } => write!(
                f,
                "conv_transpose output size of input {input:?} is empty or overflows"
            ),
            PadsRemoveOutput { pads, full } => {
                write!(f, "pads {pads:?} remove the whole output of size {full}")
            }
            GemmRank { a, b } => write!(f, "gemm needs 2-D inputs, got {a:?} and {b:?}"),
            InnerDims { op, a, b } => {
                write!(f, "{op} inner dimensions differ: {a:?} x {b:?}")
            }
            GemmC { c, m, n } => write!(f, "gemm C {c:?} does not broadcast to [{m}, {n}]"),
            MatMulRank => f.write_str("matmul inputs must have rank >= 1"),
            BatchNormRank { shape } => write!(f, "batch_norm needs rank >= 2, got {shape:?}"),
            BatchNormParam {
                index,
                shape,
                channels,
            } => write!(
                f,
                "batch_norm parameter {index} has shape {shape:?}, expected [{channels}]"
            ),
            ConcatShapes { a, b, axis } => {
                write!(f, "concat inputs {a:?} and {b:?} differ off axis {axis}")
            }
            ConcatOverflow => f.write_str("concat size overflows"),
            PoolPads { pads, kernel } => write!(
                f,
                "pads {pads:?} must be smaller than the window {kernel:?}"
            ),
        }
    }
}

impl std::error::Error for ShapeError {}

/// For callers whose own errors still hold a message.
impl From<ShapeError> for String {
    fn from(e: ShapeError) -> String {
        e.to_string()
    }
}

/// Why the explicit output types of an NNA op do not fit its inputs
/// ([`NnaOp::check`](crate::NnaOp::check)).
#[derive(Clone, Debug, PartialEq)]
pub enum NnaTypeError {
    /// Too few or too many inputs.
    Arity {
        op: &'static str,
        min: usize,
        max: usize,
        got: usize,
    },
    /// Not exactly one output type.
    Outputs { op: &'static str, got: usize },
    /// The underlying IR op's inference refuses the inputs.
    Shape(ShapeError),
    /// The declared output shape differs from the computed one.
    OutputShape {
        op: &'static str,
        declared: Vec<usize>,
        computed: Vec<usize>,
    },
    /// A quantized output without per-tensor quantization.
    NoPerTensorQuant {
        op: &'static str,
        out: crate::TensorType,
    },
    /// A quantized output without requantization, or the reverse.
    RequantMismatch {
        op: &'static str,
        out: crate::TensorType,
    },
    /// A data-movement op whose output type is not its input's.
    NotPassThrough {
        op: &'static str,
        out: crate::TensorType,
    },
    /// A pool stage window larger than its input.
    PoolWindow,
    /// A pool stage on a non-4-D tensor.
    PoolRank { shape: Vec<usize> },
    /// SCALE weights or bias not one per channel.
    ScaleParams {
        weights: Vec<usize>,
        bias: Vec<usize>,
        channels: usize,
    },
    /// ELTWISE second input neither the first's shape nor per channel.
    EltwiseOperand { a: Vec<usize>, b: Vec<usize> },
    /// Channel shuffle groups that do not divide the channels.
    ShuffleGroups { shape: Vec<usize>, groups: usize },
    /// Upsample of a non-4-D input or by a zero factor.
    Upsample {
        shape: Vec<usize>,
        factors: [usize; 2],
    },
    /// Depth-to-space of a non-4-D input, by block 0, or of channels that are not a
    /// multiple of the block squared.
    DepthToSpace { shape: Vec<usize>, block: usize },
    /// An op without an explicit type rule.
    NoRule(&'static str),
}

impl fmt::Display for NnaTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use NnaTypeError::*;
        match self {
            Arity { op, min, max, got } => write!(f, "{op} takes {min}..{max} inputs, got {got}"),
            Outputs { op, got } => write!(f, "{op} has one output, found {got}"),
            Shape(e) => e.fmt(f),
            OutputShape {
                op,
                declared,
                computed,
            } => write!(f, "{op} output shape {declared:?} should be {computed:?}"),
            NoPerTensorQuant { op, out } => write!(
                f,
                "{op} quantized output {out} lacks per-tensor quantization"
            ),
            RequantMismatch { op, out } => {
                write!(f, "{op} output {out} and requantization disagree")
            }
            NotPassThrough { op, out } => write!(
                f,
                "{op} output {out} should have the input's type and quantization"
            ),
            PoolWindow => f.write_str("pool window larger than its input"),
            PoolRank { shape } => write!(f, "pool stage needs a 4-D input, got {shape:?}"),
            ScaleParams {
                weights,
                bias,
                channels,
            } => write!(
                f,
                "scale weights {weights:?} / bias {bias:?} should be [{channels}]"
            ),
            EltwiseOperand { a, b } => write!(
                f,
                "eltwise input b {b:?} is neither a's shape {a:?} nor broadcast over its pixels"
            ),
            ShuffleGroups { shape, groups } => write!(
                f,
                "channel shuffle of {shape:?} in {groups} groups: the channels must be a \
                 multiple of the groups"
            ),
            Upsample {
                shape,
                factors: [fh, fw],
            } => write!(
                f,
                "upsample of {shape:?} by {fh} x {fw}: needs a 4-D input and factors >= 1"
            ),
            DepthToSpace { shape, block } => write!(
                f,
                "depth-to-space of {shape:?} by {block}: needs a 4-D input whose channels \
                 are a multiple of the block squared"
            ),
            NoRule(op) => write!(f, "{op} has no explicit type rule"),
        }
    }
}

impl std::error::Error for NnaTypeError {}

impl From<ShapeError> for NnaTypeError {
    fn from(e: ShapeError) -> Self {
        NnaTypeError::Shape(e)
    }
}

/// For callers whose own errors still hold a message.
impl From<NnaTypeError> for String {
    fn from(e: NnaTypeError) -> String {
        e.to_string()
    }
}
