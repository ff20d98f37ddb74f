//! One small network per Caffe layer type, written in the test: the IR ops, attributes,
//! shapes and weight constants the importer produces.

mod caffe_support;

use caffe_support::*;
use nnac_ir::{Activation, BinaryOp, Op, PoolKind};

fn data(shape: &[usize], body: &str) -> String {
    net_with_input(shape, body)
}

#[test]
fn convolution_with_group_dilation_and_hw_forms() {
    let p = data(
        &[1, 4, 10, 12],
        r#"layer { name: "c" type: "Convolution" bottom: "data" top: "c"
             convolution_param { num_output: 6 group: 2 kernel_h: 3 kernel_w: 5 stride_h: 2 stride_w: 1
                                 pad_h: 1 pad_w: 2 dilation: 2 } }"#,
    );
    let m = model(vec![(
        "c",
        vec![blob(&[6, 2, 3, 5], 0.01), blob(&[6], 1.0)],
    )]);
    let g = import_ok(&p, Some(&m));
    let Op::Conv(a) = op(&g, "c") else {
        panic!("not a conv")
    };
    assert_eq!(
        (a.kernel, a.strides, a.pads, a.dilations, a.group),
        (vec![3, 5], vec![2, 1], vec![1, 2, 1, 2], vec![2, 2], 2)
    );
    // H: (10 + 2 - 5) / 2 + 1 = 4; W: (12 + 4 - 9) / 1 + 1 = 8.
    assert_eq!(shape(&g, "c"), vec![1, 6, 4, 8]);
    assert_eq!(input_names(&g, "c"), vec!["data", "c/weights", "c/bias"]);
    assert_eq!(
        const_input(&g, "c", 2).1,
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    assert_eq!(output_names(&g), vec!["c"]);
}

#[test]
fn convolution_without_bias_and_repeated_values() {
    let p = data(
        &[1, 3, 8, 8],
        r#"layer { name: "c" type: "Convolution" bottom: "data" top: "c"
             convolution_param { num_output: 2 bias_term: false kernel_size: 3 kernel_size: 1 stride: 2 pad: 1 } }"#,
    );
    let g = import_ok(
        &p,
        Some(&model(vec![("c", vec![blob(&[2, 3, 3, 1], 0.1)])])),
    );
    let Op::Conv(a) = op(&g, "c") else {
        panic!("not a conv")
    };
    assert_eq!(
        (a.kernel, a.strides, a.pads),
        (vec![3, 1], vec![2, 2], vec![1, 1, 1, 1])
    );
    assert_eq!(input_names(&g, "c").len(), 2);
    assert_eq!(shape(&g, "c"), vec![1, 2, 4, 5]);
}

#[test]
fn deconvolution_uses_input_channel_major_weights() {
    let p = data(
        &[1, 4, 5, 5],
        r#"layer { name: "d" type: "Deconvolution" bottom: "data" top: "d"
             convolution_param { num_output: 6 group: 2 kernel_size: 4 stride: 2 pad: 1 } }"#,
    );
    let g = import_ok(
        &p,
        Some(&model(vec![(
            "d",
            vec![blob(&[4, 3, 4, 4], 0.1), blob(&[6], 0.1)],
        )])),
    );
    let Op::ConvTranspose(a) = op(&g, "d") else {
        panic!("not a deconv")
    };
    assert_eq!(
        (a.group, a.pads.clone(), a.output_padding.clone()),
        (2, vec![1, 1, 1, 1], vec![0, 0])
    );
    // 2 * (5 - 1) + 4 - 2 = 10.
    assert_eq!(shape(&g, "d"), vec![1, 6, 10, 10]);
    assert_eq!(const_input(&g, "d", 1).0, vec![4, 3, 4, 4]);
}

#[test]
fn inner_product_flattens_and_uses_gemm_with_transposed_weights() {
    let p = data(
        &[1, 2, 3, 4],
        r#"layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc" inner_product_param { num_output: 5 } }"#,
    );
    let g = import_ok(
        &p,
        Some(&model(vec![(
            "fc",
            vec![blob(&[5, 24], 0.1), blob(&[5], 0.1)],
        )])),
    );
    let Op::Gemm(a) = op(&g, "fc") else {
        panic!("not a gemm")
    };
    assert!(a.trans_b && !a.trans_a);
    assert_eq!(op(&g, "fc/flatten"), Op::Reshape { shape: vec![1, 24] });
    assert_eq!(shape(&g, "fc"), vec![1, 5]);
}

#[test]
fn inner_product_transpose_and_axis() {
    let p = data(
        &[1, 3, 4],
        r#"layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc"
             inner_product_param { num_output: 2 axis: 2 transpose: true bias_term: false } }"#,
    );
    let g = import_ok(&p, Some(&model(vec![("fc", vec![blob(&[4, 2], 0.1)])])));
    let Op::Gemm(a) = op(&g, "fc/gemm") else {
        panic!("not a gemm")
    };
    assert!(!a.trans_b);
    assert_eq!(op(&g, "fc/flatten"), Op::Reshape { shape: vec![3, 4] });
    assert_eq!(
        op(&g, "fc"),
        Op::Reshape {
            shape: vec![1, 3, 2]
        }
    );
}

#[test]
fn pooling_rounds_up_like_caffe() {
    let p = data(
        &[1, 2, 112, 112],
        r#"layer { name: "max" type: "Pooling" bottom: "data" top: "max" pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
           layer { name: "ave" type: "Pooling" bottom: "data" top: "ave" pooling_param { pool: AVE kernel_h: 3 kernel_w: 2 stride: 2 pad_h: 1 pad_w: 1 } }
           layer { name: "glob" type: "Pooling" bottom: "data" top: "glob" pooling_param { pool: AVE global_pooling: true } }
           layer { name: "floor" type: "Pooling" bottom: "data" top: "floor" pooling_param { pool: MAX kernel_size: 3 stride: 2 ceil_mode: false } }"#,
    );
    let g = import_ok(&p, None);
    let Op::Pool(a) = op(&g, "max") else {
        panic!("not a pool")
    };
    assert!(a.ceil_mode && a.kind == PoolKind::Max);
    // ceil((112 - 3) / 2) + 1 = 56 (floor would give 55).
    assert_eq!(shape(&g, "max"), vec![1, 2, 56, 56]);
    assert_eq!(shape(&g, "floor"), vec![1, 2, 55, 55]);
    let Op::Pool(a) = op(&g, "ave") else {
        panic!("not a pool")
    };
    assert!(a.count_include_pad && a.kind == PoolKind::Avg);
    assert_eq!((a.kernel, a.pads), (vec![3, 2], vec![1, 1, 1, 1]));
    // H: ceil((112 + 2 - 3) / 2) + 1 = 57, and (57 - 1) * 2 = 112 >= 112 + 1? no -> 57.
    // W: ceil((112 + 2 - 2) / 2) + 1 = 57, (56 * 2 = 112) < 113 -> 57.
    assert_eq!(shape(&g, "ave"), vec![1, 2, 57, 57]);
    assert_eq!(op(&g, "glob"), Op::GlobalPool(PoolKind::Avg));
    assert_eq!(shape(&g, "glob"), vec![1, 2, 1, 1]);
}

#[test]
fn pooling_drops_a_last_window_starting_in_the_padding() {
    // H = 4, k = 2, s = 2, p = 1: ceil((4 + 2 - 2) / 2) + 1 = 3; (3 - 1) * 2 = 4 < 5 -> 3.
    // H = 5, k = 3, s = 3, p = 2: ceil((5 + 4 - 3) / 3) + 1 = 3; 2 * 3 = 6 < 7 -> 3.
    // H = 6, k = 3, s = 4, p = 2: ceil((6 + 4 - 3) / 4) + 1 = 3; 2 * 4 = 8 >= 8 -> 2.
    for (h, k, s, pad, want) in [(4, 2, 2, 1, 3), (5, 3, 3, 2, 3), (6, 3, 4, 2, 2)] {
        let p = data(
            &[1, 1, h, h],
            &format!(
                r#"layer {{ name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param {{ kernel_size: {k} stride: {s} pad: {pad} }} }}"#
            ),
        );
        assert_eq!(
            shape(&import_ok(&p, None), "p"),
            vec![1, 1, want, want],
            "H={h} k={k} s={s} p={pad}"
        );
    }
}

#[test]
fn activations() {
    let p = data(
        &[1, 3, 2, 2],
        r#"layer { name: "r" type: "ReLU" bottom: "data" top: "r" }
           layer { name: "l" type: "ReLU" bottom: "r" top: "l" relu_param { negative_slope: 0.1 } }
           layer { name: "s" type: "Sigmoid" bottom: "l" top: "s" }
           layer { name: "t" type: "TanH" bottom: "s" top: "t" }
           layer { name: "pw" type: "Power" bottom: "t" top: "pw" power_param { power: 2 scale: 0.5 shift: 1 } }
           layer { name: "pr" type: "PReLU" bottom: "pw" top: "pr" }
           layer { name: "ps" type: "PReLU" bottom: "pr" top: "ps" prelu_param { channel_shared: true } }"#,
    );
    let m = model(vec![
        ("pr", vec![blob(&[3], 0.1)]),
        ("ps", vec![blob(&[1], 0.25)]),
    ]);
    let g = import_ok(&p, Some(&m));
    assert_eq!(op(&g, "r"), Op::Act(Activation::Relu));
    assert_eq!(op(&g, "l"), Op::Act(Activation::LeakyRelu { alpha: 0.1 }));
    assert_eq!(op(&g, "s"), Op::Act(Activation::Sigmoid));
    assert_eq!(op(&g, "t"), Op::Act(Activation::Tanh));
    assert_eq!(
        op(&g, "pw"),
        Op::Power {
            power: 2.0,
            scale: 0.5,
            shift: 1.0
        }
    );
    assert_eq!(op(&g, "pr"), Op::PRelu);
    assert_eq!(const_input(&g, "pr", 1).0, vec![3, 1, 1]);
    assert_eq!(const_input(&g, "ps", 1), (vec![1, 1, 1], vec![0.25]));
    assert_eq!(output_names(&g), vec!["ps"]);
}

#[test]
fn batch_norm_divides_statistics_by_the_scale_factor() {
    let p = data(
        &[1, 2, 3, 3],
        r#"layer { name: "bn" type: "BatchNorm" bottom: "data" top: "bn" batch_norm_param { use_global_stats: true eps: 0.001 } }
           layer { name: "bz" type: "BatchNorm" bottom: "bn" top: "bz" }"#,
    );
    let m = model(vec![
        (
            "bn",
            vec![
                blob_of(&[2], &[4.0, 8.0]),
                blob_of(&[2], &[2.0, 6.0]),
                blob_of(&[1], &[2.0]),
            ],
        ),
        (
            "bz",
            vec![
                blob_of(&[2], &[4.0, 8.0]),
                blob_of(&[2], &[2.0, 6.0]),
                blob_of(&[1], &[0.0]),
            ],
        ),
    ]);
    let g = import_ok(&p, Some(&m));
    assert_eq!(op(&g, "bn"), Op::BatchNorm { epsilon: 0.001 });
    assert_eq!(const_input(&g, "bn", 1).1, vec![1.0, 1.0]);
    assert_eq!(const_input(&g, "bn", 2).1, vec![0.0, 0.0]);
    assert_eq!(const_input(&g, "bn", 3).1, vec![2.0, 4.0]);
    assert_eq!(const_input(&g, "bn", 4).1, vec![1.0, 3.0]);
    assert_eq!(op(&g, "bz"), Op::BatchNorm { epsilon: 1e-5 });
    assert_eq!(const_input(&g, "bz", 3).1, vec![0.0, 0.0]);
    assert_eq!(const_input(&g, "bz", 4).1, vec![0.0, 0.0]);
}

#[test]
fn scale_and_bias_broadcast_over_trailing_axes() {
    let p = data(
        &[1, 3, 4, 5],
        r#"layer { name: "sc" type: "Scale" bottom: "data" top: "sc" scale_param { bias_term: true } }
           layer { name: "s2" type: "Scale" bottom: "sc" top: "s2" scale_param { axis: 2 num_axes: 2 } }
           layer { name: "b" type: "Bias" bottom: "s2" top: "b" }
           layer { name: "s0" type: "Scale" bottom: "b" top: "s0" scale_param { num_axes: 0 } }"#,
    );
    let m = model(vec![
        ("sc", vec![blob(&[3], 1.0), blob(&[3], -1.0)]),
        ("s2", vec![blob(&[4, 5], 0.5)]),
        ("b", vec![blob(&[3], 2.0)]),
        ("s0", vec![blob(&[], 3.0)]),
    ]);
    let g = import_ok(&p, Some(&m));
    assert_eq!(op(&g, "sc/mul"), Op::Binary(BinaryOp::Mul));
    assert_eq!(op(&g, "sc"), Op::Binary(BinaryOp::Add));
    assert_eq!(
        const_input(&g, "sc/mul", 1),
        (vec![3, 1, 1], vec![1.0, 2.0, 3.0])
    );
    assert_eq!(
        const_input(&g, "sc", 1),
        (vec![3, 1, 1], vec![-1.0, -2.0, -3.0])
    );
    assert_eq!(const_input(&g, "s2", 1).0, vec![4, 5]);
    assert_eq!(const_input(&g, "b", 1).0, vec![3, 1, 1]);
    assert_eq!(const_input(&g, "s0", 1), (vec![], vec![3.0]));
    assert_eq!(shape(&g, "s0"), vec![1, 3, 4, 5]);
}

#[test]
fn scale_and_bias_with_a_second_bottom() {
    let p = format!(
        "{}{}",
        "name: \"t\"\ninput: \"data\"\ninput_shape { dim: 1 dim: 3 dim: 4 dim: 4 }\ninput: \"s\"\ninput_shape { dim: 1 dim: 3 }\n",
        r#"layer { name: "sc" type: "Scale" bottom: "data" bottom: "s" top: "sc" scale_param { axis: 0 bias_term: true } }
           layer { name: "b" type: "Bias" bottom: "sc" bottom: "s" top: "b" bias_param { axis: 0 } }"#
    );
    let g = import_ok(&p, Some(&model(vec![("sc", vec![blob(&[1, 3], 1.0)])])));
    assert_eq!(
        op(&g, "sc/scale_shape"),
        Op::Reshape {
            shape: vec![1, 3, 1, 1]
        }
    );
    assert_eq!(input_names(&g, "sc/mul"), vec!["data", "sc/scale_shape"]);
    assert_eq!(const_input(&g, "sc", 1).0, vec![1, 3, 1, 1]);
    assert_eq!(input_names(&g, "b"), vec!["sc", "b/bias_shape"]);
}

#[test]
fn eltwise_sum_prod_max() {
    let p = data(
        &[1, 2, 3, 3],
        r#"layer { name: "a" type: "ReLU" bottom: "data" top: "a" }
           layer { name: "sum" type: "Eltwise" bottom: "data" bottom: "a" top: "sum" }
           layer { name: "diff" type: "Eltwise" bottom: "data" bottom: "a" bottom: "sum" top: "diff" eltwise_param { coeff: 1 coeff: -1 coeff: 0.5 } }
           layer { name: "prod" type: "Eltwise" bottom: "diff" bottom: "a" top: "prod" eltwise_param { operation: PROD } }
           layer { name: "max" type: "Eltwise" bottom: "prod" bottom: "a" top: "max" eltwise_param { operation: MAX } }"#,
    );
    let g = import_ok(&p, None);
    assert_eq!(op(&g, "sum"), Op::Binary(BinaryOp::Add));
    assert_eq!(op(&g, "diff/sub1"), Op::Binary(BinaryOp::Sub));
    assert_eq!(
        op(&g, "diff/coeff2"),
        Op::Power {
            power: 1.0,
            scale: 0.5,
            shift: 0.0
        }
    );
    assert_eq!(input_names(&g, "diff"), vec!["diff/sub1", "diff/coeff2"]);
    assert_eq!(op(&g, "prod"), Op::Binary(BinaryOp::Mul));
    assert_eq!(op(&g, "max"), Op::Binary(BinaryOp::Max));
    assert_eq!(output_names(&g), vec!["max"]);
}

#[test]
fn concat_softmax_flatten_reshape_lrn() {
    let p = data(
        &[1, 2, 3, 4],
        r#"layer { name: "r" type: "ReLU" bottom: "data" top: "r" }
           layer { name: "cat" type: "Concat" bottom: "data" bottom: "r" top: "cat" }
           layer { name: "cat2" type: "Concat" bottom: "data" bottom: "r" top: "cat2" concat_param { axis: -1 } }
           layer { name: "cat3" type: "Concat" bottom: "data" bottom: "r" top: "cat3" concat_param { concat_dim: 2 } }
           layer { name: "sm" type: "Softmax" bottom: "cat" top: "sm" }
           layer { name: "sm2" type: "Softmax" bottom: "cat2" top: "sm2" softmax_param { axis: -1 } }
           layer { name: "fl" type: "Flatten" bottom: "sm" top: "fl" }
           layer { name: "fl2" type: "Flatten" bottom: "sm2" top: "fl2" flatten_param { axis: 2 } }
           layer { name: "rs" type: "Reshape" bottom: "cat3" top: "rs" reshape_param { shape { dim: 0 dim: -1 dim: 4 } } }
           layer { name: "rs2" type: "Reshape" bottom: "fl2" top: "rs2" reshape_param { shape { dim: 2 dim: -1 } axis: 2 } }
           layer { name: "lrn" type: "LRN" bottom: "r" top: "lrn" lrn_param { local_size: 3 alpha: 0.0001 beta: 0.75 k: 2 } }"#,
    );
    let g = import_ok(&p, None);
    assert_eq!(op(&g, "cat"), Op::Concat { axis: 1 });
    assert_eq!(op(&g, "cat2"), Op::Concat { axis: 3 });
    assert_eq!(op(&g, "cat3"), Op::Concat { axis: 2 });
    assert_eq!(op(&g, "sm"), Op::Softmax { axis: 1 });
    assert_eq!(op(&g, "sm2"), Op::Softmax { axis: 3 });
    assert_eq!(shape(&g, "fl"), vec![1, 48]);
    assert_eq!(shape(&g, "fl2"), vec![1, 2, 24]);
    assert_eq!(shape(&g, "rs"), vec![1, 12, 4]);
    assert_eq!(shape(&g, "rs2"), vec![1, 2, 2, 12]);
    assert_eq!(
        op(&g, "lrn"),
        Op::Lrn {
            size: 3,
            alpha: 0.0001,
            beta: 0.75,
            bias: 2.0
        }
    );
    assert_eq!(output_names(&g), vec!["fl", "rs", "rs2", "lrn"]);
}

#[test]
fn split_and_dropout_alias_their_bottom() {
    let p = data(
        &[1, 2, 2, 2],
        r#"layer { name: "sp" type: "Split" bottom: "data" top: "x1" top: "x2" }
           layer { name: "dr" type: "Dropout" bottom: "x1" top: "x1" dropout_param { dropout_ratio: 0.5 } }
           layer { name: "add" type: "Eltwise" bottom: "x1" bottom: "x2" top: "y" }"#,
    );
    let g = import_ok(&p, None);
    assert!(g.find("sp").is_none() && g.find("dr").is_none());
    assert_eq!(input_names(&g, "add"), vec!["data", "data"]);
    assert_eq!(output_names(&g), vec!["y"]);
}

#[test]
fn in_place_layers_chain_through_the_latest_producer() {
    let p = data(
        &[1, 3, 4, 4],
        r#"layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" convolution_param { num_output: 2 kernel_size: 1 } }
           layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
           layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
           layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
           layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
           layer { name: "relu2" type: "ReLU" bottom: "conv" top: "conv" }"#,
    );
    let m = model(vec![
        ("conv", vec![blob(&[2, 3, 1, 1], 0.1), blob(&[2], 0.1)]),
        (
            "bn",
            vec![blob(&[2], 0.1), blob(&[2], 0.2), blob(&[1], 1.0)],
        ),
        ("scale", vec![blob(&[2], 0.1), blob(&[2], 0.1)]),
    ]);
    let g = import_ok(&p, Some(&m));
    assert_eq!(input_names(&g, "bn")[0], "conv");
    assert_eq!(input_names(&g, "scale/mul")[0], "bn");
    assert_eq!(input_names(&g, "relu"), vec!["scale"]);
    assert_eq!(input_names(&g, "pool"), vec!["relu"]);
    assert_eq!(input_names(&g, "relu2"), vec!["relu"]);
    // Both the pooled blob and the in-place-updated "conv" blob are unconsumed.
    let outs: Vec<_> = g
        .outputs()
        .iter()
        .map(|o| (o.name.clone(), g.node(o.value.node).name.clone()))
        .collect();
    assert_eq!(
        outs,
        vec![
            ("pool".to_string(), "pool".to_string()),
            ("conv".to_string(), "relu2".to_string())
        ]
    );
}

#[test]
fn imported_graphs_pass_the_ir_verifier() {
    let p = data(
        &[1, 3, 8, 8],
        r#"layer { name: "c" type: "Convolution" bottom: "data" top: "c" convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
           layer { name: "p" type: "Pooling" bottom: "c" top: "p" pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
           layer { name: "fc" type: "InnerProduct" bottom: "p" top: "fc" inner_product_param { num_output: 3 } }
           layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }"#,
    );
    let m = model(vec![
        ("c", vec![blob(&[4, 3, 3, 3], 0.01), blob(&[4], 0.1)]),
        ("fc", vec![blob(&[3, 64], 0.01), blob(&[3], 0.1)]),
    ]);
    let g = import_ok(&p, Some(&m));
    if let Err(errs) = nnac_ir::verify(&g) {
        panic!("verifier: {}", nnac_ir::verify::report(&errs));
    }
    assert_eq!(shape(&g, "p"), vec![1, 4, 4, 4]);
}
