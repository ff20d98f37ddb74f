//! Real Caffe models from the cache (scripts/setup.sh): open_nsfw with trained weights
//! and the BVLC deploy nets with seeded random weights
//! (scripts/make_caffe_models.py). Each must import, and every layer's output shape
//! must equal the shape OpenCV's Caffe importer computes for the same batch-1 input.

mod caffe_support;

use caffe_support::{cached, opencv_layer_shapes};
use nnac_frontend::caffe::import_files;
use nnac_frontend::ImportOptions;
use nnac_ir::{Graph, Op};
use std::path::Path;

fn import(prototxt: &Path, caffemodel: &Path) -> Graph {
    import_files(prototxt, Some(caffemodel), &ImportOptions::default())
        .unwrap_or_else(|e| panic!("importing {}: {e}", prototxt.display()))
}

/// Compares each OpenCV layer's output shape with the IR node of the same name.
/// Layers without a node of their own (Input, Split, Dropout) are skipped; returns how
/// many layers were compared.
fn check_shapes_against_opencv(
    g: &Graph,
    prototxt: &Path,
    caffemodel: &Path,
    input: &[usize],
) -> usize {
    let reference = opencv_layer_shapes(prototxt, caffemodel, input);
    let mut compared = 0;
    for (name, cv_shape) in &reference {
        let Some(id) = g.find(name) else { continue };
        if matches!(g.node(id).op, Op::Input | Op::Constant(_)) {
            continue;
        }
        let ours = &g.node(id).outputs[0].shape;
        assert_eq!(
            ours, cv_shape,
            "layer '{name}': nnac shape {ours:?}, OpenCV {cv_shape:?}"
        );
        compared += 1;
    }
    compared
}

fn count(g: &Graph, pred: impl Fn(&Op) -> bool) -> usize {
    g.node_ids()
        .into_iter()
        .filter(|&n| pred(&g.node(n).op))
        .count()
}

fn input_shape(g: &Graph) -> Vec<usize> {
    g.node(g.inputs()[0]).outputs[0].shape.clone()
}

#[test]
fn nsfw_resnet50_imports_and_matches_opencv_shapes() {
    let (proto, model) = (
        cached("nsfw/deploy.prototxt"),
        cached("nsfw/resnet_50_1by2_nsfw.caffemodel"),
    );
    let g = import(&proto, &model);
    assert_eq!(input_shape(&g), vec![1, 3, 224, 224]);
    let outs: Vec<_> = g
        .outputs()
        .iter()
        .map(|o| (o.name.clone(), g.value_type(o.value).shape.clone()))
        .collect();
    assert_eq!(outs, vec![("prob".to_string(), vec![1, 2])]);
    assert_eq!(count(&g, |o| matches!(o, Op::Conv(_))), 53);
    assert_eq!(count(&g, |o| matches!(o, Op::BatchNorm { .. })), 53);
    let compared = check_shapes_against_opencv(&g, &proto, &model, &[1, 3, 224, 224]);
    assert!(compared > 200, "only {compared} layers compared");
}

fn bvlc(name: &str, input: usize, convs: usize) {
    let proto = cached(&format!("caffe/models/{name}/deploy.prototxt"));
    let model = cached(&format!("caffe-random/{name}.caffemodel"));
    let g = import(&proto, &model);
    assert_eq!(
        input_shape(&g),
        vec![1, 3, input, input],
        "batch is fixed to 1"
    );
    let outs: Vec<_> = g
        .outputs()
        .iter()
        .map(|o| (o.name.clone(), g.value_type(o.value).shape.clone()))
        .collect();
    assert_eq!(outs, vec![("prob".to_string(), vec![1, 1000])]);
    assert_eq!(count(&g, |o| matches!(o, Op::Conv(_))), convs);
    let compared = check_shapes_against_opencv(&g, &proto, &model, &[1, 3, input, input]);
    assert!(compared >= convs, "only {compared} layers compared");
}

#[test]
fn bvlc_alexnet_imports_and_matches_opencv_shapes() {
    bvlc("bvlc_alexnet", 227, 5);
}

#[test]
fn bvlc_caffenet_imports_and_matches_opencv_shapes() {
    bvlc("bvlc_reference_caffenet", 227, 5);
}

#[test]
fn bvlc_googlenet_imports_and_matches_opencv_shapes() {
    bvlc("bvlc_googlenet", 224, 57);
}
