//! Folding passes: op counts before/after and numerical equivalence with the float
//! interpreter (folded output == original within 1e-5 relative).

mod common;
use common::*;
use nnac_ir::{BinaryOp, ConvTransposeAttrs, GemmAttrs, Graph, Op, PoolKind, Tensor};
use nnac_passes::{run_passes, PassOptions, FLOAT_PASSES};

fn fold(g: &Graph) -> Graph {
    let mut f = g.clone();
    run_passes(&mut f, &FLOAT_PASSES, &PassOptions::default()).unwrap();
    f
}

#[test]
fn batchnorm_folds_into_conv() {
    let mut rng = Rng(1);
    let mut g = Graph::new("bn");
    let x = input(&mut g, &[1, 3, 8, 8]);
    let c = conv(&mut g, &mut rng, "conv", x, 8, 3, 1, 1);
    let b = batchnorm(&mut g, &mut rng, "bn", c);
    let r = relu(&mut g, "relu", b);
    out(&mut g, r);
    let f = fold(&g);
    assert_eq!(
        count(&f, |o| matches!(o, Op::BatchNorm { .. } | Op::Binary(_))),
        0
    );
    assert_eq!(mnemonics(&f), vec!["conv", "relu"]);
    let frames: Vec<_> = (0..3).map(|_| frame(&mut rng, &[1, 3, 8, 8])).collect();
    assert_equivalent(&g, &f, &frames, 1e-5);
}

#[test]
fn caffe_batchnorm_scale_and_constant_mul_add_fold() {
    // Caffe BatchNorm + Scale arrives as BatchNorm then Mul / Add by per-channel constants.
    let mut rng = Rng(2);
    let mut g = Graph::new("caffe");
    let x = input(&mut g, &[1, 4, 6, 6]);
    let c = conv(&mut g, &mut rng, "conv", x, 6, 3, 2, 1);
    let b = batchnorm(&mut g, &mut rng, "bn", c);
    let s = konst(&mut g, "s", rng.tensor(&[1, 6, 1, 1], 1.0));
    let m = binary(&mut g, "scale", BinaryOp::Mul, b, s);
    let t = konst(&mut g, "t", rng.tensor(&[6, 1, 1], 1.0));
    let a = binary(&mut g, "shift", BinaryOp::Add, m, t);
    let d = konst(&mut g, "d", Tensor::scalar_f32(2.0));
    let q = binary(&mut g, "div", BinaryOp::Div, a, d);
    out(&mut g, q);
    let f = fold(&g);
    assert_eq!(mnemonics(&f), vec!["conv"]);
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &[1, 4, 6, 6])).collect();
    assert_equivalent(&g, &f, &frames, 1e-5);
}

#[test]
fn non_per_channel_constants_are_left_alone() {
    let mut rng = Rng(3);
    let mut g = Graph::new("spatial");
    let x = input(&mut g, &[1, 2, 4, 4]);
    let c = conv(&mut g, &mut rng, "conv", x, 3, 1, 1, 1);
    // Varies along W: not a per-channel scale.
    let s = konst(&mut g, "s", rng.tensor(&[4], 1.0));
    let m = binary(&mut g, "mul", BinaryOp::Mul, c, s);
    out(&mut g, m);
    let f = fold(&g);
    assert_eq!(mnemonics(&f), vec!["conv", "mul"]);
}

#[test]
fn deconv_and_gemm_fold_scales() {
    let mut rng = Rng(4);
    let mut g = Graph::new("dg");
    let x = input(&mut g, &[1, 4, 5, 5]);
    let w = konst(&mut g, "dw", rng.tensor(&[4, 3, 3, 3], 0.3));
    let attrs = ConvTransposeAttrs {
        kernel: vec![3, 3],
        strides: vec![2, 2],
        pads: vec![1, 1, 1, 1],
        dilations: vec![1, 1],
        output_padding: vec![1, 1],
        group: 2,
    };
    let d = node(&mut g, "deconv", Op::ConvTranspose(attrs), &[x, w]);
    let s = konst(&mut g, "s", rng.tensor(&[1, 6, 1, 1], 1.0));
    let m = binary(&mut g, "mul", BinaryOp::Mul, d, s);
    let flat = node(
        &mut g,
        "flat",
        Op::Reshape {
            shape: vec![1, 6 * 10 * 10],
        },
        &[m],
    );
    let b = konst(&mut g, "B", rng.tensor(&[600, 5], 0.05));
    let c = konst(&mut g, "C", rng.tensor(&[1, 5], 0.1));
    let gemm = node(
        &mut g,
        "fc",
        Op::Gemm(GemmAttrs {
            alpha: 0.5,
            beta: 2.0,
            trans_a: false,
            trans_b: false,
        }),
        &[flat, b, c],
    );
    let s2 = konst(&mut g, "s2", rng.tensor(&[5], 1.0));
    let m2 = binary(&mut g, "mul2", BinaryOp::Mul, gemm, s2);
    out(&mut g, m2);
    let f = fold(&g);
    assert_eq!(mnemonics(&f), vec!["conv_transpose", "gemm", "reshape"]);
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &[1, 4, 5, 5])).collect();
    assert_equivalent(&g, &f, &frames, 1e-5);
}

#[test]
fn matmul_with_constant_weights_becomes_gemm() {
    let mut rng = Rng(5);
    let mut g = Graph::new("mm");
    let x = input(&mut g, &[1, 16]);
    let w = konst(&mut g, "w", rng.tensor(&[16, 4], 0.3));
    let m = node(&mut g, "mm", Op::MatMul, &[x, w]);
    let b = konst(&mut g, "b", rng.tensor(&[4], 0.3));
    let a = binary(&mut g, "add", BinaryOp::Add, m, b);
    out(&mut g, a);
    let f = fold(&g);
    assert_eq!(mnemonics(&f), vec!["gemm"]);
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &[1, 16])).collect();
    assert_equivalent(&g, &f, &frames, 1e-5);
}

#[test]
fn identity_and_constant_subgraphs_disappear() {
    let mut rng = Rng(6);
    let mut g = Graph::new("id");
    let x = input(&mut g, &[1, 3, 4, 4]);
    let i = node(&mut g, "dropout", Op::Identity, &[x]);
    let c1 = konst(&mut g, "c1", rng.tensor(&[1, 3, 1, 1], 1.0));
    let c2 = konst(&mut g, "c2", rng.tensor(&[1, 3, 1, 1], 1.0));
    let cc = binary(&mut g, "const_add", BinaryOp::Add, c1, c2);
    let y = binary(&mut g, "mul", BinaryOp::Mul, i, cc);
    out(&mut g, y);
    let f = fold(&g);
    assert_eq!(mnemonics(&f), vec!["mul"]);
    let frames = vec![frame(&mut rng, &[1, 3, 4, 4])];
    assert_equivalent(&g, &f, &frames, 1e-6);
}

#[test]
fn pools_the_pooling_unit_cannot_run_are_rewritten() {
    let mut rng = Rng(7);
    let mut g = Graph::new("pools");
    let x = input(&mut g, &[1, 4, 9, 9]);
    let m = pool(&mut g, "spp5", PoolKind::Max, 5, 1, 2, x);
    let m9 = pool(&mut g, "spp9", PoolKind::Max, 9, 1, 4, x);
    let a = pool(&mut g, "avg", PoolKind::Avg, 3, 3, 0, x); // 3x3 stride 3: not a unit pool
    let gap = node(&mut g, "gap", Op::GlobalPool(PoolKind::Avg), &[m]);
    out(&mut g, gap);
    g.add_output("m9", m9);
    g.add_output("avg", a);
    let f = fold(&g);
    assert_eq!(count(&f, |o| matches!(o, Op::GlobalPool(_))), 0);
    assert_eq!(count(&f, |o| matches!(o, Op::Conv(_))), 2);
    // 5x5 -> two 3x3, 9x9 -> four 3x3.
    assert_eq!(
        count(
            &f,
            |o| matches!(o, Op::Pool(p) if p.kernel == [3, 3] && p.strides == [1, 1])
        ),
        6
    );
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &[1, 4, 9, 9])).collect();
    assert_equivalent(&g, &f, &frames, 1e-5);
}

#[test]
fn hard_swish_patterns_become_one_activation() {
    use nnac_ir::Activation;
    let mut rng = Rng(8);
    let mut g = Graph::new("hswish");
    let x = input(&mut g, &[1, 3, 5, 5]);
    let c = conv(&mut g, &mut rng, "conv", x, 4, 3, 1, 1);
    // Paddle form: x * relu6(x + 3) / 6.
    let three = konst(&mut g, "three", Tensor::scalar_f32(3.0));
    let a = binary(&mut g, "add3", BinaryOp::Add, c, three);
    let r6 = act(&mut g, "relu6", Activation::Clip { min: 0.0, max: 6.0 }, a);
    let m = binary(&mut g, "mul", BinaryOp::Mul, r6, c);
    let six = konst(&mut g, "six", Tensor::scalar_f32(6.0));
    let d = binary(&mut g, "div6", BinaryOp::Div, m, six);
    // HardSigmoid form: y * hard_sigmoid(y).
    let hs = act(
        &mut g,
        "hsig",
        Activation::HardSigmoid {
            alpha: 1.0 / 6.0,
            beta: 0.5,
        },
        d,
    );
    let m2 = binary(&mut g, "mul2", BinaryOp::Mul, d, hs);
    // Not hard-swish: the gate's alpha is different.
    let hs3 = act(
        &mut g,
        "hsig3",
        Activation::HardSigmoid {
            alpha: 0.2,
            beta: 0.5,
        },
        m2,
    );
    let m3 = binary(&mut g, "mul3", BinaryOp::Mul, m2, hs3);
    out(&mut g, m3);
    let f = fold(&g);
    assert_eq!(
        mnemonics(&f),
        vec!["conv", "hard_sigmoid", "hard_swish", "hard_swish", "mul"]
    );
    assert_eq!(
        f.node(f.find("div6").unwrap()).op,
        Op::Act(Activation::HardSwish)
    );
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &[1, 3, 5, 5])).collect();
    assert_equivalent(&g, &f, &frames, 1e-5);
}

#[test]
fn zero_pads_of_h_and_w_fold_into_the_convolutions_that_read_them() {
    // Pad [top 1, left 0, bottom 1, right 2] read by two stride-2 convs (valid): the
    // pad disappears into both. A pad by 1.0, or read by a pool too, stays.
    let mut rng = Rng(9);
    let shape = [1, 3, 9, 9];
    let mut g = Graph::new("pad");
    let x = input(&mut g, &shape);
    let pad = |value: f32| Op::Pad {
        pads: vec![0, 0, 1, 0, 0, 0, 1, 2],
        value,
    };
    let p = node(&mut g, "pad", pad(0.0), &[x]);
    let a = conv(&mut g, &mut rng, "a", p, 4, 3, 2, 1);
    let b = conv(&mut g, &mut rng, "b", p, 4, 1, 2, 1);
    let ones = node(&mut g, "pad_ones", pad(1.0), &[x]);
    let c = conv(&mut g, &mut rng, "c", ones, 4, 3, 2, 1);
    let zeros = node(&mut g, "pad_pooled", pad(0.0), &[x]);
    let d = conv(&mut g, &mut rng, "d", zeros, 4, 3, 2, 1);
    let e = pool(&mut g, "e", PoolKind::Max, 3, 2, 0, zeros);
    for (i, v) in [a, b, c, d, e].into_iter().enumerate() {
        g.add_output(format!("y{i}"), v);
    }
    // The builder pads convs by k / 2 on every side: 1 for a (3x3), 0 for b (1x1).
    let pads_of = |g: &Graph, name: &str| match &g.node(g.find(name).unwrap()).op {
        Op::Conv(a) => a.pads.clone(),
        other => panic!("{name} is {other:?}"),
    };
    let f = fold(&g);
    assert!(f.find("pad").is_none());
    assert_eq!(pads_of(&f, "a"), [2, 1, 2, 3]);
    assert_eq!(pads_of(&f, "b"), [1, 0, 1, 2]);
    assert!(f.find("pad_ones").is_some() && f.find("pad_pooled").is_some());
    assert_eq!(pads_of(&f, "c"), [1, 1, 1, 1]);
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &shape)).collect();
    assert_equivalent(&g, &f, &frames, 1e-5);
}
