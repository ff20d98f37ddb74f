//! ONNX importer: one test (or more) per op family and the opset variants, on models
//! built in code.

mod onnx_support;

use nnac_ir::*;
use onnx_support::*;

fn w(name: &str, dims: &[i64]) -> nnac_frontend::proto::onnx::TensorProto {
    let n: i64 = dims.iter().product();
    tensor_f32(
        name,
        dims,
        &(0..n).map(|i| i as f32 * 0.01).collect::<Vec<_>>(),
    )
}

#[test]
fn conv_with_group_dilation_and_explicit_pads() {
    let n = node(
        "Conv",
        &["x", "w", "b"],
        &["y"],
        vec![
            a_i("group", 2),
            a_is("dilations", &[2, 2]),
            a_is("pads", &[1, 2, 1, 2]),
            a_is("strides", &[2, 1]),
        ],
    );
    let m = model(
        13,
        vec![n],
        vec![vi("x", &[1, 4, 9, 9])],
        vec![vi("y", &[])],
        vec![w("w", &[6, 2, 3, 3]), w("b", &[6])],
    );
    let g = import_ok(&m);
    let Op::Conv(a) = only_op(&g) else { panic!() };
    assert_eq!(
        (
            a.group,
            a.kernel.clone(),
            a.strides.clone(),
            a.dilations.clone(),
            a.pads.clone()
        ),
        (2, vec![3, 3], vec![2, 1], vec![2, 2], vec![1, 2, 1, 2])
    );
    assert_eq!(output_shape(&g, 0), vec![1, 6, 4, 9]);
    assert_eq!(g.outputs()[0].name, "y");
}

#[test]
fn conv_auto_pad_same_upper_and_lower() {
    for (mode, pads) in [
        ("SAME_UPPER", vec![0, 0, 1, 1]),
        ("SAME_LOWER", vec![1, 1, 0, 0]),
        ("VALID", vec![0, 0, 0, 0]),
    ] {
        let n = node(
            "Conv",
            &["x", "w"],
            &["y"],
            vec![a_s("auto_pad", mode), a_is("strides", &[2, 2])],
        );
        let m = model(
            11,
            vec![n],
            vec![vi("x", &[1, 1, 4, 4])],
            vec![vi("y", &[])],
            vec![w("w", &[1, 1, 3, 3])],
        );
        let Op::Conv(a) = only_op(&import_ok(&m)) else {
            panic!()
        };
        assert_eq!(a.pads, pads, "{mode}");
    }
}

#[test]
fn conv_kernel_shape_must_match_weights() {
    let n = node(
        "Conv",
        &["x", "w"],
        &["y"],
        vec![a_is("kernel_shape", &[5, 5])],
    );
    let m = model(
        13,
        vec![n],
        vec![vi("x", &[1, 1, 8, 8])],
        vec![vi("y", &[])],
        vec![w("w", &[1, 1, 3, 3])],
    );
    let e = import(&m).unwrap_err().to_string();
    assert!(e.contains("kernel_shape") && e.contains("Conv_y"), "{e}");
}

#[test]
fn conv_transpose_output_shape_and_output_padding() {
    // in 3x3, k 3, strides 3x2: full output 9x7; output_shape 10x8 -> one extra row/col.
    let n = node(
        "ConvTranspose",
        &["x", "w"],
        &["y"],
        vec![a_is("strides", &[3, 2]), a_is("output_shape", &[10, 8])],
    );
    let m = model(
        13,
        vec![n],
        vec![vi("x", &[1, 1, 3, 3])],
        vec![vi("y", &[])],
        vec![w("w", &[1, 2, 3, 3])],
    );
    let g = import_ok(&m);
    let Op::ConvTranspose(a) = only_op(&g) else {
        panic!()
    };
    assert_eq!(
        (a.pads.clone(), a.output_padding.clone()),
        (vec![0, 0, 0, 0], vec![1, 1])
    );
    assert_eq!(output_shape(&g, 0), vec![1, 2, 10, 8]);

    let n = node(
        "ConvTranspose",
        &["x", "w"],
        &["y"],
        vec![
            a_is("strides", &[2, 2]),
            a_is("pads", &[1, 1, 1, 1]),
            a_is("output_padding", &[1, 1]),
        ],
    );
    let m = model(
        13,
        vec![n],
        vec![vi("x", &[1, 1, 3, 3])],
        vec![vi("y", &[])],
        vec![w("w", &[1, 2, 3, 3])],
    );
    assert_eq!(output_shape(&import_ok(&m), 0), vec![1, 2, 6, 6]);
}

#[test]
fn conv_transpose_same_upper_gives_input_times_stride() {
    let n = node(
        "ConvTranspose",
        &["x", "w"],
        &["y"],
        vec![a_is("strides", &[2, 2]), a_s("auto_pad", "SAME_UPPER")],
    );
    let m = model(
        13,
        vec![n],
        vec![vi("x", &[1, 1, 3, 3])],
        vec![vi("y", &[])],
        vec![w("w", &[1, 2, 3, 3])],
    );
    let g = import_ok(&m);
    assert_eq!(output_shape(&g, 0), vec![1, 2, 6, 6]);
    let Op::ConvTranspose(a) = only_op(&g) else {
        panic!()
    };
    assert_eq!(a.pads, vec![0, 0, 1, 1]);
}

#[test]
fn gemm_and_matmul() {
    let n = node(
        "Gemm",
        &["a", "b", "c"],
        &["y"],
        vec![a_f("alpha", 0.5), a_f("beta", 2.0), a_i("transB", 1)],
    );
    let m = model(
        13,
        vec![n],
        vec![vi("a", &[1, 4])],
        vec![vi("y", &[])],
        vec![w("b", &[3, 4]), w("c", &[3])],
    );
    let g = import_ok(&m);
    assert_eq!(
        only_op(&g),
        Op::Gemm(GemmAttrs {
            alpha: 0.5,
            beta: 2.0,
            trans_a: false,
            trans_b: true
        })
    );
    assert_eq!(output_shape(&g, 0), vec![1, 3]);

    let n = node("MatMul", &["a", "b"], &["y"], vec![]);
    let m = model(
        13,
        vec![n],
        vec![vi("a", &[1, 2, 4])],
        vec![vi("y", &[])],
        vec![w("b", &[4, 5])],
    );
    let g = import_ok(&m);
    assert_eq!(only_op(&g), Op::MatMul);
    assert_eq!(output_shape(&g, 0), vec![1, 2, 5]);
}

#[test]
fn batch_norm_and_its_training_outputs() {
    let ins = ["x", "s", "b", "m", "v"];
    let inits = vec![w("s", &[3]), w("b", &[3]), w("m", &[3]), w("v", &[3])];
    let n = node(
        "BatchNormalization",
        &ins,
        &["y"],
        vec![a_f("epsilon", 1e-3)],
    );
    let g = import_ok(&model(
        15,
        vec![n],
        vec![vi("x", &[1, 3, 2, 2])],
        vec![vi("y", &[])],
        inits.clone(),
    ));
    assert_eq!(only_op(&g), Op::BatchNorm { epsilon: 1e-3 });

    // Opset 7: spatial = 0 is unsupported.
    let n = node("BatchNormalization", &ins, &["y"], vec![a_i("spatial", 0)]);
    let e = import(&model(
        7,
        vec![n],
        vec![vi("x", &[1, 3, 2, 2])],
        vec![vi("y", &[])],
        inits.clone(),
    ))
    .unwrap_err();
    assert!(e.to_string().contains("spatial"), "{e}");

    // An extra (training) output is fine until something uses it.
    let n = node("BatchNormalization", &ins, &["y", "mean_out"], vec![]);
    import_ok(&model(
        9,
        vec![n.clone()],
        vec![vi("x", &[1, 3, 2, 2])],
        vec![vi("y", &[])],
        inits.clone(),
    ));
    let e = import(&model(
        9,
        vec![n],
        vec![vi("x", &[1, 3, 2, 2])],
        vec![vi("y", &[]), vi("mean_out", &[])],
        inits,
    ))
    .unwrap_err();
    assert!(e.to_string().contains("output #1"), "{e}");
}

#[test]
fn activations() {
    let cases: Vec<(&str, Vec<_>, Activation)> = vec![
        ("Relu", vec![], Activation::Relu),
        ("LeakyRelu", vec![], Activation::LeakyRelu { alpha: 0.01 }),
        (
            "LeakyRelu",
            vec![a_f("alpha", 0.2)],
            Activation::LeakyRelu { alpha: 0.2 },
        ),
        ("Sigmoid", vec![], Activation::Sigmoid),
        ("Tanh", vec![], Activation::Tanh),
        (
            "HardSigmoid",
            vec![],
            Activation::HardSigmoid {
                alpha: 0.2,
                beta: 0.5,
            },
        ),
        (
            "HardSigmoid",
            vec![a_f("alpha", 0.1666), a_f("beta", 0.4)],
            Activation::HardSigmoid {
                alpha: 0.1666,
                beta: 0.4,
            },
        ),
        ("HardSwish", vec![], Activation::HardSwish),
    ];
    for (op, attrs, want) in cases {
        let m = model(
            14,
            vec![node(op, &["x"], &["y"], attrs)],
            vec![vi("x", &[1, 3, 4, 4])],
            vec![vi("y", &[])],
            vec![],
        );
        assert_eq!(only_op(&import_ok(&m)), Op::Act(want), "{op}");
    }
}

#[test]
fn clip_bounds_are_attributes_before_11_and_inputs_since() {
    let m = model(
        6,
        vec![node(
            "Clip",
            &["x"],
            &["y"],
            vec![a_f("min", 0.0), a_f("max", 6.0)],
        )],
        vec![vi("x", &[1, 3])],
        vec![vi("y", &[])],
        vec![],
    );
    assert_eq!(
        only_op(&import_ok(&m)),
        Op::Act(Activation::Clip { min: 0.0, max: 6.0 })
    );
    let inits = vec![
        tensor_f32("lo", &[], &[-1.0]),
        tensor_f32("hi", &[], &[1.0]),
    ];
    let m = model(
        13,
        vec![node("Clip", &["x", "lo", "hi"], &["y"], vec![])],
        vec![vi("x", &[1, 3])],
        vec![vi("y", &[])],
        inits,
    );
    assert_eq!(
        only_op(&import_ok(&m)),
        Op::Act(Activation::Clip {
            min: -1.0,
            max: 1.0
        })
    );
    let m = model(
        13,
        vec![node("Clip", &["x", "", "hi"], &["y"], vec![])],
        vec![vi("x", &[1, 3])],
        vec![vi("y", &[])],
        vec![tensor_f32("hi", &[], &[6.0])],
    );
    assert_eq!(
        only_op(&import_ok(&m)),
        Op::Act(Activation::Clip {
            min: f32::NEG_INFINITY,
            max: 6.0
        })
    );
}

#[test]
fn prelu_per_channel_slope() {
    let m = model(
        9,
        vec![node("PRelu", &["x", "s"], &["y"], vec![])],
        vec![vi("x", &[1, 3, 2, 2])],
        vec![vi("y", &[])],
        vec![w("s", &[3, 1, 1])],
    );
    assert_eq!(only_op(&import_ok(&m)), Op::PRelu);
    // Opset 6: a 1-D slope is per channel.
    let m = model(
        6,
        vec![node("PRelu", &["x", "s"], &["y"], vec![])],
        vec![vi("x", &[1, 3, 2, 2])],
        vec![vi("y", &[])],
        vec![w("s", &[3])],
    );
    let g = import_ok(&m);
    assert_eq!(ops(&g), vec![Op::PRelu]);
    assert_eq!(const_input(&g, 0, 1).shape, vec![3, 1, 1]);
    // A runtime slope gets a Reshape.
    let m = model(
        6,
        vec![node("PRelu", &["x", "s"], &["y"], vec![])],
        vec![vi("x", &[1, 3, 2, 2]), vi("s", &[3])],
        vec![vi("y", &[])],
        vec![],
    );
    assert_eq!(
        ops(&import_ok(&m)),
        vec![
            Op::Reshape {
                shape: vec![3, 1, 1]
            },
            Op::PRelu
        ]
    );
}

#[test]
fn binary_ops_broadcast_and_legacy_axis() {
    for (op, b) in [
        ("Add", BinaryOp::Add),
        ("Sub", BinaryOp::Sub),
        ("Mul", BinaryOp::Mul),
        ("Div", BinaryOp::Div),
    ] {
        let m = model(
            13,
            vec![node(op, &["x", "c"], &["y"], vec![])],
            vec![vi("x", &[1, 3, 2, 2])],
            vec![vi("y", &[])],
            vec![w("c", &[3, 1, 1])],
        );
        let g = import_ok(&m);
        assert_eq!(only_op(&g), Op::Binary(b));
        assert_eq!(output_shape(&g, 0), vec![1, 3, 2, 2]);
    }
    // Opset 6 broadcast=1 axis=1: B [3] aligns with axis 1.
    let n = node(
        "Add",
        &["x", "c"],
        &["y"],
        vec![a_i("broadcast", 1), a_i("axis", 1)],
    );
    let g = import_ok(&model(
        6,
        vec![n],
        vec![vi("x", &[1, 3, 2, 2])],
        vec![vi("y", &[])],
        vec![w("c", &[3])],
    ));
    assert_eq!(ops(&g), vec![Op::Binary(BinaryOp::Add)]);
    assert_eq!(const_input(&g, 0, 1).shape, vec![3, 1, 1]);
}

#[test]
fn sum_max_min_mean_are_chains() {
    let ins = vec![vi("a", &[1, 3]), vi("b", &[1, 3]), vi("c", &[3])];
    let g = import_ok(&model(
        13,
        vec![node("Sum", &["a", "b", "c"], &["y"], vec![])],
        ins.clone(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(ops(&g), vec![Op::Binary(BinaryOp::Add); 2]);
    assert_eq!(g.node(g.outputs()[0].value.node).name, "Sum_y");
    let g = import_ok(&model(
        13,
        vec![node("Max", &["a", "b", "c"], &["y"], vec![])],
        ins.clone(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(ops(&g), vec![Op::Binary(BinaryOp::Max); 2]);
    let g = import_ok(&model(
        13,
        vec![node("Mean", &["a", "b"], &["y"], vec![])],
        ins.clone(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(
        ops(&g),
        vec![Op::Binary(BinaryOp::Add), Op::Binary(BinaryOp::Div)]
    );
    // One input: an alias.
    let g = import_ok(&model(
        13,
        vec![node("Sum", &["a"], &["y"], vec![])],
        ins,
        vec![vi("y", &[])],
        vec![],
    ));
    assert!(ops(&g).is_empty());
    assert_eq!(g.outputs()[0].value.node, g.inputs()[0]);
}

#[test]
fn concat_negative_axis() {
    let m = model(
        13,
        vec![node("Concat", &["a", "b"], &["y"], vec![a_i("axis", -3)])],
        vec![vi("a", &[1, 2, 4, 4]), vi("b", &[1, 3, 4, 4])],
        vec![vi("y", &[])],
        vec![],
    );
    let g = import_ok(&m);
    assert_eq!(only_op(&g), Op::Concat { axis: 1 });
    assert_eq!(output_shape(&g, 0), vec![1, 5, 4, 4]);
}

#[test]
fn pools() {
    let n = node(
        "MaxPool",
        &["x"],
        &["y"],
        vec![
            a_is("kernel_shape", &[3, 3]),
            a_is("strides", &[2, 2]),
            a_i("ceil_mode", 1),
            a_is("pads", &[0, 0, 1, 1]),
        ],
    );
    let g = import_ok(&model(
        12,
        vec![n],
        vec![vi("x", &[1, 1, 6, 6])],
        vec![vi("y", &[])],
        vec![],
    ));
    let Op::Pool(p) = only_op(&g) else { panic!() };
    assert_eq!(
        (p.kind, p.ceil_mode, p.pads.clone()),
        (PoolKind::Max, true, vec![0, 0, 1, 1])
    );
    let n = node(
        "AveragePool",
        &["x"],
        &["y"],
        vec![
            a_is("kernel_shape", &[2, 2]),
            a_i("count_include_pad", 1),
            a_s("auto_pad", "SAME_UPPER"),
        ],
    );
    let g = import_ok(&model(
        11,
        vec![n],
        vec![vi("x", &[1, 1, 5, 5])],
        vec![vi("y", &[])],
        vec![],
    ));
    let Op::Pool(p) = only_op(&g) else { panic!() };
    assert_eq!(
        (p.kind, p.count_include_pad, p.pads.clone()),
        (PoolKind::Avg, true, vec![0, 0, 1, 1])
    );
    assert_eq!(output_shape(&g, 0), vec![1, 1, 5, 5]);
    for (op, k) in [
        ("GlobalAveragePool", PoolKind::Avg),
        ("GlobalMaxPool", PoolKind::Max),
    ] {
        let g = import_ok(&model(
            11,
            vec![node(op, &["x"], &["y"], vec![])],
            vec![vi("x", &[1, 8, 5, 5])],
            vec![vi("y", &[])],
            vec![],
        ));
        assert_eq!(only_op(&g), Op::GlobalPool(k));
        assert_eq!(output_shape(&g, 0), vec![1, 8, 1, 1]);
    }
}

#[test]
fn maxpool_indices_output_is_unsupported_when_used() {
    let n = node(
        "MaxPool",
        &["x"],
        &["y", "idx"],
        vec![a_is("kernel_shape", &[2, 2])],
    );
    let e = import(&model(
        12,
        vec![n],
        vec![vi("x", &[1, 1, 4, 4])],
        vec![vi("y", &[]), vi("idx", &[])],
        vec![],
    ))
    .unwrap_err();
    assert!(
        matches!(&e, nnac_frontend::ImportError::Unsupported(l) if l.len() == 1 && l[0].op_type == "MaxPool"),
        "{e}"
    );
}

#[test]
fn flatten_reshape_transpose_squeeze_unsqueeze() {
    let x = || vec![vi("x", &[1, 3, 4, 5])];
    let g = import_ok(&model(
        13,
        vec![node("Flatten", &["x"], &["y"], vec![a_i("axis", 2)])],
        x(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(only_op(&g), Op::Reshape { shape: vec![3, 20] });
    let g = import_ok(&model(
        13,
        vec![node("Reshape", &["x", "s"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        vec![tensor_i64("s", &[3], &[0, -1, 5])],
    ));
    assert_eq!(
        only_op(&g),
        Op::Reshape {
            shape: vec![1, 12, 5]
        }
    );
    // allowzero keeps a literal 0 (opset 14).
    let m = model(
        14,
        vec![node(
            "Reshape",
            &["x", "s"],
            &["y"],
            vec![a_i("allowzero", 1)],
        )],
        x(),
        vec![vi("y", &[])],
        vec![tensor_i64("s", &[2], &[0, -1])],
    );
    assert!(import(&m).is_err());
    let g = import_ok(&model(
        13,
        vec![node("Transpose", &["x"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(
        only_op(&g),
        Op::Transpose {
            perm: vec![3, 2, 1, 0]
        }
    );
    let sq = vec![vi("x", &[1, 3, 1, 5])];
    let g = import_ok(&model(
        11,
        vec![node("Squeeze", &["x"], &["y"], vec![a_is("axes", &[-2])])],
        sq.clone(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(
        only_op(&g),
        Op::Reshape {
            shape: vec![1, 3, 5]
        }
    );
    let g = import_ok(&model(
        13,
        vec![node("Squeeze", &["x"], &["y"], vec![])],
        sq,
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(only_op(&g), Op::Reshape { shape: vec![3, 5] });
    let g = import_ok(&model(
        13,
        vec![node("Unsqueeze", &["x", "a"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        vec![tensor_i64("a", &[2], &[0, -1])],
    ));
    assert_eq!(
        only_op(&g),
        Op::Reshape {
            shape: vec![1, 1, 3, 4, 5, 1]
        }
    );
    let g = import_ok(&model(
        11,
        vec![node("Unsqueeze", &["x"], &["y"], vec![a_is("axes", &[4])])],
        x(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(output_shape(&g, 0), vec![1, 3, 4, 5, 1]);
}

#[test]
fn softmax_opset_semantics() {
    let x = || vec![vi("x", &[1, 3, 4])];
    // Opset 13: default axis -1.
    let g = import_ok(&model(
        13,
        vec![node("Softmax", &["x"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(only_op(&g), Op::Softmax { axis: 2 });
    // Opset 11: default axis 1 coerces to 2-D [1, 12].
    let g = import_ok(&model(
        11,
        vec![node("Softmax", &["x"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(
        ops(&g),
        vec![
            Op::Reshape { shape: vec![1, 12] },
            Op::Softmax { axis: 1 },
            Op::Reshape {
                shape: vec![1, 3, 4]
            }
        ]
    );
    assert_eq!(g.node(g.outputs()[0].value.node).name, "Softmax_y");
    // Opset 11, last axis: no reshape needed.
    let g = import_ok(&model(
        11,
        vec![node("Softmax", &["x"], &["y"], vec![a_i("axis", 2)])],
        x(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(only_op(&g), Op::Softmax { axis: 2 });
}

fn resize_of(g: &Graph) -> ResizeAttrs {
    match only_op(g) {
        Op::Resize(r) => r,
        op => panic!("not a resize: {op:?}"),
    }
}

#[test]
fn resize_across_opsets() {
    let x = || vec![vi("x", &[1, 1, 2, 3])];
    let scales = || tensor_f32("sc", &[4], &[1.0, 1.0, 2.0, 2.0]);
    // Opset 10: X, scales; asymmetric.
    let g = import_ok(&model(
        10,
        vec![node("Resize", &["x", "sc"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        vec![scales()],
    ));
    let r = resize_of(&g);
    assert_eq!(
        (r.mode, r.coord, r.sizes.clone()),
        (
            ResizeMode::Nearest(NearestMode::Floor),
            CoordTransform::Asymmetric,
            vec![1, 1, 4, 6]
        )
    );
    // Opset 11: X, roi, scales; linear align_corners.
    let attrs = vec![
        a_s("mode", "linear"),
        a_s("coordinate_transformation_mode", "align_corners"),
    ];
    let inits = vec![tensor_f32("roi", &[0], &[]), scales()];
    let g = import_ok(&model(
        11,
        vec![node("Resize", &["x", "roi", "sc"], &["y"], attrs)],
        x(),
        vec![vi("y", &[])],
        inits,
    ));
    let r = resize_of(&g);
    assert_eq!(
        (r.mode, r.coord),
        (ResizeMode::Linear, CoordTransform::AlignCorners)
    );
    // Opset 13: sizes only; scales follow.
    let attrs = vec![
        a_s("nearest_mode", "ceil"),
        a_s("coordinate_transformation_mode", "pytorch_half_pixel"),
    ];
    let g = import_ok(&model(
        13,
        vec![node("Resize", &["x", "", "", "sz"], &["y"], attrs)],
        x(),
        vec![vi("y", &[])],
        vec![tensor_i64("sz", &[4], &[1, 1, 3, 9])],
    ));
    let r = resize_of(&g);
    assert_eq!(
        (r.mode, r.coord, r.sizes.clone(), r.scales.clone()),
        (
            ResizeMode::Nearest(NearestMode::Ceil),
            CoordTransform::PytorchHalfPixel,
            vec![1, 1, 3, 9],
            vec![1.0, 1.0, 1.5, 3.0]
        )
    );
    // Opset 18: axes + keep_aspect_ratio_policy.
    let attrs = vec![
        a_is("axes", &[2, 3]),
        a_s("keep_aspect_ratio_policy", "not_larger"),
    ];
    let g = import_ok(&model(
        18,
        vec![node("Resize", &["x", "", "", "sz"], &["y"], attrs)],
        x(),
        vec![vi("y", &[])],
        vec![tensor_i64("sz", &[2], &[8, 9])],
    ));
    assert_eq!(resize_of(&g).sizes, vec![1, 1, 6, 9]);
    // Cubic is unsupported with a reason.
    let e = import(&model(
        13,
        vec![node(
            "Resize",
            &["x", "", "sc"],
            &["y"],
            vec![a_s("mode", "cubic")],
        )],
        x(),
        vec![vi("y", &[])],
        vec![scales()],
    ))
    .unwrap_err();
    assert!(e.to_string().contains("cubic"), "{e}");
}

#[test]
fn upsample_attribute_and_input_forms() {
    let x = || vec![vi("x", &[1, 1, 2, 2])];
    let g = import_ok(&model(
        7,
        vec![node(
            "Upsample",
            &["x"],
            &["y"],
            vec![a_fs("scales", &[1.0, 1.0, 2.0, 3.0])],
        )],
        x(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(resize_of(&g).sizes, vec![1, 1, 4, 6]);
    let g = import_ok(&model(
        9,
        vec![node(
            "Upsample",
            &["x", "s"],
            &["y"],
            vec![a_s("mode", "linear")],
        )],
        x(),
        vec![vi("y", &[])],
        vec![tensor_f32("s", &[4], &[1.0, 1.0, 2.0, 2.0])],
    ));
    let r = resize_of(&g);
    assert_eq!(
        (r.mode, r.coord, r.sizes),
        (
            ResizeMode::Linear,
            CoordTransform::Asymmetric,
            vec![1, 1, 4, 4]
        )
    );
}

#[test]
fn pad_attribute_and_input_forms() {
    let x = || vec![vi("x", &[1, 1, 2, 2])];
    let n = node(
        "Pad",
        &["x"],
        &["y"],
        vec![a_is("pads", &[0, 0, 1, 2, 0, 0, 3, 4]), a_f("value", 1.5)],
    );
    let g = import_ok(&model(9, vec![n], x(), vec![vi("y", &[])], vec![]));
    assert_eq!(
        only_op(&g),
        Op::Pad {
            pads: vec![0, 0, 1, 2, 0, 0, 3, 4],
            value: 1.5
        }
    );
    let inits = vec![
        tensor_i64("p", &[4], &[1, 2, 3, 4]),
        tensor_f32("v", &[], &[-1.0]),
        tensor_i64("ax", &[2], &[2, 3]),
    ];
    let g = import_ok(&model(
        18,
        vec![node("Pad", &["x", "p", "v", "ax"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        inits,
    ));
    assert_eq!(
        only_op(&g),
        Op::Pad {
            pads: vec![0, 0, 1, 2, 0, 0, 3, 4],
            value: -1.0
        }
    );
    assert_eq!(output_shape(&g, 0), vec![1, 1, 6, 8]);
    let e = import(&model(
        13,
        vec![node(
            "Pad",
            &["x", "p"],
            &["y"],
            vec![a_s("mode", "reflect")],
        )],
        x(),
        vec![vi("y", &[])],
        vec![tensor_i64("p", &[8], &[0; 8])],
    ))
    .unwrap_err();
    assert!(e.to_string().contains("reflect"), "{e}");
}

#[test]
fn lrn_dropout_identity() {
    let x = || vec![vi("x", &[1, 3, 2, 2])];
    let g = import_ok(&model(
        13,
        vec![node(
            "LRN",
            &["x"],
            &["y"],
            vec![a_i("size", 5), a_f("alpha", 2e-4)],
        )],
        x(),
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(
        only_op(&g),
        Op::Lrn {
            size: 5,
            alpha: 2e-4,
            beta: 0.75,
            bias: 1.0
        }
    );
    let nodes = vec![
        node("Dropout", &["x"], &["d"], vec![a_f("ratio", 0.3)]),
        node("Identity", &["d"], &["i"], vec![]),
        node("Relu", &["i"], &["y"], vec![]),
    ];
    let g = import_ok(&model(10, nodes, x(), vec![vi("y", &[])], vec![]));
    assert_eq!(only_op(&g), Op::Act(Activation::Relu));
    let inits = vec![
        tensor_f32("r", &[], &[0.5]),
        nnac_frontend::proto::onnx::TensorProto {
            data_type: Some(BOOL),
            ..tensor_raw("t", BOOL, &[], vec![1])
        },
    ];
    let e = import(&model(
        13,
        vec![node("Dropout", &["x", "r", "t"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        inits,
    ))
    .unwrap_err();
    assert!(e.to_string().contains("training_mode"), "{e}");
}

#[test]
fn constant_nodes_become_constants() {
    let t = tensor_f32("", &[3, 1, 1], &[1.0, 2.0, 3.0]);
    let nodes = vec![
        node("Constant", &[], &["c"], vec![a_t("value", t)]),
        node("Mul", &["x", "c"], &["y"], vec![]),
    ];
    let g = import_ok(&model(
        13,
        nodes,
        vec![vi("x", &[1, 3, 2, 2])],
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(const_input(&g, 0, 1).to_f32_vec(), vec![1.0, 2.0, 3.0]);
    for (attr, want) in [
        (a_f("value_float", 2.5), vec![2.5]),
        (a_fs("value_floats", &[1.0, 2.0]), vec![1.0, 2.0]),
        (a_i("value_int", 7), vec![7.0]),
        (a_is("value_ints", &[4, 5]), vec![4.0, 5.0]),
    ] {
        let g = import_ok(&model(
            13,
            vec![node("Constant", &[], &["y"], vec![attr])],
            vec![],
            vec![vi("y", &[])],
            vec![],
        ));
        assert_eq!(output_const(&g, 0).to_f32_vec(), want);
    }
}

#[test]
fn constant_of_shape() {
    let v = tensor_i64("", &[1], &[3]);
    let nodes = vec![node(
        "ConstantOfShape",
        &["s"],
        &["y"],
        vec![a_t("value", v)],
    )];
    let g = import_ok(&model(
        13,
        nodes,
        vec![],
        vec![vi("y", &[])],
        vec![tensor_i64("s", &[2], &[2, 3])],
    ));
    let t = output_const(&g, 0);
    assert_eq!(
        (t.shape.clone(), t.data.clone()),
        (vec![2, 3], TensorData::I64(vec![3; 6]))
    );
    let g = import_ok(&model(
        13,
        vec![node("ConstantOfShape", &["s"], &["y"], vec![])],
        vec![],
        vec![vi("y", &[])],
        vec![tensor_i64("s", &[1], &[4])],
    ));
    assert_eq!(output_const(&g, 0).data, TensorData::F32(vec![0.0; 4]));
}

#[test]
fn exporter_shape_chain_folds_into_one_reshape() {
    // Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape: PyTorch's flatten.
    let nodes = vec![
        node("Shape", &["x"], &["s"], vec![]),
        node("Gather", &["s", "zero"], &["n"], vec![a_i("axis", 0)]),
        node("Unsqueeze", &["n", "ax0"], &["n1"], vec![]),
        node(
            "Concat",
            &["n1", "minus1"],
            &["shape"],
            vec![a_i("axis", 0)],
        ),
        node("Cast", &["shape"], &["shape64"], vec![a_i("to", 7)]),
        node("Slice", &["s", "st", "en"], &["hw"], vec![]),
        node("Reshape", &["x", "shape64"], &["y"], vec![]),
    ];
    let inits = vec![
        tensor_i64("zero", &[], &[0]),
        tensor_i64("ax0", &[1], &[0]),
        tensor_i64("minus1", &[1], &[-1]),
        tensor_i64("st", &[1], &[2]),
        tensor_i64("en", &[1], &[i64::MAX]),
    ];
    let g = import_ok(&model(
        13,
        nodes,
        vec![vi("x", &[1, 3, 4, 5])],
        vec![vi("y", &[])],
        inits,
    ));
    assert_eq!(only_op(&g), Op::Reshape { shape: vec![1, 60] });
    assert!(
        g.constants().is_empty(),
        "folded shape tensors must not reach the graph"
    );
}

#[test]
fn folding_arithmetic_and_where() {
    let nodes = vec![
        node("Shape", &["x"], &["s"], vec![]),
        node("Div", &["s", "two"], &["h"], vec![]),
        node("Mul", &["h", "two"], &["m"], vec![]),
        node("Equal", &["m", "s"], &["eq"], vec![]),
        node("Where", &["eq", "s", "h"], &["w"], vec![]),
        node("Range", &["r0", "r1", "r2"], &["r"], vec![]),
        node("Expand", &["one", "s"], &["e"], vec![]),
        node("Transpose", &["mat"], &["mt"], vec![]),
        node("Size", &["x"], &["n"], vec![]),
    ];
    let inits = vec![
        tensor_i64("two", &[], &[2]),
        tensor_i64("r0", &[], &[1]),
        tensor_i64("r1", &[], &[10]),
        tensor_i64("r2", &[], &[3]),
        tensor_f32("one", &[1, 1, 1, 1], &[1.0]),
        tensor_f32("mat", &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    ];
    let outs = vec![
        vi("w", &[]),
        vi("r", &[]),
        vi("e", &[]),
        vi("mt", &[]),
        vi("n", &[]),
    ];
    let g = import_ok(&model(13, nodes, vec![vi("x", &[1, 3, 4, 5])], outs, inits));
    assert_eq!(output_const(&g, 0).data, TensorData::I64(vec![0, 1, 4, 2]));
    assert_eq!(output_const(&g, 1).data, TensorData::I64(vec![1, 4, 7]));
    assert_eq!(output_const(&g, 2).shape, vec![1, 3, 4, 5]);
    assert_eq!(
        output_const(&g, 3).data,
        TensorData::F32(vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
    );
    assert_eq!(output_const(&g, 4).data, TensorData::I64(vec![60]));
}

#[test]
fn node_names_are_unique_and_fall_back_to_outputs() {
    let mut a = node("Relu", &["x"], &["r1"], vec![]);
    let mut b = node("Relu", &["r1"], &["r2"], vec![]);
    a.name = Some("same".into());
    b.name = Some("same".into());
    let mut c = node("Relu", &["r2"], &["y"], vec![]);
    c.name = None;
    let g = import_ok(&model(
        13,
        vec![a, b, c],
        vec![vi("x", &[1, 2])],
        vec![vi("y", &[])],
        vec![],
    ));
    let names: Vec<String> = g
        .topo_order()
        .unwrap()
        .into_iter()
        .map(|n| g.node(n).name.clone())
        .collect();
    assert_eq!(names, vec!["x", "same", "same.1", "y"]);
}

#[test]
fn pow_sqrt_reciprocal_neg_map_to_power() {
    let x = || vec![vi("x", &[1, 3])];
    let g = import_ok(&model(
        13,
        vec![node("Pow", &["x", "p"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        vec![tensor_f32("p", &[], &[2.0])],
    ));
    assert_eq!(
        only_op(&g),
        Op::Power {
            power: 2.0,
            scale: 1.0,
            shift: 0.0
        }
    );
    for (op, want) in [
        ("Sqrt", (0.5, 1.0)),
        ("Reciprocal", (-1.0, 1.0)),
        ("Neg", (1.0, -1.0)),
    ] {
        let g = import_ok(&model(
            13,
            vec![node(op, &["x"], &["y"], vec![])],
            x(),
            vec![vi("y", &[])],
            vec![],
        ));
        assert_eq!(
            only_op(&g),
            Op::Power {
                power: want.0,
                scale: want.1,
                shift: 0.0
            },
            "{op}"
        );
    }
}

#[test]
fn slice_and_split_of_runtime_tensors_are_slice_ops() {
    let x = || vec![vi("x", &[1, 6, 4, 5])];
    // Negative bounds count from the end; an end past the axis is clamped.
    let g = import_ok(&model(
        13,
        vec![node("Slice", &["x", "s", "e", "a"], &["y"], vec![])],
        x(),
        vec![vi("y", &[])],
        vec![
            tensor_i64("s", &[2], &[-4, 1]),
            tensor_i64("e", &[2], &[5, i64::MAX]),
            tensor_i64("a", &[2], &[1, -1]),
        ],
    ));
    assert_eq!(
        only_op(&g),
        Op::Slice {
            axes: vec![1, 3],
            starts: vec![2, 1],
            ends: vec![5, 5],
        }
    );
    // Split by sizes (input since opset 13, attribute before), in equal parts, and by
    // num_outputs (opset 18: ceil parts, the last smaller).
    let split = |opset, ins: &[&str], attrs, inits| {
        let g = import_ok(&model(
            opset,
            vec![node("Split", ins, &["p", "q", "r"], attrs)],
            x(),
            vec![vi("p", &[]), vi("q", &[]), vi("r", &[])],
            inits,
        ));
        (0..3).map(|i| output_shape(&g, i)[1]).collect::<Vec<_>>()
    };
    let by_input = split(
        13,
        &["x", "s"],
        vec![a_i("axis", 1)],
        vec![tensor_i64("s", &[3], &[1, 2, 3])],
    );
    assert_eq!(by_input, [1, 2, 3]);
    let by_attr = split(
        11,
        &["x"],
        vec![a_i("axis", 1), a_is("split", &[3, 2, 1])],
        vec![],
    );
    assert_eq!(by_attr, [3, 2, 1]);
    assert_eq!(split(13, &["x"], vec![a_i("axis", 1)], vec![]), [2, 2, 2]);
    let ceil = split(
        18,
        &["x"],
        vec![a_i("axis", 3), a_i("num_outputs", 3)],
        vec![],
    );
    assert_eq!(ceil, [6, 6, 6]); // channels untouched: the split is of W = 5
    let g = import_ok(&model(
        18,
        vec![node(
            "Split",
            &["x"],
            &["p", "q", "r"],
            vec![a_i("axis", 3), a_i("num_outputs", 3)],
        )],
        x(),
        vec![vi("p", &[]), vi("q", &[]), vi("r", &[])],
        vec![],
    ));
    let widths: Vec<usize> = (0..3).map(|i| output_shape(&g, i)[3]).collect();
    assert_eq!(widths, [2, 2, 1]);
    // Negative steps, empty slices and sizes that do not add up are refused, named
    // (a positive step above 1 is a strided slice: the Focus stem).
    use nnac_frontend::proto::onnx::{NodeProto, TensorProto, ValueInfoProto};
    let refused = |n: NodeProto, inits: Vec<TensorProto>, outs: Vec<ValueInfoProto>| {
        let e = import(&model(13, vec![n], x(), outs, inits)).expect_err("refused");
        e.to_string()
    };
    let e = refused(
        node("Slice", &["x", "s", "e", "a", "st"], &["y"], vec![]),
        vec![
            tensor_i64("s", &[1], &[0]),
            tensor_i64("e", &[1], &[4]),
            tensor_i64("a", &[1], &[2]),
            tensor_i64("st", &[1], &[-1]),
        ],
        vec![vi("y", &[])],
    );
    assert!(e.contains("step -1") && e.contains("node 'Slice_y'"), "{e}");
    let e = refused(
        node("Slice", &["x", "s", "e"], &["y"], vec![]),
        vec![tensor_i64("s", &[1], &[7]), tensor_i64("e", &[1], &[9])],
        vec![vi("y", &[])],
    );
    assert!(e.contains("empty"), "{e}");
    let e = refused(
        node("Split", &["x", "s"], &["p", "q"], vec![a_i("axis", 1)]),
        vec![tensor_i64("s", &[2], &[2, 3])],
        vec![vi("p", &[]), vi("q", &[])],
    );
    assert!(e.contains("split sizes [2, 3]"), "{e}");
    // Sizes whose sum overflows are an error, not a wrap-around.
    let e = refused(
        node("Split", &["x", "s"], &["p", "q"], vec![a_i("axis", 1)]),
        vec![tensor_i64("s", &[2], &[i64::MAX, i64::MAX - 5])],
        vec![vi("p", &[]), vi("q", &[])],
    );
    assert!(e.contains("split sizes"), "{e}");
}

#[test]
fn reduce_mean_and_max_over_the_spatial_axes_are_global_pools() {
    let x = || vec![vi("x", &[1, 6, 4, 5])];
    let reduce = |opset, op: &str, ins: &[&str], attrs, inits| {
        import(&model(
            opset,
            vec![node(op, ins, &["y"], attrs)],
            x(),
            vec![vi("y", &[])],
            inits,
        ))
    };
    let g = reduce(
        13,
        "ReduceMean",
        &["x"],
        vec![a_is("axes", &[2, 3])],
        vec![],
    )
    .unwrap();
    assert_eq!(only_op(&g), Op::GlobalPool(PoolKind::Avg));
    assert_eq!(output_shape(&g, 0), [1, 6, 1, 1]);
    // Negative axes, keepdims = 0 (a reshape to [N, C] follows), axes as an input
    // (opset 18), ReduceMax.
    let g = reduce(
        13,
        "ReduceMax",
        &["x"],
        vec![a_is("axes", &[-1, -2]), a_i("keepdims", 0)],
        vec![],
    )
    .unwrap();
    assert_eq!(
        ops(&g),
        [
            Op::GlobalPool(PoolKind::Max),
            Op::Reshape { shape: vec![1, 6] }
        ]
    );
    let g = reduce(
        18,
        "ReduceMean",
        &["x", "a"],
        vec![],
        vec![tensor_i64("a", &[2], &[3, 2])],
    )
    .unwrap();
    assert_eq!(only_op(&g), Op::GlobalPool(PoolKind::Avg));
    // Other axes (or all of them, the default) are reported unsupported, named.
    for (attrs, why) in [
        (vec![a_is("axes", &[1])], "axes [1]"),
        (vec![], "axes [0, 1, 2, 3]"),
        (vec![a_is("axes", &[0, 2, 3])], "axes [0, 2, 3]"),
    ] {
        let e = reduce(13, "ReduceMean", &["x"], attrs, vec![]).expect_err("refused");
        assert!(
            matches!(e, nnac_frontend::ImportError::Unsupported(_)) && e.to_string().contains(why),
            "{e}"
        );
    }
}
