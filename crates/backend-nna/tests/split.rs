//! Layers that do not fit in a small SRAM: row bands, streamed weight groups, DRAM
//! spill and fill, weight prefetch, and the error when nothing fits. Every program is
//! run on the simulator (eager, serial and random schedules) and compared bit-exactly
//! with the quantized reference interpreter.

mod common;

use common::*;
use nnac_backend_nna::{lower, BackendError, BackendOptions, BackendReport, ResidentWeights};
use nnac_ir::{Graph, Op};
use nnac_isa::{HwConfig, Instr, Program};

fn hw(sram_bytes: u64) -> HwConfig {
    HwConfig::from_toml_str(&format!("sram_bytes = {sram_bytes}")).unwrap()
}

/// Lowers, checks well-formedness (hazard check, determinism) and bit-exactness.
fn run_checked(q: &Graph, hw: &HwConfig, shape: &[usize], seed: u64) -> (Program, BackendReport) {
    let (p, rep) = lower_ok(q, hw);
    assert_well_formed(q, hw, &p);
    assert!(rep.sram_peak <= hw.sram_bytes, "{rep:?}");
    assert!(assert_bit_exact(q, &p, seed, shape) > 0);
    (p, rep)
}

/// As [`run_checked`] with the weights streamed every frame (no prologue), so the
/// prefetch of parameter loads is what is tested.
fn run_streamed(q: &Graph, hw: &HwConfig, shape: &[usize], seed: u64) -> (Program, BackendReport) {
    let opts = BackendOptions {
        resident_weights: ResidentWeights::Off,
        ..BackendOptions::default()
    };
    let (p, rep) = lower(q, hw, &opts).unwrap_or_else(|e| panic!("lower: {e}"));
    let (again, _) = lower(q, hw, &opts).unwrap();
    assert_eq!(p.write().unwrap(), again.write().unwrap());
    assert!(p.body_start.is_none());
    assert!(assert_bit_exact(q, &p, seed, shape) > 0);
    (p, rep)
}

fn split_of<'a>(rep: &'a BackendReport, layer: &str) -> &'a nnac_backend_nna::SplitLayer {
    rep.splits
        .iter()
        .find(|s| s.layer == layer)
        .unwrap_or_else(|| panic!("{layer} not split: {:?}", rep.splits))
}

#[test]
fn big_conv_runs_in_row_bands_with_spill_and_fill() {
    let shape = [1, 8, 40, 40];
    let mut rng = Rng(21);
    let mut g = Graph::new("bands");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c0", x, 16, 3, 1, 1);
    let r = relu(&mut g, "r0", c);
    g.add_output("y", r);
    let q = quantize_graph(g, &shape);
    // Input 12.8 KB + output 25.6 KB + weights 6.9 KB do not fit in 16 KB.
    let (_, rep) = run_checked(&q, &hw(16 << 10), &shape, 3);
    let s = split_of(&rep, "c0");
    assert!(s.bands > 1, "{rep:?}");
    assert_eq!(s.groups, 1);
    assert!(rep.fill_bytes >= 40 * 40 * 8, "{rep:?}");
    assert!(rep.spill_bytes >= 40 * 40 * 16, "{rep:?}");
    // The same graph with the full SRAM neither splits nor spills.
    let (_, big) = run_checked(&q, &HwConfig::fsd(), &shape, 3);
    assert!(big.splits.is_empty() && big.spill_bytes == 0 && big.fill_bytes == 0);
}

#[test]
fn strided_and_pooled_convs_split_into_bands() {
    let shape = [1, 6, 48, 40];
    let mut rng = Rng(22);
    let mut g = Graph::new("pooled");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c0", x, 24, 3, 1, 1);
    let r = relu(&mut g, "r0", c);
    let m = maxpool(&mut g, "p0", 3, 2, 1, r);
    let c2 = conv(&mut g, &mut rng, "c1", m, 16, 3, 2, 1);
    g.add_output("y", c2);
    let q = quantize_graph(g, &shape);
    // c0 (pooled in its shadow) reads 15.4 KB and stores 11.5 KB; c1's one weight
    // group (24*9 x 96 bytes) is 20.7 KB.
    let (_, rep) = run_checked(&q, &hw(24 << 10), &shape, 4);
    assert!(split_of(&rep, "c0").bands > 1, "{rep:?}");
    assert!(rep.spilled_values > 0);
}

#[test]
fn fully_connected_weights_stream_group_by_group() {
    let (g, shape) = conv_fc_fc();
    let q = quantize_graph(g, &shape);
    // fc: 4 groups of 1024 x 96 bytes = 384 KB of weights in a 256 KB SRAM.
    let (p, rep) = run_checked(&q, &hw(256 << 10), &shape, 5);
    let s = split_of(&rep, "fc");
    assert_eq!(s.bands, 1);
    assert!(s.groups > 1, "{rep:?}");
    // Nothing had to leave SRAM but the weights.
    assert_eq!(rep.spill_bytes, 0, "{rep:?}");
    let ips = p
        .instrs
        .iter()
        .filter(|i| matches!(i, Instr::InnerProduct(_)))
        .count();
    assert!(ips >= 4);
}

#[test]
fn residual_and_concat_inputs_are_spilled_and_filled() {
    let shape = [1, 8, 24, 24];
    let mut rng = Rng(24);
    let mut g = Graph::new("res");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "a", x, 8, 3, 1, 1);
    let ra = relu(&mut g, "ra", a);
    let b = conv(&mut g, &mut rng, "b", ra, 8, 3, 1, 1);
    let s = add(&mut g, "sum", b, x);
    let c = conv(&mut g, &mut rng, "c", s, 8, 1, 1, 1);
    let d = conv(&mut g, &mut rng, "d", s, 8, 3, 1, 1);
    let cat = node(&mut g, "cat", Op::Concat { axis: 1 }, &[c, d]);
    let e = conv(&mut g, &mut rng, "e", cat, 8, 3, 1, 1);
    g.add_output("y", e);
    let q = quantize_graph(g, &shape);
    // Every activation is 4.6 KB (the concat 9.2 KB); 16 KB forces spills.
    let (_, rep) = run_checked(&q, &hw(16 << 10), &shape, 6);
    assert!(rep.spilled_values > 0, "{rep:?}");
    assert!(rep.spill_bytes > 0 && rep.fill_bytes > 0, "{rep:?}");
}

#[test]
fn eltwise_larger_than_sram_runs_in_bands() {
    let shape = [1, 8, 48, 48];
    let mut rng = Rng(27);
    let mut g = Graph::new("bigres");
    let x = input(&mut g, &shape);
    let a = conv(&mut g, &mut rng, "a", x, 8, 3, 1, 1);
    let s = add(&mut g, "sum", a, x);
    let r = relu(&mut g, "r", s);
    g.add_output("y", r);
    let q = quantize_graph(g, &shape);
    // Each activation is 18.4 KB; the ELTWISE alone reads two and writes one.
    let (_, rep) = run_checked(&q, &hw(32 << 10), &shape, 8);
    let elt = rep
        .layers
        .iter()
        .find(|l| l.instr == "ELTWISE")
        .expect("an ELTWISE layer");
    assert!(split_of(&rep, &elt.name).bands > 1, "{rep:?}");
}

#[test]
fn channel_shuffle_larger_than_sram_runs_in_bands() {
    // 16 channels of 48x48 (36.9 KB) shuffled in 4 groups: input and output do not fit
    // in 48 KB next to each other, so the SCALE copies run in bands of rows.
    let shape = [1, 4, 48, 48];
    let mut rng = Rng(28);
    let mut g = Graph::new("bigshuffle");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c", x, 16, 1, 1, 1);
    let r = relu(&mut g, "r", c);
    let op = |shape: &[usize]| Op::Reshape {
        shape: shape.to_vec(),
    };
    let split = node(&mut g, "split", op(&[1, 4, 4, 48, 48]), &[r]);
    let perm = vec![0, 2, 1, 3, 4];
    let t = node(&mut g, "t", Op::Transpose { perm }, &[split]);
    let merged = node(&mut g, "shuffle", op(&[1, 16, 48, 48]), &[t]);
    g.add_output("y", merged);
    let q = quantize_graph(g, &shape);
    let (_, rep) = run_checked(&q, &hw(48 << 10), &shape, 9);
    assert!(split_of(&rep, "shuffle").bands > 1, "{rep:?}");
    // With the full SRAM: one step, 4 copies of 4 planes, 24 tiles each.
    let (p, big) = run_checked(&q, &HwConfig::fsd(), &shape, 9);
    assert!(big.splits.is_empty(), "{big:?}");
    let scales = p.instrs.iter().filter(|i| matches!(i, Instr::Scale(_)));
    assert_eq!(scales.count(), 4 * 24);
}

#[test]
fn weights_are_prefetched_as_far_as_sram_allows() {
    let shape = [1, 8, 12, 12];
    let mut rng = Rng(25);
    let mut g = Graph::new("chain");
    let mut v = input(&mut g, &shape);
    for k in 0..5 {
        v = conv(&mut g, &mut rng, &format!("c{k}"), v, 8, 3, 1, 1);
        v = relu(&mut g, &format!("r{k}"), v);
    }
    g.add_output("y", v);
    let q = quantize_graph(g, &shape);
    let (p, rep) = run_streamed(&q, &HwConfig::fsd(), &shape, 7);
    assert!(rep.prefetched_early > 0, "{rep:?}");
    // With SRAM to spare, every weight load precedes the first convolution.
    let first_conv = p.instrs.iter().position(|i| matches!(i, Instr::Conv(_)));
    let last_read = p
        .instrs
        .iter()
        .rposition(|i| matches!(i, Instr::DmaRead(_)));
    assert!(last_read < first_conv, "{last_read:?} vs {first_conv:?}");
    // Serialised queues gain nothing from prefetching: loads stay with their layer.
    let opts = BackendOptions {
        serialise: true,
        resident_weights: ResidentWeights::Off,
        ..BackendOptions::default()
    };
    let (ps, reps) = lower(&q, &HwConfig::fsd(), &opts).unwrap();
    assert_eq!(reps.prefetched_early, 0);
    assert!(assert_bit_exact(&q, &ps, 7, &shape) > 0);
}

#[test]
fn a_layer_that_cannot_fit_names_its_bytes() {
    let shape = [1, 16, 64, 64];
    let mut rng = Rng(26);
    let mut g = Graph::new("huge");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c0", x, 32, 5, 1, 1);
    g.add_output("y", c);
    let q = quantize_graph(g, &shape);
    // One output row needs 5 input rows (5 KB), one row of output (2 KB) and one
    // weight group of 16*25 x 96 bytes (38 KB): far more than 16 KB.
    let e = lower(&q, &hw(16 << 10), &BackendOptions::default()).unwrap_err();
    let BackendError::SramFull { node, needed, sram } = &e else {
        panic!("expected SramFull, got {e}");
    };
    assert_eq!(node, "c0");
    assert_eq!(*sram, 16 << 10);
    assert!(*needed > 40_000, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("c0") && text.contains(&needed.to_string()),
        "{text}"
    );
}

#[test]
fn prefetch_window_shrinks_to_the_flags_available() {
    let shape = [1, 8, 10, 10];
    let mut rng = Rng(28);
    let mut g = Graph::new("longchain");
    let mut v = input(&mut g, &shape);
    for k in 0..12 {
        v = conv(&mut g, &mut rng, &format!("c{k}"), v, 8, 3, 1, 1);
    }
    g.add_output("y", v);
    let q = quantize_graph(g, &shape);
    let few = HwConfig::from_toml_str("flags = 6").unwrap();
    let (p, rep) = run_streamed(&q, &few, &shape, 9);
    assert!(rep.flags_used <= 6, "{rep:?}");
    // Loads still run ahead (a window of a few layers), not serialised.
    assert!(rep.prefetched_early > 0, "{rep:?}");
    let first_conv = p.instrs.iter().position(|i| matches!(i, Instr::Conv(_)));
    let reads_before = p.instrs[..first_conv.unwrap()]
        .iter()
        .filter(|i| matches!(i, Instr::DmaRead(_)))
        .count();
    assert!(reads_before > 4 && reads_before < 12 * 3, "{reads_before}");
}

#[test]
fn a_later_layers_weights_load_under_compute_bound_layers() {
    // Six 3x3 convolutions of 64 channels on 24x24 (compute-bound: small weights,
    // many passes), then a fully connected layer of 2304 x 960 int8 weights (2.2 MB,
    // ten weight groups of 221 KB, streamed one at a time) in a 576 KiB SRAM. A
    // weight group whose SRAM is free from the start is brought ahead of the
    // convolutions' own loads, so it arrives while they compute instead of after
    // them (VGG-19's fc6, PERFORMANCE.md 7.2). In a 1 MiB SRAM all of them load
    // ahead in order, which would not test the move; here, kept in order, the first
    // group loads after c5's first CONV.
    let shape = [1, 16, 24, 24];
    let mut rng = Rng(29);
    let mut g = Graph::new("vgg_like");
    let mut v = input(&mut g, &shape);
    for k in 0..6 {
        v = conv(&mut g, &mut rng, &format!("c{k}"), v, 64, 3, 1, 1);
        v = relu(&mut g, &format!("r{k}"), v);
    }
    let s = conv(&mut g, &mut rng, "down", v, 64, 1, 4, 1);
    let f = node(
        &mut g,
        "flat",
        Op::Reshape {
            shape: vec![1, 64 * 6 * 6],
        },
        &[s],
    );
    let fc = gemm(&mut g, &mut rng, "fc", f, 960);
    g.add_output("y", fc);
    let q = quantize_graph(g, &shape);
    let hw = hw(576 << 10);
    let (p, rep) = run_streamed(&q, &hw, &shape, 11);
    assert!(split_of(&rep, "fc").groups > 1, "{rep:?}");
    let layers = p.layers.as_ref().expect("layer table");
    let first = |layer: &str, f: fn(&Instr) -> bool| {
        (0..p.instrs.len()).find(|&i| layers.name_of(i) == Some(layer) && f(&p.instrs[i]))
    };
    // A weight group's load (not fc's bias or channel table: 3.8 KB and 15 KB).
    let fc_read = first(
        "fc",
        |i| matches!(i, Instr::DmaRead(d) if d.row_len > 100_000),
    )
    .expect("fc loads its weights");
    let last_conv = first("c5", |i| matches!(i, Instr::Conv(_))).expect("c5 runs");
    assert!(
        fc_read < last_conv,
        "fc's first weight-group load at {fc_read}, c5's first CONV at {last_conv}"
    );
}

#[test]
fn random_conv_fc_chains_in_small_srams_are_bit_exact() {
    // 40 seeded chains of 2-6 convolutions (1x1 or 3x3, 8-127 channels) and a fully
    // connected layer, in 256 KiB to 2 MiB of SRAM, weights streamed and resident:
    // splitting, spilling and weight loads moved ahead of their order (prefetch) give
    // programs that the simulator runs bit-exactly, or the one clear refusal.
    let (mut compiled, mut refused) = (0, 0);
    for seed in 0..40u64 {
        let mut r = Rng(1000 + seed);
        let pick = |r: &mut Rng, n: usize| (r.uniform().abs() * 1000.0) as usize % n;
        let h = 4 + pick(&mut r, 8);
        let shape = [1, 3 + pick(&mut r, 14), h, h];
        let mut g = Graph::new("chain");
        let mut v = input(&mut g, &shape);
        let mut c = shape[1];
        for k in 0..2 + pick(&mut r, 5) {
            c = 8 + pick(&mut r, 120);
            let kernel = 1 + 2 * pick(&mut r, 2);
            v = conv(&mut g, &mut r, &format!("c{k}"), v, c, kernel, 1, 1);
            v = relu(&mut g, &format!("r{k}"), v);
        }
        let flat = Op::Reshape {
            shape: vec![1, c * h * h],
        };
        let f = node(&mut g, "flat", flat, &[v]);
        let n = 10 + pick(&mut r, 400);
        let y = gemm(&mut g, &mut r, "fc", f, n);
        g.add_output("y", y);
        let q = quantize_graph(g, &shape);
        let hw = hw([256 << 10, 512 << 10, 1 << 20, 2 << 20][pick(&mut r, 4)]);
        for resident_weights in [ResidentWeights::Off, ResidentWeights::Auto] {
            let opts = BackendOptions {
                resident_weights,
                ..BackendOptions::default()
            };
            match lower(&q, &hw, &opts) {
                Ok((p, rep)) => {
                    assert!(rep.sram_peak <= hw.sram_bytes, "seed {seed}: {rep:?}");
                    assert!(assert_bit_exact(&q, &p, seed, &shape) > 0, "seed {seed}");
                    compiled += 1;
                }
                Err(BackendError::SramFull { .. }) => refused += 1,
                Err(e) => panic!("seed {seed}: {e}"),
            }
        }
    }
    assert!(
        compiled > 2 * refused,
        "{compiled} compiled, {refused} refused"
    );
}

#[test]
fn a_deconv_with_many_output_channels_streams_in_chunks() {
    // ConvTranspose 64 -> 200 channels, 3x3 stride 2: three 96-channel weight
    // groups of 55 KB. Streamed in a 1 MiB SRAM (chunk cap 32 KB) they load one
    // group at a time, one band, although the layer fits whole.
    let shape = [1, 64, 6, 6];
    let mut rng = Rng(17);
    let mut g = Graph::new("deconv_chunks");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c", x, 64, 1, 1, 1);
    let r = relu(&mut g, "r", c);
    let up = deconv_x2(&mut g, &mut rng, "up", r, 200, 0.1);
    g.add_output("y", up);
    let q = quantize_graph(g, &shape);
    let (p, rep) = run_streamed(&q, &hw(1 << 20), &shape, 21);
    let s = split_of(&rep, "up");
    assert_eq!((s.bands, s.groups), (1, 3));
    let deconvs = p.instrs.iter().filter(|i| matches!(i, Instr::Deconv(_)));
    assert!(deconvs.count() >= 3);
    // Resident too (everything fits 32 MiB): one whole layer, bit-exact.
    run_checked(&q, &HwConfig::fsd(), &shape, 22);
}
