//! End-to-end: float graph -> passes (quantize) -> backend -> simulator, compared
//! bit-exactly with the quantized reference interpreter.

mod common;

use common::*;
use nnac_backend_nna::{lower, BackendError, BackendOptions};
use nnac_ir::{Activation, Graph, Op};
use nnac_isa::{HwConfig, Instr};

fn single_conv(shape: &[usize], cout: usize, k: usize, stride: usize) -> Graph {
    let mut rng = Rng(1);
    let mut g = Graph::new("conv");
    let x = input(&mut g, shape);
    let c = conv(&mut g, &mut rng, "c0", x, cout, k, stride, 1);
    g.add_output("y", c);
    g
}

#[test]
fn single_conv_is_bit_exact_and_deterministic() {
    let shape = [1, 3, 10, 10];
    let q = quantize_graph(single_conv(&shape, 8, 3, 1), &shape);
    let hw = HwConfig::fsd();
    let (p, rep) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    assert!(matches!(p.instrs.last(), Some(Instr::Stop(_))));
    // 100 output pixels: two 96-pixel tiles x one channel group.
    assert_eq!(rep.layers[0].tiles, 2);
    assert!(assert_bit_exact(&q, &p, 5, &shape) > 0);
}

#[test]
fn tiles_cover_many_channel_groups_pixels_and_strides() {
    let shape = [1, 5, 13, 11];
    let q = quantize_graph(single_conv(&shape, 130, 3, 2), &shape);
    let hw = HwConfig::fsd();
    let (p, rep) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    // 7x6 = 42 pixels in one pixel tile, 130 channels in two groups.
    assert_eq!(rep.layers[0].tiles, 2);
    assert_eq!(assert_bit_exact(&q, &p, 6, &shape), 3 * 130 * 42);
    // Smaller pixel tiles give the same result.
    let opts = BackendOptions {
        tile_pixels: 5,
        ..BackendOptions::default()
    };
    let (p5, rep5) = lower(&q, &hw, &opts).unwrap();
    assert_eq!(rep5.layers[0].tiles, 9 * 2);
    assert_bit_exact(&q, &p5, 6, &shape);
}

#[test]
fn conv_bn_relu_maxpool_fuses_pooling() {
    let shape = [1, 4, 12, 12];
    let mut rng = Rng(2);
    let mut g = Graph::new("cbrp");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c0", x, 16, 3, 1, 1);
    let r = relu(&mut g, "r0", c);
    let m = maxpool(&mut g, "p0", 2, 2, 0, r);
    let c2 = conv(&mut g, &mut rng, "c1", m, 8, 3, 1, 1);
    let m2 = maxpool(&mut g, "p1", 3, 2, 1, c2);
    g.add_output("y", m2);
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::fsd();
    let (p, rep) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    let pooled = p
        .instrs
        .iter()
        .filter(|i| matches!(i, Instr::Conv(d) if d.pool != nnac_isa::PoolKind::None))
        .count();
    assert_eq!(pooled, 2, "{rep:?}");
    assert!(assert_bit_exact(&q, &p, 7, &shape) > 0);
}

#[test]
fn residual_block_uses_eltwise() {
    let shape = [1, 8, 9, 9];
    let mut rng = Rng(3);
    let mut g = Graph::new("res");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "a", x, 8, 3, 1, 1);
    let ra = relu(&mut g, "ra", a);
    let b = conv(&mut g, &mut rng, "b", ra, 8, 3, 1, 1);
    let s = add(&mut g, "sum", b, x);
    let r = relu(&mut g, "sum_relu", s);
    g.add_output("y", r);
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::fsd();
    let (p, _) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    assert!(p.instrs.iter().any(|i| matches!(i, Instr::Eltwise(_))));
    assert!(assert_bit_exact(&q, &p, 8, &shape) > 0);
}

#[test]
fn flatten_and_fully_connected_use_inner_product() {
    let shape = [1, 3, 6, 6];
    let mut rng = Rng(4);
    let mut g = Graph::new("fc");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c0", x, 4, 3, 2, 1);
    let r = relu(&mut g, "r0", c);
    let f = node(&mut g, "flat", Op::Reshape { shape: vec![1, 36] }, &[r]);
    let fc = gemm(&mut g, &mut rng, "fc", f, 10);
    g.add_output("logits", fc);
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::fsd();
    let (p, _) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    assert!(p.instrs.iter().any(|i| matches!(i, Instr::InnerProduct(_))));
    assert_eq!(assert_bit_exact(&q, &p, 9, &shape), 3 * 10);
}

#[test]
fn unsupported_nodes_are_all_listed() {
    let shape = [1, 3, 8, 8];
    let mut rng = Rng(5);
    let mut g = Graph::new("unsup");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c0", x, 4, 3, 1, 1);
    let s = act(&mut g, "sig", Activation::Sigmoid, c);
    let c2 = conv(&mut g, &mut rng, "c1", x, 4, 3, 1, 1);
    let cat = node(&mut g, "cat", Op::Concat { axis: 1 }, &[s, c2]);
    g.add_output("y", cat);
    let q = quantize_graph(g, &shape);
    let e = lower(&q, &HwConfig::fsd(), &BackendOptions::default()).unwrap_err();
    let BackendError::Unsupported(list) = &e else {
        panic!("expected Unsupported, got {e}");
    };
    assert!(list.len() >= 2, "{e}");
    assert!(list.iter().any(|(_, why)| why.contains("float")), "{e}");
    assert!(list.iter().any(|(_, why)| why.contains("concat")), "{e}");
}

#[test]
fn float_graph_is_refused_naming_the_node() {
    let g = single_conv(&[1, 3, 8, 8], 4, 3, 1);
    let e = lower(&g, &HwConfig::fsd(), &BackendOptions::default()).unwrap_err();
    assert!(matches!(&e, BackendError::NotQuantized { node, .. } if node == "x"), "{e}");
}

#[test]
fn sram_too_small_names_the_layer_and_bytes() {
    let shape = [1, 3, 16, 16];
    let q = quantize_graph(single_conv(&shape, 32, 3, 1), &shape);
    let hw = HwConfig {
        sram_bytes: 4096,
        ..HwConfig::fsd()
    };
    let e = lower(&q, &hw, &BackendOptions::default()).unwrap_err();
    let BackendError::SramFull { node, needed, sram } = &e else {
        panic!("expected SramFull, got {e}");
    };
    assert_eq!(*sram, 4096);
    assert!(*needed > 4096, "{e}");
    assert!(!node.is_empty());
    assert!(e.to_string().contains(node.as_str()));
}
