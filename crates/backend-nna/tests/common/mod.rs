//! Graph builders and the lower / simulate / compare harness of the backend tests.
#![allow(dead_code)]

use nnac_backend_nna::{lower, BackendOptions, BackendReport};
use nnac_ir::{
    Activation, BinaryOp, ConvAttrs, GemmAttrs, Graph, Op, PoolAttrs, PoolKind, Tensor, TensorType,
    Value,
};
use nnac_isa::{HwConfig, Program};
use nnac_passes::quant::params::{quantize, scale_zp};
use nnac_passes::{compile_graph, run_quantized_raw, Frame, PassOptions};
use nnac_runtime_sim::{RunOptions, Schedule, Simulator};
use std::collections::BTreeMap;

/// xorshift64*: deterministic test data.
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
    pub fn tensor(&mut self, shape: &[usize], scale: f32) -> Tensor {
        let n = shape.iter().product();
        Tensor::f32(
            shape.to_vec(),
            (0..n).map(|_| self.uniform() * scale).collect(),
        )
        .unwrap()
    }
}

pub fn node(g: &mut Graph, name: &str, op: Op, ins: &[Value]) -> Value {
    Value::new(g.add_node(name, op, ins).unwrap(), 0)
}

pub fn input(g: &mut Graph, shape: &[usize]) -> Value {
    g.add_input("x", TensorType::f32(shape.to_vec()))
}

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
    let w = g.add_constant(
        format!("{name}.w"),
        rng.tensor(&[cout, cin / group, k, k], (3.0 / fan).sqrt()),
    );
    let b = g.add_constant(format!("{name}.b"), rng.tensor(&[cout], 0.1));
    let attrs = ConvAttrs {
        kernel: vec![k, k],
        strides: vec![stride; 2],
        pads: vec![k / 2; 4],
        dilations: vec![1, 1],
        group,
    };
    node(g, name, Op::Conv(attrs), &[x, w, b])
}

/// A 3x3 stride-2 ConvTranspose (pads 1, output padding 1: doubles H and W) of `x`
/// to `cout` channels, weights drawn with amplitude `amp`.
pub fn deconv_x2(
    g: &mut Graph,
    rng: &mut Rng,
    name: &str,
    x: Value,
    cout: usize,
    amp: f32,
) -> Value {
    let cin = g.value_type(x).shape[1];
    let w = g.add_constant(format!("{name}.w"), rng.tensor(&[cin, cout, 3, 3], amp));
    let attrs = nnac_ir::ConvTransposeAttrs {
        kernel: vec![3, 3],
        strides: vec![2, 2],
        pads: vec![1, 1, 1, 1],
        dilations: vec![1, 1],
        output_padding: vec![1, 1],
        group: 1,
    };
    node(g, name, Op::ConvTranspose(attrs), &[x, w])
}

pub fn relu(g: &mut Graph, name: &str, x: Value) -> Value {
    node(g, name, Op::Act(Activation::Relu), &[x])
}

pub fn act(g: &mut Graph, name: &str, a: Activation, x: Value) -> Value {
    node(g, name, Op::Act(a), &[x])
}

pub fn add(g: &mut Graph, name: &str, a: Value, b: Value) -> Value {
    node(g, name, Op::Binary(BinaryOp::Add), &[a, b])
}

pub fn maxpool(g: &mut Graph, name: &str, k: usize, s: usize, p: usize, x: Value) -> Value {
    let attrs = PoolAttrs {
        kind: PoolKind::Max,
        kernel: vec![k, k],
        strides: vec![s, s],
        pads: vec![p; 4],
        dilations: vec![1, 1],
        ceil_mode: false,
        count_include_pad: false,
    };
    node(g, name, Op::Pool(attrs), &[x])
}

pub fn gemm(g: &mut Graph, rng: &mut Rng, name: &str, x: Value, n: usize) -> Value {
    let k = g.value_type(x).shape[1];
    let w = g.add_constant(
        format!("{name}.w"),
        rng.tensor(&[n, k], (3.0 / k as f32).sqrt()),
    );
    let b = g.add_constant(format!("{name}.b"), rng.tensor(&[n], 0.1));
    let a = GemmAttrs {
        alpha: 1.0,
        beta: 1.0,
        trans_a: false,
        trans_b: true,
    };
    node(g, name, Op::Gemm(a), &[x, w, b])
}

pub fn frame(seed: u64, shape: &[usize]) -> Frame {
    BTreeMap::from([("x".to_string(), Rng(seed).tensor(shape, 1.0))])
}

/// Quantizes a float graph through the real pass pipeline (two calibration frames).
pub fn quantize_graph(g: Graph, shape: &[usize]) -> Graph {
    let calib = [frame(11, shape), frame(12, shape)];
    compile_graph(g, &calib, &PassOptions::default())
        .unwrap()
        .graph
}

pub fn lower_ok(q: &Graph, hw: &HwConfig) -> (Program, BackendReport) {
    lower(q, hw, &BackendOptions::default()).unwrap_or_else(|e| panic!("lower: {e}"))
}

/// Raw input codes of `f` for the quantized graph's input `x` (the runtime's job).
fn input_codes(q: &Graph, f: &Frame) -> Vec<(String, Vec<u8>)> {
    let id = q.find("x").unwrap();
    let t = &q.node(id).outputs[0];
    let (s, zp) = scale_zp(t);
    let codes = f["x"]
        .to_f32_vec()
        .iter()
        .map(|&x| quantize(x, s, zp, t.dtype) as u8)
        .collect();
    vec![("x".to_string(), codes)]
}

fn raw_bytes(t: &Tensor) -> Vec<u8> {
    match &t.data {
        nnac_ir::TensorData::I8(v) => v.iter().map(|&b| b as u8).collect(),
        nnac_ir::TensorData::U8(v) => v.clone(),
        other => panic!("output is not 8-bit: {:?}", other.dtype()),
    }
}

/// Runs `p` on the simulator (every schedule given), three frames of different
/// inputs after one load (a program with a prologue runs it once, then its body per
/// frame on the SRAM the previous frame left), and compares every output byte of
/// every frame with the quantized reference interpreter. Returns the output bytes
/// of one frame.
pub fn assert_bit_exact(q: &Graph, p: &Program, seed: u64, shape: &[usize]) -> usize {
    let frames: Vec<Frame> = (0..3).map(|k| frame(seed + 1000 * k, shape)).collect();
    let wants: Vec<_> = frames
        .iter()
        .map(|f| run_quantized_raw(q, f).unwrap())
        .collect();
    let mut compared = 0;
    let randoms = (0..4).map(|k| Schedule::Random {
        seed: seed * 31 + k,
    });
    for schedule in [Schedule::Eager, Schedule::Serial]
        .into_iter()
        .chain(randoms)
    {
        let opts = RunOptions { schedule, hw: None };
        let sim = Simulator::new(p, &opts).unwrap_or_else(|e| panic!("sim: {e}"));
        let mut session = sim.session().unwrap_or_else(|e| panic!("prologue: {e}"));
        for (k, (f, want)) in frames.iter().zip(&wants).enumerate() {
            compared = 0;
            let got = session
                .run(&input_codes(q, f))
                .unwrap_or_else(|e| panic!("sim frame {k}: {e}"));
            assert_eq!(got.stats.acc_overflows, 0);
            assert_eq!(got.outputs.len(), want.len());
            for o in &got.outputs {
                let w = raw_bytes(&want[&o.name]);
                assert_eq!(o.data.len(), w.len(), "output {}", o.name);
                let bad = o.data.iter().zip(&w).filter(|(a, b)| a != b).count();
                assert_eq!(
                    bad,
                    0,
                    "frame {k}, output {}: {bad} of {} bytes differ",
                    o.name,
                    w.len()
                );
                compared += w.len();
            }
        }
    }
    compared
}

/// Every instruction passes `check_instr`, the program ends with its only STOP and
/// compiling twice gives identical bytes.
pub fn assert_well_formed(q: &Graph, hw: &HwConfig, p: &Program) {
    for (i, ins) in p.instrs.iter().enumerate() {
        nnac_isa::checks::check_instr(ins, hw).unwrap_or_else(|e| panic!("instr {i}: {e}"));
    }
    nnac_isa::instr::check_program(&p.instrs).unwrap();
    // The static hazard checker proves the flags race- and deadlock-free.
    let hz = nnac_isa::hazard::check_program(p).unwrap_or_else(|e| panic!("hazard check: {e}"));
    assert!(hz.is_clean(), "{}", hz.lines().join("\n"));
    let (again, _) = lower_ok(q, hw);
    assert_eq!(p.write().unwrap(), again.write().unwrap());
}

/// A 1x1 conv (64 channels, 4x4), a flatten and two fully connected layers (300 and
/// 40 outputs): `fc` holds 4 weight groups of 1024 x 96 bytes (384 KB).
pub fn conv_fc_fc() -> (Graph, [usize; 4]) {
    let shape = [1, 64, 4, 4];
    let mut rng = Rng(23);
    let mut g = Graph::new("fc");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c0", x, 64, 1, 1, 1);
    let f = node(
        &mut g,
        "flat",
        nnac_ir::Op::Reshape {
            shape: vec![1, 1024],
        },
        &[c],
    );
    let fc = gemm(&mut g, &mut rng, "fc", f, 300);
    let r = relu(&mut g, "r", fc);
    let fc2 = gemm(&mut g, &mut rng, "fc2", r, 40);
    g.add_output("y", fc2);
    (g, shape)
}
