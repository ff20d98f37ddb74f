//! The timing model end to end: flags, overlap, dependencies, segments, errors, and
//! invariants over many random programs (cycles all charged, utilization never above
//! the shape bound, determinism).

use nnac_isa::{
    Dma, DotProduct, FlagOps, HwConfig, Instr, LayerTable, Order, Program, SimdInstr, Stop,
};
use nnac_runtime_sim::timing::{analyze, Profile, Unit};

const W_ADDR: u32 = 1 << 20;
const OUT_ADDR: u32 = 2 << 20;

fn round8(x: u32) -> u32 {
    x.div_ceil(8) * 8
}

/// A "same"-padded `k`x`k` conv over an `h`x`w`x`in_c` HWC tensor at 0, weights at
/// `W_ADDR`, output at `out_addr`, the whole output as one tile, one SIMD instruction.
fn conv(h: u32, w: u32, in_c: u32, out_c: u32, k: u32, stride: u32, groups: u32) -> DotProduct {
    let pad = k / 2;
    let out_h = (h + 2 * pad - k) / stride + 1;
    let out_w = (w + 2 * pad - k) / stride + 1;
    let (pp, opp) = (round8(in_c), round8(out_c));
    DotProduct {
        in_addr: 0,
        w_addr: W_ADDR,
        out_addr: OUT_ADDR,
        in_h: h,
        in_w: w,
        in_c,
        out_h,
        out_w,
        out_c,
        in_pix_pitch: pp,
        in_row_pitch: pp * w,
        out_pix_pitch: opp,
        out_row_pitch: opp * out_w,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        pix_count: out_h * out_w,
        oc_count: out_c,
        kernel_h: k,
        kernel_w: k,
        pad_top: pad,
        pad_left: pad,
        pad_bottom: pad,
        pad_right: pad,
        stride_h: stride,
        stride_w: stride,
        dil_h: 1,
        dil_w: 1,
        groups,
        simd: vec![SimdInstr::from_mnemonic("FUSED_RELU").unwrap()],
        ..DotProduct::default()
    }
}

fn dma_read(sram: u32, bytes: u32, flags: FlagOps) -> Instr {
    Instr::DmaRead(Dma {
        dram_addr: 0,
        sram_addr: sram,
        rows: 1,
        row_len: bytes,
        dram_stride: u64::from(bytes),
        sram_stride: bytes,
        flags,
    })
}

fn with_flags(mut d: DotProduct, f: FlagOps) -> Instr {
    d.flags = f;
    Instr::Conv(d)
}

fn stop() -> Instr {
    Instr::Stop(Stop::default())
}

fn program(instrs: Vec<Instr>) -> Program {
    let mut p = Program::new(HwConfig::fsd());
    p.dram.bytes = vec![0; 1 << 16].into();
    p.instrs = instrs;
    p
}

fn run(instrs: Vec<Instr>) -> Profile {
    analyze(&program(instrs), None).expect("analyzable")
}

/// The 96-pixel 1x1 conv with 8 input channels: 8 MAC cycles, 96 unload cycles.
fn small_conv() -> DotProduct {
    conv(1, 96, 8, 96, 1, 1, 1)
}

#[test]
fn compute_waiting_on_a_dma_stalls_exactly_the_dma_time() {
    // 1700 bytes at 17 B/cycle = 100 cycles + 200 cycles of latency.
    let p = run(vec![
        dma_read(0, 1700, FlagOps::new().set(0)),
        with_flags(small_conv(), FlagOps::new().wait(0).clear(0)),
        stop(),
    ]);
    let (d, c) = (p.timeline.instrs[0], p.timeline.instrs[1]);
    assert_eq!((d.start, d.end), (0, 300));
    assert_eq!((c.start, c.release, c.end), (300, 308, 404));
    assert_eq!(c.charge.dma, 300);
    assert_eq!(c.charge.mac_busy, 8);
    assert_eq!(c.charge.simd_unload, 96);
    assert_eq!(p.total_cycles, 404);
    assert_eq!(p.charge.total(), 404);
    // The floor: the DMA queue's 300 cycles; the flag's serialization costs 104.
    let f = p.floors[0];
    assert_eq!((f.dma, f.mac, f.simd, f.limit()), (300, 8, 96, "DMA"));
    assert_eq!(p.floor_cycles(), 300);
}

#[test]
fn queues_overlap_without_flags() {
    let p = run(vec![
        dma_read(3 << 20, 1700, FlagOps::new()),
        Instr::Conv(small_conv()),
        stop(),
    ]);
    let (d, c) = (p.timeline.instrs[0], p.timeline.instrs[1]);
    assert_eq!((d.start, c.start), (0, 0));
    assert_eq!(p.total_cycles, 300);
    // The conv's 104 cycles, then the DMA the STOP still waits for.
    assert_eq!(c.charge.total(), 104);
    assert_eq!(d.charge.dma, 196);
    assert_eq!(p.charge.total(), 300);
    // Without a flag between them the queues overlap fully: the floor is reached.
    assert_eq!(p.floor_cycles(), p.total_cycles);
}

#[test]
fn a_dma_waiting_on_compute_starts_at_its_completion() {
    // The DMA-write of the conv's output waits for F1, set at the conv's completion.
    let write = Instr::DmaWrite(Dma {
        sram_addr: OUT_ADDR,
        rows: 1,
        row_len: 17 * 96,
        dram_stride: 17 * 96,
        sram_stride: 17 * 96,
        flags: FlagOps::new().wait(1).clear(1),
        ..Dma::default()
    });
    let p = run(vec![
        with_flags(small_conv(), FlagOps::new().set(1)),
        write,
        stop(),
    ]);
    let w = p.timeline.instrs[1];
    assert_eq!((w.start, w.end), (104, 104 + 200 + 96));
    assert_eq!(p.total_cycles, 400);
    assert_eq!(w.charge.dma, 296);
}

#[test]
fn passes_overlap_their_unloads() {
    // Two pixel groups of the 8-term conv: the second copy waits for the first
    // unload (96 cycles from cycle 8), the last unload ends at 104 + 96.
    let mut d = conv(2, 96, 8, 96, 1, 1, 1);
    d.pix_count = 192;
    let p = run(vec![Instr::Conv(d), stop()]);
    let c = p.timeline.instrs[0];
    assert_eq!((c.release, c.end), (104, 200));
    assert_eq!(c.charge.mac_busy, 16);
    assert_eq!(c.charge.simd_unload, 88 + 96);
    assert_eq!(p.total_cycles, 200);
}

#[test]
fn dependent_compute_waits_for_completion_independent_compute_overlaps() {
    // B reads A's output; C writes elsewhere and reads the input only.
    let a = small_conv();
    let mut b = small_conv();
    b.in_addr = OUT_ADDR;
    b.in_c = 96;
    b.in_pix_pitch = 96;
    b.in_row_pitch = 96 * 96;
    b.out_addr = 3 << 20;
    let mut c = small_conv();
    c.out_addr = 4 << 20;
    let p = run(vec![Instr::Conv(a), Instr::Conv(b), Instr::Conv(c), stop()]);
    let t = &p.timeline.instrs;
    assert_eq!((t[0].release, t[0].end), (8, 104));
    // B starts at A's completion: 96 cycles charged as a dependency wait.
    assert_eq!(t[1].start, 104);
    assert_eq!(t[1].charge.flags, 96);
    // C overlaps B's unload: it starts when B's MAC work is done.
    assert_eq!(t[2].start, t[1].release);
    assert_eq!(t[2].charge.flags, 0);
    assert_eq!(p.charge.total(), p.total_cycles);
}

#[test]
fn segments_run_one_after_another_and_keep_flags() {
    let p = run(vec![
        dma_read(0, 1700, FlagOps::new().set(0)),
        stop(),
        with_flags(small_conv(), FlagOps::new().wait(0).clear(0)),
        stop(),
    ]);
    let s = &p.timeline.segments;
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].start, s[0].end, s[0].stop), (0, 300, 1));
    assert_eq!((s[1].start, s[1].end), (300, 404));
    assert_eq!(p.timeline.instrs[2].start, 300);
    assert_eq!(p.timeline.instrs[3].unit, Unit::Stop);
    assert_eq!(p.charge.total(), 404);
}

#[test]
fn deadlocks_and_flag_errors_are_reported() {
    let prog = program(vec![
        with_flags(small_conv(), FlagOps::new().wait(3)),
        stop(),
    ]);
    let e = analyze(&prog, None).unwrap_err();
    assert!(
        e.0.contains("deadlock") && e.0.contains("instruction 0 (CONV)"),
        "{e}"
    );
    let prog = program(vec![
        dma_read(0, 64, FlagOps::new().set(2)),
        dma_read(64, 64, FlagOps::new().set(2)),
        stop(),
    ]);
    let e = analyze(&prog, None).unwrap_err();
    assert!(
        e.0.contains("instruction 1 (DMA_READ)") && e.0.contains("F2"),
        "{e}"
    );
    let mut bad = small_conv();
    bad.out_h = 5;
    let e = analyze(&program(vec![Instr::Conv(bad), stop()]), None).unwrap_err();
    assert!(e.0.starts_with("instruction 0 (CONV)"), "{e}");
}

#[test]
fn another_clock_and_dram_share_change_the_time_not_the_cycles_of_compute() {
    let prog = program(vec![
        dma_read(0, 34_000, FlagOps::new().set(0)),
        with_flags(small_conv(), FlagOps::new().wait(0).clear(0)),
        stop(),
    ]);
    let base = analyze(&prog, None).unwrap();
    let hw = HwConfig {
        dram_share_percent: 100,
        ..HwConfig::fsd()
    };
    let fast = analyze(&prog, Some(&hw)).unwrap();
    // 34,000 bytes: 2000 cycles at 17 B/cycle, 1000 at 34 B/cycle.
    assert_eq!(base.total_cycles, 200 + 2000 + 104);
    assert_eq!(fast.total_cycles, 200 + 1000 + 104);
    let other = HwConfig {
        mac_rows: 64,
        simd_width: 64,
        ..HwConfig::fsd()
    };
    assert!(analyze(&prog, Some(&other))
        .unwrap_err()
        .0
        .contains("mac_rows"));
}

/// SplitMix64, for seeded random programs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }
}

/// A random conv layer, tiled into random pixel x channel tiles, with its weights
/// DMA'd in first (flag F0) and released by the last tile.
fn random_layer(rng: &mut Rng, name: &str, names: &mut Vec<String>) -> Vec<Instr> {
    let groups = [1, 1, 1, 2, 4, 16][rng.range(0, 5) as usize];
    let in_c = groups * rng.range(1, 24);
    let out_c = groups * rng.range(1, 60);
    let k = [1, 3, 5][rng.range(0, 2) as usize];
    let (h, w) = (rng.range(k, 24), rng.range(k, 24));
    let mut base = conv(h, w, in_c, out_c, k, rng.range(1, 3), groups);
    base.in_pix_pitch = round8(in_c) * rng.range(1, 3);
    base.in_row_pitch = base.in_pix_pitch * w + 8 * rng.range(0, 4);
    base.order = if rng.range(0, 1) == 0 {
        Order::PixelMajor
    } else {
        Order::ChannelMajor
    };
    base.simd = vec![SimdInstr::from_mnemonic("FUSED_RELU").unwrap(); rng.range(0, 4) as usize];
    let npix = base.out_h * base.out_w;
    let (pt, ct) = (rng.range(1, 200), rng.range(1, 200));
    let weights = FlagOps::new().wait_clear(0).set(0);
    let mut out = vec![dma_read(W_ADDR, rng.range(1, 5000), weights)];
    let mut tiles = Vec::new();
    for p0 in (0..npix).step_by(pt as usize) {
        for c0 in (0..out_c).step_by(ct as usize) {
            let mut d = base.clone();
            d.pix_start = p0;
            d.pix_count = pt.min(npix - p0);
            d.oc_start = c0;
            d.oc_count = ct.min(out_c - c0);
            tiles.push(d);
        }
    }
    let n = tiles.len();
    for (i, mut d) in tiles.into_iter().enumerate() {
        d.flags = FlagOps::new();
        if i == 0 {
            d.flags = d.flags.wait(0);
        }
        if i + 1 == n {
            d.flags = d.flags.clear(0);
        }
        out.push(Instr::Conv(d));
    }
    names.extend(std::iter::repeat_n(name.to_string(), out.len()));
    out
}

#[test]
fn random_programs_respect_the_invariants() {
    let mut rng = Rng(0x5eed);
    let mut coupled = 0;
    for case in 0..150 {
        let mut names = Vec::new();
        let mut instrs = Vec::new();
        for l in 0..rng.range(1, 3) {
            // Each layer waits for the previous one's weights to be released (F0).
            instrs.extend(random_layer(&mut rng, &format!("layer{l}"), &mut names));
        }
        instrs.push(stop());
        let mut prog = program(instrs);
        let refs: Vec<Option<&str>> = names
            .iter()
            .map(|s| Some(s.as_str()))
            .chain([None])
            .collect();
        prog.layers = Some(LayerTable::from_names(refs));
        let p = analyze(&prog, None).unwrap_or_else(|e| panic!("case {case}: {e}"));
        assert_eq!(p.charge.total(), p.total_cycles, "case {case}");
        assert!(p.mac_utilization() <= 1.0);
        for l in &p.layers {
            let Some(bound) = l.shape_bound else { continue };
            let u = l.utilization(96, 96);
            assert!(
                u <= bound + 1e-12,
                "case {case} {}: utilization {u} > bound {bound}",
                l.name
            );
            assert!(bound <= 1.0 && bound > 0.0);
        }
        assert_eq!(
            p.layers.iter().map(|l| l.cycles).sum::<u64>(),
            p.total_cycles
        );
        // No segment takes less than its busiest unit's work.
        assert_eq!(p.floors.len(), p.timeline.segments.len());
        for (g, f) in p.timeline.segments.iter().zip(&p.floors) {
            assert!(f.cycles() <= g.end - g.start, "case {case}: {f:?} > {g:?}");
            assert!(f.cycles() > 0, "case {case}: every segment has work");
        }
        assert!(p.floor_cycles() <= p.total_cycles, "case {case}");
        // No program beats the hardware bound, which is never above the shape bound.
        let hw = p.hw_bound_cycles();
        assert!(
            hw > 0 && hw <= p.total_cycles,
            "case {case}: {hw} > {}",
            p.total_cycles
        );
        // ... including the shift register's pairing of MAC and SIMD work, which is
        // above both units' work alone in some of these programs.
        assert!(p.coupled_cycles() <= p.total_cycles, "case {case}");
        coupled += usize::from(p.hw_limit() == "shift register");
        let (b, sb) = (p.hardware_bound().unwrap(), p.shape_bound().unwrap());
        assert!(
            p.mac_utilization() <= b + 1e-12 && b <= sb + 1e-12,
            "case {case}"
        );
        for l in &p.layers {
            if let (Some(h), Some(s)) = (l.hardware_bound, l.shape_bound) {
                assert!(
                    h <= s + 1e-12,
                    "case {case} {}: {h} > shape bound {s}",
                    l.name
                );
            }
        }
        let again = analyze(&prog, None).unwrap();
        assert_eq!(again.timeline, p.timeline, "case {case}: not deterministic");
    }
    assert!(
        coupled > 0,
        "no random program is set by the shift register"
    );
}
