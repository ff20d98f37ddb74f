//! The file forms Caffe accepts: V1 `layers` prototxts and caffemodels (each
//! independently of the other's form), `input:` with `input_dim` or `input_shape`,
//! `Input` layers, and TRAIN-only layers dropped by include/exclude rules.

mod caffe_support;

use caffe_support::*;
use nnac_ir::{Activation, Op, PoolKind};

const V1_NET: &str = r#"
name: "old"
input: "data"
input_dim: 10
input_dim: 3
input_dim: 8
input_dim: 8
layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1"
         blobs_lr: 1 blobs_lr: 2
         convolution_param { num_output: 4 kernel_size: 3 stride: 1 } }
layers { name: "relu1" type: RELU bottom: "conv1" top: "conv1" }
layers { name: "pool1" type: POOLING bottom: "conv1" top: "pool1" pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layers { name: "fc" type: INNER_PRODUCT bottom: "pool1" top: "fc" inner_product_param { num_output: 2 } }
layers { name: "loss" type: SOFTMAX_LOSS bottom: "fc" bottom: "label" top: "loss" include { phase: TRAIN } }
layers { name: "prob" type: SOFTMAX bottom: "fc" top: "prob" }
"#;

fn v1_weights() -> Vec<(&'static str, Vec<nnac_frontend::proto::caffe::BlobProto>)> {
    vec![
        ("conv1", vec![blob(&[4, 3, 3, 3], 0.01), blob(&[4], 0.1)]),
        ("fc", vec![blob(&[2, 36], 0.01), blob(&[2], 0.1)]),
    ]
}

fn check_v1_graph(g: &nnac_ir::Graph) {
    assert_eq!(
        shape(g, "data"),
        vec![1, 3, 8, 8],
        "input_dim batch 10 is fixed to 1"
    );
    assert!(matches!(op(g, "conv1"), Op::Conv(_)));
    assert_eq!(op(g, "relu1"), Op::Act(Activation::Relu));
    assert!(matches!(op(g, "pool1"), Op::Pool(ref p) if p.kind == PoolKind::Avg));
    assert_eq!(shape(g, "pool1"), vec![1, 4, 3, 3]);
    assert_eq!(shape(g, "fc"), vec![1, 2]);
    assert!(g.find("loss").is_none(), "TRAIN-only layer dropped");
    assert_eq!(output_names(g), vec!["prob"]);
}

#[test]
fn v1_prototxt_with_v1_caffemodel() {
    check_v1_graph(&import_ok(V1_NET, Some(&model_v1(v1_weights()))));
}

#[test]
fn v1_prototxt_with_current_caffemodel() {
    check_v1_graph(&import_ok(V1_NET, Some(&model(v1_weights()))));
}

#[test]
fn current_prototxt_with_v1_caffemodel() {
    let p = r#"
name: "new"
input: "data"
input_shape { dim: 1 dim: 3 dim: 8 dim: 8 }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool1" top: "fc" inner_product_param { num_output: 2 } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
"#;
    check_v1_graph(&import_ok(p, Some(&model_v1(v1_weights()))));
}

#[test]
fn legacy_4d_blob_shapes_are_accepted() {
    use nnac_frontend::proto::caffe::BlobProto;
    let legacy = |n: i32, c: i32, h: i32, w: i32, step: f32| BlobProto {
        num: Some(n),
        channels: Some(c),
        height: Some(h),
        width: Some(w),
        data: (0..n * c * h * w).map(|i| i as f32 * step).collect(),
        ..Default::default()
    };
    let weights = vec![
        (
            "conv1",
            vec![legacy(4, 3, 3, 3, 0.01), legacy(1, 1, 1, 4, 0.1)],
        ),
        (
            "fc",
            vec![legacy(1, 1, 2, 36, 0.01), legacy(1, 1, 1, 2, 0.1)],
        ),
    ];
    let g = import_ok(V1_NET, Some(&model_v1(weights)));
    assert_eq!(const_input(&g, "fc", 1).0, vec![2, 36]);
    assert_eq!(const_input(&g, "conv1", 2).0, vec![4]);
}

#[test]
fn several_net_inputs_with_input_shape() {
    let p = r#"
input: "a"
input_shape { dim: 1 dim: 2 dim: 3 dim: 3 }
input: "b"
input_shape { dim: 1 dim: 2 dim: 3 dim: 3 }
layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "sum" }
"#;
    let g = import_ok(p, None);
    let names: Vec<_> = g.inputs().iter().map(|&i| g.node(i).name.clone()).collect();
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(output_names(&g), vec!["sum"]);
}

#[test]
fn input_layer_with_several_tops() {
    let p = r#"
layer { name: "in" type: "Input" top: "a" top: "b" input_param { shape { dim: 4 dim: 5 } shape { dim: 1 dim: 7 } } }
layer { name: "sa" type: "Softmax" bottom: "a" top: "sa" }
layer { name: "sb" type: "Softmax" bottom: "b" top: "sb" }
"#;
    let g = import_ok(p, None);
    assert_eq!(shape(&g, "a"), vec![1, 5]);
    assert_eq!(shape(&g, "b"), vec![1, 7]);
    assert_eq!(output_names(&g), vec!["sa", "sb"]);
}

#[test]
fn phase_rules_drop_train_layers_and_keep_test_layers() {
    let p = r#"
name: "train_val"
layer { name: "train_data" type: "Data" top: "data" top: "label" include { phase: TRAIN } }
layer { name: "data" type: "Input" top: "data" include { phase: TEST } input_param { shape { dim: 1 dim: 4 } } }
layer { name: "drop" type: "Dropout" bottom: "data" top: "data" }
layer { name: "prob" type: "Softmax" bottom: "data" top: "prob" exclude { phase: TRAIN } }
layer { name: "acc" type: "Accuracy" bottom: "prob" bottom: "label" top: "acc" include { phase: TRAIN } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "data" bottom: "label" top: "loss" exclude { phase: TEST } }
"#;
    let g = import_ok(p, None);
    assert_eq!(output_names(&g), vec!["prob"]);
    assert_eq!(g.node_count(), 2);
}

#[test]
fn weights_may_come_from_the_prototxt_itself() {
    let p = net_with_input(
        &[1, 2],
        r#"layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc" inner_product_param { num_output: 1 }
             blobs { shape { dim: 1 dim: 2 } data: 3 data: 4 } blobs { shape { dim: 1 } data: 5 } }"#,
    );
    let g = import_ok(&p, None);
    assert_eq!(const_input(&g, "fc", 1).1, vec![3.0, 4.0]);
    // A caffemodel blob of the same layer wins.
    let g = import_ok(
        &p,
        Some(&model(vec![(
            "fc",
            vec![blob_of(&[1, 2], &[7.0, 8.0]), blob_of(&[1], &[9.0])],
        )])),
    );
    assert_eq!(const_input(&g, "fc", 1).1, vec![7.0, 8.0]);
}
