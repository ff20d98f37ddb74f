//! CONV, DECONV, INNER_PRODUCT and fused pooling against plain reference code written
//! from docs/ISA.md (section 5).

mod common;
use common::*;
use nnac_isa::*;

#[derive(Clone)]
struct Case {
    op: &'static str,
    in_h: u32,
    in_w: u32,
    in_c: u32,
    out_c: u32,
    k: (u32, u32),
    pads: [u32; 4],
    stride: (u32, u32),
    dil: (u32, u32),
    groups: u32,
    in_signed: bool,
    w_signed: bool,
    out_signed: bool,
    in_zero: i16,
    /// `None` = whole output.
    pix: Option<(u32, u32)>,
    oc: Option<(u32, u32)>,
    pool: Option<(PoolKind, u32, u32, [u32; 4], bool)>,
    /// Extra bytes per pixel in the input/output pitches (planar: per row and plane).
    pitch_pad: u32,
    /// Planar (CHW) tensors instead of HWC.
    planar: bool,
    simd: Option<Vec<SimdInstr>>,
}

fn base(op: &'static str) -> Case {
    Case {
        op,
        in_h: 7,
        in_w: 6,
        in_c: 5,
        out_c: 11,
        k: (3, 3),
        pads: [1, 1, 1, 1],
        stride: (1, 1),
        dil: (1, 1),
        groups: 1,
        in_signed: false,
        w_signed: true,
        out_signed: true,
        in_zero: 3,
        pix: None,
        oc: None,
        pool: None,
        pitch_pad: 0,
        planar: false,
        simd: None,
    }
}

fn out_dims(c: &Case) -> (u32, u32) {
    let span = |k: u32, d: u32| d * (k - 1) + 1;
    match c.op {
        "DECONV" => (
            (c.in_h - 1) * c.stride.0 + span(c.k.0, c.dil.0) - c.pads[0] - c.pads[2],
            (c.in_w - 1) * c.stride.1 + span(c.k.1, c.dil.1) - c.pads[1] - c.pads[3],
        ),
        _ => (
            (c.in_h + c.pads[0] + c.pads[2] - span(c.k.0, c.dil.0)) / c.stride.0 + 1,
            (c.in_w + c.pads[1] + c.pads[3] - span(c.k.1, c.dil.1)) / c.stride.1 + 1,
        ),
    }
}

fn pooled_dims(c: &Case, oh: u32, ow: u32) -> (u32, u32) {
    match c.pool {
        None => (oh, ow),
        Some((_, win, s, p, _)) => (
            (oh + p[0] + p[2] - win) / s + 1,
            (ow + p[1] + p[3] - win) / s + 1,
        ),
    }
}

const W_ADDR: usize = 0x10000;
const B_ADDR: usize = 0x30000;
const C_ADDR: usize = 0x31000;
const O_ADDR: u32 = 0x40000;

struct Built {
    image: Vec<u8>,
    instr: Instr,
    want: Vec<u8>,
    out_len: u32,
    overflows: u64,
}

fn code(b: u8, signed: bool) -> i64 {
    if signed {
        i64::from(b as i8)
    } else {
        i64::from(b)
    }
}

/// Builds the instruction, its SRAM image and the expected output bytes.
fn build(c: &Case, seed: u64, bias_scale: i32) -> Built {
    let mut rng = Lcg(seed);
    let (oh, ow) = out_dims(c);
    let (ph, pw) = pooled_dims(c, oh, ow);
    let (icpg, ocpg) = (c.in_c / c.groups, c.out_c / c.groups);
    let (kh, kw) = c.k;
    let kterms = (icpg * kh * kw) as usize;
    // (pixel, row, channel) pitches of a `w`-wide, `h`-high, `ch`-channel tensor.
    let pitches = |w: u32, h: u32, ch: u32| {
        if c.planar {
            let rp = w + c.pitch_pad;
            (1, rp, rp * h + c.pitch_pad)
        } else {
            let pp = ch + c.pitch_pad;
            (pp, w * pp, 1)
        }
    };
    let (in_pp, in_rp, in_cp) = pitches(c.in_w, c.in_h, c.in_c);
    let (out_pp, out_rp, out_cp) = pitches(pw, ph, c.out_c);
    let (pix_start, pix_count) = c.pix.unwrap_or((0, oh * ow));
    let (oc_start, oc_count) = c.oc.unwrap_or((0, c.out_c));
    let cols = 8usize;

    let input = rng.bytes(((c.in_h - 1) * in_rp + c.in_w * in_pp + c.in_c * in_cp) as usize);
    let w: Vec<i8> = rng
        .bytes(c.out_c as usize * kterms)
        .into_iter()
        .map(|b| b as i8)
        .collect();
    let w: Vec<i8> = if c.w_signed {
        w
    } else {
        w.into_iter().map(|b| (b as u8 / 2) as i8).collect()
    };
    let bias: Vec<i32> = (0..oc_count)
        .map(|_| rng.range(-3000, 3000) * bias_scale)
        .collect();
    let chan: Vec<[i32; 4]> = (0..oc_count)
        .map(|_| [rng.range(1 << 20, 1 << 24), rng.range(20, 28), 0, 0])
        .collect();

    let mut image = input.clone();
    put(
        &mut image,
        W_ADDR,
        &pack_weights(
            &w,
            c.out_c as usize,
            icpg as usize,
            kh as usize,
            kw as usize,
            oc_start as usize,
            oc_count as usize,
            cols,
        ),
    );
    let bias_bytes: Vec<u8> = bias.iter().flat_map(|b| b.to_le_bytes()).collect();
    put(&mut image, B_ADDR, &bias_bytes);
    let chan_bytes: Vec<u8> = chan.iter().flat_map(|e| chan_entry(*e)).collect();
    put(&mut image, C_ADDR, &chan_bytes);

    let simd = c
        .simd
        .clone()
        .unwrap_or_else(|| vec![per_channel_relu(-5, -128, 127)]);
    // Reference: pre-pool codes of the tile.
    let mut prepool = vec![None::<u8>; (oh * ow * c.out_c) as usize];
    let mut overflows = 0;
    let x = |y: i64, xx: i64, ch: u32| -> i64 {
        if y >= 0 && xx >= 0 && y < i64::from(c.in_h) && xx < i64::from(c.in_w) {
            code(
                input[(y as u32 * in_rp + xx as u32 * in_pp + ch * in_cp) as usize],
                c.in_signed,
            )
        } else {
            i64::from(c.in_zero)
        }
    };
    for p in pix_start..pix_start + pix_count {
        let (oy, ox) = (i64::from(p / ow), i64::from(p % ow));
        for oc in oc_start..oc_start + oc_count {
            let g = oc / ocpg;
            let mut acc = i64::from(bias[(oc - oc_start) as usize]);
            for ic in 0..icpg {
                for ky in 0..kh {
                    for kx in 0..kw {
                        let (ky, kx) = (i64::from(ky), i64::from(kx));
                        let v = if c.op == "DECONV" {
                            let ty = oy + i64::from(c.pads[0]) - ky * i64::from(c.dil.0);
                            let tx = ox + i64::from(c.pads[1]) - kx * i64::from(c.dil.1);
                            let (sy, sx) = (i64::from(c.stride.0), i64::from(c.stride.1));
                            if ty >= 0 && tx >= 0 && ty % sy == 0 && tx % sx == 0 {
                                x(ty / sy, tx / sx, g * icpg + ic)
                            } else {
                                i64::from(c.in_zero)
                            }
                        } else {
                            x(
                                oy * i64::from(c.stride.0) - i64::from(c.pads[0])
                                    + ky * i64::from(c.dil.0),
                                ox * i64::from(c.stride.1) - i64::from(c.pads[1])
                                    + kx * i64::from(c.dil.1),
                                g * icpg + ic,
                            )
                        };
                        let t = ((ic * kh + ky as u32) * kw + kx as u32) as usize;
                        let wv = w[oc as usize * kterms + t];
                        let wv = if c.w_signed {
                            i64::from(wv)
                        } else {
                            i64::from(wv as u8)
                        };
                        acc += v * wv;
                    }
                }
            }
            if acc != wrap30(acc) {
                overflows += 1;
            }
            let acc = wrap30(acc) as i32;
            let e = chan[(oc - oc_start) as usize];
            let byte = match &c.simd {
                None => requant(i64::from(acc), e[0], e[1] as u32, -5, -128, 127, true),
                Some(prog) => simd::exec::run(prog, acc, &ChanParams(e), c.out_signed),
            };
            prepool[((p * c.out_c) + oc) as usize] = Some(byte);
        }
    }
    let out_len = if c.planar {
        c.out_c * out_cp
    } else {
        ph * out_rp
    };
    let mut want = vec![0u8; out_len as usize];
    match c.pool {
        None => {
            for p in 0..oh * ow {
                for oc in 0..c.out_c {
                    if let Some(b) = prepool[(p * c.out_c + oc) as usize] {
                        want[((p / ow) * out_rp + (p % ow) * out_pp + oc * out_cp) as usize] = b;
                    }
                }
            }
        }
        Some((kind, win, s, pp, count_pad)) => {
            for py in 0..ph {
                for px in 0..pw {
                    for oc in 0..c.out_c {
                        let mut vals = Vec::new();
                        let mut missing = false;
                        let mut padded = 0;
                        for dy in 0..win {
                            for dx in 0..win {
                                let y = (py * s + dy) as i64 - i64::from(pp[0]);
                                let xx = (px * s + dx) as i64 - i64::from(pp[1]);
                                if y < 0 || xx < 0 || y >= i64::from(oh) || xx >= i64::from(ow) {
                                    padded += 1;
                                    continue;
                                }
                                match prepool[((y as u32 * ow + xx as u32) * c.out_c + oc) as usize]
                                {
                                    Some(b) => vals.push(code(b, c.out_signed)),
                                    None => missing = true,
                                }
                            }
                        }
                        if missing || vals.is_empty() {
                            continue;
                        }
                        let v = match kind {
                            PoolKind::Max => *vals.iter().max().unwrap(),
                            _ => {
                                let (sum, n) = if count_pad {
                                    (vals.iter().sum::<i64>() + padded * -5, i64::from(win * win))
                                } else {
                                    (vals.iter().sum::<i64>(), vals.len() as i64)
                                };
                                let q = (2 * sum.abs() + n) / (2 * n);
                                if sum < 0 {
                                    -q
                                } else {
                                    q
                                }
                            }
                        };
                        want[(py * out_rp + px * out_pp + oc * out_cp) as usize] =
                            v.clamp(-128, 127) as i8 as u8;
                    }
                }
            }
        }
    }

    let (pk, win, ps, pp, cp) = c.pool.unwrap_or((PoolKind::None, 0, 0, [0; 4], false));
    let d = DotProduct {
        flags: FlagOps::new(),
        simd,
        in_addr: 0,
        w_addr: W_ADDR as u32,
        out_addr: O_ADDR,
        bias_addr: B_ADDR as u32,
        chan_addr: C_ADDR as u32,
        in_h: c.in_h,
        in_w: c.in_w,
        in_c: c.in_c,
        out_h: oh,
        out_w: ow,
        out_c: c.out_c,
        in_row_pitch: in_rp,
        in_pix_pitch: in_pp,
        in_chan_pitch: in_cp,
        out_row_pitch: out_rp,
        out_pix_pitch: out_pp,
        out_chan_pitch: out_cp,
        pix_start,
        pix_count,
        oc_start,
        oc_count,
        kernel_h: kh,
        kernel_w: kw,
        pad_top: c.pads[0],
        pad_left: c.pads[1],
        pad_bottom: c.pads[2],
        pad_right: c.pads[3],
        stride_h: c.stride.0,
        stride_w: c.stride.1,
        dil_h: c.dil.0,
        dil_w: c.dil.1,
        groups: c.groups,
        in_signed: c.in_signed,
        w_signed: c.w_signed,
        out_signed: c.out_signed,
        bias_en: true,
        order: Order::PixelMajor,
        pool_count_pad: cp,
        in_zero: c.in_zero,
        out_zero: -5,
        pool: pk,
        pool_win: win,
        pool_stride: ps,
        pool_pad_top: pp[0],
        pool_pad_left: pp[1],
        pool_pad_bottom: pp[2],
        pool_pad_right: pp[3],
        in_pad_hint: 0,
        out_pad_hint: 0,
        params_by_pixel: false,
        w_pitch: 0,
    };
    let instr = match c.op {
        "CONV" => Instr::Conv(d),
        "DECONV" => Instr::Deconv(d),
        _ => Instr::InnerProduct(d),
    };
    Built {
        image,
        instr,
        want,
        out_len,
        overflows,
    }
}

fn check(c: &Case) {
    for seed in [1, 2] {
        let b = build(c, seed, 1);
        let (got, r) = run_one(&small_hw(), &b.image, b.instr.clone(), O_ADDR, b.out_len).unwrap();
        assert_eq!(r.stats.acc_overflows, b.overflows);
        if got != b.want {
            let i = got.iter().zip(&b.want).position(|(a, b)| a != b).unwrap();
            panic!(
                "{} seed {seed}: first difference at output byte {i}: got {} want {}",
                c.op, got[i], b.want[i]
            );
        }
        assert!(
            b.want.iter().any(|&v| v != 0),
            "the test must produce non-trivial output"
        );
    }
}

#[test]
fn conv_3x3_same_padding_multi_group_channels() {
    check(&base("CONV"));
}

#[test]
fn conv_stride_dilation_asymmetric_pads_pitches() {
    let mut c = base("CONV");
    c.in_h = 9;
    c.in_w = 10;
    c.stride = (2, 3);
    c.dil = (2, 1);
    c.pads = [2, 0, 1, 2];
    c.pitch_pad = 3;
    c.in_signed = true;
    c.in_zero = -7;
    check(&c);
}

#[test]
fn planar_tensors_with_padded_rows_and_planes() {
    let mut c = base("CONV");
    c.planar = true;
    c.pitch_pad = 3;
    check(&c);
    c.stride = (2, 2);
    c.pix = Some((2, 9));
    c.oc = Some((3, 7));
    check(&c);
    c.pool = Some((PoolKind::Max, 2, 1, [0, 0, 1, 1], false));
    c.pix = None;
    check(&c);
}

#[test]
fn conv_partial_tile_of_pixels_and_channels() {
    let mut c = base("CONV");
    c.out_c = 20;
    c.pix = Some((5, 17));
    c.oc = Some((6, 11)); // spans weight groups 0 and 1 (cols = 8), not aligned
    check(&c);
}

#[test]
fn conv_unsigned_weights_and_outputs() {
    let mut c = base("CONV");
    c.w_signed = false;
    c.out_signed = false;
    c.simd = Some(vec![fused_relu(1 << 22, 24, 10, 10, 255)]);
    check(&c);
}

#[test]
fn grouped_and_depthwise_conv() {
    let mut c = base("CONV");
    c.in_c = 6;
    c.out_c = 9;
    c.groups = 3;
    check(&c);
    let mut d = base("CONV");
    d.in_c = 12;
    d.out_c = 12;
    d.groups = 12;
    d.stride = (2, 2);
    d.oc = Some((3, 7));
    check(&d);
}

#[test]
fn deconv_stride_two_with_pads() {
    let mut c = base("DECONV");
    c.in_h = 4;
    c.in_w = 5;
    c.k = (4, 3);
    c.stride = (2, 2);
    c.pads = [1, 1, 1, 0];
    check(&c);
    let mut d = base("DECONV");
    d.in_h = 3;
    d.in_w = 3;
    d.k = (3, 3);
    d.stride = (3, 2);
    d.dil = (1, 2);
    d.pads = [0, 0, 0, 0];
    d.groups = 1;
    check(&d);
}

#[test]
fn inner_product() {
    let mut c = base("INNER_PRODUCT");
    c.in_h = 3;
    c.in_w = 2;
    c.in_c = 7;
    c.out_c = 19;
    c.k = (3, 2);
    c.pads = [0; 4];
    check(&c);
    // Same semantics as CONV (docs/ISA.md): any convolution geometry is accepted.
    let mut d = base("INNER_PRODUCT");
    d.k = (2, 2);
    d.stride = (2, 2);
    check(&d);
}

#[test]
fn fused_max_and_avg_pooling() {
    let mut c = base("CONV");
    c.pool = Some((PoolKind::Max, 3, 2, [1, 1, 1, 1], false));
    check(&c);
    c.pool = Some((PoolKind::Avg, 2, 2, [0, 0, 0, 0], false));
    check(&c);
    c.pool = Some((PoolKind::Avg, 3, 1, [1, 0, 1, 2], true));
    check(&c);
    c.pool = Some((PoolKind::Avg, 3, 2, [1, 1, 1, 1], false));
    check(&c);
}

#[test]
fn pooled_partial_tile_writes_only_complete_windows() {
    let mut c = base("CONV");
    c.pool = Some((PoolKind::Max, 2, 2, [0, 0, 0, 0], false));
    c.pix = Some((6, 19)); // rows 1..4 partially
    check(&c);
}

#[test]
fn fp32_simd_program_sigmoid() {
    let f = |x: f32| x.to_bits() as i32;
    let alu = |a: u8, bsrc: BSrc, imm: i32| Alu {
        dst: 0,
        a,
        b: 0,
        bsrc,
        pred: false,
        pred_neg: false,
        chan: 0,
        imm,
    };
    let prog = vec![
        SimdInstr::I2f(alu(0, BSrc::Reg, 0)),
        SimdInstr::Fmul(alu(0, BSrc::Imm, f(-0.0005))),
        SimdInstr::Fexp(alu(0, BSrc::Reg, 0)),
        SimdInstr::Fadd(alu(0, BSrc::Imm, f(1.0))),
        SimdInstr::Mov(Alu {
            dst: 1,
            ..alu(0, BSrc::Imm, f(255.0))
        }),
        SimdInstr::Fdiv(Alu {
            dst: 0,
            a: 1,
            b: 0,
            ..alu(1, BSrc::Reg, 0)
        }),
        SimdInstr::F2i(alu(0, BSrc::Reg, 0)),
        SimdInstr::Iadd(alu(0, BSrc::Chan, 0)),
    ];
    let mut c = base("CONV");
    c.out_signed = false;
    c.simd = Some(prog);
    check(&c);
}

#[test]
fn accumulator_overflow_wraps_and_is_counted() {
    let c = base("CONV");
    let b = build(&c, 3, 300_000); // |bias| up to 9e8 > 2^29
    assert!(b.overflows > 0);
    let (got, r) = run_one(&small_hw(), &b.image, b.instr, O_ADDR, b.out_len).unwrap();
    assert_eq!(got, b.want);
    assert_eq!(r.stats.acc_overflows, b.overflows);
    let site = r.stats.first_overflow.unwrap();
    assert_eq!((site.index, site.mnemonic), (1, "CONV"));
}

#[test]
fn wrong_output_extent_is_an_error_naming_the_instruction() {
    let c = base("CONV");
    let mut b = build(&c, 1, 1);
    if let Instr::Conv(d) = &mut b.instr {
        d.out_h += 1;
    }
    let e = run_one(&small_hw(), &b.image, b.instr, O_ADDR, b.out_len).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("#1 CONV") && msg.contains("does not match"),
        "{msg}"
    );
}

#[test]
fn out_of_range_sram_is_an_error_not_a_panic() {
    let c = base("CONV");
    let mut b = build(&c, 1, 1);
    if let Instr::Conv(d) = &mut b.instr {
        d.out_addr = 0xFFFF0; // 1 MiB SRAM: the output runs past the end
    }
    let e = run_one(&small_hw(), &b.image, b.instr, O_ADDR, b.out_len).unwrap_err();
    assert!(e.to_string().contains("#1 CONV"), "{e}");
}
