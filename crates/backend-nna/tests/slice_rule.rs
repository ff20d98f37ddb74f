//! The address sequencer's slice rule (docs/ISA.md 4.1) on whole programs: narrow
//! tensors meet it with the HWC layout, wide ones are listed in the report and, with
//! `enforce_slice_rule`, refused with an error naming the layer.

mod common;

use common::*;
use nnac_backend_nna::seq_rule::LOAD_BYTES;
use nnac_backend_nna::{lower, BackendError, BackendOptions};
use nnac_ir::Graph;
use nnac_isa::HwConfig;

fn enforcing() -> BackendOptions {
    BackendOptions {
        enforce_slice_rule: true,
        ..BackendOptions::default()
    }
}

#[test]
fn narrow_layers_meet_the_rule_at_stride_one_and_two() {
    // 8 and 16 channels (pixel pitch 8 / 16): spans 7*8 = 56 (stride 1) and
    // 7*2*16 = 224 (stride 2); the 8-wide output rows keep slices inside rows.
    let shape = [1, 8, 16, 16];
    let mut rng = Rng(61);
    let mut g = Graph::new("narrow");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "s1", x, 16, 3, 1, 1);
    let ra = relu(&mut g, "s1_relu", a);
    let b = conv(&mut g, &mut rng, "s2", ra, 16, 3, 2, 1);
    g.add_output("y", b);
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::fsd();
    let (p, rep) = lower(&q, &hw, &enforcing()).unwrap_or_else(|e| panic!("{e}"));
    assert!(rep.slice_rule.is_empty(), "{:?}", rep.slice_rule);
    assert!(assert_bit_exact(&q, &p, 62, &shape) > 0);
}

fn wide_graph() -> (Graph, [usize; 4]) {
    let shape = [1, 8, 8, 8];
    let mut rng = Rng(63);
    let mut g = Graph::new("wide");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "narrow_in", x, 64, 3, 1, 1);
    let ra = relu(&mut g, "narrow_in_relu", a);
    let b = conv(&mut g, &mut rng, "wide_in", ra, 8, 3, 1, 1);
    g.add_output("y", b);
    (g, shape)
}

#[test]
fn wide_layer_is_listed_with_its_widest_slice() {
    let (g, shape) = wide_graph();
    let q = quantize_graph(g, &shape);
    let (_, rep) = lower_ok(&q, &HwConfig::fsd());
    // Only the layer reading 64 channels breaks the rule: 8 pixels of a row at pixel
    // pitch 64 span 7 * 64 = 448 bytes.
    assert_eq!(rep.slice_rule.len(), 1, "{:?}", rep.slice_rule);
    let v = &rep.slice_rule[0];
    assert_eq!(v.layer, "wide_in");
    assert_eq!(v.pix_pitch, 64);
    assert_eq!(v.widest.span, 7 * 64);
    assert!(v.widest.span >= LOAD_BYTES);
}

#[test]
fn enforcing_refuses_the_wide_layer_by_name() {
    let (g, shape) = wide_graph();
    let q = quantize_graph(g, &shape);
    let e = lower(&q, &HwConfig::fsd(), &enforcing()).unwrap_err();
    let BackendError::Emit { node, detail } = &e else {
        panic!("expected an Emit error, got {e}");
    };
    assert_eq!(node, "wide_in");
    assert!(detail.contains("448"), "{detail}");
    assert!(e.to_string().contains("wide_in"), "{e}");
}
