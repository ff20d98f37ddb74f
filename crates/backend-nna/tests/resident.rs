//! Weights resident in SRAM across frames (`resident.rs`): pinned when all of them
//! fit with the activations, loaded once by a prologue; partly pinned beside a
//! split layer's streamed weights; streamed otherwise or with `ResidentWeights::Off`. Every program is checked (hazards, determinism) and run
//! bit-exactly for three frames after one load.

mod common;

use common::*;
use nnac_backend_nna::{lower, BackendOptions, Residency, ResidentWeights};
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
    assert!(why.contains("parameters") && why.contains("49152"), "{why}");
    assert!(p.body_start.is_none());
    assert_well_formed(&q, &hw, &p);
    assert!(assert_bit_exact(&q, &p, 4, &shape) > 0);
}

#[test]
fn a_split_layer_streams_while_the_others_stay_resident() {
    // fc: 4 groups of 1024 x 96 bytes = 384 KB of weights in a 320 KB SRAM: split,
    // streamed group by group every frame; c0 and fc2 fit next to it.
    let (g, shape) = conv_fc_fc();
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::from_toml_str("sram_bytes = 327680").unwrap();
    let (p, rep) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    assert!(rep.splits.iter().any(|s| s.layer == "fc"), "{rep:?}");
    let Residency::Partial {
        buffers, streamed, ..
    } = rep.residency
    else {
        panic!("{:?}", rep.residency)
    };
    assert!(
        buffers >= 3 && streamed >= 4 * 1024 * 96,
        "{:?}",
        rep.residency
    );
    let b = p.body_start.expect("a prologue");
    let layers = p.layers.as_ref().unwrap();
    // The prologue loads only layers that are not split; the body still loads fc's.
    let names = |r: std::ops::Range<usize>| -> Vec<&str> {
        r.filter(|&i| matches!(p.instrs[i], Instr::DmaRead(_)))
            .filter_map(|i| layers.name_of(i))
            .collect()
    };
    assert!(!names(0..b).contains(&"fc"), "{:?}", names(0..b));
    assert!(names(b..p.instrs.len()).contains(&"fc"));
    assert!(assert_bit_exact(&q, &p, 5, &shape) > 0);
}
