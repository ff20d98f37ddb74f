//! SCALE, ELTWISE and DMA against plain reference code (docs/ISA.md section 5).

mod common;
use common::*;
use nnac_isa::*;

const OUT: u32 = 0x8000;

fn alu(dst: u8, a: u8, bsrc: BSrc, chan: u32, imm: i32) -> Alu {
    Alu {
        dst,
        a,
        b: 0,
        bsrc,
        pred: false,
        pred_neg: false,
        chan,
        imm,
    }
}

#[test]
fn scale_per_channel_multiply_add() {
    let (h, w, c) = (3u32, 5u32, 6u32);
    let mut rng = Lcg(11);
    let input = rng.bytes((h * w * c) as usize);
    let chan: Vec<[i32; 4]> = (0..4)
        .map(|_| [rng.range(-40, 40), rng.range(-500, 500), 0, 0])
        .collect();
    let mut image = input.clone();
    put(
        &mut image,
        0x4000,
        &chan
            .iter()
            .flat_map(|e| chan_entry(*e))
            .collect::<Vec<u8>>(),
    );
    // acc*C0 + C1, then >> 4 with rounding, uint8 output.
    let prog = vec![
        SimdInstr::Imul(alu(0, 0, BSrc::Chan, 0, 0)),
        SimdInstr::Iadd(alu(0, 0, BSrc::Chan, 1, 0)),
        SimdInstr::Shrr(alu(0, 0, BSrc::Imm, 0, 4)),
    ];
    let s = Scale {
        flags: FlagOps::new(),
        simd: prog,
        in_addr: 0,
        out_addr: OUT,
        chan_addr: 0x4000,
        h,
        w,
        c,
        in_row_pitch: w * c,
        in_pix_pitch: c,
        out_row_pitch: w * c,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        out_pix_pitch: c,
        pix_start: 2,
        pix_count: 11,
        c_start: 1,
        c_count: 4,
        in_signed: true,
        out_signed: false,
        in_zero: -3,
    };
    let (got, _) = run_one(&small_hw(), &image, Instr::Scale(s), OUT, h * w * c).unwrap();
    let mut want = vec![0u8; (h * w * c) as usize];
    for p in 2..13 {
        for ch in 1..5 {
            let i = (p * c + ch) as usize;
            let acc = i64::from(input[i] as i8) + 3;
            let e = chan[(ch - 1) as usize];
            let v = acc * i64::from(e[0]) + i64::from(e[1]);
            let v = (v + 8) >> 4;
            want[i] = v.clamp(0, 255) as u8;
        }
    }
    assert_eq!(got, want);
}

/// How an ELTWISE test lays out its tensors.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Channels adjacent (pixel by pixel path).
    Hwc,
    /// One plane per channel: the plane-by-plane path, in parallel from 4,096 values.
    Planar,
}

/// ELTWISE `op` on `h x w x c` tensors against plain reference code: outputs, the
/// overflow count and the first overflowing (pixel, channel) in pixel order.
/// `shifts` are the two inputs' rescale shifts (smaller: larger values). With
/// `in_place` the output overwrites input A (every value is computed from the inputs
/// before any is stored), else it has a place of its own.
fn eltwise_case(
    op: EltOp,
    (h, w, c): (u32, u32, u32),
    layout: Layout,
    shifts: (u32, u32),
    in_place: bool,
) {
    let n = h * w * c;
    let mut rng = Lcg(5 + op as u64 + u64::from(n));
    let a = rng.bytes(n as usize);
    let b = rng.bytes(n as usize);
    let b_addr = n.next_multiple_of(0x1000);
    let out_addr = if in_place { 0 } else { 2 * b_addr };
    let mut image = a.clone();
    put(&mut image, b_addr as usize, &b);
    let (am, bm, (ash, bsh)) = (1_500_000_000, 900_000_000, shifts);
    // (row, pixel, channel) pitches and the byte offset of (y, x, ch).
    let (rp, pp, cp) = match layout {
        Layout::Hwc => (w * c, c, 1),
        Layout::Planar => (w, 1, h * w),
    };
    let at = |y: u32, x: u32, ch: u32| (y * rp + x * pp + ch * cp) as usize;
    let e = Eltwise {
        flags: FlagOps::new(),
        simd: vec![fused_relu(1 << 30, 31, 4, -128, 127)],
        a_addr: 0,
        b_addr,
        out_addr,
        chan_addr: 0,
        h,
        w,
        c,
        a_row_pitch: rp,
        a_pix_pitch: pp,
        b_row_pitch: rp,
        b_pix_pitch: pp,
        out_row_pitch: rp,
        a_chan_pitch: cp,
        b_chan_pitch: cp,
        out_chan_pitch: cp,
        out_pix_pitch: pp,
        pix_start: 0,
        pix_count: h * w,
        c_start: 0,
        c_count: c,
        a_signed: false,
        b_signed: true,
        out_signed: true,
        op,
        a_zero: 128,
        b_zero: -2,
        a_mult: am,
        b_mult: bm,
        a_shift: ash,
        b_shift: bsh,
    };
    let (got, r) = run_one(&small_hw(), &image, Instr::Eltwise(e), out_addr, n).unwrap();
    let rescale =
        |code: i64, zero: i64, m: i64, s: u32| -> i64 { ((code - zero) * m + (1 << (s - 1))) >> s };
    let (mut overflows, mut first) = (0u64, None);
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                let i = at(y, x, ch);
                let va = rescale(i64::from(a[i]), 128, i64::from(am), ash);
                let vb = rescale(i64::from(b[i] as i8), -2, i64::from(bm), bsh);
                let acc = match op {
                    EltOp::Add => va + vb,
                    EltOp::Mul => va * vb,
                    EltOp::Max => va.max(vb),
                };
                if wrap30(acc) != acc {
                    overflows += 1;
                    first = first.or(Some((u64::from(y * w + x), u64::from(ch))));
                }
                let want = requant(wrap30(acc), 1 << 30, 31, 4, -128, 127, true);
                assert_eq!(
                    got[i], want,
                    "{op:?} {layout:?} in place {in_place} (y {y}, x {x}, c {ch})"
                );
            }
        }
    }
    // With small shifts products wrap: the overflow bookkeeping is exercised.
    assert!(
        !matches!(op, EltOp::Mul) || ash > 24 || overflows > 0,
        "{op:?} {layout:?}"
    );
    assert_eq!(r.stats.acc_overflows, overflows, "{op:?} {layout:?}");
    let site = r.stats.first_overflow.map(|s| (s.pixel, s.channel));
    assert_eq!(site, first, "{op:?} {layout:?}");
}

#[test]
fn eltwise_add_mul_max() {
    for op in [EltOp::Add, EltOp::Mul, EltOp::Max] {
        for shifts in [(28, 27), (20, 19)] {
            for in_place in [false, true] {
                eltwise_case(op, (2, 4, 9), Layout::Hwc, shifts, in_place);
                // Planes of 48 pixels x 96 channels: 4,608 values, the parallel plane
                // path (computed straight into SRAM, or, in place, first aside).
                eltwise_case(op, (6, 8, 96), Layout::Planar, shifts, in_place);
                eltwise_case(op, (3, 5, 7), Layout::Planar, shifts, in_place);
            }
        }
    }
}

#[test]
fn strided_dma_moves_tiles() {
    // Program: read a 3x4 tile out of a 6-wide DRAM matrix into SRAM with stride 10,
    // write it back densely.
    let hw = small_hw();
    let dram: Vec<u8> = (0..60u8).collect();
    let prog = Program {
        instrs: vec![
            Instr::DmaRead(dma(3, 4, 7, 6, 0x100, 10, FlagOps::new().set(0))),
            Instr::DmaWrite(dma(
                3,
                4,
                100,
                4,
                0x100,
                10,
                FlagOps::new().wait(0).clear(0),
            )),
            Instr::Stop(Stop::default()),
        ],
        dram: DramImage {
            base: 0,
            bytes: dram.into(),
        },
        io: vec![IoDesc {
            name: "t".into(),
            dir: IoDir::Output,
            dtype: IoDtype::Uint8,
            shape: vec![3, 4],
            dram_addr: 100,
            layout: IoLayout::Dense,
            scale: 1.0,
            zero_point: 0,
        }],
        host_ops: None,
        layers: None,
        body_start: None,
        meta: Metadata {
            hw,
            ..Metadata::default()
        },
    };
    let r = nnac_runtime_sim::run(&prog, &[], &Default::default()).unwrap();
    assert_eq!(
        r.outputs[0].data,
        vec![7, 8, 9, 10, 13, 14, 15, 16, 19, 20, 21, 22]
    );
    assert_eq!(r.stats.dma_bytes, 24);
}

#[test]
fn overlapping_dma_destination_rows_are_an_error() {
    let hw = small_hw();
    let mut p = Program::new(hw);
    p.dram = DramImage {
        base: 0,
        bytes: vec![1; 64].into(),
    };
    p.instrs
        .insert(0, Instr::DmaRead(dma(2, 8, 0, 8, 0, 4, FlagOps::new())));
    let e = nnac_runtime_sim::run(&p, &[], &Default::default()).unwrap_err();
    assert!(
        e.to_string().contains("#0 DMA_READ") && e.to_string().contains("overlap"),
        "{e}"
    );
}

#[test]
fn hwc_inputs_and_outputs_use_their_pitches() {
    // Input [1,3,2,2] (NCHW) stored HWC with pixel pitch 4, copied by one DMA to an
    // output with the same layout; a dense view of the output shows the HWC bytes.
    let hw = small_hw();
    let desc = |name: &str, dir, addr| IoDesc {
        name: name.into(),
        dir,
        dtype: IoDtype::Int8,
        shape: vec![1, 3, 2, 2],
        dram_addr: addr,
        layout: IoLayout::Hwc {
            row_pitch: 12,
            pix_pitch: 4,
        },
        scale: 0.5,
        zero_point: 1,
    };
    let prog = Program {
        instrs: vec![
            Instr::DmaRead(dma(1, 19, 0, 0, 0, 0, FlagOps::new().set(0))), // the input spans 19 bytes
            Instr::DmaWrite(dma(1, 24, 32, 0, 0, 0, FlagOps::new().wait(0).clear(0))),
            Instr::Stop(Stop::default()),
        ],
        dram: DramImage::default(),
        io: vec![
            desc("x", IoDir::Input, 0),
            desc("y", IoDir::Output, 32),
            IoDesc {
                layout: IoLayout::Dense,
                shape: vec![24],
                ..desc("raw", IoDir::Output, 32)
            },
        ],
        host_ops: None,
        layers: None,
        body_start: None,
        meta: Metadata {
            hw,
            ..Metadata::default()
        },
    };
    let data: Vec<u8> = (1..=12).collect();
    let r =
        nnac_runtime_sim::run(&prog, &[("x".into(), data.clone())], &Default::default()).unwrap();
    assert_eq!(r.outputs[0].data, data);
    assert_eq!(r.outputs[0].shape, vec![1, 3, 2, 2]);
    let raw = &r.outputs[1].data;
    for c in 0..3 {
        for y in 0..2 {
            for x in 0..2 {
                assert_eq!(raw[y * 12 + x * 4 + c], data[c * 4 + y * 2 + x]);
            }
        }
    }
    assert_eq!(raw[3], 0, "pixel padding is not data");
}
