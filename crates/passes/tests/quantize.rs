//! Quantization end to end on small conv nets built in code with random weights:
//! accuracy of the quantized reference interpreter, the accumulator bound, the
//! report, determinism and dumps.

mod common;
use common::*;
use nnac_ir::{
    Activation, BinaryOp, ConvTransposeAttrs, DType, GemmAttrs, Graph, NnaOp, Op, PoolKind, Requant,
};
use nnac_passes::{
    compile_graph, run_quantized, run_quantized_raw, BiasScope, CalibMethod, DumpSpec, Frame,
    PassOptions,
};

const SHAPE: [usize; 4] = [1, 3, 16, 16];

/// conv-bn-relu-maxpool, residual block, inception-style concat, deconv + sigmoid,
/// global average pool, fully connected, softmax.
fn net(seed: u64) -> Graph {
    let mut rng = Rng(seed);
    let mut g = Graph::new("smallnet");
    let x = input(&mut g, &SHAPE);
    let c0 = conv(&mut g, &mut rng, "c0", x, 8, 3, 1, 1);
    let b0 = batchnorm(&mut g, &mut rng, "bn0", c0);
    let r0 = relu(&mut g, "r0", b0);
    let p0 = pool(&mut g, "p0", PoolKind::Max, 2, 2, 0, r0);
    let a = conv(&mut g, &mut rng, "a", p0, 8, 3, 1, 1);
    let ra = relu(&mut g, "ra", a);
    let b = conv(&mut g, &mut rng, "b", ra, 8, 3, 1, 1);
    let s = binary(&mut g, "res", BinaryOp::Add, b, p0);
    let rs = relu(&mut g, "res_relu", s);
    let i1 = conv(&mut g, &mut rng, "i1", rs, 4, 1, 1, 1);
    let i1r = relu(&mut g, "i1r", i1);
    let i2 = conv(&mut g, &mut rng, "i2", rs, 4, 3, 1, 1);
    let i2r = act(&mut g, "i2r", Activation::LeakyRelu { alpha: 0.1 }, i2);
    let cat = node(&mut g, "cat", Op::Concat { axis: 1 }, &[i1r, i2r]);
    let dw = konst(&mut g, "up.w", rng.tensor(&[8, 2, 2, 2], 0.3));
    let up_attrs = ConvTransposeAttrs {
        kernel: vec![2, 2],
        strides: vec![2, 2],
        pads: vec![0; 4],
        dilations: vec![1, 1],
        output_padding: vec![0, 0],
        group: 1,
    };
    let up = node(&mut g, "up", Op::ConvTranspose(up_attrs), &[cat, dw]);
    let mask = act(&mut g, "mask", Activation::Sigmoid, up);
    let gap = node(&mut g, "gap", Op::GlobalPool(PoolKind::Avg), &[cat]);
    let flat = node(&mut g, "flat", Op::Reshape { shape: vec![1, 8] }, &[gap]);
    let fw = konst(&mut g, "fc.w", rng.tensor(&[10, 8], 0.5));
    let fb = konst(&mut g, "fc.b", rng.tensor(&[10], 0.1));
    let fc = node(
        &mut g,
        "fc",
        Op::Gemm(GemmAttrs {
            alpha: 1.0,
            beta: 1.0,
            trans_a: false,
            trans_b: true,
        }),
        &[flat, fw, fb],
    );
    let sm = node(&mut g, "prob", Op::Softmax { axis: 1 }, &[fc]);
    g.add_output("logits", fc);
    g.add_output("prob", sm);
    g.add_output("mask", mask);
    g
}

fn frames(seed: u64, n: usize) -> Vec<Frame> {
    let mut rng = Rng(seed);
    (0..n).map(|_| frame(&mut rng, &SHAPE)).collect()
}

/// Heavy-tailed frames: one value in 500 is 12x larger (like real activations' outliers).
fn heavy_frames(seed: u64, n: usize) -> Vec<Frame> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let t = rng.tensor(&SHAPE, 1.0);
            let v = t
                .to_f32_vec()
                .into_iter()
                .map(|x| {
                    if rng.next_u64() < u64::MAX / 500 {
                        12.0 * x
                    } else {
                        x
                    }
                })
                .collect();
            [(
                "x".to_string(),
                nnac_ir::Tensor::f32(SHAPE.to_vec(), v).unwrap(),
            )]
            .into()
        })
        .collect()
}

#[test]
fn quantized_net_tracks_float_above_30_db() {
    let g = net(21);
    let calib = frames(100, 8);
    let done = compile_graph(g.clone(), &calib, &PassOptions::default()).unwrap();
    assert_eq!(done.report.acc_overflows, 0);
    // Every node is an NNA op, an input, a constant or a reshape.
    for id in done.graph.node_ids() {
        let op = &done.graph.node(id).op;
        assert!(
            matches!(
                op,
                Op::Nna(_) | Op::Input | Op::Constant(_) | Op::Reshape { .. }
            ),
            "{op:?}"
        );
    }
    // Held-out frames, not the calibration set.
    for f in frames(999, 3) {
        let want = run_float(&g, &f);
        let got = run_quantized(&done.graph, &f).unwrap();
        for name in ["logits", "mask"] {
            let db = sqnr_db(&want[name], &got[name]);
            assert!(db > 30.0, "{name}: SQNR {db:.1} dB");
        }
        let e = rel_err(&want["prob"], &got["prob"]);
        assert!(e < 0.05, "prob relative error {e}");
    }
    // The per-layer report covers the compute layers with sane numbers.
    let layers = &done.report.layers;
    for name in ["c0", "a", "b", "res", "i1", "i2", "up", "gap", "fc", "prob"] {
        let l = layers
            .iter()
            .find(|l| l.name == name)
            .unwrap_or_else(|| panic!("layer {name} missing"));
        assert!(
            l.accuracy.cosine > 0.99,
            "{name}: cosine {}",
            l.accuracy.cosine
        );
    }
    let c0 = layers.iter().find(|l| l.name == "c0").unwrap();
    assert_eq!(c0.float_ref, "p0");
    let q = c0.quant.as_ref().unwrap();
    assert_eq!(q.out_dtype, "u8");
    assert!(q.acc.as_ref().unwrap().bound <= q.acc.as_ref().unwrap().limit);
    assert_eq!(done.report.host_ops.len(), 1);
}

#[test]
fn report_serializes_to_json() {
    let done = compile_graph(net(22), &frames(1, 2), &PassOptions::default()).unwrap();
    let json = serde_json::to_string(&done.report).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["calib_method"], "mse");
    assert!(v["layers"].as_array().unwrap().len() >= 10);
    assert!(v["layers"][0]["accuracy"]["cosine"].is_number());
    assert_eq!(v["host_ops"][0]["node"], "prob");
}

#[test]
fn report_is_the_same_from_kept_and_recomputed_float_values() {
    let fr = frames(5, 3);
    let kept = compile_graph(net(23), &fr, &PassOptions::default()).unwrap();
    assert!(!kept.report.layers.is_empty() && !kept.report.outputs.is_empty());
    // No frame kept, or the first frames only: the others run the float interpreter
    // again.
    for budget in [0, 1 << 16] {
        let opts = PassOptions {
            keep_float_bytes: budget,
            ..Default::default()
        };
        let rerun = compile_graph(net(23), &fr, &opts).unwrap();
        assert_eq!(rerun.report.layers, kept.report.layers, "budget {budget}");
        assert_eq!(rerun.report.outputs, kept.report.outputs, "budget {budget}");
        assert_eq!(rerun.report.acc_overflows, kept.report.acc_overflows);
    }
    // Without the measurement: the same program, a report without accuracy.
    let opts = PassOptions {
        measure: false,
        ..Default::default()
    };
    let bare = compile_graph(net(23), &fr, &opts).unwrap();
    assert!(bare.report.layers.is_empty() && bare.report.outputs.is_empty());
    assert_eq!(nnac_ir::print(&bare.graph), nnac_ir::print(&kept.graph));
    assert_eq!(bare.report.rewrites, kept.report.rewrites);
    assert!(!bare.report.pass_ms.iter().any(|(s, _)| s == "report"));
}

#[test]
fn quantized_types_and_raw_outputs() {
    let done = compile_graph(net(23), &frames(2, 2), &PassOptions::default()).unwrap();
    let q = &done.graph;
    let mask = q.outputs().iter().find(|o| o.name == "mask").unwrap();
    // Sigmoid output is non-negative: uint8; its epilogue is the fp32 path.
    assert_eq!(q.value_type(mask.value).dtype, DType::U8);
    let Op::Nna(NnaOp::Dot(d)) = &q.node(mask.value.node).op else {
        panic!()
    };
    assert!(matches!(d.epilogue.requant, Some(Requant::Float { .. })));
    // The deconvolution input (concat of relu and leaky relu) is symmetric int8.
    let up_in = q.node_inputs(mask.value.node)[0];
    assert_eq!(q.value_type(up_in).quant.as_ref().unwrap().zero_point(), 0);
    // Weights int8 per channel, bias int32.
    let ins = q.node_inputs(q.find("c0").unwrap());
    assert_eq!(q.value_type(ins[1]).dtype, DType::I8);
    assert_eq!(q.value_type(ins[2]).dtype, DType::I32);
    let raw = run_quantized_raw(q, &frames(3, 1)[0]).unwrap();
    assert_eq!(raw["mask"].dtype(), DType::U8);
    assert_eq!(raw["logits"].dtype(), DType::I8);
}

/// A conv whose reduction is long and whose weights are all at full scale: the
/// worst-case accumulator exceeds 30 bits, so channels must be rescaled.
#[test]
fn accumulator_bound_triggers_rescaling_on_adversarial_weights() {
    let (cin, k) = (2048, 3);
    let mut g = Graph::new("adversarial");
    let x = input(&mut g, &[1, cin, 3, 3]);
    let mut rng = Rng(5);
    // Channel 0: every weight equal (sum |w_q| = 127 * 18432); channel 1: random.
    let n = cin * k * k;
    let mut w: Vec<f32> = vec![0.01; n];
    w.extend((0..n).map(|_| rng.normal() * 0.01));
    let wv = konst(
        &mut g,
        "w",
        nnac_ir::Tensor::f32(vec![2, cin, k, k], w).unwrap(),
    );
    let attrs = nnac_ir::ConvAttrs {
        kernel: vec![k, k],
        strides: vec![1, 1],
        pads: vec![1; 4],
        dilations: vec![1, 1],
        group: 1,
    };
    let c = node(&mut g, "conv", Op::Conv(attrs), &[x, wv]);
    let r = relu(&mut g, "relu", c);
    out(&mut g, r);
    // Non-negative input: uint8 codes up to 255.
    let mk = |rng: &mut Rng| -> Frame {
        let t = rng.tensor(&[1, cin, 3, 3], 1.0);
        let v = t.to_f32_vec().iter().map(|x| x.abs()).collect();
        [(
            "x".to_string(),
            nnac_ir::Tensor::f32(t.shape.clone(), v).unwrap(),
        )]
        .into()
    };
    let calib: Vec<Frame> = (0..2).map(|_| mk(&mut rng)).collect();
    let done = compile_graph(g.clone(), &calib, &PassOptions::default()).unwrap();
    let l = done
        .report
        .layers
        .iter()
        .find(|l| l.name == "conv")
        .unwrap();
    let acc = l.quant.as_ref().unwrap().acc.clone().unwrap();
    assert!(acc.bound_before > acc.limit, "{acc:?}");
    assert!(acc.bound <= acc.limit, "{acc:?}");
    assert_eq!(acc.rescaled_channels, 1, "{acc:?}");
    assert!(acc.max_rescale > 1.0 && acc.max_rescale < 1.2, "{acc:?}");
    assert_eq!(done.report.acc_rescaled_layers, vec!["conv".to_string()]);
    assert_eq!(done.report.acc_overflows, 0);
    let f = mk(&mut rng);
    let db = sqnr_db(
        &run_float(&g, &f)["y"],
        &run_quantized(&done.graph, &f).unwrap()["y"],
    );
    assert!(db > 30.0, "SQNR {db:.1} dB");
}

#[test]
fn compiling_twice_is_deterministic_and_dumps_every_pass() {
    let tmp = tempfile::Builder::new()
        .prefix("nnac-passes-dump-")
        .tempdir()
        .unwrap();
    // Not created beforehand: the dump creates its directory.
    let dir = tmp.path().join("dump");
    let opts = PassOptions {
        dump: Some(DumpSpec {
            stage: None,
            dir: dir.clone(),
        }),
        verify_each: true,
        ..Default::default()
    };
    let a = compile_graph(net(24), &frames(4, 2), &opts).unwrap();
    let b = compile_graph(net(24), &frames(4, 2), &PassOptions::default()).unwrap();
    assert_eq!(nnac_ir::print(&a.graph), nnac_ir::print(&b.graph));
    assert_eq!(
        serde_json::to_string(&a.report).unwrap(),
        serde_json::to_string(&b.report).unwrap()
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    // One dump per stage: the input, every pass, the quantization.
    let last = format!("{:02}-quantize.ir", nnac_passes::stage_names().len());
    assert_eq!(nnac_passes::stage_names().last(), Some(&"quantize"));
    assert_eq!(names.first().map(String::as_str), Some("00-input.ir"));
    assert_eq!(names.last(), Some(&last));
    assert_eq!(names.len(), nnac_passes::stage_names().len() + 1);
    // A dump parses back to the same graph text.
    let text = std::fs::read_to_string(dir.join(&last)).unwrap();
    let parsed = nnac_ir::parse(&text).unwrap();
    assert_eq!(nnac_ir::print(&parsed), text);
    // Unknown stage names are rejected up front.
    let bad = PassOptions {
        dump: Some(DumpSpec {
            stage: Some("nope".into()),
            dir,
        }),
        ..Default::default()
    };
    let err = compile_graph(net(24), &frames(4, 1), &bad).err().unwrap();
    assert!(
        err.to_string().contains("unknown IR dump stage 'nope'"),
        "{err}"
    );
}

/// Also the measurement behind the default method: mean output SQNR over held-out
/// frames and several random nets (`cargo test -p nnac-passes --test quantize
/// calibration_methods -- --nocapture` prints the table).
/// The measurement behind the default method: mean output SQNR on held-out frames of
/// four random nets, for Gaussian and heavy-tailed inputs (`cargo test -p nnac-passes
/// --test quantize calibration_methods -- --nocapture` prints the table). The default
/// must be within 0.5 dB of the best method on both.
#[test]
fn calibration_methods_measured() {
    let default = PassOptions::default().calib_method;
    for (kind, make) in [
        ("gaussian", frames as fn(u64, usize) -> Vec<Frame>),
        ("heavy-tailed", heavy_frames),
    ] {
        let mut means = Vec::new();
        for m in CalibMethod::ALL {
            let opts = PassOptions {
                calib_method: m,
                ..Default::default()
            };
            let mut dbs = Vec::new();
            for seed in 30..34 {
                let g = net(seed);
                let done = compile_graph(g.clone(), &make(seed * 7, 6), &opts).unwrap();
                for f in make(seed * 11, 2) {
                    let (want, got) = (run_float(&g, &f), run_quantized(&done.graph, &f).unwrap());
                    for name in ["logits", "mask"] {
                        dbs.push(sqnr_db(&want[name], &got[name]));
                    }
                }
            }
            let mean = dbs.iter().sum::<f64>() / dbs.len() as f64;
            let min = dbs.iter().copied().fold(f64::INFINITY, f64::min);
            eprintln!(
                "{kind:<12} {:<10} mean output SQNR {mean:5.1} dB, min {min:5.1} dB",
                m.name()
            );
            means.push((m, mean));
        }
        let best = means.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        let mine = means.iter().find(|p| p.0 == default).unwrap().1;
        assert!(
            mine >= best - 0.5,
            "{kind}: default {} at {mine:.1} dB, best {best:.1} dB",
            default.name()
        );
    }
}

/// The graph input keeps its whole calibrated range under every method: a heavy-tailed
/// input (one value in 500 is 12x larger) would be clipped by percentile / entropy.
#[test]
fn graph_input_is_never_clipped() {
    let calib = heavy_frames(5, 4);
    let (lo, hi) = calib
        .iter()
        .flat_map(|f| f["x"].to_f32_vec())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), x| {
            (l.min(x), h.max(x))
        });
    for m in CalibMethod::ALL {
        let opts = PassOptions {
            calib_method: m,
            ..Default::default()
        };
        let q = compile_graph(net(5), &calib, &opts).unwrap().graph;
        let t = &q.node(q.inputs()[0]).outputs[0];
        let Some(nnac_ir::Quant::PerTensor { scale, zero_point }) = t.quant else {
            panic!("{}: input not per-tensor quantized", m.name())
        };
        let (qlo, qhi) = (
            (-128 - zero_point) as f32 * scale,
            (127 - zero_point) as f32 * scale,
        );
        assert_eq!(t.dtype, DType::I8, "{}", m.name());
        assert!(
            qlo <= lo + scale && qhi >= hi - scale,
            "{}: input quantized to [{qlo}, {qhi}], calibrated range [{lo}, {hi}]",
            m.name()
        );
    }
}

#[test]
fn bad_calibration_frames_are_errors() {
    let err = compile_graph(net(26), &[], &PassOptions::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("no calibration frames"), "{err}");
    let wrong: Frame = [(
        "x".to_string(),
        nnac_ir::Tensor::f32(vec![1, 3], vec![0.0; 3]).unwrap(),
    )]
    .into();
    let err = compile_graph(net(26), &[wrong], &PassOptions::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("input 'x' needs shape"), "{err}");
}

/// Empirical bias correction of every dot op (`BiasScope::All`): on the calibration
/// frames, the mean error of the fully connected logits (a dot op without
/// activation) per output channel shrinks to about the output's rounding; every dot
/// op is listed in the report; the result is deterministic and never overflows the
/// accumulator.
#[test]
fn bias_correction_removes_the_mean_error_on_the_calibration_frames() {
    let on = PassOptions {
        bias_correction: BiasScope::All,
        ..Default::default()
    };
    let off = PassOptions {
        bias_correction: BiasScope::Off,
        ..Default::default()
    };
    for seed in 40..43 {
        let g = net(seed);
        let calib = heavy_frames(seed * 3, 6);
        let plain = compile_graph(g.clone(), &calib, &off).unwrap();
        let done = compile_graph(g.clone(), &calib, &on).unwrap();
        assert_eq!(done.report.acc_overflows, 0);
        assert!(plain.report.bias_correction.is_empty());
        // Every dot op but the pooling convolutions (all weights one code: exact
        // averages, never corrected).
        let dots = done
            .graph
            .node_ids()
            .into_iter()
            .filter(|&n| matches!(done.graph.node(n).op, Op::Nna(NnaOp::Dot(_))))
            .filter(|&n| {
                let w = done.graph.node_inputs(n)[1];
                match done.graph.const_of(w).map(|t| &t.data) {
                    Some(nnac_ir::TensorData::I8(q)) => q.iter().any(|&c| c != q[0]),
                    _ => true,
                }
            })
            .count();
        assert_eq!(done.report.bias_correction.len(), dots);
        let again = compile_graph(g.clone(), &calib, &on).unwrap();
        assert_eq!(nnac_ir::print(&again.graph), nnac_ir::print(&done.graph));
        // Per-channel mean error of the logits over the calibration frames.
        let mean_err = |q: &Graph| {
            let mut sum = [0f64; 10];
            for f in &calib {
                let (want, got) = (run_float(&g, f), run_quantized(q, f).unwrap());
                let (w, o) = (want["logits"].to_f32_vec(), got["logits"].to_f32_vec());
                for c in 0..10 {
                    sum[c] += f64::from(o[c] - w[c]) / calib.len() as f64;
                }
            }
            sum.iter().fold(0f64, |m, x| m.max(x.abs()))
        };
        let fc = done.graph.find("fc").unwrap();
        let Some(nnac_ir::Quant::PerTensor { scale, .. }) = done.graph.node(fc).outputs[0].quant
        else {
            panic!("fc output not per-tensor quantized")
        };
        let (before, after) = (mean_err(&plain.graph), mean_err(&done.graph));
        eprintln!("seed {seed}: max |mean logit error| {before:.4} -> {after:.4} (step {scale})");
        assert!(after <= before + 1e-6, "{before} -> {after}");
        assert!(after <= 0.75 * f64::from(scale), "{after} vs step {scale}");
    }
}

/// A NaN or infinite parameter (here in a conv's weights, or from a batch norm with a
/// negative variance) has no int8 code: quantization names the layer and the element
/// instead of failing later on an infinite requantization multiplier.
#[test]
fn non_finite_parameters_are_named() {
    let shape = [1, 3, 8, 8];
    let build = |poison: &dyn Fn(&mut Graph)| {
        let mut rng = Rng(3);
        let mut g = Graph::new("nan");
        let x = input(&mut g, &shape);
        let c = conv(&mut g, &mut rng, "c0", x, 4, 3, 1, 1);
        let b = batchnorm(&mut g, &mut rng, "bn0", c);
        let r = relu(&mut g, "r0", b);
        g.add_output("y", r);
        poison(&mut g);
        g
    };
    let replace = |g: &mut Graph, name: &str, at: usize, v: f32| {
        let id = g.find(name).unwrap();
        let mut t = g.const_of(nnac_ir::Value::new(id, 0)).unwrap().clone();
        let mut d = t.to_f32_vec();
        d[at] = v;
        t = nnac_ir::Tensor::f32(t.shape.clone(), d).unwrap();
        let fresh = g.add_constant(format!("{name}.poisoned"), t);
        let user = g.users(nnac_ir::Value::new(id, 0))[0];
        let mut ins = g.node_inputs(user.0);
        ins[usize::from(user.1)] = fresh;
        g.set_node_inputs(user.0, &ins);
    };
    let mut rng = Rng(4);
    let f = vec![frame(&mut rng, &shape)];
    let opts = PassOptions::default();
    let err = compile_graph(build(&|g| replace(g, "c0.w", 5, f32::NAN)), &f, &opts)
        .err()
        .expect("a NaN weight is refused");
    let msg = err.to_string();
    assert!(
        msg.contains("'c0'") && msg.contains("element 5") && msg.contains("NaN"),
        "{msg}"
    );
    let err = compile_graph(build(&|g| replace(g, "bn0.v", 2, -1.0)), &f, &opts)
        .err()
        .expect("a negative variance is refused");
    let msg = err.to_string();
    // Channel 2's first weight: 2 x (3 x 3 x 3).
    assert!(msg.contains("'c0'") && msg.contains("element 54"), "{msg}");
}

/// GPTQ weight rounding (`PassOptions::weight_rounding`): on inputs whose channels are
/// correlated (as real feature maps are), the error GPTQ minimises, `sum ((W - Wq) x)^2`
/// over a convolution's float input vectors, is smaller than with round-to-nearest
/// weights for a dense and a depthwise convolution, on the calibration frames and on
/// other frames; the codes are deterministic, the accumulator bound holds, and the
/// report names the rounding.
#[test]
fn gptq_rounding_lowers_the_output_error_of_convolutions() {
    const S: [usize; 4] = [1, 16, 12, 12];
    // Smooth fields shared by all channels plus small per-channel noise.
    let frames = |seed: u64, n: usize| -> Vec<Frame> {
        let mut rng = Rng(seed);
        (0..n)
            .map(|_| {
                let (a, b, c) = (rng.uniform(), rng.uniform(), rng.uniform());
                let v: Vec<f32> = (0..16 * 144)
                    .map(|i| {
                        let (ch, y, x) = (i / 144, (i / 12) % 12, i % 12);
                        let base = a * (y as f32 * 0.4 + b).sin() + c * (x as f32 * 0.3).cos();
                        base * (1.0 + 0.05 * ch as f32) + 0.05 * rng.uniform()
                    })
                    .collect();
                Frame::from([(
                    "x".to_string(),
                    nnac_ir::Tensor::f32(S.to_vec(), v).unwrap(),
                )])
            })
            .collect()
    };
    let mut rng = Rng(77);
    let mut g = Graph::new("gptq");
    let x = input(&mut g, &S);
    let dense = conv(&mut g, &mut rng, "dense", x, 8, 3, 1, 1);
    let dw = conv(&mut g, &mut rng, "dw", x, 16, 3, 1, 16);
    g.add_output("dense", dense);
    g.add_output("dw", dw);
    let calib = frames(5, 8);
    let other = frames(9, 8);
    let gptq = PassOptions {
        weight_rounding: nnac_passes::WeightRounding::Gptq,
        ..Default::default()
    };
    let near = compile_graph(g.clone(), &calib, &PassOptions::default()).unwrap();
    let done = compile_graph(g.clone(), &calib, &gptq).unwrap();
    let again = compile_graph(g.clone(), &calib, &gptq).unwrap();
    assert_eq!(nnac_ir::print(&again.graph), nnac_ir::print(&done.graph));
    assert_eq!(done.report.acc_overflows, 0);
    assert!(done
        .report
        .table()
        .contains("weights gptq (on 2 of 2 dot layers)"));
    let rounded: Vec<Option<usize>> = done
        .report
        .layers
        .iter()
        .filter_map(|l| Some(l.quant.as_ref()?.gptq_channels))
        .collect();
    assert_eq!(rounded, [Some(8), Some(16)]);
    assert!(near.report.table().contains("weights nearest"));
    // sum over frames and outputs of ((W - Wq) x)^2: the float graph with layer
    // `name`'s weights replaced by W - Wq and its bias by 0.
    let weight_err = |q: &Graph, name: &str, fs: &[Frame]| {
        let ins = g.node_inputs(g.find(name).unwrap());
        let w = g.const_of(ins[1]).unwrap().clone();
        let qn = q.find(name).unwrap();
        let wq = q.const_of(q.node_inputs(qn)[1]).unwrap().clone();
        let Some(nnac_ir::Quant::PerChannel { scales, .. }) =
            q.value_type(q.node_inputs(qn)[1]).quant.clone()
        else {
            panic!("{name}: weights not per-channel quantized")
        };
        let (wf, codes) = (w.to_f32_vec(), wq.to_f32_vec());
        let len = wf.len() / scales.len();
        let d: Vec<f32> = (0..wf.len())
            .map(|i| wf[i] - codes[i] * scales[i / len])
            .collect();
        let mut e = g.clone();
        let dv = konst(
            &mut e,
            &format!("{name}.d"),
            nnac_ir::Tensor::f32(w.shape.clone(), d).unwrap(),
        );
        let zero = konst(
            &mut e,
            &format!("{name}.z"),
            nnac_ir::Tensor::f32(vec![scales.len()], vec![0.0; scales.len()]).unwrap(),
        );
        e.set_node_inputs(e.find(name).unwrap(), &[ins[0], dv, zero]);
        fs.iter()
            .flat_map(|f| run_float(&e, f)[name].to_f32_vec())
            .map(|v| f64::from(v).powi(2))
            .sum::<f64>()
    };
    for out in ["dense", "dw"] {
        for (set, fs) in [("calibration", &calib), ("other", &other)] {
            let (n, q) = (
                weight_err(&near.graph, out, fs),
                weight_err(&done.graph, out, fs),
            );
            eprintln!("{out} on {set} frames: sum ((W - Wq) x)^2 nearest {n:.4e}, gptq {q:.4e}");
            assert!(
                q < 0.3 * n,
                "{out} on {set} frames: gptq {q} vs nearest {n}"
            );
        }
    }
}
