//! The SIMD executor: exact integer semantics and the fp32 programs the backend needs.

use nnac_isa::simd::exec::{run_value, uses_chan_params};
use nnac_isa::simd::float::fexp;
use nnac_isa::*;

fn requant(mult: i32, shift: u32, zp: i16, lo: i16, hi: i16) -> SimdInstr {
    SimdInstr::FusedRelu(Requant {
        multiplier: mult,
        shift,
        zero_point: zp,
        act_min: lo,
        act_max: hi,
        ..Requant::default()
    })
}

fn alu(make: fn(Alu) -> SimdInstr, dst: u8, a: u8, b: BSrcArg) -> SimdInstr {
    let mut x = Alu {
        dst,
        a,
        ..Alu::default()
    };
    match b {
        BSrcArg::Reg(r) => x.b = r,
        BSrcArg::Imm(v) => {
            x.bsrc = BSrc::Imm;
            x.imm = v;
        }
        BSrcArg::F(v) => {
            x.bsrc = BSrc::Imm;
            x.imm = v.to_bits() as i32;
        }
        BSrcArg::Chan(c) => {
            x.bsrc = BSrc::Chan;
            x.chan = c;
        }
    }
    make(x)
}

#[derive(Clone, Copy)]
enum BSrcArg {
    Reg(u8),
    Imm(i32),
    F(f32),
    Chan(u32),
}
use BSrcArg::*;

const NO_CHAN: ChanParams = ChanParams([0; 4]);

#[test]
fn fused_relu_rounds_half_up_and_clamps() {
    // multiplier 2^30 with shift 31 halves: 5/2 = 2.5 -> 3, -5/2 = -2.5 -> -2.
    let p = [requant(1 << 30, 31, 0, -128, 127)];
    assert_eq!(run_value(&p, 5, &NO_CHAN), 3);
    assert_eq!(run_value(&p, -5, &NO_CHAN), -2);
    assert_eq!(run_value(&p, 1000, &NO_CHAN), 127);
    // ReLU with zero point -128: clamp at the zero point.
    let relu = [requant(1 << 30, 30, -128, -128, 127)];
    assert_eq!(run_value(&relu, -7, &NO_CHAN), -128);
    assert_eq!(run_value(&relu, 7, &NO_CHAN), -121);
    assert_eq!(simd::run(&relu, 7, &NO_CHAN, true), (-121i8) as u8);
    // No overflow at the extremes (exact 128-bit product).
    let ext = [requant(i32::MIN, 63, 0, i16::MIN, i16::MAX)];
    assert_eq!(run_value(&ext, i32::MIN, &NO_CHAN), 1);
}

#[test]
fn per_channel_requant_uses_c0_c1() {
    let mut r = Requant {
        per_channel: true,
        act_min: -128,
        act_max: 127,
        ..Requant::default()
    };
    r.multiplier = 12345; // ignored
    let p = [SimdInstr::FusedRelu(r)];
    let chan = ChanParams([3 << 28, 30, 0, 0]); // x * 0.75
    assert_eq!(run_value(&p, 100, &chan), 75);
    let chan = ChanParams([1 << 30, 99, 0, 0]); // shift clamps to 63
    assert_eq!(run_value(&p, 100, &chan), 0);
    assert!(uses_chan_params(&p));
    assert!(!uses_chan_params(&[requant(1, 0, 0, 0, 0)]));
    assert_eq!(ChanParams::from_bytes(&chan.to_bytes()), Some(chan));
    assert_eq!(ChanParams::from_bytes(&[0; 15]), None);
}

#[test]
fn output_saturates_to_the_output_type() {
    let mov = [alu(SimdInstr::Mov, 0, 0, Imm(300))];
    assert_eq!(simd::run(&mov, 0, &NO_CHAN, true), 127);
    assert_eq!(simd::run(&mov, 0, &NO_CHAN, false), 255);
    assert_eq!(simd::run(&[], -5, &NO_CHAN, false), 0);
    assert_eq!(simd::run(&[], -5, &NO_CHAN, true), (-5i8) as u8);
    let mut out = [0u8; 3];
    simd::run_row(&[], &[1, 2, 3], &NO_CHAN, true, &mut out);
    assert_eq!(out, [1, 2, 3]);
}

#[test]
fn integer_ops() {
    let chan = ChanParams([0, 0, 3, -4]);
    let cases: Vec<(SimdInstr, i32, i32)> = vec![
        (alu(SimdInstr::Iadd, 0, 0, Imm(i32::MAX)), 1, i32::MIN),
        (alu(SimdInstr::Isub, 0, 0, Chan(3)), 1, 5),
        (alu(SimdInstr::Imul, 0, 0, Chan(2)), -7, -21),
        (alu(SimdInstr::Imul, 0, 0, Imm(1 << 16)), 1 << 16, 0),
        (alu(SimdInstr::Shl, 0, 0, Imm(33)), 3, 6),
        (alu(SimdInstr::Shra, 0, 0, Imm(1)), -3, -2),
        (alu(SimdInstr::Shrr, 0, 0, Imm(1)), -3, -1),
        (alu(SimdInstr::Shrr, 0, 0, Imm(2)), 6, 2),
        (alu(SimdInstr::Imin, 0, 0, Imm(-4)), 2, -4),
        (alu(SimdInstr::Imax, 0, 0, Imm(-4)), 2, 2),
    ];
    for (op, x, want) in cases {
        assert_eq!(
            run_value(std::slice::from_ref(&op), x, &chan),
            want,
            "{op:?} on {x}"
        );
    }
}

#[test]
fn predication_and_select() {
    // r0 = r0 < 0 ? 0 : r0, written with compare + predicated move.
    let mut mov = Alu {
        bsrc: BSrc::Imm,
        pred: true,
        ..Alu::default()
    };
    mov.imm = 0;
    let p = [
        alu(SimdInstr::Icmplt, 0, 0, Imm(0)),
        SimdInstr::Mov(mov.clone()),
    ];
    assert_eq!(run_value(&p, -5, &NO_CHAN), 0);
    assert_eq!(run_value(&p, 5, &NO_CHAN), 5);
    // Negated predicate.
    let mut neg = mov.clone();
    neg.pred_neg = true;
    let p = [alu(SimdInstr::Icmplt, 0, 0, Imm(0)), SimdInstr::Mov(neg)];
    assert_eq!(run_value(&p, -5, &NO_CHAN), -5);
    assert_eq!(run_value(&p, 5, &NO_CHAN), 0);
    // SEL: P ? a : B.
    let p = [
        alu(SimdInstr::Mov, 1, 0, Imm(42)),
        alu(SimdInstr::Icmpeq, 0, 0, Imm(7)),
        alu(SimdInstr::Sel, 0, 1, Reg(0)),
    ];
    assert_eq!(run_value(&p, 7, &NO_CHAN), 42);
    assert_eq!(run_value(&p, 8, &NO_CHAN), 8);
}

/// sigmoid(x * s) * 256 as a SIMD program: I2F, FMUL, FMUL -1, FEXP, FADD 1, FDIV, F2I.
fn sigmoid_program(s: f32) -> Vec<SimdInstr> {
    vec![
        alu(SimdInstr::I2f, 1, 0, Reg(0)),
        alu(SimdInstr::Fmul, 1, 1, F(-s)),
        alu(SimdInstr::Fexp, 1, 1, Reg(0)),
        alu(SimdInstr::Fadd, 1, 1, F(1.0)),
        alu(SimdInstr::Mov, 2, 0, F(256.0)),
        alu(SimdInstr::Fdiv, 1, 2, Reg(1)),
        alu(SimdInstr::F2i, 0, 1, Reg(0)),
    ]
}

#[test]
fn sigmoid_program_matches_f64_within_rounding() {
    let s = 0.01f32;
    let p = sigmoid_program(s);
    for acc in (-3000..3000).step_by(7) {
        let got = run_value(&p, acc, &NO_CHAN);
        let want = 256.0 / (1.0 + (-(acc as f64) * s as f64).exp());
        assert!(
            (got as f64 - want).abs() <= 0.5 + 1e-3,
            "acc {acc}: {got} vs {want}"
        );
    }
}

#[test]
fn hard_swish_program_is_exact_on_grid() {
    // y = x * clamp(x + 3, 0, 6) / 6 with x = acc / 8; output y * 8.
    let p = vec![
        alu(SimdInstr::I2f, 1, 0, Reg(0)),
        alu(SimdInstr::Fmul, 1, 1, F(0.125)),
        alu(SimdInstr::Fadd, 2, 1, F(3.0)),
        alu(SimdInstr::Fmax, 2, 2, F(0.0)),
        alu(SimdInstr::Fmin, 2, 2, F(6.0)),
        alu(SimdInstr::Fmul, 2, 2, Reg(1)),
        alu(SimdInstr::Fdiv, 2, 2, F(6.0)),
        alu(SimdInstr::Fmul, 2, 2, F(8.0)),
        alu(SimdInstr::F2i, 0, 2, Reg(0)),
    ];
    for acc in -64..=64 {
        let x = acc as f64 / 8.0;
        let want = (x * (x + 3.0).clamp(0.0, 6.0) / 6.0 * 8.0).round();
        let got = run_value(&p, acc, &NO_CHAN);
        assert!(
            (got as f64 - want).abs() <= 1.0,
            "acc {acc}: {got} vs {want}"
        );
    }
}

#[test]
fn float_compare_and_nan() {
    let p = [
        alu(SimdInstr::I2f, 1, 0, Reg(0)),
        alu(SimdInstr::Fcmplt, 0, 1, F(0.5)),
        alu(SimdInstr::Mov, 0, 0, Imm(9)),
        alu(SimdInstr::Sel, 0, 0, Imm(1)),
    ];
    // Sel picks r0 (=9) when P, else 1.
    assert_eq!(run_value(&p, 0, &NO_CHAN), 9);
    assert_eq!(run_value(&p, 1, &NO_CHAN), 1);
    // 0/0 gives the canonical NaN, F2I maps it to 0.
    let nan = [
        alu(SimdInstr::Mov, 1, 0, F(0.0)),
        alu(SimdInstr::Fdiv, 2, 1, Reg(1)),
        alu(SimdInstr::Mov, 0, 2, Reg(2)),
    ];
    assert_eq!(
        run_value(&nan, 0, &NO_CHAN) as u32,
        simd::float::CANONICAL_NAN
    );
    assert_eq!(fexp(0.0), 1.0);
}

/// FUSED_RELU_F, F2IE and FMA (ONNX Runtime's arithmetic, `--requant onnxruntime`):
/// ties to even, saturation, NaN, per-channel scales, one rounding in FMA.
#[test]
fn round_half_even_ops_and_fused_multiply_add() {
    let chan = ChanParams([0.5f32.to_bits() as i32, 0, 0, 0]);
    let freq = |per_channel: bool, scale: f32, zp: i16| {
        SimdInstr::FusedReluF(Requant {
            per_channel,
            multiplier: scale.to_bits() as i32,
            zero_point: zp,
            act_min: -128,
            act_max: 127,
            ..Requant::default()
        })
    };
    // 5 * 0.5 = 2.5 -> 2, 7 * 0.5 = 3.5 -> 4, -5 * 0.5 -> -2; then + zp and the clamp.
    for (acc, r) in [
        (5, 2),
        (7, 4),
        (-5, -2),
        (-7, -4),
        (1000, 500),
        (-1000, -500),
    ] {
        let per_channel = run_value(&[freq(true, 9.0, 0)], acc, &chan);
        assert_eq!(per_channel, r.clamp(-128, 127), "acc {acc}");
        let with_zp = run_value(&[freq(false, 0.5, 3)], acc, &chan);
        assert_eq!(with_zp, (r + 3).clamp(-128, 127), "acc {acc}");
    }
    // The product is rounded to fp32 first: 16777217 becomes 16777216 in I2F.
    assert_eq!(
        run_value(&[freq(false, 2f32.powi(-24), 0)], 16_777_217, &chan),
        1
    );
    assert_eq!(
        run_value(&[freq(false, f32::NAN, 5)], 9, &chan),
        5,
        "NaN gives the zero point"
    );
    // A clamp with act_min > act_max (a hostile program) gives act_max, no panic.
    let inverted = SimdInstr::FusedReluF(Requant {
        multiplier: 1.0f32.to_bits() as i32,
        act_min: 10,
        act_max: -10,
        ..Requant::default()
    });
    assert_eq!(run_value(&[inverted], 3, &chan), -10);
    assert!(uses_chan_params(&[freq(true, 1.0, 0)]));

    let f2ie = |x: f32| {
        let p = [
            alu(SimdInstr::Mov, 1, 0, BSrcArg::F(x)),
            alu(SimdInstr::F2ie, 0, 1, BSrcArg::Reg(0)),
        ];
        run_value(&p, 0, &ChanParams::default())
    };
    for (x, want) in [
        (0.5, 0),
        (1.5, 2),
        (2.5, 2),
        (-2.5, -2),
        (-3.5, -4),
        (2.4999998, 2),
        (f32::NAN, 0),
        (3e9, i32::MAX),
        (-3e9, i32::MIN),
    ] {
        assert_eq!(f2ie(x), want, "F2IE {x}");
    }

    // fma(a, a, c) with a = 1 + 2^-12: a * a = 1 + 2^-11 + 2^-24 (not an fp32, a tie
    // that rounds to 1 + 2^-11); with c = -(1 + 2^-11) rounded once it is 2^-24, a
    // multiply rounded first would give 0.
    let (a, b) = (1.0 + 2f32.powi(-12), 1.0 + 2f32.powi(-12));
    let fma = [
        alu(SimdInstr::Mov, 1, 0, BSrcArg::F(a)),
        alu(SimdInstr::Mov, 2, 0, BSrcArg::F(-(1.0 + 2f32.powi(-11)))),
        alu(SimdInstr::Fma, 2, 1, BSrcArg::F(b)),
        alu(SimdInstr::Mov, 0, 2, BSrcArg::Reg(2)),
    ];
    let got = f32::from_bits(run_value(&fma, 0, &ChanParams::default()) as u32);
    assert_eq!(got, 2f32.powi(-24));
    assert_eq!(
        a * b - (1.0 + 2f32.powi(-11)),
        0.0,
        "unfused, the tie is lost"
    );
}
