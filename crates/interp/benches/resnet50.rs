//! Float interpreter benchmark: ResNet-50 (v1.5 topology, 224x224, 4.1 GMAC) built
//! directly with the IR API, seeded He-initialised weights, BatchNormalization kept
//! as separate nodes (as in the ONNX model zoo export).
//!
//! Run: `cargo bench -p nnac-interp --bench resnet50` (optionally `-- RUNS`).
//! Prints the median and best wall time of `run_float` over the runs.

use nnac_interp::run_float;
use nnac_ir::{
    Activation, BinaryOp, ConvAttrs, GemmAttrs, Graph, Op, PoolAttrs, PoolKind, Tensor, TensorType,
    Value,
};
use std::collections::BTreeMap;
use std::time::Instant;

/// SplitMix64 uniform floats in `[-a, a)`.
struct Rng(u64);
impl Rng {
    fn uniform(&mut self, n: usize, a: f32) -> Vec<f32> {
        (0..n)
            .map(|_| {
                self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = self.0;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                ((z >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * a
            })
            .collect()
    }
}

struct Builder {
    g: Graph,
    rng: Rng,
    macs: u64,
}

impl Builder {
    fn node(&mut self, name: &str, op: Op, ins: &[Value]) -> Value {
        Value::new(self.g.add_node(name, op, ins).expect("valid node"), 0)
    }

    fn konst(&mut self, name: &str, shape: Vec<usize>, data: Vec<f32>) -> Value {
        self.g
            .add_constant(name, Tensor::f32(shape, data).expect("shape matches"))
    }

    /// Conv (no bias) + BatchNormalization + optional ReLU.
    #[allow(clippy::too_many_arguments)]
    fn conv_bn(
        &mut self,
        name: &str,
        x: Value,
        cin: usize,
        cout: usize,
        k: usize,
        s: usize,
        relu: bool,
    ) -> Value {
        let fan_in = cin * k * k;
        let w = self
            .rng
            .uniform(cout * fan_in, (6.0 / fan_in as f32).sqrt());
        let wv = self.konst(&format!("{name}.w"), vec![cout, cin, k, k], w);
        let attrs = ConvAttrs {
            kernel: vec![k, k],
            strides: vec![s, s],
            pads: vec![k / 2; 4],
            dilations: vec![1, 1],
            group: 1,
        };
        let y = self.node(name, Op::Conv(attrs), &[x, wv]);
        let shape = &self.g.value_type(y).shape;
        self.macs += (cout * fan_in * shape[2] * shape[3]) as u64;
        let params: Vec<Value> = [1.0f32, 0.0, 0.0, 1.0]
            .iter()
            .zip(["scale", "bias", "mean", "var"])
            .map(|(&v, p)| self.konst(&format!("{name}.bn.{p}"), vec![cout], vec![v; cout]))
            .collect();
        let mut ins = vec![y];
        ins.extend(params);
        let y = self.node(&format!("{name}.bn"), Op::BatchNorm { epsilon: 1e-5 }, &ins);
        if relu {
            self.node(&format!("{name}.relu"), Op::Act(Activation::Relu), &[y])
        } else {
            y
        }
    }

    fn bottleneck(
        &mut self,
        name: &str,
        x: Value,
        cin: usize,
        width: usize,
        stride: usize,
    ) -> Value {
        let cout = width * 4;
        let a = self.conv_bn(&format!("{name}.conv1"), x, cin, width, 1, 1, true);
        let b = self.conv_bn(&format!("{name}.conv2"), a, width, width, 3, stride, true);
        let c = self.conv_bn(&format!("{name}.conv3"), b, width, cout, 1, 1, false);
        let short = if stride != 1 || cin != cout {
            self.conv_bn(&format!("{name}.down"), x, cin, cout, 1, stride, false)
        } else {
            x
        };
        let sum = self.node(
            &format!("{name}.add"),
            Op::Binary(BinaryOp::Add),
            &[c, short],
        );
        self.node(&format!("{name}.relu"), Op::Act(Activation::Relu), &[sum])
    }
}

fn resnet50() -> (Graph, u64) {
    let mut b = Builder {
        g: Graph::new("resnet50"),
        rng: Rng(50),
        macs: 0,
    };
    let x = b.g.add_input("data", TensorType::f32(vec![1, 3, 224, 224]));
    let mut y = b.conv_bn("conv1", x, 3, 64, 7, 2, true);
    let pool = PoolAttrs {
        kind: PoolKind::Max,
        kernel: vec![3, 3],
        strides: vec![2, 2],
        pads: vec![1; 4],
        dilations: vec![1, 1],
        ceil_mode: false,
        count_include_pad: false,
    };
    y = b.node("pool1", Op::Pool(pool), &[y]);
    let mut cin = 64;
    for (stage, (&blocks, &width)) in [3usize, 4, 6, 3]
        .iter()
        .zip(&[64usize, 128, 256, 512])
        .enumerate()
    {
        for i in 0..blocks {
            let stride = if i == 0 && stage > 0 { 2 } else { 1 };
            y = b.bottleneck(&format!("layer{}.{i}", stage + 1), y, cin, width, stride);
            cin = width * 4;
        }
    }
    y = b.node("gap", Op::GlobalPool(PoolKind::Avg), &[y]);
    y = b.node(
        "flatten",
        Op::Reshape {
            shape: vec![1, 2048],
        },
        &[y],
    );
    let w = b.rng.uniform(1000 * 2048, (6.0f32 / 2048.0).sqrt());
    let wv = b.konst("fc.w", vec![1000, 2048], w);
    let bv = b.konst("fc.b", vec![1000], vec![0.0; 1000]);
    let gemm = GemmAttrs {
        alpha: 1.0,
        beta: 1.0,
        trans_a: false,
        trans_b: true,
    };
    y = b.node("fc", Op::Gemm(gemm), &[y, wv, bv]);
    b.macs += 1000 * 2048;
    y = b.node("prob", Op::Softmax { axis: 1 }, &[y]);
    b.g.add_output("prob", y);
    (b.g, b.macs)
}

/// Time per op kind, from the gaps between `observe` calls (each comes right after
/// its node ran).
fn profile(graph: &Graph, inputs: &BTreeMap<String, Tensor>) {
    let mut per_op: BTreeMap<&'static str, f64> = BTreeMap::new();
    let mut last = Instant::now();
    nnac_interp::run_float_observed(graph, inputs, &mut |v, _| {
        let now = Instant::now();
        *per_op.entry(graph.node(v.node).op.mnemonic()).or_default() += (now - last).as_secs_f64();
        last = now;
    })
    .expect("profile run");
    let mut rows: Vec<_> = per_op.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (op, t) in rows {
        println!("  {op:<12} {:8.1} ms", t * 1e3);
    }
}

/// CPU time (user + system, all threads) of this process so far, in seconds, from
/// `/proc/self/stat` (Linux; 0 elsewhere). On a loaded machine the wall time
/// says little; the CPU time shows the work done.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (field(11) + field(12)) / 100.0
}

/// GEMM throughput on ResNet-50 layer shapes (packing excluded), `--gemm`.
fn gemm_shapes() {
    use nnac_interp::kernels::gemm::{gemm_packed, MatRef, PackedA, PackedB};
    for (m, k, n) in [
        (64, 576, 3136),
        (256, 64, 3136),
        (128, 1152, 784),
        (256, 2304, 196),
        (2048, 512, 49),
    ] {
        let mut rng = Rng(k as u64);
        let a = rng.uniform(m * k, 1.0);
        let b = rng.uniform(k * n, 1.0);
        let pa = PackedA::pack(MatRef::row_major(&a, m, k), 1.0);
        let pb = PackedB::pack(MatRef::row_major(&b, k, n));
        let mut c = vec![0.0f32; m * n];
        let reps = 10;
        let (t, cpu) = (Instant::now(), cpu_seconds());
        for _ in 0..reps {
            gemm_packed(&pa, &pb, &mut c);
        }
        let s = t.elapsed().as_secs_f64() / reps as f64;
        let cs = (cpu_seconds() - cpu) / reps as f64;
        let gmac = (m * k * n) as f64 / 1e9;
        println!(
            "  gemm {m}x{k}x{n}: wall {:.2} ms ({:.1} GMAC/s), cpu {:.2} ms ({:.1} GMAC/cpu-s)",
            s * 1e3,
            gmac / s,
            cs * 1e3,
            gmac / cs
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--gemm") {
        gemm_shapes();
    }
    let runs: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(7);
    let (graph, macs) = resnet50();
    let mut rng = Rng(1);
    let input =
        Tensor::f32(vec![1, 3, 224, 224], rng.uniform(3 * 224 * 224, 1.0)).expect("input shape");
    let inputs = BTreeMap::from([("data".to_string(), input)]);
    let out = run_float(&graph, &inputs).expect("warm-up run");
    let prob = out["prob"].as_f32().expect("f32 output");
    assert!(prob.iter().all(|p| p.is_finite()), "non-finite output");
    if args.iter().any(|a| a == "--profile") {
        profile(&graph, &inputs);
    }
    let cpu0 = cpu_seconds();
    let mut times: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let t = Instant::now();
            run_float(&graph, &inputs).expect("run");
            t.elapsed().as_secs_f64()
        })
        .collect();
    let cpu_per_run = (cpu_seconds() - cpu0) / times.len() as f64;
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "resnet50 224x224 float32: {} nodes, {:.2} GMAC, {} threads: median {:.1} ms, best {:.1} ms over {} runs ({:.1} GMAC/s); CPU time {:.1} ms per run",
        graph.node_count(),
        macs as f64 / 1e9,
        rayon::current_num_threads(),
        median * 1e3,
        times[0] * 1e3,
        times.len(),
        macs as f64 / 1e9 / median,
        cpu_per_run * 1e3
    );
}
