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
