//! The static hazard checker (`nnac_isa::hazard`): clean programs pass; removing any
//! flag wait, a WAR or WAW overlap, a wait nobody satisfies, a double set and an
//! out-of-range flag are all found and named.

use nnac_isa::hazard::{self, FlagErrorKind, HazardReport, Intervals, RaceKind};
use nnac_isa::{Dma, DotProduct, FlagOps, HwConfig, Instr, PoolKind, Program, Stop};

const W_ADDR: u32 = 0x0;
const A: [u32; 2] = [0x1000, 0x2000];
const O: [u32; 2] = [0x3000, 0x4000];

fn dma_read(sram: u32, len: u32, dram: u64, flags: FlagOps) -> Instr {
    Instr::DmaRead(Dma {
        flags,
        dram_addr: dram,
        sram_addr: sram,
        rows: 1,
        row_len: len,
        ..Dma::default()
    })
}

fn dma_write(sram: u32, len: u32, dram: u64, flags: FlagOps) -> Instr {
    Instr::DmaWrite(Dma {
        flags,
        dram_addr: dram,
        sram_addr: sram,
        rows: 1,
        row_len: len,
        ..Dma::default()
    })
}

/// 1x1 conv, 4x4x8 -> 4x4x8, dense HWC (128 bytes in and out, 768 bytes of weights).
fn conv(input: u32, output: u32, flags: FlagOps) -> Instr {
    Instr::Conv(DotProduct {
        flags,
        in_addr: input,
        w_addr: W_ADDR,
        out_addr: output,
        in_h: 4,
        in_w: 4,
        in_c: 8,
        out_h: 4,
        out_w: 4,
        out_c: 8,
        in_row_pitch: 32,
        in_pix_pitch: 8,
        out_row_pitch: 32,
        out_pix_pitch: 8,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        pix_count: 16,
        oc_count: 8,
        kernel_h: 1,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        ..DotProduct::default()
    })
}

const WEIGHTS: u32 = 8 * 96;
const ACT: u32 = 128;

fn program(mut instrs: Vec<Instr>) -> Program {
    instrs.push(Instr::Stop(Stop::default()));
    let mut p = Program::new(HwConfig::fsd());
    p.instrs = instrs;
    p
}

fn f() -> FlagOps {
    FlagOps::new()
}

/// Weights (F1), DMA in (F0), conv (waits F0 F1, sets F2), DMA out (waits F2).
fn single() -> Program {
    program(vec![
        dma_read(W_ADDR, WEIGHTS, 0x20000, f().set(1)),
        dma_read(A[0], ACT, 0x10000, f().set(0)),
        conv(A[0], O[0], f().wait(0).wait(1).clear(0).clear(1).set(2)),
        dma_write(O[0], ACT, 0x30000, f().wait(2).clear(2)),
    ])
}

/// Two frames through the same buffers: the second input overwrites A0 after the
/// first conv (WAR, wait_clear F0) and the second conv overwrites O0 after it was
/// written out (WAR, F3 set by the DMA write).
fn two_frames() -> Program {
    program(vec![
        dma_read(A[0], ACT, 0x10000, f().set(0)),
        dma_read(W_ADDR, WEIGHTS, 0x20000, f().set(1)),
        conv(A[0], O[0], f().wait(0).wait(1).clear(0).set(2)),
        dma_read(A[0], ACT, 0x10100, f().wait_clear(0).set(0)),
        dma_write(O[0], ACT, 0x30000, f().wait(2).clear(2).set(3)),
        conv(
            A[0],
            O[0],
            f().wait(0).wait(3).clear(0).clear(1).clear(3).set(2),
        ),
        dma_write(O[0], ACT, 0x30100, f().wait(2).clear(2)),
    ])
}

fn check(p: &Program) -> HazardReport {
    hazard::check_program(p).expect("program is analysable")
}

fn race_between(r: &HazardReport, a: usize, b: usize) -> Option<&hazard::Race> {
    r.races.iter().find(|x| {
        (x.dma.index, x.compute.index) == (a, b) || (x.dma.index, x.compute.index) == (b, a)
    })
}

#[test]
fn clean_programs_are_clean() {
    for p in [single(), two_frames()] {
        let r = check(&p);
        assert!(r.is_clean(), "{:#?}", r.lines());
        assert_eq!(r.count(), 0);
        assert!(r.states > 0);
    }
    let r = check(&two_frames());
    assert_eq!((r.dma_instrs, r.compute_instrs), (5, 2));
}

#[test]
fn removing_any_wait_is_found_as_a_race_naming_both_instructions() {
    // (instruction whose wait is removed, flag, the instruction it then races with and
    // the kind; None where the wait is implied by another one through queue order:
    // e.g. the conv's wait for the weights (DMA #0) is implied by its wait for the
    // input (DMA #1, after #0 in the DMA queue), so removing it is still safe; in
    // two_frames the first DMA_WRITE (#4) follows #3, which waits for the conv #2 to
    // release F0).
    type Case = (usize, u32, Option<(usize, RaceKind)>);
    let single_cases: [Case; 3] = [
        (2, 0, Some((1, RaceKind::Raw))),
        (2, 1, None),
        (3, 2, Some((2, RaceKind::Raw))),
    ];
    let two_cases: [Case; 7] = [
        (2, 0, None),
        (2, 1, Some((1, RaceKind::Raw))),
        (3, 0, Some((2, RaceKind::War))),
        (4, 2, None),
        (5, 0, None),
        (5, 3, Some((4, RaceKind::War))),
        (6, 2, Some((5, RaceKind::Raw))),
    ];
    for (base, cases) in [
        (single(), &single_cases[..]),
        (two_frames(), &two_cases[..]),
    ] {
        // Every wait of the program is covered by a case.
        let waits: usize = base
            .instrs
            .iter()
            .map(|i| i.flags().wait_set.len() + i.flags().wait_clear.len())
            .sum();
        assert_eq!(waits, cases.len());
        for &(k, flag, expect) in cases {
            let mut p = base.clone();
            let ops = p.instrs[k].flags_mut();
            ops.wait_set.remove(flag);
            ops.wait_clear.remove(flag);
            let r = check(&p);
            let Some((other, kind)) = expect else {
                assert!(r.races.is_empty(), "#{k} F{flag}: {:#?}", r.lines());
                continue;
            };
            let race = race_between(&r, k, other)
                .unwrap_or_else(|| panic!("no race #{k}/#{other}: {:#?}", r.lines()));
            assert_eq!(race.conflicts[0].kind, kind, "#{k} F{flag}");
            let text = race.to_string();
            assert!(text.contains(&format!("#{k} ")), "{text}");
            assert!(text.contains(&format!("#{other} ")), "{text}");
            assert!(text.contains(kind.name()), "{text}");
        }
    }
}

#[test]
fn race_report_names_range_and_missing_flag() {
    let mut p = single();
    p.instrs[2].flags_mut().wait_set.remove(0);
    let r = check(&p);
    let race = race_between(&r, 1, 2).unwrap();
    assert_eq!(race.conflicts[0].range, (0x1000, 0x1080));
    assert!(race.conflicts[0].dma_writes);
    let text = race.to_string();
    assert!(text.contains("SRAM [0x1000, 0x1080)"), "{text}");
    assert!(text.contains("#2 should wait_set F0"), "{text}");
    assert!(text.contains("#1 DMA_READ (offset 0x20)"), "{text}");
    assert!(text.contains("#2 CONV (offset 0x40)"), "{text}");
}

#[test]
fn war_overwrite_without_wait_clear_is_found() {
    // A second DMA_READ into A0 that does not wait for the conv to release it.
    let mut p = single();
    let extra = dma_read(A[0] + 64, 16, 0x10200, f());
    p.instrs.insert(3, extra);
    let r = check(&p);
    let race = race_between(&r, 3, 2).expect("WAR race");
    assert_eq!(race.conflicts[0].kind, RaceKind::War);
    assert_eq!(race.conflicts[0].range, (0x1040, 0x1050));
    assert!(race.to_string().contains("#3 should wait_clear F0"));
}

#[test]
fn waw_is_found() {
    // A DMA_READ into the conv's output buffer, unordered with the conv.
    let mut p = single();
    p.instrs.insert(2, dma_read(O[0] + 8, 8, 0x10300, f()));
    let r = check(&p);
    let race = race_between(&r, 2, 3).expect("WAW race");
    assert_eq!(race.conflicts[0].kind, RaceKind::Waw);
    assert_eq!(race.conflicts[0].range, (0x3008, 0x3010));
}

#[test]
fn disjoint_unordered_accesses_are_not_races() {
    // Reads of different bytes of the same buffer, and a write next to (not into) the
    // conv's output: no flags needed.
    let mut p = single();
    p.instrs.insert(2, dma_read(O[0] + ACT, 64, 0x10300, f()));
    p.instrs.insert(2, dma_write(W_ADDR, 16, 0x50000, f()));
    let r = check(&p);
    assert!(r.is_clean(), "{:#?}", r.lines());
}

#[test]
fn wait_on_a_flag_nobody_sets_is_a_deadlock() {
    let mut p = single();
    p.instrs[2] = conv(A[0], O[0], f().wait(0).wait(9).clear(0).set(2));
    let r = check(&p);
    assert!(r.races.is_empty(), "{:#?}", r.lines());
    assert_eq!(r.deadlocks.len(), 1, "{:#?}", r.lines());
    let d = &r.deadlocks[0];
    assert_eq!((d.at.dma_done, d.at.compute_done), (2, 0));
    let conv = d.blocked.iter().find(|b| b.instr.index == 2).unwrap();
    assert!(conv.needs_set.contains(9) && conv.never.contains(9));
    let dw = d.blocked.iter().find(|b| b.instr.index == 3).unwrap();
    assert!(dw.needs_set.contains(2) && dw.never.is_empty());
    let text = d.to_string();
    assert!(
        text.contains("#2 CONV") && text.contains("F9 set"),
        "{text}"
    );
    assert!(text.contains("no instruction ever changes F9"), "{text}");
}

#[test]
fn stop_waiting_forever_is_a_deadlock() {
    let mut p = single();
    let last = p.instrs.len() - 1;
    *p.instrs[last].flags_mut() = f().wait(5);
    let r = check(&p);
    assert_eq!(r.deadlocks.len(), 1);
    assert_eq!(r.deadlocks[0].blocked[0].instr.mnemonic, "STOP");
}

#[test]
fn circular_wait_is_a_deadlock() {
    // The DMA waits for the conv's flag and the conv for the DMA's.
    let p = program(vec![
        dma_read(A[0], ACT, 0, f().wait(2).set(0)),
        conv(A[0], O[0], f().wait(0).set(2)),
    ]);
    let r = check(&p);
    assert_eq!(r.deadlocks.len(), 1);
    assert_eq!(r.deadlocks[0].blocked.len(), 2);
}

#[test]
fn double_set_and_double_clear_are_found() {
    // Two producers set F0 with nothing clearing it in between.
    let p = program(vec![
        dma_read(A[0], ACT, 0, f().set(0)),
        dma_read(A[1], ACT, 0x100, f().set(0)),
    ]);
    let r = check(&p);
    assert_eq!(r.flag_errors.len(), 1, "{:#?}", r.lines());
    let e = &r.flag_errors[0];
    assert_eq!(
        (e.instr.index, e.flag, e.kind),
        (1, 0, FlagErrorKind::SetWhileSet)
    );
    assert!(e.to_string().contains("sets F0 while it is already set"));

    // The conv may clear F0 before the DMA has set it.
    let p = program(vec![
        dma_read(A[1], ACT, 0, f().set(0)),
        conv(A[0], O[0], f().clear(0)),
    ]);
    let r = check(&p);
    assert!(r
        .flag_errors
        .iter()
        .any(|e| e.instr.index == 1 && e.kind == FlagErrorKind::ClearWhileClear));
}

#[test]
fn flags_beyond_the_hardware_are_found() {
    let mut p = single();
    p.meta.hw.flags = 2;
    let r = check(&p);
    assert_eq!(r.flag_ranges.len(), 2, "{:#?}", r.lines());
    assert!(r.flag_ranges.iter().all(|x| x.flag == 2));
    assert!(r.lines()[0].contains("has 2 flags"));
}

#[test]
fn unanalysable_programs_are_errors_naming_the_instruction() {
    let mut p = single();
    p.instrs.pop();
    assert_eq!(
        hazard::check_program(&p),
        Err(hazard::HazardError::Program(
            nnac_isa::error::ProgramError::NoFinalStop
        ))
    );
    let mut p = single();
    if let Instr::Conv(d) = &mut p.instrs[2] {
        d.out_h = 3;
    }
    let e = hazard::check_program(&p).unwrap_err();
    match &e {
        hazard::HazardError::Instr {
            instr,
            error: nnac_isa::error::CheckError::Geometry { out_h: 3, .. },
        } => assert_eq!(instr.index, 2),
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("#2 CONV"), "{e}");
}

/// A 3x3 conv, pad 1, over an 8x8x8 HWC input (pitch 8) to 8x8x16 (pitch 16);
/// tile = output row 3.
fn conv3x3_row3() -> DotProduct {
    DotProduct {
        in_addr: 0x1000,
        w_addr: 0x8000,
        out_addr: 0x2000,
        in_h: 8,
        in_w: 8,
        in_c: 8,
        out_h: 8,
        out_w: 8,
        out_c: 16,
        in_row_pitch: 64,
        in_pix_pitch: 8,
        out_row_pitch: 128,
        out_pix_pitch: 16,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        pix_start: 24,
        pix_count: 8,
        oc_count: 16,
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
        ..DotProduct::default()
    }
}

#[test]
fn conv_footprint_covers_kernel_window_weights_and_tile() {
    let d = DotProduct {
        bias_en: true,
        bias_addr: 0x9000,
        ..conv3x3_row3()
    };
    let fp = hazard::footprint(&Instr::Conv(d), &HwConfig::fsd());
    let k = 8 * 9 * 96;
    assert_eq!(
        fp.sram_reads,
        Intervals::from_ranges(vec![
            (0x1000 + 2 * 64, 0x1000 + 5 * 64),
            (0x8000, 0x8000 + k),
            (0x9000, 0x9000 + 64),
        ])
    );
    assert_eq!(
        fp.sram_writes.ranges(),
        &[(0x2000 + 3 * 128, 0x2000 + 4 * 128)]
    );
}

#[test]
fn planar_footprint_is_one_range_per_channel_row() {
    // The same conv on planar tensors (pixel pitch 1, row pitch 8, channel pitch 64):
    // input rows 2..=4 of each of the 8 channel planes, output row 3 of the output
    // channels 4..12 (one channel group of the tile).
    let d = DotProduct {
        in_row_pitch: 8,
        in_pix_pitch: 1,
        in_chan_pitch: 64,
        out_row_pitch: 8,
        out_pix_pitch: 1,
        out_chan_pitch: 64,
        oc_start: 4,
        oc_count: 8,
        ..conv3x3_row3()
    };
    let fp = hazard::footprint(&Instr::Conv(d), &HwConfig::fsd());
    let mut reads: Vec<(u64, u64)> = (0..8)
        .map(|c| (0x1000 + c * 64 + 2 * 8, 0x1000 + c * 64 + 5 * 8))
        .collect();
    reads.push((0x8000, 0x8000 + 8 * 9 * 96));
    assert_eq!(fp.sram_reads, Intervals::from_ranges(reads));
    let writes: Vec<(u64, u64)> = (4..12)
        .map(|c| (0x2000 + c * 64 + 3 * 8, 0x2000 + c * 64 + 4 * 8))
        .collect();
    assert_eq!(fp.sram_writes, Intervals::from_ranges(writes));
}

#[test]
fn pooled_tiles_write_only_windows_inside_the_tile() {
    // 4x4 output, 2x2/2 max pooling -> 2x2; the tile holds output rows 0..=2, so only
    // pooled row 0 (windows over rows 0..=1) is written.
    let d = DotProduct {
        in_h: 4,
        in_w: 4,
        in_c: 8,
        out_h: 4,
        out_w: 4,
        out_c: 8,
        in_row_pitch: 32,
        in_pix_pitch: 8,
        out_row_pitch: 16,
        out_pix_pitch: 8,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        out_addr: 0x100,
        pix_count: 12,
        oc_count: 8,
        kernel_h: 1,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        pool: PoolKind::Max,
        pool_win: 2,
        pool_stride: 2,
        ..DotProduct::default()
    };
    let ins = Instr::Conv(d.clone());
    hazard::footprint::check_geometry(&ins).unwrap();
    let fp = hazard::footprint(&ins, &HwConfig::fsd());
    assert_eq!(fp.sram_writes.ranges(), &[(0x100, 0x110)]);
    // Pixels 4..16 (rows 1..=3): pooled row 1 only.
    let mut d2 = d;
    d2.pix_start = 4;
    let fp = hazard::footprint(&Instr::Conv(d2), &HwConfig::fsd());
    assert_eq!(fp.sram_writes.ranges(), &[(0x110, 0x120)]);
}

#[test]
fn strided_dma_footprints_are_exact() {
    let d = Dma {
        sram_addr: 0x100,
        dram_addr: 0x1000,
        rows: 3,
        row_len: 4,
        sram_stride: 16,
        dram_stride: 4,
        ..Dma::default()
    };
    let fp = hazard::footprint(&Instr::DmaRead(d), &HwConfig::fsd());
    assert_eq!(
        fp.sram_writes.ranges(),
        &[(0x100, 0x104), (0x110, 0x114), (0x120, 0x124)]
    );
    assert_eq!(fp.dram_reads.ranges(), &[(0x1000, 0x100c)]);
    assert!(fp.sram_reads.is_empty() && fp.dram_writes.is_empty());
}

/// A double-buffered pipeline of `frames` frames: per frame a DMA_READ, a CONV and a
/// DMA_WRITE (2*frames+1 DMA and `frames` compute instructions).
fn pipeline(frames: usize) -> Program {
    let mut v = vec![dma_read(W_ADDR, WEIGHTS, 0x20000, f().set(4))];
    for t in 0..frames {
        let (b, fa, fo) = (t % 2, (t % 2) as u32, 2 + (t % 2) as u32);
        let dram = 0x100000 + 0x100 * t as u64;
        v.push(dma_read(A[b], ACT, dram, f().wait_clear(fa).set(fa)));
        v.push(conv(
            A[b],
            O[b],
            f().wait(fa).wait(4).wait_clear(fo).clear(fa).set(fo),
        ));
        v.push(dma_write(O[b], ACT, dram + 0x80000, f().wait(fo).clear(fo)));
    }
    program(v)
}

#[test]
fn long_pipeline_is_checked_and_a_single_missing_wait_is_found() {
    let frames = 2100;
    let p = pipeline(frames);
    let r = check(&p);
    assert!(r.is_clean(), "{:#?}", r.lines());
    assert_eq!(r.compute_instrs, frames);
    assert_eq!(r.dma_instrs, 2 * frames + 1);

    // Frame 1500's conv no longer waits for its input.
    let conv_index = 1 + 3 * 1500 + 1;
    let mut p = p;
    p.instrs[conv_index].flags_mut().wait_set.remove(0);
    let r = check(&p);
    let race = race_between(&r, conv_index - 1, conv_index).expect("race found");
    assert_eq!(race.conflicts[0].kind, RaceKind::Raw);
}

#[test]
fn reports_are_deterministic() {
    let mut p = two_frames();
    for i in &mut p.instrs {
        let ops = i.flags_mut();
        *ops = FlagOps::new();
    }
    let a = check(&p);
    let b = check(&p);
    assert_eq!(a, b);
    assert!(!a.races.is_empty());
    let pairs: Vec<(usize, usize)> = a
        .races
        .iter()
        .map(|r| (r.at.dma_done, r.at.compute_done))
        .collect();
    let mut sorted = pairs.clone();
    sorted.sort();
    assert_eq!(pairs, sorted);
}
