//! The SIMD epilogue of a layer: the program the backend emits after every compute
//! instruction and the per-channel entries it reads (docs/ISA.md sections 4 and 7).
//! This is the only place that decides which SIMD instructions an epilogue becomes;
//! the quantized reference interpreter (nnac-passes `qinterp::epilogue`) computes the
//! same function from the ISA's arithmetic, and `tests/simd_epilogue.rs` runs every
//! program built here on the ISA's SIMD executor against it, bit for bit.
//!
//! Integer path (`Requant::Int`): one FUSED_RELU, `C0` = multiplier, `C1` = shift.
//!
//! Float path (`Requant::Float`):
//! `I2F; FMUL C0; <activation>; FMUL 1/out_scale; F2I; FUSED_RELU 1 >> 0, zp, lo..hi`
//! (the last adds the zero point exactly and clamps: one instruction, not three),
//! `C0` = the channel's input scale (fp32 bits), `C1` = its PReLU slope (fp32 bits,
//! 0 unless PReLU). The activation sequences are those of nnac-qinterp `simd_float.rs`
//! (r0 in place, r1..r4 scratch).
//!
//! ONNX Runtime's rules (`--requant onnxruntime`): `Requant::Even` is one
//! FUSED_RELU_F (`C0` = the channel's fp32 scale); `Requant::FmaAdd` is QLinearAdd's
//! program on an ELTWISE add (operands unpacked from the accumulator, two FMA, F2IE,
//! FUSED_RELU `1 >> 0`; docs/ISA.md section 7).
//!
//! All paths leave `C2` and `C3` free: SCALE puts its per-channel multiplier and
//! bias there ([`scale_prefix`]).

use crate::error::{Limit, Refusal};
use nnac_ir::{Activation, Epilogue, FusedAct, Multiplier, Requant};
use nnac_isa::simd::{Alu, BSrc, Requant as FusedRelu, SimdInstr};

/// Channel-table slot of the float path's input scale.
pub const SLOT_IN_SCALE: u32 = 0;
/// Channel-table slot of the float path's PReLU slope.
pub const SLOT_SLOPE: u32 = 1;
/// Channel-table slots of SCALE's per-channel multiplier and bias.
pub const SLOT_SCALE_MUL: u32 = 2;
pub const SLOT_SCALE_ADD: u32 = 3;

/// An epilogue as emitted: the SIMD program and one 16-byte channel entry
/// `[C0, C1, C2, C3]` per output channel (`C2 = C3 = 0`).
#[derive(Debug, Clone, PartialEq)]
pub struct SimdEpilogue {
    pub program: Vec<SimdInstr>,
    pub entries: Vec<[i32; 4]>,
}

/// The SIMD program and channel entries of epilogue `e` with `channels` outputs.
pub fn epilogue(e: &Epilogue, channels: usize) -> Result<SimdEpilogue, Refusal> {
    match e.requant.as_ref().ok_or(Refusal::EpilogueNotQuantized)? {
        Requant::Int {
            mult,
            zero_point,
            lo,
            hi,
        } => int_path(mult, *zero_point, *lo, *hi, channels),
        Requant::Even {
            scale,
            zero_point,
            lo,
            hi,
        } => {
            clamp_only(e, "even")?;
            count(scale.len(), channels, "scales")?;
            let program = vec![SimdInstr::FusedReluF(requant_fields(
                true,
                0,
                *zero_point,
                *lo,
                *hi,
            )?)];
            let entries = scale.iter().map(|&s| [f32_bits(s), 0, 0, 0]).collect();
            Ok(SimdEpilogue { program, entries })
        }
        Requant::FmaAdd {
            ratio_a,
            ratio_b,
            fixed,
            code_a,
            code_b,
            offset,
            lo,
            hi,
        } => {
            clamp_only(e, "fma_add")?;
            Ok(SimdEpilogue {
                program: fma_add_program(*ratio_a, *ratio_b, *fixed, *code_a, *code_b)
                    .into_iter()
                    .chain([add_zero_point(*offset, *lo, *hi)?])
                    .collect(),
                entries: vec![[0; 4]; channels],
            })
        }
        Requant::Float {
            in_scale,
            inv_out_scale,
            zero_point,
            lo,
            hi,
        } => {
            count(in_scale.len(), channels, "input scales")?;
            let mut program = vec![
                alu(SimdInstr::I2f, 0, 0, Operand::None),
                alu(SimdInstr::Fmul, 0, 0, Operand::Chan(SLOT_IN_SCALE)),
            ];
            let slopes = match &e.act {
                Some(FusedAct::Act(a)) => {
                    activation(a, &mut program);
                    None
                }
                Some(FusedAct::PRelu(s)) => {
                    count(s.len(), channels, "PReLU slopes")?;
                    program.push(alu(SimdInstr::Fcmplt, 0, 0, Operand::F(0.0)));
                    program.push(pred(alu(SimdInstr::Fmul, 0, 0, Operand::Chan(SLOT_SLOPE))));
                    Some(s)
                }
                None => None,
            };
            program.extend([
                alu(SimdInstr::Fmul, 0, 0, Operand::F(*inv_out_scale)),
                alu(SimdInstr::F2i, 0, 0, Operand::None),
                add_zero_point(*zero_point, *lo, *hi)?,
            ]);
            let entries = (0..channels)
                .map(|c| {
                    let slope = slopes.map_or(0.0, |s| s[c]);
                    [f32_bits(in_scale[c]), f32_bits(slope), 0, 0]
                })
                .collect();
            Ok(SimdEpilogue { program, entries })
        }
    }
}

/// `Requant::Even` and `Requant::FmaAdd` carry no activation but the one their clamp
/// expresses (ReLU, Clip: the quantizer folds those into `lo`/`hi`).
fn clamp_only(e: &Epilogue, requant: &'static str) -> Result<(), Refusal> {
    match &e.act {
        None | Some(FusedAct::Act(Activation::Relu | Activation::Clip { .. })) => Ok(()),
        Some(_) => Err(Refusal::RequantActivation { requant }),
    }
}

/// ONNX Runtime's QLinearAdd on the ELTWISE accumulator
/// `v = 2^9 (a - a_zp) + (b - b_zp)` (`EltwiseRequant::FMA_ADD`): the two inputs in
/// ONNX Runtime's codes as fp32 (`r1 = a'`, `r2 = b'`), `r3 = fma(b', ratio_b, fixed)`,
/// `r3 = fma(a', ratio_a, r3)`, `r0` = that rounded half to even.
fn fma_add_program(
    ratio_a: f32,
    ratio_b: f32,
    fixed: f32,
    code_a: i32,
    code_b: i32,
) -> Vec<SimdInstr> {
    use Operand::{Imm, Reg, F};
    let shift = nnac_ir::FMA_ADD_SHIFT as i32;
    vec![
        alu(SimdInstr::Shrr, 1, 0, Imm(shift)),
        alu(SimdInstr::Shl, 2, 1, Imm(shift)),
        alu(SimdInstr::Isub, 2, 0, Reg(2)),
        alu(SimdInstr::Iadd, 1, 1, Imm(code_a)),
        alu(SimdInstr::Iadd, 2, 2, Imm(code_b)),
        alu(SimdInstr::I2f, 1, 1, Operand::None),
        alu(SimdInstr::I2f, 2, 2, Operand::None),
        alu(SimdInstr::Mov, 3, 0, F(fixed)),
        alu(SimdInstr::Fma, 3, 2, F(ratio_b)),
        alu(SimdInstr::Fma, 3, 1, F(ratio_a)),
        alu(SimdInstr::F2ie, 0, 3, Operand::None),
    ]
}

/// `FUSED_RELU` by `1 >> 0`: adds the zero point exactly and clamps.
fn add_zero_point(zero_point: i32, lo: i32, hi: i32) -> Result<SimdInstr, Refusal> {
    requant_fields(false, 1, zero_point, lo, hi).map(SimdInstr::FusedRelu)
}

/// The fields of a FUSED_RELU / FUSED_RELU_F on `r0` (shift 0): the multiplier from
/// `C0`/`C1` when `per_channel`, else `multiplier`; the zero point and the clamp.
fn requant_fields(
    per_channel: bool,
    multiplier: i32,
    zero_point: i32,
    lo: i32,
    hi: i32,
) -> Result<FusedRelu, Refusal> {
    Ok(FusedRelu {
        dst: 0,
        src: 0,
        per_channel,
        shift: 0,
        act_min: i16_of(lo, "lo")?,
        act_max: i16_of(hi, "hi")?,
        zero_point: i16_of(zero_point, "zero point")?,
        multiplier,
    })
}

/// The identity program: `FUSED_RELU` with multiplier `2^30`, shift 30, zero point 0
/// and the code range as clamp, so an accumulator holding a code stays that code (the
/// separate pooling CONV of `pool_apart.rs`).
pub fn identity_program(signed: bool) -> Vec<SimdInstr> {
    let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
    vec![SimdInstr::FusedRelu(FusedRelu {
        dst: 0,
        src: 0,
        per_channel: false,
        shift: 30,
        act_min: lo,
        act_max: hi,
        zero_point: 0,
        multiplier: 1 << 30,
    })]
}

/// SCALE's per-channel stage in front of the epilogue:
/// `IMUL r0, r0, C2; IADD r0, r0, C3` (docs/ISA.md SCALE).
pub fn scale_prefix() -> [SimdInstr; 2] {
    [
        alu(SimdInstr::Imul, 0, 0, Operand::Chan(SLOT_SCALE_MUL)),
        alu(SimdInstr::Iadd, 0, 0, Operand::Chan(SLOT_SCALE_ADD)),
    ]
}

fn int_path(
    mult: &[Multiplier],
    zero_point: i32,
    lo: i32,
    hi: i32,
    channels: usize,
) -> Result<SimdEpilogue, Refusal> {
    count(mult.len(), channels, "multipliers")?;
    let fr = requant_fields(true, 0, zero_point, lo, hi)?;
    let entries = mult
        .iter()
        .map(|&Multiplier { mult, shift }| [mult, i32::from(shift), 0, 0])
        .collect();
    Ok(SimdEpilogue {
        program: vec![SimdInstr::FusedRelu(fr)],
        entries,
    })
}

/// A requantization field of FUSED_RELU (16 bits).
fn i16_of(v: i32, what: &str) -> Result<i16, Refusal> {
    i16::try_from(v).map_err(|_| Refusal::range(what, v, Limit::RequantInt16))
}

fn count(n: usize, channels: usize, what: &'static str) -> Result<(), Refusal> {
    if n == channels {
        Ok(())
    } else {
        Err(Refusal::ChannelCount {
            what,
            count: n,
            channels,
        })
    }
}

/// The channel table stores fp32 values as their bit patterns.
fn f32_bits(v: f32) -> i32 {
    v.to_bits() as i32
}

enum Operand {
    None,
    Reg(u8),
    Chan(u32),
    F(f32),
    Imm(i32),
}

fn alu(make: fn(Alu) -> SimdInstr, dst: u8, a: u8, b: Operand) -> SimdInstr {
    let mut x = Alu {
        dst,
        a,
        ..Default::default()
    };
    match b {
        Operand::None => x.bsrc = BSrc::Imm,
        Operand::Reg(r) => (x.bsrc, x.b) = (BSrc::Reg, r),
        Operand::Chan(c) => (x.bsrc, x.chan) = (BSrc::Chan, c),
        Operand::F(v) => (x.bsrc, x.imm) = (BSrc::Imm, f32_bits(v)),
        Operand::Imm(v) => (x.bsrc, x.imm) = (BSrc::Imm, v),
    }
    make(x)
}

/// Executes `i` only in lanes where the predicate is set.
fn pred(mut i: SimdInstr) -> SimdInstr {
    if let SimdInstr::Fmul(a) = &mut i {
        a.pred = true;
    }
    i
}

/// Appends the activation of `r0` (in place; r1..r4 are scratch).
fn activation(a: &Activation, p: &mut Vec<SimdInstr>) {
    use Operand::{Reg, F};
    match *a {
        Activation::Sigmoid => p.extend([
            alu(SimdInstr::Fmul, 1, 0, F(-1.0)),
            alu(SimdInstr::Fexp, 1, 1, Operand::None),
            alu(SimdInstr::Fadd, 1, 1, F(1.0)),
            alu(SimdInstr::Mov, 2, 0, F(1.0)),
            alu(SimdInstr::Fdiv, 0, 2, Reg(1)),
        ]),
        Activation::Tanh => p.extend([
            alu(SimdInstr::Fmul, 1, 0, F(-2.0)),
            alu(SimdInstr::Fexp, 1, 1, Operand::None),
            alu(SimdInstr::Mov, 2, 0, F(1.0)),
            alu(SimdInstr::Fsub, 3, 2, Reg(1)),
            alu(SimdInstr::Fadd, 4, 1, F(1.0)),
            alu(SimdInstr::Fdiv, 0, 3, Reg(4)),
        ]),
        Activation::HardSigmoid { alpha, beta } => hard_sigmoid(p, 0, 0, alpha, beta),
        Activation::HardSwish => {
            hard_sigmoid(p, 1, 0, 1.0 / 6.0, 0.5);
            p.push(alu(SimdInstr::Fmul, 0, 0, Reg(1)));
        }
        Activation::Silu => p.extend([
            alu(SimdInstr::Fmul, 1, 0, F(-1.0)),
            alu(SimdInstr::Fexp, 1, 1, Operand::None),
            alu(SimdInstr::Fadd, 1, 1, F(1.0)),
            alu(SimdInstr::Fdiv, 0, 0, Reg(1)),
        ]),
        Activation::LeakyRelu { alpha } => {
            p.push(alu(SimdInstr::Fcmplt, 0, 0, F(0.0)));
            p.push(pred(alu(SimdInstr::Fmul, 0, 0, F(alpha))));
        }
        // The quantizer expresses these through FUSED_RELU's clamp; on the float path
        // (a hand-built graph) they are FMAX / FMIN.
        Activation::Relu => p.push(alu(SimdInstr::Fmax, 0, 0, F(0.0))),
        Activation::Clip { min, max } => p.extend([
            alu(SimdInstr::Fmax, 0, 0, F(min)),
            alu(SimdInstr::Fmin, 0, 0, F(max)),
        ]),
    }
}

/// `dst = min(max(alpha * src + beta, 0), 1)`.
fn hard_sigmoid(p: &mut Vec<SimdInstr>, dst: u8, src: u8, alpha: f32, beta: f32) {
    use Operand::F;
    p.extend([
        alu(SimdInstr::Fmul, dst, src, F(alpha)),
        alu(SimdInstr::Fadd, dst, dst, F(beta)),
        alu(SimdInstr::Fmax, dst, dst, F(0.0)),
        alu(SimdInstr::Fmin, dst, dst, F(1.0)),
    ]);
}
