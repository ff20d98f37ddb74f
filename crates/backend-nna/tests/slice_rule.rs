//! The address sequencer's slice rule (docs/ISA.md 4.1) on whole programs: the planar
//! layout meets it for wide tensors at stride 1 and 2, tiles are cut at output rows
//! where a slice crossing rows would break it, a pooled layer whose one tile would
//! break it pools in a separate CONV, and what still breaks it (a hand-built HWC
//! instruction, a stride-40 layer) is listed in the report and refused by default with
//! an error naming the layer.

mod common;

use common::*;
use nnac_backend_nna::seq_rule::{violations, widest_slice, LOAD_BYTES};
use nnac_backend_nna::{lower, BackendError, BackendOptions};
use nnac_ir::Graph;
use nnac_isa::checks::DotKind;
use nnac_isa::{DotProduct, HwConfig, Instr, PoolKind};

#[test]
fn wide_layers_meet_the_rule_at_stride_one_and_two() {
    // 64 and 256 channels (HWC pixel pitches that broke the rule), stride 1 and 2,
    // output widths 20 and 10 (not multiples of 8: slices cross output rows).
    let shape = [1, 8, 20, 20];
    let mut rng = Rng(61);
    let mut g = Graph::new("wide");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "s1", x, 64, 3, 1, 1);
    let ra = relu(&mut g, "s1_relu", a);
    let b = conv(&mut g, &mut rng, "s2", ra, 256, 3, 2, 1);
    let rb = relu(&mut g, "s2_relu", b);
    let c = conv(&mut g, &mut rng, "s1_wide", rb, 16, 3, 1, 1);
    g.add_output("y", c);
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::fsd();
    let (p, rep) = lower_ok(&q, &hw);
    assert!(rep.slice_rule.is_empty(), "{:?}", rep.slice_rule);
    assert!(violations(&p.instrs, |_| "", hw.mac_rows).is_empty());
    assert!(assert_bit_exact(&q, &p, 62, &shape) > 0);
}

#[test]
fn slices_crossing_wide_rows_are_cut_at_rows() {
    // Stride 2 over 300-pixel rows (out_w 150) and stride 4 over 100-pixel rows
    // (out_w 25): a slice crossing an output row would span about
    // stride * (in_w - out_w + 7) > 256 bytes, so those tiles end at row ends.
    for (shape, stride, out_w) in [([1, 4, 6, 300], 2, 150u32), ([1, 4, 12, 100], 4, 25)] {
        let mut rng = Rng(64);
        let mut g = Graph::new("rows");
        let x = input(&mut g, &shape);
        let a = conv(&mut g, &mut rng, "strided", x, 8, 3, stride, 1);
        g.add_output("y", a);
        let q = quantize_graph(g, &shape);
        let (p, rep) = lower_ok(&q, &HwConfig::fsd());
        assert!(rep.slice_rule.is_empty(), "{:?}", rep.slice_rule);
        for d in convs(&p) {
            let (first, last) = (d.pix_start / out_w, (d.pix_start + d.pix_count - 1) / out_w);
            assert_eq!(
                first, last,
                "tile {}+{} crosses a row",
                d.pix_start, d.pix_count
            );
        }
        assert!(assert_bit_exact(&q, &p, 65, &shape) > 0);
    }
}

/// A hand-built CONV over an 8x8x64 HWC tensor (pixel pitch 64): 8 pixels of a row
/// span 7 * 64 = 448 bytes.
fn hwc_conv() -> DotProduct {
    DotProduct {
        in_h: 8,
        in_w: 8,
        in_c: 64,
        in_pix_pitch: 64,
        in_row_pitch: 8 * 64,
        in_chan_pitch: 1,
        out_h: 8,
        out_w: 8,
        out_c: 8,
        out_pix_pitch: 8,
        out_row_pitch: 64,
        out_chan_pitch: 1,
        kernel_h: 3,
        kernel_w: 3,
        pad_top: 1,
        pad_left: 1,
        pad_bottom: 1,
        pad_right: 1,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        pix_count: 64,
        oc_count: 8,
        ..DotProduct::default()
    }
}

#[test]
fn a_hand_built_hwc_instruction_is_caught() {
    let d = hwc_conv();
    let w = widest_slice(&d, DotKind::Conv, 96).unwrap();
    assert_eq!(w.span, 7 * 64);
    assert!(!w.fits());
    let v = violations(&[Instr::Conv(d.clone())], |_| "hand", 96);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].layer.as_str(), v[0].pix_pitch), ("hand", 64));
    assert!(v[0].widest.span >= LOAD_BYTES);
    assert!(v[0].to_string().contains("448"), "{}", v[0]);
    // The same tensor planar (pixel pitch 1, channel pitch 64): 7 bytes.
    let planar = DotProduct {
        in_pix_pitch: 1,
        in_row_pitch: 8,
        in_chan_pitch: 64,
        ..d
    };
    assert_eq!(widest_slice(&planar, DotKind::Conv, 96).unwrap().span, 7);
    assert!(violations(&[Instr::Conv(planar)], |_| "hand", 96).is_empty());
}

/// The CONV instructions of `p`.
fn convs(p: &nnac_isa::Program) -> Vec<&DotProduct> {
    p.instrs
        .iter()
        .filter_map(|i| match i {
            Instr::Conv(d) => Some(d),
            _ => None,
        })
        .collect()
}

/// A stride-4 CONV `name` over 100-pixel rows with fused pooling `pool`: a pooled
/// layer is one tile (every pooling window inside it), so its slices would cross
/// output rows.
fn pooled_wide_rows(name: &str, pool: nnac_ir::PoolAttrs) -> (Graph, [usize; 4]) {
    let shape = [1, 4, 12, 100];
    let mut rng = Rng(63);
    let mut g = Graph::new("pooled");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, name, x, 8, 3, 4, 1);
    let p = node(&mut g, "pool", nnac_ir::Op::Pool(pool), &[a]);
    g.add_output("y", p);
    (g, shape)
}

/// Lowers the pooled graph of [`pooled_wide_rows`]: one layer (the passes fuse the
/// pool into the CONV) lowered as the stride-4 CONV unpooled, then one depthwise 1x1
/// CONV that pools (`pool`); bit-exact.
fn check_pools_apart(name: &str, pool: nnac_ir::PoolAttrs, seed: u64) {
    let kind = if pool.kind == nnac_ir::PoolKind::Max {
        PoolKind::Max
    } else {
        PoolKind::Avg
    };
    let (g, shape) = pooled_wide_rows(name, pool);
    let q = quantize_graph(g, &shape);
    let (p, rep) = lower_ok(&q, &HwConfig::fsd());
    assert!(rep.slice_rule.is_empty(), "{:?}", rep.slice_rule);
    let names: Vec<&str> = rep.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, [name], "{:?}", rep.layers);
    let convs = convs(&p);
    let pooling: Vec<_> = convs.iter().filter(|d| d.pool != PoolKind::None).collect();
    assert_eq!(pooling.len(), 1);
    let d = pooling[0];
    assert_eq!((d.pool, d.groups, d.kernel_h, d.stride_h), (kind, 8, 1, 1));
    assert!(convs
        .iter()
        .any(|d| d.stride_h == 4 && d.pool == PoolKind::None));
    assert!(assert_bit_exact(&q, &p, seed, &shape) > 0);
}

fn pool_attrs(kind: nnac_ir::PoolKind, k: usize, s: usize, pad: usize) -> nnac_ir::PoolAttrs {
    nnac_ir::PoolAttrs {
        kind,
        kernel: vec![k, k],
        strides: vec![s, s],
        pads: vec![pad; 4],
        dilations: vec![1, 1],
        ceil_mode: false,
        count_include_pad: true,
    }
}

#[test]
fn a_pooled_layer_on_wide_rows_pools_apart() {
    check_pools_apart("max_s4", pool_attrs(nnac_ir::PoolKind::Max, 2, 2, 0), 66);
    // Padded average pooling counting the padding: the pad value is the output zero
    // point, as in the fused pooling unit.
    check_pools_apart("avg_s4", pool_attrs(nnac_ir::PoolKind::Avg, 3, 2, 1), 70);
}

/// A 1x1 CONV at stride 40: 8 pixels of one output row read input bytes 7 * 40 = 280
/// apart, which no tiling can fix.
fn stride_40() -> (Graph, [usize; 4]) {
    let shape = [1, 2, 2, 400];
    let mut rng = Rng(67);
    let mut g = Graph::new("sparse");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "stride_40", x, 8, 1, 40, 1);
    g.add_output("y", a);
    (g, shape)
}

#[test]
fn a_rule_breaking_layer_is_listed_when_not_enforced() {
    let (g, shape) = stride_40();
    let q = quantize_graph(g, &shape);
    let opts = BackendOptions {
        enforce_slice_rule: false,
        ..BackendOptions::default()
    };
    let (p, rep) = lower(&q, &HwConfig::fsd(), &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rep.slice_rule.len(), 1, "{:?}", rep.slice_rule);
    let v = &rep.slice_rule[0];
    assert_eq!((v.layer.as_str(), v.stride), ("stride_40", (40, 40)));
    assert_eq!(v.widest.span, 7 * 40);
    // The rule is about load count, not values: the program is still bit-exact.
    assert!(assert_bit_exact(&q, &p, 68, &shape) > 0);
}

#[test]
fn the_rule_is_enforced_by_default() {
    let (g, shape) = stride_40();
    let q = quantize_graph(g, &shape);
    let e = lower(&q, &HwConfig::fsd(), &BackendOptions::default()).unwrap_err();
    let BackendError::Emit { node, detail } = &e else {
        panic!("expected an Emit error, got {e}");
    };
    assert_eq!(node, "stride_40");
    assert!(
        detail.contains("stride 40x40") && detail.contains("280"),
        "{detail}"
    );
    assert!(e.to_string().contains("stride_40"), "{e}");
}
