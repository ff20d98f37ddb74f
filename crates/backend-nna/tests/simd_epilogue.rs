//! The SIMD epilogues the backend emits (`nnac_backend_nna::simd`):
//! - run on the ISA's SIMD executor, every program agrees bit for bit with the
//!   quantized reference interpreter's epilogue (`qinterp::epilogue::apply`);
//! - end to end, layers with fp32 epilogues (sigmoid, tanh, hard-sigmoid, hard-swish,
//!   leaky ReLU, PReLU) lower and run bit-exactly on the simulator.

mod common;

use common::*;
use nnac_backend_nna::simd::{epilogue, scale_prefix};
use nnac_backend_nna::Refusal;
use nnac_ir::{Activation, Epilogue, FusedAct, Graph, Op, Requant};
use nnac_isa::arith::code_value;
use nnac_isa::simd::exec::run;
use nnac_isa::simd::ChanParams;
use nnac_isa::{HwConfig, Instr, SimdInstr};
use nnac_passes::quant::params::multiplier;
use nnac_qinterp::epilogue::apply;

const C: usize = 3;

fn values(rng: &mut Rng) -> Vec<i32> {
    let mut v = vec![0, 1, -1, (1 << 29) - 1, -(1 << 29), 127, -128, 1000, -1000];
    v.extend((0..400).map(|_| (rng.next_u64() % (1 << 22)) as i32 - (1 << 21)));
    v.extend((0..100).map(|_| (rng.next_u64() % (1 << 30)) as i32 - (1 << 29)));
    v
}

fn check(e: &Epilogue, signed: bool, rng: &mut Rng) {
    let ep = epilogue(e, C).unwrap();
    assert_eq!(ep.entries.len(), C);
    let rq = e.requant.as_ref().unwrap();
    let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
    for v in values(rng) {
        for (c, entry) in ep.entries.iter().enumerate() {
            let hw = code_value(run(&ep.program, v, &ChanParams(*entry), signed), signed);
            let oracle = apply(rq, e.act.as_ref(), v, c).clamp(lo, hi);
            assert_eq!(hw, oracle, "{e:?}: v={v} c={c}");
        }
    }
}

fn float_requant(signed: bool) -> Requant {
    let zp = if signed { 3 } else { 0 };
    let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
    Requant::Float {
        in_scale: (0..C).map(|c| 1e-5 * (c as f32 + 1.0)).collect(),
        inv_out_scale: 1.0 / 0.02,
        zero_point: zp,
        lo,
        hi,
    }
}

#[test]
fn integer_path_matches() {
    let mut rng = Rng(77);
    for (lo, hi, zp, signed) in [
        (-128, 127, -5, true),
        (0, 255, 0, false),
        (0, 200, 0, false),
        (-3, 127, -3, true),
    ] {
        let mult = (0..C)
            .map(|c| multiplier(1e-4 * (c as f64 + 1.0) * (1.0 + rng.uniform() as f64)).unwrap())
            .collect();
        let e = Epilogue {
            act: None,
            requant: Some(Requant::Int {
                mult,
                zero_point: zp,
                lo,
                hi,
            }),
        };
        let ep = epilogue(&e, C).unwrap();
        assert_eq!(ep.program.len(), 1, "the integer path is one FUSED_RELU");
        check(&e, signed, &mut rng);
    }
}

#[test]
fn float_path_matches_for_every_activation() {
    let mut rng = Rng(78);
    let acts = [
        None,
        Some(FusedAct::Act(Activation::Sigmoid)),
        Some(FusedAct::Act(Activation::Tanh)),
        Some(FusedAct::Act(Activation::HardSigmoid {
            alpha: 0.2,
            beta: 0.5,
        })),
        Some(FusedAct::Act(Activation::HardSwish)),
        Some(FusedAct::Act(Activation::Silu)),
        Some(FusedAct::Act(Activation::LeakyRelu { alpha: 0.1 })),
        Some(FusedAct::Act(Activation::Relu)),
        Some(FusedAct::Act(Activation::Clip {
            min: -0.5,
            max: 6.0,
        })),
        Some(FusedAct::PRelu(vec![0.25, -0.5, 0.0])),
    ];
    for act in acts {
        for signed in [true, false] {
            let e = Epilogue {
                act: act.clone(),
                requant: Some(float_requant(signed)),
            };
            check(&e, signed, &mut rng);
        }
    }
}

#[test]
fn float_channel_entries_carry_scale_and_slope() {
    let e = Epilogue {
        act: Some(FusedAct::PRelu(vec![0.25, -0.5, 0.0])),
        requant: Some(float_requant(true)),
    };
    let ep = epilogue(&e, C).unwrap();
    for (c, entry) in ep.entries.iter().enumerate() {
        assert_eq!(f32::from_bits(entry[0] as u32), 1e-5 * (c as f32 + 1.0));
        assert_eq!(entry[2..], [0, 0], "C2/C3 stay free for SCALE");
    }
    let slopes: Vec<f32> = ep
        .entries
        .iter()
        .map(|e| f32::from_bits(e[1] as u32))
        .collect();
    assert_eq!(slopes, [0.25, -0.5, 0.0]);
}

#[test]
fn scale_prefix_then_float_epilogue_matches() {
    // SCALE: r0 = acc * C2 + C3, then the epilogue (as the backend emits it).
    let e = Epilogue {
        act: Some(FusedAct::Act(Activation::Sigmoid)),
        requant: Some(float_requant(false)),
    };
    let ep = epilogue(&e, C).unwrap();
    let prog: Vec<SimdInstr> = scale_prefix().into_iter().chain(ep.program).collect();
    for x in -128..128 {
        for (c, entry) in ep.entries.iter().enumerate() {
            let (w, b) = (7 - 5 * c as i32, 1000 * c as i32 - 900);
            let mut full = *entry;
            full[2..].copy_from_slice(&[w, b]);
            let got = code_value(run(&prog, x, &ChanParams(full), false), false);
            let rq = e.requant.as_ref().unwrap();
            let want = apply(rq, e.act.as_ref(), x * w + b, c).clamp(0, 255);
            assert_eq!(got, want, "x={x} c={c}");
        }
    }
}

#[test]
fn bad_epilogues_are_errors() {
    let unq = Epilogue {
        act: None,
        requant: None,
    };
    assert_eq!(
        epilogue(&unq, 1).unwrap_err(),
        Refusal::EpilogueNotQuantized
    );
    let short = Epilogue {
        act: None,
        requant: Some(float_requant(true)),
    };
    assert!(matches!(
        epilogue(&short, C + 1).unwrap_err(),
        Refusal::ChannelCount { what: "input scales", count: C, channels } if channels == C + 1
    ));
    let prelu = Epilogue {
        act: Some(FusedAct::PRelu(vec![0.1])),
        requant: Some(float_requant(true)),
    };
    assert!(matches!(
        epilogue(&prelu, C).unwrap_err(),
        Refusal::ChannelCount {
            what: "PReLU slopes",
            count: 1,
            ..
        }
    ));
}

/// conv -> `a` (one fused fp32 epilogue) -> output, lowered and run on the simulator.
fn conv_act_graph(a: Op, seed: u64) -> Graph {
    let mut rng = Rng(seed);
    let mut g = Graph::new("conv_act");
    let x = input(&mut g, &[1, 4, 9, 9]);
    let c = conv(&mut g, &mut rng, "c", x, 6, 3, 1, 1);
    let y = if matches!(a, Op::PRelu) {
        let s = g.add_constant("slope", rng.tensor(&[6, 1, 1], 0.5));
        node(&mut g, "act", a, &[c, s])
    } else {
        node(&mut g, "act", a, &[c])
    };
    g.add_output("y", y);
    g
}

#[test]
fn fp32_epilogues_lower_and_run_bit_exactly() {
    let shape = [1, 4, 9, 9];
    let ops = [
        Op::Act(Activation::Sigmoid),
        Op::Act(Activation::Tanh),
        Op::Act(Activation::HardSigmoid {
            alpha: 0.2,
            beta: 0.5,
        }),
        Op::Act(Activation::HardSwish),
        Op::Act(Activation::Silu),
        Op::Act(Activation::LeakyRelu { alpha: 0.1 }),
        Op::PRelu,
    ];
    let hw = HwConfig::fsd();
    for (i, op) in ops.into_iter().enumerate() {
        let name = format!("{op:?}");
        let q = quantize_graph(conv_act_graph(op, 40 + i as u64), &shape);
        let (p, _) = lower_ok(&q, &hw);
        assert_well_formed(&q, &hw, &p);
        let simd_lens: Vec<usize> = p
            .instrs
            .iter()
            .filter_map(|ins| match ins {
                Instr::Conv(d) => Some(d.simd.len()),
                _ => None,
            })
            .collect();
        assert!(
            !simd_lens.is_empty() && simd_lens.iter().all(|&n| n > 1),
            "{name}: conv SIMD programs {simd_lens:?} are not fp32 programs"
        );
        assert_eq!(assert_bit_exact(&q, &p, 50 + i as u64, &shape), 6 * 9 * 9);
    }
}

#[test]
fn scale_with_fp32_epilogue_runs_bit_exactly() {
    // A standalone per-channel multiply (SCALE) followed by a sigmoid.
    let shape = [1, 5, 6, 6];
    let mut rng = Rng(9);
    let mut g = Graph::new("scale_sigmoid");
    let x = input(&mut g, &shape);
    let c = conv(&mut g, &mut rng, "c", x, 5, 3, 1, 1);
    let r = relu(&mut g, "r", c);
    let s = g.add_constant("s", rng.tensor(&[1, 5, 1, 1], 1.5));
    let m = node(&mut g, "mul", Op::Binary(nnac_ir::BinaryOp::Mul), &[r, s]);
    let y = act(&mut g, "sig", Activation::Sigmoid, m);
    g.add_output("y", y);
    g.add_output("r", r);
    let q = quantize_graph(g, &shape);
    let hw = HwConfig::fsd();
    let (p, _) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    let scale = p.instrs.iter().find_map(|i| match i {
        Instr::Scale(s) => Some(s),
        _ => None,
    });
    let s = scale.expect("the multiply after the ReLU is a SCALE");
    assert!(s.simd.len() > 3, "SCALE program {:?} is not fp32", s.simd);
    assert!(assert_bit_exact(&q, &p, 13, &shape) > 0);
}

/// `--requant onnxruntime` on a dot product (`Requant::Even`, one FUSED_RELU_F): the
/// program computes `round_half_even(fp32(fp32(v) * scale))` as ONNX Runtime's
/// `MlasRequantizeOutput` does, at exact ties (scales 0.5 and 0.25) and on random
/// values and scales.
#[test]
fn onnxruntime_even_path_matches_at_every_tie() {
    let mut rng = Rng(2311);
    for (signed, zp) in [(true, -7), (false, 0), (true, 100)] {
        let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
        let mut scale = vec![0.5, 0.25];
        scale.extend((2..C).map(|_| 10f32.powf(-5.0 + 4.0 * rng.uniform().abs())));
        let e = Epilogue {
            act: None,
            requant: Some(Requant::Even {
                scale: scale.clone(),
                zero_point: zp,
                lo,
                hi,
            }),
        };
        check(&e, signed, &mut rng);
        let ep = epilogue(&e, C).unwrap();
        assert_eq!(ep.program.len(), 1, "one FUSED_RELU_F");
        // The ties themselves, against ONNX Runtime's rule written out here.
        for v in -600..600 {
            for (c, entry) in ep.entries.iter().enumerate() {
                let ort = ((v as f32 * scale[c]).round_ties_even() as i32 + zp).clamp(lo, hi);
                let hw = code_value(run(&ep.program, v, &ChanParams(*entry), signed), signed);
                assert_eq!(hw, ort, "v={v} scale={}", scale[c]);
            }
        }
        assert_eq!(
            apply(e.requant.as_ref().unwrap(), None, 5, 0),
            (2 + zp).clamp(lo, hi),
            "2.5 rounds to 2"
        );
    }
}

/// `--requant onnxruntime` on an add (`Requant::FmaAdd`): for every pair of input
/// codes of twelve random parameter sets (uint8 files stored as int8 included) the
/// program gives ONNX Runtime's QLinearAdd codes
/// `sat(round_half_even(fma(a, s_a/s_y, fma(b, s_b/s_y, fixed))))`; among them are
/// pairs where an unfused multiply-add would round elsewhere.
#[test]
fn onnxruntime_fma_add_matches_on_every_code_pair() {
    let mut rng = Rng(4099);
    let mut fused_matters = 0;
    for set in 0..12 {
        let file_u8 = set % 2 == 0;
        let (flo, fhi) = if file_u8 { (0, 255) } else { (-128, 127) };
        let zp = |rng: &mut Rng| {
            let r = (rng.next_u64() % 200) as i32;
            if file_u8 {
                r + 20
            } else {
                r - 100
            }
        };
        let (za, zb, zc) = (zp(&mut rng), zp(&mut rng), zp(&mut rng));
        let (sa, sb, sc) = (
            0.01 + 0.05 * rng.uniform().abs(),
            0.01 + 0.05 * rng.uniform().abs(),
            0.02 + 0.05 * rng.uniform().abs(),
        );
        let (ra, rb) = (sa / sc, sb / sc);
        let fixed = zc as f32 - (ra * za as f32 + rb * zb as f32);
        // The NNA stores a uint8 value with zero point z as int8 with z - 128.
        let shift = if file_u8 { 128 } else { 0 };
        let (za_nna, zb_nna, zc_nna) = (za - shift, zb - shift, zc - shift);
        let e = Epilogue {
            act: None,
            requant: Some(Requant::FmaAdd {
                ratio_a: ra,
                ratio_b: rb,
                fixed,
                code_a: za,
                code_b: zb,
                offset: zc_nna - zc,
                lo: -128,
                hi: 127,
            }),
        };
        let ep = epilogue(&e, 1).unwrap();
        let rq = e.requant.as_ref().unwrap();
        for a in flo..=fhi {
            for b in flo..=fhi {
                let v = 512 * (a - shift - za_nna) + (b - shift - zb_nna);
                let u = (a as f32).mul_add(ra, (b as f32).mul_add(rb, fixed));
                let ort = (u.round_ties_even() as i32).clamp(flo, fhi) - shift;
                let hw = code_value(run(&ep.program, v, &ChanParams(ep.entries[0]), true), true);
                assert_eq!(hw, ort, "set {set}: a={a} b={b}");
                assert_eq!(apply(rq, None, v, 0), ort, "set {set}: a={a} b={b}");
                let unfused = (a as f32 * ra + ((b as f32 * rb) + fixed)).round_ties_even();
                fused_matters += usize::from(unfused != u.round_ties_even());
            }
        }
    }
    assert!(
        fused_matters > 0,
        "no pair where the fused rounding matters"
    );
    eprintln!("{fused_matters} code pairs round elsewhere without the fused multiply-add");
}

/// QLinearAdd where the fused rounding decides: `fma(a, k, c)` with `c` close to
/// `-a * k` (the exact product's low bits decide the result) and `a * k + c` near a
/// half, for random `k` over twenty binades; the program (SIMD `FMA`) and ONNX
/// Runtime's rule agree on every case, and in more than 100 of them a multiply and
/// an add rounded apart would not.
#[test]
fn onnxruntime_fma_add_is_exact_under_cancellation() {
    let mut rng = Rng(977);
    let mut unfused_differs = 0;
    for case in 0..20_000 {
        let a = (rng.next_u64() % 255) as i32 + 1;
        let k = 2f32.powf(10.0 * rng.uniform()) * (1.0 + rng.uniform().abs());
        let p = a as f32 * k;
        // Cancel the product down to a few units of its rounding error, then aim
        // at a half (or not, every fourth case).
        let delta = rng.uniform() * p.abs() * 2f32.powi(-20);
        let half = if case % 4 == 0 {
            0.0
        } else {
            0.5 + (case % 7) as f32
        };
        let fixed = -p + half + delta;
        let e = Epilogue {
            act: None,
            requant: Some(Requant::FmaAdd {
                ratio_a: k,
                ratio_b: 0.0,
                fixed,
                code_a: 0,
                code_b: 0,
                offset: 0,
                lo: -128,
                hi: 127,
            }),
        };
        let ep = epilogue(&e, 1).unwrap();
        let v = 512 * a;
        let u = (a as f32).mul_add(k, fixed);
        let want = (u.round_ties_even() as i32).clamp(-128, 127);
        let hw = code_value(run(&ep.program, v, &ChanParams(ep.entries[0]), true), true);
        assert_eq!(hw, want, "a={a} k={k:e} fixed={fixed:e}");
        unfused_differs += usize::from((p + fixed).round_ties_even() != u.round_ties_even());
    }
    assert!(
        unfused_differs > 100,
        "{unfused_differs} cases where fusing matters"
    );
}
