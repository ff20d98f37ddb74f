//! THE op table: every IR op (and every enum inside an op's attributes) with its
//! mnemonic and its attributes, in printing order, with their types.
//!
//! The printer ([`crate::print()`], [`crate::op_to_text`], the DOT writer), the parser
//! ([`crate::parse()`], [`crate::parse_op`]), the attribute checks of the parser
//! (each attribute present once, of its type; no other attribute) and the mnemonics
//! ([`Op::mnemonic`]) are all driven from these tables through the [`tagged!`] macro;
//! `tests` below checks that every entry round-trips and that every [`Op`] variant has
//! an entry.
//!
//! # Adding an op
//!
//! 1. Add the variant to [`Op`] (`op.rs`; attribute structs there too) or, for an NNA
//!    compound op, to [`NnaOp`] (`nna_op.rs`).
//! 2. Add one entry below: `"mnemonic" => [Op::MyOp { a, b }] { a: usize, b: Vec<f32> }`.
//!    An attribute type the text form does not know yet gets an
//!    [`Attr`](crate::attr::Attr) impl (`attr.rs`), or its own `tagged!` table here
//!    if it is an enum.
//! 3. Semantic code: its arity ([`Op::arity`]), shape inference
//!    ([`crate::infer::infer_types`]) and the float evaluation in `nnac-interp`; the
//!    compiler points at every other `match` that needs a new arm.

use crate::tagged::tagged;
use crate::{
    Activation, BinaryOp, ConstId, ConvAttrs, ConvTransposeAttrs, CoordTransform, DType, DotKind,
    DotOp, EltwiseKind, EltwiseOp, EltwiseRequant, Epilogue, FusedAct, GemmAttrs, Multiplier,
    NearestMode, NnaOp, Op, PoolAttrs, PoolKind, PoolStage, QdqAttrs, Quant, Requant, ResizeAttrs,
    ResizeMode, ScaleOp,
};

tagged! {
    Op, "op";
    "input" => [Op::Input] {}
    "const" => [Op::Constant(ConstId(id))] { id: u32 }
    "conv" => [Op::Conv(ConvAttrs { kernel, strides, pads, dilations, group })] {
        kernel: Vec<usize>, strides: Vec<usize>, pads: Vec<usize>, dilations: Vec<usize>,
        group: usize,
    }
    "conv_transpose" => [Op::ConvTranspose(ConvTransposeAttrs {
        kernel, strides, pads, dilations, output_padding, group
    })] {
        kernel: Vec<usize>, strides: Vec<usize>, pads: Vec<usize>, dilations: Vec<usize>,
        output_padding: Vec<usize>, group: usize,
    }
    "gemm" => [Op::Gemm(GemmAttrs { alpha, beta, trans_a, trans_b })] {
        alpha: f32, beta: f32, trans_a: bool, trans_b: bool,
    }
    "matmul" => [Op::MatMul] {}
    "batch_norm" => [Op::BatchNorm { epsilon }] { epsilon: f32 }
    "prelu" => [Op::PRelu] {}
    "concat" => [Op::Concat { axis }] { axis: usize }
    "max_pool" => [Op::Pool(PoolAttrs {
        kind: PoolKind::Max, kernel, strides, pads, dilations, ceil_mode, count_include_pad
    })] {
        kernel: Vec<usize>, strides: Vec<usize>, pads: Vec<usize>, dilations: Vec<usize>,
        ceil_mode: bool, count_include_pad: bool,
    }
    "avg_pool" => [Op::Pool(PoolAttrs {
        kind: PoolKind::Avg, kernel, strides, pads, dilations, ceil_mode, count_include_pad
    })] {
        kernel: Vec<usize>, strides: Vec<usize>, pads: Vec<usize>, dilations: Vec<usize>,
        ceil_mode: bool, count_include_pad: bool,
    }
    "global_max_pool" => [Op::GlobalPool(PoolKind::Max)] {}
    "global_avg_pool" => [Op::GlobalPool(PoolKind::Avg)] {}
    "reshape" => [Op::Reshape { shape }] { shape: Vec<usize> }
    "transpose" => [Op::Transpose { perm }] { perm: Vec<usize> }
    "slice" => [Op::Slice { axes, starts, ends }] {
        axes: Vec<usize>, starts: Vec<usize>, ends: Vec<usize>,
    }
    "strided_slice" => [Op::StridedSlice { axes, starts, ends, steps }] {
        axes: Vec<usize>, starts: Vec<usize>, ends: Vec<usize>, steps: Vec<usize>,
    }
    "softmax" => [Op::Softmax { axis }] { axis: usize }
    "resize" => [Op::Resize(ResizeAttrs { mode, coord, sizes, scales })] {
        mode: ResizeMode, coord: CoordTransform, sizes: Vec<usize>, scales: Vec<f32>,
    }
    "pad" => [Op::Pad { pads, value }] { pads: Vec<usize>, value: f32 }
    "lrn" => [Op::Lrn { size, alpha, beta, bias }] {
        size: usize, alpha: f32, beta: f32, bias: f32,
    }
    "power" => [Op::Power { power, scale, shift }] { power: f32, scale: f32, shift: f32 }
    "identity" => [Op::Identity] {}
    "quantize" => [Op::Quantize(QdqAttrs { axis, scales, zero_points, dtype })] {
        axis: Option<usize>, scales: Vec<f32>, zero_points: Vec<i32>, dtype: DType,
    }
    "dequantize" => [Op::Dequantize(QdqAttrs { axis, scales, zero_points, dtype })] {
        axis: Option<usize>, scales: Vec<f32>, zero_points: Vec<i32>, dtype: DType,
    }
    use a: Activation => [Op::Act(a)]
    use b: BinaryOp => [Op::Binary(b)]
    use n: NnaOp => [Op::Nna(n)]
}

tagged! {
    Activation, "activation";
    "relu" => [Activation::Relu] {}
    "leaky_relu" => [Activation::LeakyRelu { alpha }] { alpha: f32 }
    "clip" => [Activation::Clip { min, max }] { min: f32, max: f32 }
    "sigmoid" => [Activation::Sigmoid] {}
    "tanh" => [Activation::Tanh] {}
    "hard_sigmoid" => [Activation::HardSigmoid { alpha, beta }] { alpha: f32, beta: f32 }
    "hard_swish" => [Activation::HardSwish] {}
    "silu" => [Activation::Silu] {}
}

tagged! {
    BinaryOp, "binary op";
    "add" => [BinaryOp::Add] {}
    "sub" => [BinaryOp::Sub] {}
    "mul" => [BinaryOp::Mul] {}
    "div" => [BinaryOp::Div] {}
    "max" => [BinaryOp::Max] {}
    "min" => [BinaryOp::Min] {}
}

tagged! {
    NnaOp, "op";
    "nna.conv" => [NnaOp::Dot(DotOp {
        kind: DotKind::Conv(ConvAttrs { kernel, strides, pads, dilations, group }),
        epilogue: Epilogue { act, requant },
        pool,
    })] {
        kernel: Vec<usize>, strides: Vec<usize>, pads: Vec<usize>, dilations: Vec<usize>,
        group: usize, act: Option<FusedAct>, requant: Option<Requant>,
        pool: Option<PoolStage>,
    }
    "nna.deconv" => [NnaOp::Dot(DotOp {
        kind: DotKind::Deconv(ConvTransposeAttrs {
            kernel, strides, pads, dilations, output_padding, group
        }),
        epilogue: Epilogue { act, requant },
        pool,
    })] {
        kernel: Vec<usize>, strides: Vec<usize>, pads: Vec<usize>, dilations: Vec<usize>,
        output_padding: Vec<usize>, group: usize, act: Option<FusedAct>,
        requant: Option<Requant>, pool: Option<PoolStage>,
    }
    "nna.inner" => [NnaOp::Dot(DotOp {
        kind: DotKind::Inner, epilogue: Epilogue { act, requant }, pool
    })] {
        act: Option<FusedAct>, requant: Option<Requant>, pool: Option<PoolStage>,
    }
    "nna.scale" => [NnaOp::Scale(ScaleOp { epilogue: Epilogue { act, requant }, pool })] {
        act: Option<FusedAct>, requant: Option<Requant>, pool: Option<PoolStage>,
    }
    "nna.eltwise" => [NnaOp::Eltwise(EltwiseOp {
        kind: op, epilogue: Epilogue { act, requant }, inputs
    })] {
        op: EltwiseKind, act: Option<FusedAct>, requant: Option<Requant>,
        inputs: Option<EltwiseRequant>,
    }
    "nna.concat" => [NnaOp::Concat { axis }] { axis: usize }
    "nna.channel_shuffle" => [NnaOp::ChannelShuffle { groups }] { groups: usize }
    "nna.upsample" => [NnaOp::Upsample { factors }] { factors: [usize; 2] }
    "nna.depth_to_space" => [NnaOp::DepthToSpace { block, crd }] { block: usize, crd: bool }
    "nna.host" => [NnaOp::Host(op)] { op: Box<Op> }
}

tagged! {
    FusedAct, "activation";
    "prelu" => [FusedAct::PRelu(slopes)] { slopes: Vec<f32> }
    use a: Activation => [FusedAct::Act(a)]
}

tagged! {
    Requant, "requantization";
    "int" => [Requant::Int { mult, zero_point, lo, hi }] {
        mult: Vec<Multiplier>, zero_point: i32, lo: i32, hi: i32,
    }
    "float" => [Requant::Float { in_scale, inv_out_scale, zero_point, lo, hi }] {
        in_scale: Vec<f32>, inv_out_scale: f32, zero_point: i32, lo: i32, hi: i32,
    }
    "even" => [Requant::Even { scale, zero_point, lo, hi }] {
        scale: Vec<f32>, zero_point: i32, lo: i32, hi: i32,
    }
    "fma_add" => [Requant::FmaAdd { ratio_a, ratio_b, fixed, code_a, code_b, offset, lo, hi }] {
        ratio_a: f32, ratio_b: f32, fixed: f32, code_a: i32, code_b: i32, offset: i32,
        lo: i32, hi: i32,
    }
}

tagged! {
    EltwiseRequant, "input requantization";
    "requant" => [EltwiseRequant { a, b }] { a: Multiplier, b: Multiplier }
}

tagged! {
    PoolStage, "pool stage";
    "max" => [PoolStage {
        kind: PoolKind::Max, kernel, strides, pads, ceil_mode, count_include_pad
    }] {
        kernel: [usize; 2], strides: [usize; 2], pads: [usize; 4], ceil_mode: bool,
        count_include_pad: bool,
    }
    "avg" => [PoolStage {
        kind: PoolKind::Avg, kernel, strides, pads, ceil_mode, count_include_pad
    }] {
        kernel: [usize; 2], strides: [usize; 2], pads: [usize; 4], ceil_mode: bool,
        count_include_pad: bool,
    }
}

tagged! {
    ResizeMode, "resize mode";
    "linear" => [ResizeMode::Linear] {}
    "nearest" => [ResizeMode::Nearest(round)] { round: NearestMode }
}

tagged! {
    NearestMode, "nearest rounding";
    "round_prefer_floor" => [NearestMode::RoundPreferFloor] {}
    "round_prefer_ceil" => [NearestMode::RoundPreferCeil] {}
    "floor" => [NearestMode::Floor] {}
    "ceil" => [NearestMode::Ceil] {}
}

tagged! {
    CoordTransform, "coordinate transform";
    "half_pixel" => [CoordTransform::HalfPixel] {}
    "pytorch_half_pixel" => [CoordTransform::PytorchHalfPixel] {}
    "align_corners" => [CoordTransform::AlignCorners] {}
    "asymmetric" => [CoordTransform::Asymmetric] {}
}

tagged! {
    Quant, "quantization";
    "q" => [Quant::PerTensor { scale, zero_point }] { scale: f32, zero_point: i32 }
    "qc" => [Quant::PerChannel { axis, scales }] { axis: usize, scales: Vec<f32> }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tagged::Tagged;
    use crate::{op_to_text, parse_op};
    use std::collections::BTreeSet;

    /// The name of `op`'s variant. No wildcard arm: a new [`Op`] variant does not
    /// compile here until it is added to [`VARIANTS`] (and to the table).
    fn variant(op: &Op) -> &'static str {
        match op {
            Op::Input => "Input",
            Op::Constant(_) => "Constant",
            Op::Conv(_) => "Conv",
            Op::ConvTranspose(_) => "ConvTranspose",
            Op::Gemm(_) => "Gemm",
            Op::MatMul => "MatMul",
            Op::BatchNorm { .. } => "BatchNorm",
            Op::Act(_) => "Act",
            Op::PRelu => "PRelu",
            Op::Binary(_) => "Binary",
            Op::Concat { .. } => "Concat",
            Op::Pool(_) => "Pool",
            Op::GlobalPool(_) => "GlobalPool",
            Op::Reshape { .. } => "Reshape",
            Op::Transpose { .. } => "Transpose",
            Op::Slice { .. } => "Slice",
            Op::StridedSlice { .. } => "StridedSlice",
            Op::Softmax { .. } => "Softmax",
            Op::Resize(_) => "Resize",
            Op::Pad { .. } => "Pad",
            Op::Lrn { .. } => "Lrn",
            Op::Power { .. } => "Power",
            Op::Identity => "Identity",
            Op::Quantize(_) => "Quantize",
            Op::Dequantize(_) => "Dequantize",
            Op::Nna(n) => match n {
                NnaOp::Dot(_) => "Nna::Dot",
                NnaOp::Scale(_) => "Nna::Scale",
                NnaOp::Eltwise(_) => "Nna::Eltwise",
                NnaOp::Concat { .. } => "Nna::Concat",
                NnaOp::ChannelShuffle { .. } => "Nna::ChannelShuffle",
                NnaOp::Upsample { .. } => "Nna::Upsample",
                NnaOp::DepthToSpace { .. } => "Nna::DepthToSpace",
                NnaOp::Host(_) => "Nna::Host",
            },
        }
    }

    /// Every variant of [`Op`] and [`NnaOp`].
    const VARIANTS: [&str; 33] = [
        "Input",
        "Constant",
        "Conv",
        "ConvTranspose",
        "Gemm",
        "MatMul",
        "BatchNorm",
        "Act",
        "PRelu",
        "Binary",
        "Concat",
        "Pool",
        "GlobalPool",
        "Reshape",
        "Transpose",
        "Slice",
        "StridedSlice",
        "Softmax",
        "Resize",
        "Pad",
        "Lrn",
        "Power",
        "Identity",
        "Quantize",
        "Dequantize",
        "Nna::Dot",
        "Nna::Scale",
        "Nna::Eltwise",
        "Nna::Concat",
        "Nna::ChannelShuffle",
        "Nna::Upsample",
        "Nna::DepthToSpace",
        "Nna::Host",
    ];

    #[test]
    fn every_op_variant_has_a_table_entry_and_back() {
        let samples = Op::samples();
        let entries = Op::entries();
        assert_eq!(samples.len(), entries.len());
        let covered: BTreeSet<&str> = samples.iter().map(variant).collect();
        let all: BTreeSet<&str> = VARIANTS.into_iter().collect();
        assert_eq!(all.len(), VARIANTS.len(), "VARIANTS lists a variant twice");
        assert_eq!(
            covered, all,
            "Op variants without a table entry (or the opposite)"
        );
        let tags: BTreeSet<&str> = entries.iter().map(|e| e.tag).collect();
        assert_eq!(tags.len(), entries.len(), "two entries share a mnemonic");
        for (op, e) in samples.iter().zip(&entries) {
            assert_eq!(op.mnemonic(), e.tag, "{op:?}");
        }
    }

    #[test]
    fn every_entry_round_trips_through_print_and_parse() {
        for (op, e) in Op::samples().into_iter().zip(Op::entries()) {
            let text = op_to_text(&op);
            let (tag, rec) = op.encode();
            let names: Vec<&str> = rec.entries.iter().map(|(k, _, _)| k.as_str()).collect();
            assert_eq!((tag, names.as_slice()), (e.tag, e.attrs), "{text}");
            let back = parse_op(&text).unwrap_or_else(|err| panic!("{text}: {err}"));
            assert_eq!(back, op, "{text}");
            assert_eq!(op_to_text(&back), text);
        }
    }

    /// The nested tables: each entry round-trips as an attribute value, with `none`
    /// where the attribute is optional.
    #[test]
    fn nested_entries_round_trip() {
        use crate::attr::Attr;
        fn check<T: Tagged + Attr + PartialEq + std::fmt::Debug>() {
            for v in T::samples() {
                assert_eq!(T::dec(&v.enc()).unwrap(), v);
            }
            assert_eq!(Option::<T>::dec(&None::<T>.enc()).unwrap(), None);
        }
        check::<Activation>();
        check::<FusedAct>();
        check::<Requant>();
        check::<EltwiseRequant>();
        check::<PoolStage>();
        check::<ResizeMode>();
        check::<NearestMode>();
        check::<CoordTransform>();
        check::<Quant>();
    }

    #[test]
    fn every_missing_or_unknown_attribute_names_op_and_attribute() {
        for e in Op::entries() {
            for missing in e.attrs {
                let op = Op::samples()
                    .into_iter()
                    .find(|o| o.mnemonic() == e.tag)
                    .unwrap();
                let (_, mut rec) = op.encode();
                rec.entries.retain(|(k, _, _)| k != missing);
                let mut text = e.tag.to_string();
                if !rec.entries.is_empty() {
                    rec.write(&mut text);
                }
                let err = parse_op(&text).unwrap_err().to_string();
                let want = format!("op '{}' is missing attribute '{missing}'", e.tag);
                assert!(err.contains(&want), "{text}: {err}");
            }
            let text = format!("{}{{bogus=1}}", e.tag);
            let err = parse_op(&text).unwrap_err().to_string();
            let first = e.attrs.first().copied().unwrap_or("bogus");
            assert!(err.contains(&format!("op '{}'", e.tag)), "{text}: {err}");
            assert!(err.contains(&format!("'{first}'")), "{text}: {err}");
        }
    }
}
