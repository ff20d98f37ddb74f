//! Graph builders and numeric helpers shared by the pass tests.
#![allow(dead_code)]

use nnac_ir::{
    Activation, BinaryOp, ConvAttrs, Graph, NodeId, Op, PoolAttrs, PoolKind, Tensor, TensorType,
    Value,
};
use nnac_passes::Frame;
use std::collections::BTreeMap;

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    /// Approximately normal (sum of 4 uniforms, unit variance).
    pub fn normal(&mut self) -> f32 {
        (0..4).map(|_| self.uniform()).sum::<f32>() * 0.866
    }
    pub fn tensor(&mut self, shape: &[usize], scale: f32) -> Tensor {
        let n = shape.iter().product();
        Tensor::f32(
            shape.to_vec(),
            (0..n).map(|_| self.normal() * scale).collect(),
        )
        .unwrap()
    }
}

pub fn node(g: &mut Graph, name: &str, op: Op, ins: &[Value]) -> Value {
    Value::new(g.add_node(name, op, ins).unwrap(), 0)
}

pub fn konst(g: &mut Graph, name: &str, t: Tensor) -> Value {
    g.add_constant(name, t)
}

/// Conv with random weights (He-like scale) and bias.
#[allow(clippy::too_many_arguments)]
pub fn conv(
    g: &mut Graph,
    rng: &mut Rng,
    name: &str,
    x: Value,
    cout: usize,
    k: usize,
    stride: usize,
    group: usize,
) -> Value {
    let cin = g.value_type(x).shape[1];
    let fan = (cin / group * k * k) as f32;
    let w = konst(
        g,
        &format!("{name}.w"),
        rng.tensor(&[cout, cin / group, k, k], (2.0 / fan).sqrt()),
    );
    let b = konst(g, &format!("{name}.b"), rng.tensor(&[cout], 0.1));
    let p = k / 2;
    let attrs = ConvAttrs {
        kernel: vec![k, k],
        strides: vec![stride; 2],
        pads: vec![p; 4],
        dilations: vec![1, 1],
        group,
    };
    node(g, name, Op::Conv(attrs), &[x, w, b])
}

pub fn batchnorm(g: &mut Graph, rng: &mut Rng, name: &str, x: Value) -> Value {
    let c = g.value_type(x).shape[1];
    let scale = konst(
        g,
        &format!("{name}.s"),
        Tensor::f32(vec![c], (0..c).map(|_| 1.0 + 0.3 * rng.uniform()).collect()).unwrap(),
    );
    let bias = konst(g, &format!("{name}.b"), rng.tensor(&[c], 0.2));
    let mean = konst(g, &format!("{name}.m"), rng.tensor(&[c], 0.2));
    let var = konst(
        g,
        &format!("{name}.v"),
        Tensor::f32(vec![c], (0..c).map(|_| 0.5 + 0.4 * rng.uniform()).collect()).unwrap(),
    );
    node(
        g,
        name,
        Op::BatchNorm { epsilon: 1e-5 },
        &[x, scale, bias, mean, var],
    )
}

pub fn relu(g: &mut Graph, name: &str, x: Value) -> Value {
    node(g, name, Op::Act(Activation::Relu), &[x])
}

pub fn act(g: &mut Graph, name: &str, a: Activation, x: Value) -> Value {
    node(g, name, Op::Act(a), &[x])
}

pub fn binary(g: &mut Graph, name: &str, k: BinaryOp, a: Value, b: Value) -> Value {
    node(g, name, Op::Binary(k), &[a, b])
}

pub fn pool(
    g: &mut Graph,
    name: &str,
    kind: PoolKind,
    k: usize,
    s: usize,
    p: usize,
    x: Value,
) -> Value {
    let attrs = PoolAttrs {
        kind,
        kernel: vec![k, k],
        strides: vec![s, s],
        pads: vec![p; 4],
        dilations: vec![1, 1],
        ceil_mode: false,
        count_include_pad: false,
    };
    node(g, name, Op::Pool(attrs), &[x])
}

pub fn input(g: &mut Graph, shape: &[usize]) -> Value {
    g.add_input("x", TensorType::f32(shape.to_vec()))
}

pub fn frame(rng: &mut Rng, shape: &[usize]) -> Frame {
    BTreeMap::from([("x".to_string(), rng.tensor(shape, 1.0))])
}

pub fn run_float(g: &Graph, f: &Frame) -> BTreeMap<String, Tensor> {
    nnac_interp::run_float(g, f).unwrap()
}

/// max |a - b| / max |a|.
pub fn rel_err(a: &Tensor, b: &Tensor) -> f32 {
    assert_eq!(a.shape, b.shape);
    let (a, b) = (a.to_f32_vec(), b.to_f32_vec());
    let m = a.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-12);
    a.iter()
        .zip(&b)
        .fold(0f32, |e, (x, y)| e.max((x - y).abs()))
        / m
}

pub fn sqnr_db(a: &Tensor, b: &Tensor) -> f64 {
    let (a, b) = (a.to_f32_vec(), b.to_f32_vec());
    let s: f64 = a.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    let n: f64 = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
        .sum();
    10.0 * (s / n.max(1e-30)).log10()
}

/// Asserts two graphs compute the same outputs within `tol` relative error.
pub fn assert_equivalent(before: &Graph, after: &Graph, frames: &[Frame], tol: f32) {
    for f in frames {
        let (a, b) = (run_float(before, f), run_float(after, f));
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
        for (k, ta) in &a {
            let e = rel_err(ta, &b[k]);
            assert!(e <= tol, "output {k}: relative error {e} > {tol}");
        }
    }
}

pub fn count(g: &Graph, pred: impl Fn(&Op) -> bool) -> usize {
    g.node_ids()
        .into_iter()
        .filter(|&n| pred(&g.node(n).op))
        .count()
}

pub fn mnemonics(g: &Graph) -> Vec<String> {
    let mut v: Vec<String> = g
        .node_ids()
        .into_iter()
        .filter(|&n| !matches!(g.node(n).op, Op::Constant(_) | Op::Input))
        .map(|n| g.node(n).op.mnemonic().to_string())
        .collect();
    v.sort();
    v
}

pub fn out(g: &mut Graph, v: Value) {
    g.add_output("y", v);
}

pub fn id(v: Value) -> NodeId {
    v.node
}
