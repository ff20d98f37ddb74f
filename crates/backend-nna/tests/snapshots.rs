//! Snapshot tests: the disassembly (`nnac disasm`'s human listing, plus the CRC-32 of
//! the DRAM image so weights, biases and channel tables are covered too) of six small
//! models: a single conv, conv+BN+ReLU+maxpool, a residual block (ELTWISE), an
//! inception-style concat, a deconv with a sigmoid (fp32 SIMD epilogue), and a model
//! that does not fit a small SRAM and is split with DRAM spill/fill.
//!
//! The models are built directly as float IR with the seeded builders of
//! `tests/common` (not ONNX files): the IR is what the backend consumes, the test
//! needs no Python and no binary fixtures, and every weight comes from a fixed
//! xorshift seed. They go through the real pass pipeline (fold, fuse, calibrate on two
//! fixed seeded frames, quantize), so a snapshot changes when any stage changes what
//! it emits. Before a snapshot is compared, the program is also checked: every
//! instruction passes `check_instr`, the static hazard checker proves it race-free,
//! compiling twice is byte-identical, the simulator's output equals the quantized
//! reference interpreter's bit for bit, and no dot-product instruction breaks the
//! address sequencer's slice rule (docs/ISA.md 4.1). Models whose weights fit keep
//! them resident (a prologue loads them once, the listing shows the split, and the
//! bit-exact check runs three frames after one load); the split/spill model streams.
//!
//! Re-blessing after an intended change (review the diff first):
//! - with cargo-insta: `cargo insta test -p nnac-backend-nna --test snapshots`, then
//!   `cargo insta review` (or `cargo insta accept`);
//! - without it: `INSTA_UPDATE=always cargo test -p nnac-backend-nna --test snapshots`
//!   rewrites `tests/snapshots/*.snap` in place; check them with `git diff`.
//!
//! CI runs with `CI=true`, where insta never writes snapshots and a changed listing
//! fails the test.

mod common;

use common::*;
use nnac_backend_nna::{lower, BackendOptions, BackendReport, NotPinned, Residency};
use nnac_ir::{Activation, ConvTransposeAttrs, Graph, Op, PoolAttrs, PoolKind, Value};
use nnac_isa::listing::table::listing;
use nnac_isa::{HwConfig, Program};

/// Compiles `g` (input shape `shape`) for `hw`, checks the program and returns it
/// with the report and the text that is snapshotted.
fn compile_checked(g: Graph, shape: &[usize], hw: &HwConfig) -> (Program, BackendReport, String) {
    let q = quantize_graph(g, shape);
    let opts = BackendOptions {
        enforce_slice_rule: true,
        ..BackendOptions::default()
    };
    let (p, rep) = lower(&q, hw, &opts).unwrap_or_else(|e| panic!("lower: {e}"));
    assert!(rep.slice_rule.is_empty());
    assert_well_formed(&q, hw, &p);
    assert!(assert_bit_exact(&q, &p, 21, shape) > 0);
    let text = format!(
        "; dram image crc32 {:#010x}\n{}",
        nnac_isa::crc32::crc32(&p.dram.bytes),
        listing(&p)
    );
    (p, rep, text)
}

fn batchnorm(g: &mut Graph, rng: &mut Rng, name: &str, x: Value) -> Value {
    let c = g.value_type(x).shape[1];
    let scale = g.add_constant(format!("{name}.scale"), rng.tensor(&[c], 0.5));
    let bias = g.add_constant(format!("{name}.bias"), rng.tensor(&[c], 0.2));
    let mean = g.add_constant(format!("{name}.mean"), rng.tensor(&[c], 0.1));
    let var = {
        let v = rng.tensor(&[c], 0.5).to_f32_vec();
        let pos = v.iter().map(|x| 1.0 + x.abs()).collect();
        g.add_constant(
            format!("{name}.var"),
            nnac_ir::Tensor::f32(vec![c], pos).unwrap(),
        )
    };
    node(
        g,
        name,
        Op::BatchNorm { epsilon: 1e-5 },
        &[x, scale, bias, mean, var],
    )
}

fn pool(
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

#[test]
fn single_conv() {
    let shape = [1, 3, 12, 12];
    let mut rng = Rng(101);
    let mut g = Graph::new("single_conv");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "conv", x, 8, 3, 1, 1);
    g.add_output("y", c);
    let (p, rep, text) = compile_checked(g, &shape, &HwConfig::fsd());
    // The weights fit: loaded once by a prologue ending with the first STOP.
    assert!(
        matches!(rep.residency, Residency::Pinned { buffers: 3, .. }),
        "{:?}",
        rep.residency
    );
    assert_eq!(p.body_start, Some(4));
    insta::assert_snapshot!("single_conv", text);
}

#[test]
fn conv_bn_relu_maxpool() {
    let shape = [1, 3, 16, 16];
    let mut rng = Rng(102);
    let mut g = Graph::new("conv_bn_relu_maxpool");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "conv", x, 8, 3, 1, 1);
    let b = batchnorm(&mut g, &mut rng, "bn", c);
    let r = relu(&mut g, "relu", b);
    let m = pool(&mut g, "pool", PoolKind::Max, 2, 2, 0, r);
    g.add_output("y", m);
    let (p, _, text) = compile_checked(g, &shape, &HwConfig::fsd());
    // BN folds into the conv and the pool fuses into it: one CONV layer.
    let pooled = p.instrs.iter().any(|i| match i {
        nnac_isa::Instr::Conv(d) => d.pool == nnac_isa::PoolKind::Max,
        _ => false,
    });
    assert!(pooled, "the max pool is not fused into the CONV");
    insta::assert_snapshot!("conv_bn_relu_maxpool", text);
}

#[test]
fn residual_block() {
    let shape = [1, 8, 8, 8];
    let mut rng = Rng(103);
    let mut g = Graph::new("residual_block");
    let x = input(&mut g, &shape);
    let c0 = conv(&mut g, &mut rng, "stem", x, 8, 3, 1, 1);
    let r0 = relu(&mut g, "stem_relu", c0);
    let c1 = conv(&mut g, &mut rng, "branch_a", r0, 8, 3, 1, 1);
    let r1 = relu(&mut g, "branch_a_relu", c1);
    let c2 = conv(&mut g, &mut rng, "branch_b", r1, 8, 3, 1, 1);
    let s = add(&mut g, "add", r0, c2);
    let y = relu(&mut g, "add_relu", s);
    g.add_output("y", y);
    let (p, _, text) = compile_checked(g, &shape, &HwConfig::fsd());
    assert!(p
        .instrs
        .iter()
        .any(|i| matches!(i, nnac_isa::Instr::Eltwise(_))));
    insta::assert_snapshot!("residual_block", text);
}

#[test]
fn inception_concat() {
    let shape = [1, 4, 8, 8];
    let mut rng = Rng(104);
    let mut g = Graph::new("inception_concat");
    let x = input(&mut g, &shape);
    let stem = conv(&mut g, &mut rng, "stem", x, 8, 3, 1, 1);
    let s = relu(&mut g, "stem_relu", stem);
    let a = conv(&mut g, &mut rng, "b1x1", s, 4, 1, 1, 1);
    let ra = relu(&mut g, "b1x1_relu", a);
    let b = conv(&mut g, &mut rng, "b3x3", s, 6, 3, 1, 1);
    let rb = relu(&mut g, "b3x3_relu", b);
    let m = pool(&mut g, "bpool", PoolKind::Max, 3, 1, 1, s);
    let c = conv(&mut g, &mut rng, "bpool_proj", m, 2, 1, 1, 1);
    let rc = relu(&mut g, "bpool_proj_relu", c);
    let cat = node(&mut g, "concat", Op::Concat { axis: 1 }, &[ra, rb, rc]);
    let y = conv(&mut g, &mut rng, "head", cat, 4, 3, 1, 1);
    g.add_output("y", y);
    let (_, _, text) = compile_checked(g, &shape, &HwConfig::fsd());
    insta::assert_snapshot!("inception_concat", text);
}

#[test]
fn deconv() {
    let shape = [1, 4, 6, 6];
    let mut rng = Rng(105);
    let mut g = Graph::new("deconv");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "conv", x, 6, 3, 1, 1);
    let r = relu(&mut g, "relu", c);
    let w = g.add_constant("up.w", rng.tensor(&[6, 4, 2, 2], 0.3));
    let b = g.add_constant("up.b", rng.tensor(&[4], 0.1));
    let attrs = ConvTransposeAttrs {
        kernel: vec![2, 2],
        strides: vec![2, 2],
        pads: vec![0; 4],
        dilations: vec![1, 1],
        output_padding: vec![0, 0],
        group: 1,
    };
    let up = node(&mut g, "up", Op::ConvTranspose(attrs), &[r, w, b]);
    // A sigmoid head (as in PP-OCR's detector) fuses as an fp32 SIMD epilogue.
    let y = act(&mut g, "sigmoid", Activation::Sigmoid, up);
    g.add_output("y", y);
    let (p, _, text) = compile_checked(g, &shape, &HwConfig::fsd());
    let deconv_simd = p.instrs.iter().find_map(|i| match i {
        nnac_isa::Instr::Deconv(d) => Some(d.simd.len()),
        _ => None,
    });
    assert!(
        deconv_simd.is_some_and(|n| n > 1),
        "no DECONV with an fp32 program: {deconv_simd:?}"
    );
    insta::assert_snapshot!("deconv", text);
}

#[test]
fn split_and_spill_in_small_sram() {
    // 32x32x32 activations (32 KiB each) and ~28 KiB of weights per 3x3 layer do not
    // fit 48 KiB of SRAM at once: layers are cut into bands and spilled to DRAM.
    let shape = [1, 16, 32, 32];
    let mut rng = Rng(106);
    let mut g = Graph::new("split_and_spill");
    let x = input(&mut g, &shape);
    let c0 = conv(&mut g, &mut rng, "conv0", x, 32, 3, 1, 1);
    let r0 = relu(&mut g, "relu0", c0);
    let c1 = conv(&mut g, &mut rng, "conv1", r0, 32, 3, 1, 1);
    let r1 = relu(&mut g, "relu1", c1);
    g.add_output("y", r1);
    let hw = HwConfig {
        sram_bytes: 48 * 1024,
        ..HwConfig::fsd()
    };
    let (p, rep, text) = compile_checked(g, &shape, &hw);
    assert!(!rep.splits.is_empty(), "nothing was split: {rep:?}");
    // Too big to pin: the weights stream every frame, no prologue.
    assert!(p.body_start.is_none());
    assert!(
        matches!(
            &rep.residency,
            Residency::Streamed(NotPinned::MustSplit { layers }) if *layers > 0
        ),
        "{:?}",
        rep.residency
    );
    assert!(rep.spill_bytes > 0 && rep.fill_bytes > 0, "{rep:?}");
    assert!(rep.sram_peak <= hw.sram_bytes);
    insta::assert_snapshot!("split_and_spill", text);
}
