//! Weights resident in SRAM across frames (`resident.rs`): pinned when all of them
//! fit with the activations, loaded once by a prologue; partly pinned, weight
//! chunks of large layers among them, beside the chunks that stream; streamed
//! otherwise or with `ResidentWeights::Off`. Every program is checked (hazards,
//! determinism) and run bit-exactly for several frames after one load.

mod common;

use common::*;
use nnac_backend_nna::{lower, BackendOptions, NotPinned, Residency, ResidentWeights};
use nnac_ir::Graph;
use nnac_isa::{HwConfig, Instr, Program};

fn chain(layers: usize) -> (Graph, [usize; 4]) {
    let shape = [1, 8, 10, 10];
    let mut rng = Rng(41);
    let mut g = Graph::new("chain");
    let mut v = input(&mut g, &shape);
    for k in 0..layers {
        v = conv(&mut g, &mut rng, &format!("c{k}"), v, 8, 3, 1, 1);
        v = relu(&mut g, &format!("r{k}"), v);
    }
    g.add_output("y", v);
    (g, shape)
}

fn reads(instrs: &[Instr]) -> usize {
    instrs
        .iter()
        .filter(|i| matches!(i, Instr::DmaRead(_)))
        .count()
}

#[test]
fn all_parameters_fit_so_the_body_moves_only_input_and_output() {
    let (g, shape) = chain(6);
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::fsd();
    let (p, rep) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    let Residency::Pinned {
        buffers,
        bytes,
        prologue_instrs,
    } = rep.residency
    else {
        panic!("{:?}", rep.residency)
    };
    // Weights, bias and channel table of each of the 6 convolutions.
    assert_eq!(buffers, 18);
    assert!(bytes > 6 * 72 * 96, "{bytes}");
    let b = p.body_start.expect("a prologue");
    assert_eq!(b, prologue_instrs);
    assert_eq!(p.prologue_segments(), 1);
    assert_eq!(
        reads(&p.instrs[..b]),
        b - 1,
        "the prologue is loads and a STOP"
    );
    assert_eq!(reads(&p.instrs[b..]), 1, "the body reads only the input");
    assert!(assert_bit_exact(&q, &p, 3, &shape) > 0);

    // The profile: per frame only input and output cross DRAM.
    let prof = nnac_runtime_sim::timing::analyze(&p, None).unwrap();
    let pro = prof.prologue.expect("prologue timed");
    assert_eq!(pro.dram_read, bytes);
    assert!(prof.dram_read + prof.dram_written < 2 * prof.io_bytes + 1024);

    // Off: the same outputs with the weights streamed every frame.
    let off = BackendOptions {
        resident_weights: ResidentWeights::Off,
        ..BackendOptions::default()
    };
    let (s, srep) = lower(&q, &hw, &off).unwrap();
    assert_eq!(srep.residency, Residency::Off);
    assert!(s.body_start.is_none());
    assert!(assert_bit_exact(&q, &s, 3, &shape) > 0);
    let sprof = nnac_runtime_sim::timing::analyze(&s, None).unwrap();
    assert!(
        sprof.total_cycles > prof.total_cycles,
        "streaming costs per frame"
    );
}

#[test]
fn parameters_that_do_not_fit_together_stream() {
    // 12 layers of ~7 KB of parameters each; every layer fits 48 KB alone. Less
    // than 64 KiB stays free beside the streaming placement: no partial pinning.
    let (g, shape) = chain(12);
    let q = quantize_graph(g, &shape);
    let hw = HwConfig {
        sram_bytes: 48 * 1024,
        ..HwConfig::fsd()
    };
    let (p, rep): (Program, _) = lower_ok(&q, &hw);
    assert!(rep.splits.is_empty(), "{rep:?}");
    let Residency::Streamed(why) = &rep.residency else {
        panic!("{:?}", rep.residency)
    };
    assert!(
        matches!(why, NotPinned::NoRoom { sram: 49152, .. }),
        "{why}"
    );
    assert!(why.to_string().contains("parameters"), "{why}");
    assert!(p.body_start.is_none());
    assert_well_formed(&q, &hw, &p);
    assert!(assert_bit_exact(&q, &p, 4, &shape) > 0);
}

/// `conv_fc_fc` lowered in an SRAM of `sram` bytes: fc's weights load in their four
/// groups (one band), some pinned by the prologue, the others streamed by the body;
/// checked well formed and bit-exact. The program, the quantized graph, the
/// hardware and the pinned parameter bytes.
fn fc_partly_pinned(sram: u64) -> (Program, Graph, HwConfig, u64) {
    let (g, shape) = conv_fc_fc();
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::from_toml_str(&format!("sram_bytes = {sram}")).unwrap();
    let (p, rep) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    let fc = rep.splits.iter().find(|s| s.layer == "fc");
    assert!(
        fc.is_some_and(|s| s.bands == 1 && s.groups == 4),
        "{:?}",
        rep.splits
    );
    let Residency::Partial {
        buffers,
        bytes,
        streamed,
    } = rep.residency
    else {
        panic!("{:?}", rep.residency)
    };
    assert!(
        buffers >= 3 && bytes >= 1024 * 96 && streamed >= 1024 * 96,
        "{:?}",
        rep.residency
    );
    // Both the prologue and the body load some of fc's weight groups.
    let b = p.body_start.expect("a prologue");
    let layers = p.layers.as_ref().unwrap();
    let fc_reads = |r: std::ops::Range<usize>| {
        r.filter(|&i| matches!(p.instrs[i], Instr::DmaRead(_)))
            .filter(|&i| layers.name_of(i) == Some("fc"))
            .count()
    };
    assert!(fc_reads(0..b) > 0 && fc_reads(b..p.instrs.len()) > 0);
    assert!(assert_bit_exact(&q, &p, 5, &shape) > 0);
    (p, q, hw, bytes)
}

#[test]
fn a_split_layer_streams_while_the_others_stay_resident() {
    // fc: 4 groups of 1024 x 96 bytes = 384 KB of weights in a 320 KB SRAM: split
    // into its 4 groups, some pinned, the others streamed group by group every
    // frame; c0 and fc2 fit next to it.
    let (p, q, hw, _) = fc_partly_pinned(327680);
    // Pinning saves DMA every frame against streaming everything.
    let off = BackendOptions {
        resident_weights: ResidentWeights::Off,
        ..BackendOptions::default()
    };
    let (s, _) = lower(&q, &hw, &off).unwrap();
    let pinned = nnac_runtime_sim::timing::analyze(&p, None).unwrap();
    let all = nnac_runtime_sim::timing::analyze(&s, None).unwrap();
    assert!(
        pinned.dram_read < all.dram_read,
        "{} >= {}",
        pinned.dram_read,
        all.dram_read
    );
}

#[test]
fn a_layer_that_fits_whole_streams_in_chunks_when_the_parameters_do_not_all_fit() {
    // fc's 393 KB of weights fit a 416 KB SRAM whole, but not with c0's and fc2's:
    // fc still loads them in its four weight groups, and two or more are pinned.
    let (.., bytes) = fc_partly_pinned(425984);
    assert!(bytes >= 2 * 1024 * 96, "{bytes}");
}

#[test]
fn streamed_weights_load_in_chunks_even_where_the_layer_fits() {
    // Every weight streamed in a 1 MiB SRAM (chunk cap 32 KB): fc's four 98 KB
    // weight groups load one at a time although fc fits whole; c0 (4 KB) and fc2
    // (29 KB) are under the cap. (A layer of one weight group above the cap is not
    // split either: `parameters_that_do_not_fit_together_stream`.)
    let (g, shape) = conv_fc_fc();
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::from_toml_str("sram_bytes = 1048576").unwrap();
    let off = BackendOptions {
        resident_weights: ResidentWeights::Off,
        ..BackendOptions::default()
    };
    let (p, rep) = lower(&q, &hw, &off).unwrap();
    assert_eq!(rep.residency, Residency::Off);
    let splits: Vec<(&str, usize, usize)> = rep
        .splits
        .iter()
        .map(|s| (s.layer.as_str(), s.bands, s.groups))
        .collect();
    assert_eq!(splits, vec![("fc", 1, 4)]);
    let hz = nnac_isa::hazard::check_program(&p).unwrap();
    assert!(hz.is_clean(), "{}", hz.lines().join("\n"));
    let (again, _) = lower(&q, &hw, &off).unwrap();
    assert_eq!(p.write().unwrap(), again.write().unwrap());
    assert!(assert_bit_exact(&q, &p, 3, &shape) > 0);
}
