//! Fusion passes: what becomes which NNA op, and what goes to the host.

mod common;
use common::*;
use nnac_ir::{
    Activation, BinaryOp, CoordTransform, DotKind, EltwiseKind, FusedAct, Graph, NearestMode,
    NnaOp, Op, PoolKind, ResizeAttrs, ResizeMode, Tensor,
};
use nnac_passes::{compile_graph, run_passes, Frame, PassOptions, FLOAT_PASSES, FUSION_PASSES};

fn fuse(g: &Graph) -> Graph {
    let mut f = g.clone();
    run_passes(&mut f, &FLOAT_PASSES, &PassOptions::default()).unwrap();
    run_passes(&mut f, &FUSION_PASSES, &PassOptions::default()).unwrap();
    f
}

fn nna(g: &Graph, name: &str) -> NnaOp {
    match &g
        .node(g.find(name).unwrap_or_else(|| panic!("no node {name}")))
        .op
    {
        Op::Nna(n) => n.clone(),
        other => panic!("{name} is {other:?}"),
    }
}

#[test]
fn conv_bn_relu_maxpool_is_one_dot_op() {
    let mut rng = Rng(10);
    let mut g = Graph::new("cbrp");
    let x = input(&mut g, &[1, 3, 8, 8]);
    let c = conv(&mut g, &mut rng, "conv", x, 8, 3, 1, 1);
    let b = batchnorm(&mut g, &mut rng, "bn", c);
    let r = relu(&mut g, "relu", b);
    let p = pool(&mut g, "pool", PoolKind::Max, 2, 2, 0, r);
    out(&mut g, p);
    let f = fuse(&g);
    assert_eq!(mnemonics(&f), vec!["nna.conv"]);
    let NnaOp::Dot(d) = nna(&f, "conv") else {
        panic!()
    };
    assert!(matches!(d.kind, DotKind::Conv(_)));
    assert_eq!(d.epilogue.act, Some(FusedAct::Act(Activation::Relu)));
    assert_eq!(
        d.pool.as_ref().map(|p| (p.kernel, p.strides)),
        Some(([2, 2], [2, 2]))
    );
    assert_eq!(f.outputs()[0].value.node, f.find("conv").unwrap());
    assert_eq!(
        f.node(f.find("conv").unwrap()).outputs[0].shape,
        vec![1, 8, 4, 4]
    );
}

#[test]
fn residual_add_relu_is_eltwise_and_concat_is_placement() {
    let mut rng = Rng(11);
    let mut g = Graph::new("res");
    let x = input(&mut g, &[1, 4, 6, 6]);
    let a = conv(&mut g, &mut rng, "a", x, 4, 3, 1, 1);
    let ra = relu(&mut g, "ra", a);
    let b = conv(&mut g, &mut rng, "b", ra, 4, 3, 1, 1);
    let s = binary(&mut g, "add", BinaryOp::Add, b, x);
    let r = relu(&mut g, "add_relu", s);
    let c = conv(&mut g, &mut rng, "c", r, 2, 1, 1, 1);
    let cat = node(&mut g, "cat", Op::Concat { axis: 1 }, &[r, c]);
    let cat_relu = act(&mut g, "cat_sig", Activation::Sigmoid, cat);
    out(&mut g, cat_relu);
    let f = fuse(&g);
    assert_eq!(
        mnemonics(&f),
        vec![
            "nna.concat",
            "nna.conv",
            "nna.conv",
            "nna.conv",
            "nna.eltwise",
            "nna.scale"
        ]
    );
    let NnaOp::Eltwise(e) = nna(&f, "add") else {
        panic!()
    };
    assert_eq!(e.epilogue.act, Some(FusedAct::Act(Activation::Relu)));
    let NnaOp::Scale(sc) = nna(&f, "cat_sig") else {
        panic!()
    };
    assert_eq!(sc.epilogue.act, Some(FusedAct::Act(Activation::Sigmoid)));
}

#[test]
fn unsupported_ops_become_host_ops_and_are_reported() {
    let mut rng = Rng(12);
    let mut g = Graph::new("host");
    let x = input(&mut g, &[1, 3, 4, 4]);
    let c = conv(&mut g, &mut rng, "conv", x, 4, 3, 1, 1);
    let lrn = node(
        &mut g,
        "lrn",
        Op::Lrn {
            size: 3,
            alpha: 1e-4,
            beta: 0.75,
            bias: 1.0,
        },
        &[c],
    );
    let gmp = node(&mut g, "gmp", Op::GlobalPool(PoolKind::Max), &[lrn]);
    let flat = node(&mut g, "flat", Op::Reshape { shape: vec![1, 4] }, &[gmp]);
    let sm = node(&mut g, "softmax", Op::Softmax { axis: 1 }, &[flat]);
    out(&mut g, sm);
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &[1, 3, 4, 4])).collect();
    let done = compile_graph(g, &frames, &PassOptions::default()).unwrap();
    let hosts: Vec<(String, String)> = done
        .report
        .host_ops
        .iter()
        .map(|h| (h.node.clone(), h.op.clone()))
        .collect();
    assert_eq!(
        hosts,
        vec![
            ("lrn".into(), "lrn".into()),
            ("gmp".into(), "global_max_pool".into()),
            ("softmax".into(), "softmax".into())
        ]
    );
    assert!(done.report.table().contains("softmax (softmax)"));
    assert_eq!(
        mnemonics(&done.graph),
        vec!["nna.conv", "nna.host", "nna.host", "nna.host", "reshape"]
    );
}

#[test]
fn standalone_scale_and_pool_become_scale_ops() {
    let mut rng = Rng(13);
    let mut g = Graph::new("scale");
    let x = input(&mut g, &[1, 3, 6, 6]);
    let b = batchnorm(&mut g, &mut rng, "bn", x); // no conv before it
    let r = act(&mut g, "leaky", Activation::LeakyRelu { alpha: 0.1 }, b);
    let p = pool(&mut g, "pool", PoolKind::Avg, 3, 2, 1, r);
    let s = konst(
        &mut g,
        "slope",
        Tensor::f32(vec![3, 1, 1], vec![0.1, 0.2, 0.3]).unwrap(),
    );
    let pr = node(&mut g, "prelu", Op::PRelu, &[p, s]);
    let p2 = pool(&mut g, "pool2", PoolKind::Max, 2, 1, 0, pr);
    out(&mut g, p2);
    let f = fuse(&g);
    // bn (mul+add merged) + leaky + avg pool -> one scale; prelu + max pool -> identity scale.
    assert_eq!(mnemonics(&f), vec!["nna.scale", "nna.scale"]);
    let NnaOp::Scale(s1) = nna(&f, "bn.mul") else {
        panic!()
    };
    assert!(s1.pool.is_some() && s1.epilogue.act.is_some());
    let NnaOp::Scale(s2) = nna(&f, "prelu") else {
        panic!()
    };
    assert_eq!(s2.epilogue.act, Some(FusedAct::PRelu(vec![0.1, 0.2, 0.3])));
    assert!(s2.pool.is_some());
}

#[test]
fn constant_first_scale_after_a_fused_activation_is_a_scale_op() {
    // Paddle's learnable affine after hard-swish: `w * hswish(conv(x)) + b`, scalar w, b.
    let mut rng = Rng(14);
    let mut g = Graph::new("affine");
    let x = input(&mut g, &[1, 3, 6, 6]);
    let c = conv(&mut g, &mut rng, "conv", x, 4, 3, 1, 1);
    let h = act(&mut g, "hswish", Activation::HardSwish, c);
    let w = konst(&mut g, "w", Tensor::f32(vec![1], vec![0.7]).unwrap());
    let m = binary(&mut g, "mul", BinaryOp::Mul, w, h);
    let b = konst(&mut g, "b", Tensor::f32(vec![1], vec![0.1]).unwrap());
    let a = binary(&mut g, "add", BinaryOp::Add, m, b);
    out(&mut g, a);
    let f = fuse(&g);
    assert_eq!(mnemonics(&f), vec!["nna.conv", "nna.scale"]);
    let NnaOp::Scale(_) = nna(&f, "mul") else {
        panic!()
    };
}

/// Two relu'd convolutions concatenated and max-pooled (an Inception stage boundary).
fn concat_then_pool(extra_reader: bool) -> Graph {
    let mut rng = Rng(31);
    let mut g = Graph::new("catpool");
    let x = input(&mut g, &[1, 3, 9, 9]);
    let a = conv(&mut g, &mut rng, "a", x, 5, 1, 1, 1);
    let ra = relu(&mut g, "ra", a);
    let b = conv(&mut g, &mut rng, "b", x, 7, 3, 1, 1);
    let rb = relu(&mut g, "rb", b);
    let cat = node(&mut g, "cat", Op::Concat { axis: 1 }, &[ra, rb]);
    let p = pool(&mut g, "pool", PoolKind::Max, 3, 2, 1, cat);
    out(&mut g, p);
    if extra_reader {
        g.add_output("cat_too", cat);
    }
    g
}

#[test]
fn pool_after_concat_runs_in_each_producers_pooling_unit() {
    let g = concat_then_pool(false);
    let mut moved = g.clone();
    run_passes(&mut moved, &FLOAT_PASSES, &PassOptions::default()).unwrap();
    let mut rng = Rng(32);
    let frames: Vec<_> = (0..3).map(|_| frame(&mut rng, &[1, 3, 9, 9])).collect();
    // Exact: pooling is per channel, so it commutes with the channel concatenation.
    assert_equivalent(&g, &moved, &frames, 0.0);
    let f = fuse(&g);
    assert_eq!(mnemonics(&f), vec!["nna.concat", "nna.conv", "nna.conv"]);
    for name in ["a", "b"] {
        let NnaOp::Dot(d) = nna(&f, name) else {
            panic!("{name} is not a dot op")
        };
        assert_eq!(
            d.pool.as_ref().map(|p| (p.kind, p.kernel, p.strides)),
            Some((PoolKind::Max, [3, 3], [2, 2])),
            "{name}"
        );
    }
    let cat = f.find("cat").unwrap();
    assert_eq!(f.node(cat).outputs[0].shape, vec![1, 12, 5, 5]);
}

#[test]
fn pool_stays_behind_a_concat_someone_else_reads() {
    let f = fuse(&concat_then_pool(true));
    assert_eq!(count(&f, |op| matches!(op, Op::Nna(NnaOp::Scale(_)))), 1);
    let NnaOp::Dot(d) = nna(&f, "a") else {
        panic!()
    };
    assert!(d.pool.is_none());
}

/// An average pool whose one window covers a 6x6 map padded to 7x7, padding not
/// counted (Inception-v1's last pool in the ONNX zoo): `avg`, or `avg` with the pad
/// counted, or a window one short of the map.
fn padded_whole_map_pool(count_include_pad: bool, kernel: usize) -> Graph {
    let mut rng = Rng(41);
    let mut g = Graph::new("gap7");
    let x = input(&mut g, &[1, 3, 6, 6]);
    let c = conv(&mut g, &mut rng, "conv", x, 4, 3, 1, 1);
    let r = relu(&mut g, "relu", c);
    let attrs = nnac_ir::PoolAttrs {
        kind: PoolKind::Avg,
        kernel: vec![kernel, kernel],
        strides: vec![1, 1],
        pads: vec![0, 0, 1, 1],
        dilations: vec![1, 1],
        ceil_mode: false,
        count_include_pad,
    };
    let p = node(&mut g, "pool", Op::Pool(attrs), &[r]);
    out(&mut g, p);
    g
}

#[test]
fn pool_over_the_whole_padded_map_is_a_global_average_pool() {
    let g = padded_whole_map_pool(false, 7);
    let mut lowered = g.clone();
    run_passes(&mut lowered, &FLOAT_PASSES, &PassOptions::default()).unwrap();
    let mut rng = Rng(42);
    let frames: Vec<_> = (0..3).map(|_| frame(&mut rng, &[1, 3, 6, 6])).collect();
    assert_equivalent(&g, &lowered, &frames, 1e-5);
    let f = fuse(&g);
    assert_eq!(mnemonics(&f), vec!["nna.conv", "nna.conv"]);
    let NnaOp::Dot(d) = nna(&f, "pool") else {
        panic!("the pool is not a dot op")
    };
    let DotKind::Conv(a) = &d.kind else {
        panic!("the pool is not a conv")
    };
    assert_eq!((a.kernel.as_slice(), a.group), ([6, 6].as_slice(), 4));
    let done = compile_graph(g, &frames, &PassOptions::default()).unwrap();
    assert!(done.report.host_ops.is_empty());
}

#[test]
fn pool_counting_its_padding_or_missing_a_row_is_not_global() {
    // The padding counted divides by 49, not 36; a 6x6 window with padding 1 gives 2x2.
    for (counted, k) in [(true, 7), (false, 6)] {
        let f = fuse(&padded_whole_map_pool(counted, k));
        let pool = f.find("pool").unwrap();
        assert!(
            matches!(f.node(pool).op, Op::Nna(NnaOp::Host(_))),
            "count_include_pad={counted} kernel={k}: {:?}",
            f.node(pool).op
        );
    }
}

/// conv -> relu -> Reshape [1, a, b, H, W] (or [1, a, b, H*W]) -> Transpose(0,2,1,..)
/// -> Reshape back -> conv: ShuffleNet's channel shuffle (`a` = 3 groups of 4) or its
/// inverse (`a` = 4).
fn shuffle_net(a: usize, flat: bool, extra_reader: bool) -> Graph {
    let mut rng = Rng(31);
    let mut g = Graph::new("shuffle");
    let x = input(&mut g, &[1, 8, 6, 5]);
    let c = conv(&mut g, &mut rng, "conv1", x, 12, 1, 1, 1);
    let r = relu(&mut g, "relu1", c);
    let mid: Vec<usize> = if flat {
        vec![1, a, 12 / a, 30]
    } else {
        vec![1, a, 12 / a, 6, 5]
    };
    let perm: Vec<usize> = [0, 2, 1].into_iter().chain(3..mid.len()).collect();
    let split = node(&mut g, "split", Op::Reshape { shape: mid }, &[r]);
    let t = node(&mut g, "transpose", Op::Transpose { perm }, &[split]);
    let shape = vec![1, 12, 6, 5];
    let merged = node(&mut g, "merge", Op::Reshape { shape }, &[t]);
    let c2 = conv(&mut g, &mut rng, "conv2", merged, 8, 3, 1, 1);
    out(&mut g, c2);
    if extra_reader {
        g.add_output("t", t);
    }
    g
}

#[test]
fn reshape_transpose_reshape_is_one_channel_shuffle() {
    let mut rng = Rng(32);
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &[1, 8, 6, 5])).collect();
    for (a, flat) in [(3, false), (4, false), (3, true), (2, false)] {
        let g = shuffle_net(a, flat, false);
        let f = fuse(&g);
        assert_eq!(
            mnemonics(&f),
            vec!["nna.channel_shuffle", "nna.conv", "nna.conv"],
            "a={a} flat={flat}"
        );
        // The shuffle keeps the final reshape's name; groups = the first split axis.
        assert_eq!(nna(&f, "merge"), NnaOp::ChannelShuffle { groups: a });
        assert_equivalent(&g, &f, &frames, 0.0);
    }
    // Quantized: the shuffle has its input's type and quantization, no host op, and
    // the quantized interpreter permutes codes (int8 tracks float).
    assert_quantized_move(&shuffle_net(3, false, false), &frames, "merge");
}

/// Compiled to int8, the layout move `name` of `g` has its input's type and
/// quantization, nothing runs on the host, and the quantized interpreter moves codes
/// (int8 tracks float).
fn assert_quantized_move(g: &Graph, frames: &[Frame], name: &str) {
    let opts = PassOptions {
        verify_each: true,
        ..PassOptions::default()
    };
    let done = compile_graph(g.clone(), frames, &opts).unwrap();
    assert!(
        done.report.host_ops.is_empty(),
        "{:?}",
        done.report.host_ops
    );
    let q = &done.graph;
    let s = q.find(name).unwrap();
    let x = q.node_inputs(s)[0];
    assert_eq!(q.node(s).outputs[0].quant, q.value_type(x).quant);
    assert_eq!(q.node(s).outputs[0].dtype, q.value_type(x).dtype);
    let want = run_float(g, &frames[0]);
    let got = nnac_passes::run_quantized(q, &frames[0]).unwrap();
    let db = sqnr_db(&want["y"], &got["y"]);
    assert!(db > 30.0, "{name}: SQNR {db:.1} dB");
}

/// conv (8 -> 12 channels) -> relu -> depth-to-space by 2 written as the ONNX
/// importer writes it (`crd`: mode CRD / PyTorch's pixel shuffle, else DCR) -> conv.
fn depth_to_space_net(crd: bool, perm: [usize; 6]) -> Graph {
    let mut rng = Rng(34);
    let mut g = Graph::new("d2s");
    let x = input(&mut g, &[1, 8, 6, 5]);
    let c = conv(&mut g, &mut rng, "conv1", x, 12, 1, 1, 1);
    let r = relu(&mut g, "relu1", c);
    let mid = if crd {
        vec![1, 3, 2, 2, 6, 5]
    } else {
        vec![1, 2, 2, 3, 6, 5]
    };
    let split = node(&mut g, "split", Op::Reshape { shape: mid }, &[r]);
    let t = node(
        &mut g,
        "transpose",
        Op::Transpose {
            perm: perm.to_vec(),
        },
        &[split],
    );
    let shape = vec![1, 3, 12, 10];
    let merged = node(&mut g, "merge", Op::Reshape { shape }, &[t]);
    let c2 = conv(&mut g, &mut rng, "conv2", merged, 4, 3, 1, 1);
    out(&mut g, c2);
    g
}

#[test]
fn reshape_transpose_reshape_is_one_depth_to_space() {
    let mut rng = Rng(35);
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &[1, 8, 6, 5])).collect();
    for (crd, perm) in [(false, [0, 3, 4, 1, 5, 2]), (true, [0, 1, 4, 2, 5, 3])] {
        let g = depth_to_space_net(crd, perm);
        let f = fuse(&g);
        assert_eq!(
            mnemonics(&f),
            vec!["nna.conv", "nna.conv", "nna.depth_to_space"],
            "crd={crd}"
        );
        assert_eq!(nna(&f, "merge"), NnaOp::DepthToSpace { block: 2, crd });
        assert_equivalent(&g, &f, &frames, 0.0);
        assert_quantized_move(&g, &frames, "merge");
    }
    // The DCR split with the CRD permutation moves other elements: not fused.
    let f = fuse(&depth_to_space_net(false, [0, 1, 4, 2, 5, 3]));
    assert_eq!(
        count(&f, |op| matches!(op, Op::Nna(NnaOp::DepthToSpace { .. }))),
        0
    );
}

#[test]
fn shuffle_chain_with_another_reader_or_other_perm_stays() {
    // The transpose is also a graph output: nothing is rewritten.
    let f = fuse(&shuffle_net(3, false, true));
    assert_eq!(
        count(&f, |op| matches!(op, Op::Nna(NnaOp::ChannelShuffle { .. }))),
        0
    );
    // A transpose moving a spatial axis is not a channel shuffle.
    let mut rng = Rng(33);
    let mut g = Graph::new("not_shuffle");
    let x = input(&mut g, &[1, 4, 6, 6]);
    let c = conv(&mut g, &mut rng, "conv1", x, 12, 1, 1, 1);
    let split = node(
        &mut g,
        "split",
        Op::Reshape {
            shape: vec![1, 3, 4, 6, 6],
        },
        &[c],
    );
    let perm = vec![0, 2, 1, 4, 3];
    let t = node(&mut g, "transpose", Op::Transpose { perm }, &[split]);
    let shape = vec![1, 12, 6, 6];
    let merged = node(&mut g, "merge", Op::Reshape { shape }, &[t]);
    out(&mut g, merged);
    let f = fuse(&g);
    assert!(
        mnemonics(&f).contains(&"nna.host".to_string()),
        "{:?}",
        mnemonics(&f)
    );
}

/// The fused graph `f` computes what `g` does, and `g` quantized stays within 25 dB
/// SQNR of float, on two random frames.
fn fused_and_int8_follow_float(g: &Graph, f: &Graph, rng: &mut Rng, shape: &[usize]) {
    let frames: Vec<_> = (0..2).map(|_| frame(rng, shape)).collect();
    assert_equivalent(g, f, &frames, 1e-5);
    let q = compile_graph(g.clone(), &frames, &PassOptions::default()).unwrap();
    for fr in &frames {
        let want = run_float(g, fr);
        let got = nnac_passes::run_quantized(&q.graph, fr).unwrap();
        let db = sqnr_db(&got["y"], &want["y"]);
        assert!(db > 25.0, "int8 SQNR {db:.1} dB");
    }
}

#[test]
fn products_and_maxima_of_activations_are_eltwise_ops() {
    // A squeeze-and-excitation product (gate [1, C, 1, 1] first: swapped into b), a
    // gate of one activation by another (`se * sigmoid(a)`), a Max, and a product with
    // a constant (a SCALE op).
    let mut rng = Rng(13);
    let shape = [1, 6, 5, 7];
    let mut g = Graph::new("gates");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "a", x, 6, 3, 1, 1);
    let gp = node(&mut g, "gap", Op::GlobalPool(PoolKind::Avg), &[a]);
    let gate = act(&mut g, "gate", Activation::Sigmoid, gp);
    let se = binary(&mut g, "se", BinaryOp::Mul, gate, a);
    let sig = act(&mut g, "sig", Activation::Sigmoid, a);
    let gated = binary(&mut g, "gated", BinaryOp::Mul, se, sig);
    let m = binary(&mut g, "max", BinaryOp::Max, gated, a);
    let k = konst(&mut g, "k", rng.tensor(&[1, 6, 1, 1], 1.0));
    let scaled = binary(&mut g, "scaled", BinaryOp::Mul, m, k);
    out(&mut g, scaled);
    let f = fuse(&g);
    assert_eq!(count(&f, |op| matches!(op, Op::Nna(NnaOp::Host(_)))), 0);
    let kind = |name: &str| match nna(&f, name) {
        NnaOp::Eltwise(e) => e.kind,
        other => panic!("{name} is {other:?}"),
    };
    assert_eq!(kind("se"), EltwiseKind::Mul);
    assert_eq!(kind("gated"), EltwiseKind::Mul);
    assert_eq!(kind("max"), EltwiseKind::Max);
    assert!(matches!(nna(&f, "scaled"), NnaOp::Scale(_)));
    let se = f.find("se").unwrap();
    let ins = f.node_inputs(se);
    assert_eq!(f.value_type(ins[0]).shape, shape);
    assert_eq!(f.value_type(ins[1]).shape, [1, 6, 1, 1]);
    fused_and_int8_follow_float(&g, &f, &mut rng, &shape);
}

#[test]
fn x_times_sigmoid_x_is_one_silu_in_the_producers_epilogue() {
    // conv -> BN -> x * sigmoid(x), the product written both ways round; a sigmoid
    // with another reader keeps its product (an ELTWISE op).
    let mut rng = Rng(14);
    let shape = [1, 3, 6, 6];
    let mut g = Graph::new("silu");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "a", x, 8, 3, 1, 1);
    let bn = batchnorm(&mut g, &mut rng, "bn", a);
    let sa = act(&mut g, "sa", Activation::Sigmoid, bn);
    let ya = binary(&mut g, "silu_a", BinaryOp::Mul, bn, sa);
    let b = conv(&mut g, &mut rng, "b", ya, 8, 3, 1, 1);
    let sb = act(&mut g, "sb", Activation::Sigmoid, b);
    let yb = binary(&mut g, "silu_b", BinaryOp::Mul, sb, b);
    let c = conv(&mut g, &mut rng, "c", yb, 8, 1, 1, 1);
    let sc = act(&mut g, "sc", Activation::Sigmoid, c);
    let yc = binary(&mut g, "gate_c", BinaryOp::Mul, c, sc);
    let both = binary(&mut g, "both", BinaryOp::Add, yc, sc);
    out(&mut g, both);
    let f = fuse(&g);
    for conv in ["a", "b"] {
        let NnaOp::Dot(d) = nna(&f, conv) else {
            panic!("{conv} is not a dot op")
        };
        assert_eq!(
            d.epilogue.act,
            Some(FusedAct::Act(Activation::Silu)),
            "{conv}"
        );
    }
    assert!(matches!(nna(&f, "gate_c"), NnaOp::Eltwise(e) if e.kind == EltwiseKind::Mul));
    fused_and_int8_follow_float(&g, &f, &mut rng, &shape);
}

#[test]
fn nearest_upsampling_by_whole_factors_runs_on_the_nna() {
    // FPN-style: conv -> Resize x2 (nearest, asymmetric, floor) + lateral conv; a
    // linear resize stays on the host.
    let mut rng = Rng(15);
    let shape = [1, 3, 8, 8];
    let mut g = Graph::new("fpn");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "a", x, 6, 3, 2, 1);
    let ra = relu(&mut g, "ra", a);
    let resize = |mode| {
        Op::Resize(ResizeAttrs {
            mode,
            coord: CoordTransform::Asymmetric,
            sizes: vec![1, 6, 8, 8],
            scales: vec![1.0, 1.0, 2.0, 2.0],
        })
    };
    let up = node(
        &mut g,
        "up",
        resize(ResizeMode::Nearest(NearestMode::Floor)),
        &[ra],
    );
    let lat = conv(&mut g, &mut rng, "lat", x, 6, 1, 1, 1);
    let sum = binary(&mut g, "sum", BinaryOp::Add, up, lat);
    let lin = node(&mut g, "lin", resize(ResizeMode::Linear), &[ra]);
    let both = binary(&mut g, "both", BinaryOp::Add, sum, lin);
    out(&mut g, both);
    let f = fuse(&g);
    assert_eq!(nna(&f, "up"), NnaOp::Upsample { factors: [2, 2] });
    assert!(matches!(nna(&f, "lin"), NnaOp::Host(_)));
    fused_and_int8_follow_float(&g, &f, &mut rng, &shape);
    let frames: Vec<_> = (0..2).map(|_| frame(&mut rng, &shape)).collect();
    let q = compile_graph(g, &frames, &PassOptions::default())
        .unwrap()
        .graph;
    let (up, ra) = (q.find("up").unwrap(), q.find("ra").or(q.find("a")).unwrap());
    assert_eq!(q.node(up).outputs[0].quant, q.node(ra).outputs[0].quant);
}
