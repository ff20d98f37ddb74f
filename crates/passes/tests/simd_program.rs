//! The SIMD programs the backend emits, run on the ISA's SIMD executor, agree bit for
//! bit with the quantized reference interpreter's epilogue.

mod common;
use common::Rng;
use nnac_ir::{Activation, Epilogue, FusedAct, Requant};
use nnac_isa::arith::code_value;
use nnac_isa::simd::exec::run;
use nnac_passes::qinterp::epilogue::apply;
use nnac_passes::quant::params::multiplier;
use nnac_passes::simd_program::simd_program;

const C: usize = 3;

fn values(rng: &mut Rng) -> Vec<i32> {
    let mut v = vec![0, 1, -1, (1 << 29) - 1, -(1 << 29), 127, -128, 1000, -1000];
    v.extend((0..400).map(|_| (rng.next_u64() % (1 << 22)) as i32 - (1 << 21)));
    v.extend((0..100).map(|_| (rng.next_u64() % (1 << 30)) as i32 - (1 << 29)));
    v
}

fn check(e: &Epilogue, signed: bool, rng: &mut Rng) {
    let (prog, table) = simd_program(e, C).unwrap();
    let rq = e.requant.as_ref().unwrap();
    let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
    for v in values(rng) {
        for (c, chan) in table.iter().enumerate() {
            let hw = code_value(run(&prog, v, chan, signed), signed);
            let oracle = apply(rq, e.act.as_ref(), v, c).clamp(lo, hi);
            assert_eq!(hw, oracle, "{e:?}: v={v} c={c}");
        }
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
        Some(FusedAct::Act(Activation::LeakyRelu { alpha: 0.1 })),
        Some(FusedAct::PRelu(vec![0.25, -0.5, 0.0])),
    ];
    for act in acts {
        for signed in [true, false] {
            let in_scale = (0..C).map(|c| 1e-5 * (c as f32 + 1.0)).collect();
            let zp = if signed { 3 } else { 0 };
            let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
            let rq = Requant::Float {
                in_scale,
                inv_out_scale: 1.0 / 0.02,
                zero_point: zp,
                lo,
                hi,
            };
            check(
                &Epilogue {
                    act: act.clone(),
                    requant: Some(rq),
                },
                signed,
                &mut rng,
            );
        }
    }
}

#[test]
fn unquantized_epilogue_is_an_error() {
    let e = Epilogue {
        act: None,
        requant: None,
    };
    assert!(simd_program(&e, 1).is_err());
}
