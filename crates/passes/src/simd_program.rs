//! The SIMD program (and per-channel parameter table) of an epilogue: what the
//! backend emits after each compute instruction. The quantized reference interpreter
//! computes the same function from docs/ISA.md's arithmetic (`qinterp::epilogue`);
//! a test runs these programs on the ISA's SIMD executor and compares bit for bit.
//!
//! Integer path: one FUSED_RELU, per-channel multiplier C0 and shift C1.
//! Float path: `I2F; FMUL C0 (in_scale); <activation>; FMUL inv_out_scale; F2I;
//! IADD zp; IMAX lo; IMIN hi` with the activation sequences of `simd_float.rs`
//! (PReLU slope per channel in C1).

use nnac_ir::{Activation, Epilogue, FusedAct, Requant};
use nnac_isa::simd::{Alu, BSrc, ChanParams, Requant as FusedRelu, SimdInstr};

/// `(program, channel table)` for an epilogue with `channels` output channels.
pub fn simd_program(
    e: &Epilogue,
    channels: usize,
) -> Result<(Vec<SimdInstr>, Vec<ChanParams>), String> {
    let rq = e.requant.as_ref().ok_or("epilogue is not quantized")?;
    match rq {
        Requant::Int {
            mult,
            zero_point,
            lo,
            hi,
        } => {
            let i16_of = |v: i32, what: &str| {
                i16::try_from(v).map_err(|_| format!("{what} {v} out of range"))
            };
            let fr = FusedRelu {
                dst: 0,
                src: 0,
                per_channel: true,
                shift: 0,
                act_min: i16_of(*lo, "clamp")?,
                act_max: i16_of(*hi, "clamp")?,
                zero_point: i16_of(*zero_point, "zero point")?,
                multiplier: 0,
            };
            let table = per_channel(mult, channels, |m| {
                ChanParams([m.mult, i32::from(m.shift), 0, 0])
            })?;
            Ok((vec![SimdInstr::FusedRelu(fr)], table))
        }
        Requant::Float {
            in_scale,
            inv_out_scale,
            zero_point,
            lo,
            hi,
        } => {
            let mut p = vec![
                alu(SimdInstr::I2f, 0, 0, Operand::None),
                alu(SimdInstr::Fmul, 0, 0, Operand::Chan(0)),
            ];
            let slopes = match &e.act {
                Some(FusedAct::Act(a)) => {
                    activation(a, &mut p)?;
                    None
                }
                Some(FusedAct::PRelu(s)) => {
                    p.push(alu(SimdInstr::Fcmplt, 0, 0, Operand::F(0.0)));
                    p.push(pred(alu(SimdInstr::Fmul, 0, 0, Operand::Chan(1))));
                    Some(s)
                }
                None => None,
            };
            p.push(alu(SimdInstr::Fmul, 0, 0, Operand::F(*inv_out_scale)));
            p.push(alu(SimdInstr::F2i, 0, 0, Operand::None));
            p.push(alu(SimdInstr::Iadd, 0, 0, Operand::I(*zero_point)));
            p.push(alu(SimdInstr::Imax, 0, 0, Operand::I(*lo)));
            p.push(alu(SimdInstr::Imin, 0, 0, Operand::I(*hi)));
            let idx: Vec<usize> = (0..in_scale.len()).collect();
            let table = per_channel(&idx, channels, |&c| {
                let slope = slopes.map_or(0.0, |s| s[c]);
                ChanParams([in_scale[c].to_bits() as i32, slope.to_bits() as i32, 0, 0])
            })?;
            Ok((p, table))
        }
    }
}

fn per_channel<T>(
    v: &[T],
    channels: usize,
    f: impl Fn(&T) -> ChanParams,
) -> Result<Vec<ChanParams>, String> {
    if v.len() != channels {
        return Err(format!(
            "{} channel parameters for {channels} channels",
            v.len()
        ));
    }
    Ok(v.iter().map(f).collect())
}

enum Operand {
    None,
    Reg(u8),
    Chan(u32),
    I(i32),
    F(f32),
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
        Operand::I(v) => (x.bsrc, x.imm) = (BSrc::Imm, v),
        Operand::F(v) => (x.bsrc, x.imm) = (BSrc::Imm, v.to_bits() as i32),
    }
    make(x)
}

fn pred(mut i: SimdInstr) -> SimdInstr {
    if let SimdInstr::Fmul(a) = &mut i {
        a.pred = true;
    }
    i
}

/// Appends the activation of `r0` (in place; r1..r4 are scratch).
fn activation(a: &Activation, p: &mut Vec<SimdInstr>) -> Result<(), String> {
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
        Activation::LeakyRelu { alpha } => {
            p.push(alu(SimdInstr::Fcmplt, 0, 0, F(0.0)));
            p.push(pred(alu(SimdInstr::Fmul, 0, 0, F(alpha))));
        }
        Activation::Relu | Activation::Clip { .. } => {
            return Err(format!("{} uses the integer path", a.mnemonic()));
        }
    }
    Ok(())
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
