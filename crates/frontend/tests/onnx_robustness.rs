//! ONNX importer robustness: truncated and randomly corrupted models, and hostile
//! declared sizes, return errors (or import), never panic or allocate without bound.

mod onnx_support;

use nnac_frontend::{onnx, ImportOptions};
use onnx_support::*;

/// A small model touching many code paths: initializers in several encodings, a
/// Constant, the folded Shape chain, Conv, BatchNorm, pooling, Gemm, Softmax, Resize.
fn sample_model() -> Vec<u8> {
    let nodes = vec![
        node(
            "Conv",
            &["x", "w", "b"],
            &["c"],
            vec![a_is("pads", &[1, 1, 1, 1]), a_is("strides", &[1, 1])],
        ),
        node(
            "BatchNormalization",
            &["c", "s", "b", "m", "v"],
            &["bn"],
            vec![],
        ),
        node("Relu", &["bn"], &["r"], vec![]),
        node(
            "Resize",
            &["r", "", "sc"],
            &["up"],
            vec![a_s("mode", "nearest")],
        ),
        node(
            "MaxPool",
            &["up"],
            &["p"],
            vec![a_is("kernel_shape", &[2, 2]), a_is("strides", &[2, 2])],
        ),
        node("Shape", &["p"], &["shp"], vec![]),
        node("Gather", &["shp", "zero"], &["n"], vec![]),
        node("Unsqueeze", &["n", "ax"], &["n1"], vec![]),
        node("Concat", &["n1", "m1"], &["tgt"], vec![a_i("axis", 0)]),
        node("Reshape", &["p", "tgt"], &["flat"], vec![]),
        node(
            "Constant",
            &[],
            &["k"],
            vec![a_t("value", tensor_raw_f32("", &[2, 32], &[0.5; 64]))],
        ),
        node("Gemm", &["flat", "k"], &["g"], vec![a_i("transB", 1)]),
        node("Softmax", &["g"], &["y"], vec![]),
    ];
    let inits = vec![
        tensor_raw_f32("w", &[2, 3, 3, 3], &[0.1; 54]),
        tensor_f32("b", &[2], &[0.0, 1.0]),
        tensor_f32("s", &[2], &[1.0, 2.0]),
        tensor_raw("m", FLOAT16, &[2], vec![0, 0x3c, 0, 0x3c]),
        tensor_raw(
            "v",
            DOUBLE,
            &[2],
            [1.0f64, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect(),
        ),
        tensor_f32("sc", &[4], &[1.0, 1.0, 2.0, 2.0]),
        tensor_i64("zero", &[], &[0]),
        tensor_i64("ax", &[1], &[0]),
        tensor_i64("m1", &[1], &[-1]),
    ];
    encode(&model(
        13,
        nodes,
        vec![vi("x", &[-1, 3, 4, 4])],
        vec![vi("y", &[])],
        inits,
    ))
}

fn try_import(bytes: &[u8]) {
    let _ = onnx::import_bytes(bytes, None, "fuzz.onnx", &ImportOptions::default());
}

#[test]
fn sample_model_imports() {
    let g = onnx::import_bytes(&sample_model(), None, "s", &ImportOptions::default()).unwrap();
    assert_eq!(g.value_type(g.outputs()[0].value).shape, vec![1, 2]);
}

#[test]
fn every_truncation_is_handled() {
    let bytes = sample_model();
    let mut errors = 0;
    for len in 0..bytes.len() {
        if onnx::import_bytes(&bytes[..len], None, "t", &ImportOptions::default()).is_err() {
            errors += 1;
        }
    }
    // Most prefixes cut a message or leave the graph incomplete.
    assert!(
        errors > bytes.len() / 2,
        "{errors} of {} truncations failed",
        bytes.len()
    );
}

/// xorshift64*: a seeded generator so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn random_byte_corruption_never_panics() {
    let bytes = sample_model();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for _ in 0..3000 {
        let mut b = bytes.clone();
        let flips = 1 + rng.next() % 4;
        for _ in 0..flips {
            let i = (rng.next() % b.len() as u64) as usize;
            b[i] = match rng.next() % 3 {
                0 => b[i] ^ (1 << (rng.next() % 8)),
                1 => 0xff,
                _ => rng.next() as u8,
            };
        }
        try_import(&b);
    }
}

#[test]
fn hostile_declared_sizes_are_rejected() {
    // ConstantOfShape of 2^40 elements; Expand to a huge shape; a huge input shape.
    let big = tensor_i64("s", &[2], &[1 << 20, 1 << 20]);
    let m = model(
        13,
        vec![node("ConstantOfShape", &["s"], &["y"], vec![])],
        vec![],
        vec![vi("y", &[])],
        vec![big.clone()],
    );
    assert!(import(&m).is_err());
    let m = model(
        13,
        vec![node("Expand", &["one", "s"], &["y"], vec![])],
        vec![],
        vec![vi("y", &[])],
        vec![big, tensor_f32("one", &[1], &[1.0])],
    );
    assert!(import(&m).is_err());
    let m = model(
        13,
        vec![node("Relu", &["x"], &["y"], vec![])],
        vec![vi("x", &[1, 1 << 40, 1 << 40])],
        vec![vi("y", &[])],
        vec![],
    );
    assert!(import(&m).is_err());
    // Doubling Concat chains hit the folding budget instead of exhausting memory.
    let mut nodes = vec![];
    let mut prev = "c0".to_string();
    for i in 1..40 {
        let next = format!("c{i}");
        nodes.push(node(
            "Concat",
            &[&prev, &prev],
            &[&next],
            vec![a_i("axis", 0)],
        ));
        prev = next;
    }
    let m = model(
        13,
        nodes,
        vec![],
        vec![vi(&prev, &[])],
        vec![tensor_f32("c0", &[1024], &[0.0; 1024])],
    );
    let e = import(&m).unwrap_err();
    assert!(e.to_string().contains("folding"), "{e}");
    // Huge pads and strides are rejected before shape arithmetic can overflow.
    let n = node(
        "Pad",
        &["x"],
        &["y"],
        vec![a_is("pads", &[0, 0, 0, i64::MAX, 0, 0, 0, 1])],
    );
    assert!(import(&model(
        9,
        vec![n],
        vec![vi("x", &[1, 1, 2, 2])],
        vec![vi("y", &[])],
        vec![]
    ))
    .is_err());
    let n = node(
        "MaxPool",
        &["x"],
        &["y"],
        vec![a_is("kernel_shape", &[i64::MAX, 1])],
    );
    assert!(import(&model(
        13,
        vec![n],
        vec![vi("x", &[1, 1, 2, 2])],
        vec![vi("y", &[])],
        vec![]
    ))
    .is_err());
}
