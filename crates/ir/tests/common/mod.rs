//! Graphs shared by the IR tests: one using every float op, one using every NNA op
//! with quantized types. Built with the public IR API only.
#![allow(dead_code)]

use nnac_ir::*;

pub fn f32c(g: &mut Graph, name: &str, shape: &[usize], seed: u32) -> Value {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 997.0 - 0.5)
        .collect();
    g.add_constant(
        name,
        Tensor::f32(shape.to_vec(), data).expect("shape matches"),
    )
}

fn add(g: &mut Graph, name: &str, op: Op, ins: &[Value]) -> Value {
    let id = g
        .add_node(name, op, ins)
        .unwrap_or_else(|e| panic!("building {name}: {e}"));
    Value::new(id, 0)
}

fn conv_attrs(k: usize, s: usize, p: usize, group: usize) -> ConvAttrs {
    ConvAttrs {
        kernel: vec![k, k],
        strides: vec![s, s],
        pads: vec![p; 4],
        dilations: vec![1, 1],
        group,
    }
}

/// Every float IR op (each activation, binary op, pool kind and resize mode), with
/// awkward floats (subnormal, -0.0, infinities) in attributes and awkward names.
pub fn all_ops_graph() -> Graph {
    let mut g = Graph::new("all \"ops\"");
    let x = g.add_input("x", TensorType::f32(vec![1, 4, 8, 8]));
    let w = f32c(&mut g, "conv.w", &[8, 4, 3, 3], 1);
    let b = f32c(&mut g, "conv.b", &[8], 2);
    let conv = add(
        &mut g,
        "onnx::Conv_1",
        Op::Conv(conv_attrs(3, 1, 1, 1)),
        &[x, w, b],
    );
    let bn_params: Vec<Value> = (0..4)
        .map(|i| f32c(&mut g, &format!("bn.p{i}"), &[8], 10 + i))
        .collect();
    let mut ins = vec![conv];
    ins.extend(bn_params);
    let mut y = add(&mut g, "bn", Op::BatchNorm { epsilon: 1e-5 }, &ins);
    let acts = [
        Activation::Relu,
        Activation::LeakyRelu { alpha: 0.1 },
        Activation::Clip {
            min: f32::NEG_INFINITY,
            max: 6.0,
        },
        Activation::Sigmoid,
        Activation::Tanh,
        Activation::HardSigmoid {
            alpha: 1.0 / 3.0,
            beta: -0.0,
        },
        Activation::HardSwish,
        Activation::Silu,
    ];
    for (i, a) in acts.into_iter().enumerate() {
        y = add(&mut g, &format!("act {i}"), Op::Act(a), &[y]);
    }
    let slope = f32c(&mut g, "slope", &[8, 1, 1], 3);
    y = add(&mut g, "prelu", Op::PRelu, &[y, slope]);
    let k = f32c(&mut g, "k", &[1, 8, 1, 1], 4);
    for b in [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Max,
        BinaryOp::Min,
    ] {
        y = add(
            &mut g,
            &format!("bin/{}", b.mnemonic()),
            Op::Binary(b),
            &[y, k],
        );
    }
    let maxp = PoolAttrs {
        kind: PoolKind::Max,
        kernel: vec![2, 2],
        strides: vec![2, 2],
        pads: vec![0; 4],
        dilations: vec![1, 1],
        ceil_mode: false,
        count_include_pad: false,
    };
    let mp = add(&mut g, "maxpool", Op::Pool(maxp), &[y]);
    let avgp = PoolAttrs {
        kind: PoolKind::Avg,
        kernel: vec![3, 3],
        strides: vec![2, 2],
        pads: vec![1, 1, 1, 1],
        dilations: vec![1, 1],
        ceil_mode: true,
        count_include_pad: true,
    };
    let ap = add(&mut g, "avgpool", Op::Pool(avgp), &[y]);
    let gm = add(&mut g, "gmax", Op::GlobalPool(PoolKind::Max), &[mp]);
    let ga = add(&mut g, "gavg", Op::GlobalPool(PoolKind::Avg), &[ap]);
    let cat = add(&mut g, "concat", Op::Concat { axis: 1 }, &[gm, ga]);
    let flat = add(
        &mut g,
        "flatten",
        Op::Reshape { shape: vec![1, 16] },
        &[cat],
    );
    let fw = f32c(&mut g, "fc.w", &[10, 16], 5);
    let fb = f32c(&mut g, "fc.b", &[10], 6);
    let gemm = GemmAttrs {
        alpha: f32::MIN_POSITIVE / 4.0,
        beta: 1.0,
        trans_a: false,
        trans_b: true,
    };
    let fc = add(&mut g, "fc", Op::Gemm(gemm), &[flat, fw, fb]);
    let mw = f32c(&mut g, "mm.w", &[10, 5], 7);
    let mm = add(&mut g, "matmul", Op::MatMul, &[fc, mw]);
    let sm = add(&mut g, "softmax", Op::Softmax { axis: 1 }, &[mm]);
    let tr = add(
        &mut g,
        "transpose",
        Op::Transpose { perm: vec![1, 0] },
        &[sm],
    );
    let sl = add(
        &mut g,
        "slice",
        Op::Slice {
            axes: vec![0],
            starts: vec![1],
            ends: vec![4],
        },
        &[tr],
    );
    let ss = add(
        &mut g,
        "strided_slice",
        Op::StridedSlice {
            axes: vec![0],
            starts: vec![0],
            ends: vec![3],
            steps: vec![2],
        },
        &[sl],
    );
    g.add_output("strided", ss);
    let dw = f32c(&mut g, "deconv.w", &[8, 2, 2, 2], 8);
    let dc = ConvTransposeAttrs {
        kernel: vec![2, 2],
        strides: vec![2, 2],
        pads: vec![0; 4],
        dilations: vec![1, 1],
        output_padding: vec![1, 1],
        group: 2,
    };
    let up = add(&mut g, "deconv", Op::ConvTranspose(dc), &[mp, dw]);
    let mut r = up;
    let modes = [
        ResizeMode::Nearest(NearestMode::RoundPreferFloor),
        ResizeMode::Nearest(NearestMode::RoundPreferCeil),
        ResizeMode::Nearest(NearestMode::Floor),
        ResizeMode::Nearest(NearestMode::Ceil),
        ResizeMode::Linear,
    ];
    let coords = [
        CoordTransform::HalfPixel,
        CoordTransform::PytorchHalfPixel,
        CoordTransform::AlignCorners,
        CoordTransform::Asymmetric,
        CoordTransform::HalfPixel,
    ];
    for (i, (mode, coord)) in modes.into_iter().zip(coords).enumerate() {
        let sizes = vec![1, 4, 9 + i, 9 + i];
        let scales = vec![1.0, 1.0, (9 + i) as f32 / 9.0, (9 + i) as f32 / 9.0];
        r = add(
            &mut g,
            &format!("resize{i}"),
            Op::Resize(ResizeAttrs {
                mode,
                coord,
                sizes,
                scales,
            }),
            &[r],
        );
    }
    let pad = add(
        &mut g,
        "pad",
        Op::Pad {
            pads: vec![0, 0, 1, 2, 0, 0, 2, 1],
            value: f32::INFINITY,
        },
        &[r],
    );
    let lrn = add(
        &mut g,
        "lrn",
        Op::Lrn {
            size: 3,
            alpha: 1e-4,
            beta: 0.75,
            bias: 1.0,
        },
        &[pad],
    );
    let pw = add(
        &mut g,
        "power",
        Op::Power {
            power: 2.0,
            scale: -1.5e-30,
            shift: 0.25,
        },
        &[lrn],
    );
    let id = add(&mut g, "é identity", Op::Identity, &[pw]);
    let qa = add(
        &mut g,
        "quantize",
        Op::Quantize(QdqAttrs {
            axis: Some(1),
            scales: vec![0.5, 1.5e-3, 2.0, 7.0e-2],
            zero_points: vec![0, -3, 127, -128],
            dtype: DType::I8,
        }),
        &[id],
    );
    let dq = add(
        &mut g,
        "dequantize",
        Op::Dequantize(QdqAttrs {
            axis: None,
            scales: vec![0.25],
            zero_points: vec![128],
            dtype: DType::U8,
        }),
        &[qa],
    );
    g.add_output("codes", dq);
    g.add_output("probs", tr);
    g.add_output("probs_part", sl);
    g.add_output("image", id);
    g.add_output("pooled:max", mp);
    g
}

fn qtype(dtype: DType, shape: Vec<usize>, quant: Quant) -> TensorType {
    TensorType {
        dtype,
        shape,
        quant: Some(quant),
    }
}

fn act8(shape: Vec<usize>, scale: f32, zp: i32) -> TensorType {
    qtype(
        DType::I8,
        shape,
        Quant::PerTensor {
            scale,
            zero_point: zp,
        },
    )
}

fn qconst(
    g: &mut Graph,
    name: &str,
    shape: Vec<usize>,
    dtype: DType,
    axis: Option<usize>,
) -> Value {
    let n: usize = shape.iter().product();
    let data = match dtype {
        DType::I8 => TensorData::I8((0..n).map(|i| (i as i64 * 37 % 255 - 127) as i8).collect()),
        DType::U8 => TensorData::U8((0..n).map(|i| (i * 13 % 256) as u8).collect()),
        DType::I64 => TensorData::I64((0..n).map(|i| i as i64 * -1_000_000_007).collect()),
        _ => TensorData::I32((0..n).map(|i| i as i32 * -100_003).collect()),
    };
    let v = g.add_constant(
        name,
        Tensor::new(shape.clone(), data).expect("shape matches"),
    );
    if let Some(axis) = axis {
        let scales = (0..shape[axis]).map(|c| 0.001 * (c + 1) as f32).collect();
        g.node_mut(v.node).outputs[0].quant = Some(Quant::PerChannel { axis, scales });
    }
    v
}

fn mults(n: usize) -> Vec<Multiplier> {
    (0..n)
        .map(|i| Multiplier {
            mult: 1_073_741_824 + i as i32 * 7919,
            shift: i as u8 * 3,
        })
        .collect()
}

fn int_requant(n: usize) -> Requant {
    Requant::Int {
        mult: mults(n),
        zero_point: -3,
        lo: -128,
        hi: 127,
    }
}

fn nna(g: &mut Graph, name: &str, op: NnaOp, ins: &[Value], out: TensorType) -> Value {
    Value::new(g.add_node_typed(name, Op::Nna(op), ins, vec![out]), 0)
}

/// Every NNA compound op with quantized (int8 / int32) types and constants of every
/// integer dtype.
pub fn nna_graph() -> Graph {
    let mut g = Graph::new("quantized");
    let x = g.add_input("x", act8(vec![1, 4, 8, 8], 0.05, -3));
    let w = qconst(&mut g, "w", vec![8, 4, 3, 3], DType::I8, Some(0));
    let b = qconst(&mut g, "b", vec![8], DType::I32, None);
    let pool = PoolStage {
        kind: PoolKind::Max,
        kernel: [2, 2],
        strides: [2, 2],
        pads: [0; 4],
        ceil_mode: false,
        count_include_pad: false,
    };
    let conv = DotOp {
        kind: DotKind::Conv(conv_attrs(3, 1, 1, 1)),
        epilogue: Epilogue {
            act: Some(FusedAct::Act(Activation::Relu)),
            requant: Some(int_requant(8)),
        },
        pool: Some(pool),
    };
    let c = nna(
        &mut g,
        "conv",
        NnaOp::Dot(conv),
        &[x, w, b],
        act8(vec![1, 8, 4, 4], 0.1, -128),
    );
    let sw = qconst(&mut g, "sw", vec![8], DType::I8, None);
    let sb = qconst(&mut g, "sb", vec![8], DType::I32, None);
    let float_rq = Requant::Float {
        in_scale: vec![1e-3; 8],
        inv_out_scale: 9.5,
        zero_point: 0,
        lo: -128,
        hi: 127,
    };
    let hs = Some(FusedAct::Act(Activation::HardSigmoid {
        alpha: 0.2,
        beta: 0.5,
    }));
    let scale = ScaleOp {
        epilogue: Epilogue {
            act: hs,
            requant: Some(float_rq),
        },
        pool: None,
    };
    let s = nna(
        &mut g,
        "scale",
        NnaOp::Scale(scale),
        &[c, sw, sb],
        act8(vec![1, 8, 4, 4], 0.02, 5),
    );
    let elt = EltwiseOp {
        kind: EltwiseKind::Add,
        epilogue: Epilogue {
            act: None,
            requant: Some(int_requant(1)),
        },
        inputs: Some(EltwiseRequant {
            a: mults(1)[0],
            b: Multiplier {
                mult: i32::MAX,
                shift: 63,
            },
        }),
    };
    let e = nna(
        &mut g,
        "add",
        NnaOp::Eltwise(elt),
        &[s, c],
        act8(vec![1, 8, 4, 4], 0.2, 0),
    );
    let cat = nna(
        &mut g,
        "cat",
        NnaOp::Concat { axis: 1 },
        &[e, c],
        act8(vec![1, 16, 4, 4], 0.2, 0),
    );
    let dw = qconst(&mut g, "dw", vec![16, 1, 2, 2], DType::I8, Some(0));
    let db = qconst(&mut g, "db", vec![16], DType::I32, None);
    let deconv = DotOp {
        kind: DotKind::Deconv(ConvTransposeAttrs {
            kernel: vec![2, 2],
            strides: vec![2, 2],
            pads: vec![0; 4],
            dilations: vec![1, 1],
            output_padding: vec![0, 0],
            group: 16,
        }),
        epilogue: Epilogue {
            act: Some(FusedAct::PRelu(vec![0.25; 16])),
            requant: Some(int_requant(16)),
        },
        pool: None,
    };
    let shuffled = nna(
        &mut g,
        "shuffle",
        NnaOp::ChannelShuffle { groups: 4 },
        &[cat],
        act8(vec![1, 16, 4, 4], 0.2, 0),
    );
    let up = nna(
        &mut g,
        "deconv",
        NnaOp::Dot(deconv),
        &[shuffled, dw, db],
        act8(vec![1, 16, 8, 8], 0.2, 1),
    );
    let host = NnaOp::Host(Box::new(Op::Reshape {
        shape: vec![1, 256],
    }));
    let flat = nna(&mut g, "flatten", host, &[cat], act8(vec![1, 256], 0.2, 0));
    let iw = qconst(&mut g, "iw", vec![10, 256], DType::I8, Some(0));
    let ib = qconst(&mut g, "ib", vec![10], DType::I32, None);
    let inner = DotOp {
        kind: DotKind::Inner,
        epilogue: Epilogue {
            act: None,
            requant: Some(int_requant(10)),
        },
        pool: None,
    };
    let fc = nna(
        &mut g,
        "fc",
        NnaOp::Dot(inner),
        &[flat, iw, ib],
        act8(vec![1, 10], 0.3, 2),
    );
    let host_sm = NnaOp::Host(Box::new(Op::Softmax { axis: 1 }));
    let sm = nna(
        &mut g,
        "softmax",
        host_sm,
        &[fc],
        act8(vec![1, 10], 1.0 / 256.0, -128),
    );
    // Constants of the remaining integer dtypes, unused (allowed by the verifier).
    qconst(&mut g, "u8 table", vec![3, 5], DType::U8, None);
    qconst(&mut g, "shape", vec![4], DType::I64, None);
    let nearest = nna(
        &mut g,
        "upsample",
        NnaOp::Upsample { factors: [2, 3] },
        &[shuffled],
        act8(vec![1, 16, 8, 12], 0.2, 0),
    );
    let d2s = nna(
        &mut g,
        "depth_to_space",
        NnaOp::DepthToSpace {
            block: 2,
            crd: true,
        },
        &[shuffled],
        act8(vec![1, 4, 8, 8], 0.2, 0),
    );
    g.add_output("logits", sm);
    g.add_output("mask", up);
    g.add_output("nearest", nearest);
    g.add_output("pixels", d2s);
    g
}

/// A small valid graph: x -> conv(w, b) -> relu, output "y".
pub fn tiny_graph() -> Graph {
    let mut g = Graph::new("tiny");
    let x = g.add_input("x", TensorType::f32(vec![1, 3, 8, 8]));
    let w = f32c(&mut g, "w", &[2, 3, 1, 1], 1);
    let b = g.add_constant("b", Tensor::f32(vec![2], vec![0.5, -1.0]).unwrap());
    let c = add(&mut g, "conv", Op::Conv(conv_attrs(1, 1, 0, 1)), &[x, w, b]);
    let r = add(&mut g, "relu", Op::Act(Activation::Relu), &[c]);
    g.add_output("y", r);
    g
}

/// Every op variant, as a compile-time reminder: a new `Op` or `NnaOp` variant fails
/// to compile here until the fixtures above (and so the round-trip tests) cover it.
pub fn op_family(op: &Op) -> &'static str {
    match op {
        Op::Input
        | Op::Constant(_)
        | Op::Conv(_)
        | Op::ConvTranspose(_)
        | Op::Gemm(_)
        | Op::MatMul
        | Op::BatchNorm { .. }
        | Op::Act(_)
        | Op::PRelu
        | Op::Binary(_)
        | Op::Concat { .. }
        | Op::Pool(_)
        | Op::GlobalPool(_)
        | Op::Reshape { .. }
        | Op::Transpose { .. }
        | Op::Slice { .. }
        | Op::StridedSlice { .. }
        | Op::Softmax { .. }
        | Op::Resize(_)
        | Op::Pad { .. }
        | Op::Lrn { .. }
        | Op::Power { .. }
        | Op::Quantize(_)
        | Op::Dequantize(_)
        | Op::Identity => "ir",
        Op::Nna(n) => match n {
            NnaOp::Dot(_)
            | NnaOp::Scale(_)
            | NnaOp::Eltwise(_)
            | NnaOp::Concat { .. }
            | NnaOp::ChannelShuffle { .. }
            | NnaOp::Upsample { .. }
            | NnaOp::DepthToSpace { .. }
            | NnaOp::Host(_) => "nna",
        },
    }
}

/// Every mnemonic the two fixture graphs must contain.
pub const ALL_MNEMONICS: &[&str] = &[
    "input",
    "const",
    "conv",
    "conv_transpose",
    "gemm",
    "matmul",
    "batch_norm",
    "relu",
    "leaky_relu",
    "clip",
    "sigmoid",
    "tanh",
    "hard_sigmoid",
    "hard_swish",
    "silu",
    "prelu",
    "add",
    "sub",
    "mul",
    "div",
    "max",
    "min",
    "concat",
    "max_pool",
    "avg_pool",
    "global_max_pool",
    "global_avg_pool",
    "reshape",
    "transpose",
    "slice",
    "softmax",
    "resize",
    "pad",
    "lrn",
    "power",
    "identity",
    "nna.conv",
    "nna.deconv",
    "nna.inner",
    "nna.scale",
    "nna.eltwise",
    "nna.concat",
    "nna.channel_shuffle",
    "nna.upsample",
    "nna.host",
];
