//! The SIMD executor: the one definition of SIMD arithmetic, shared by the simulator
//! and the quantized reference interpreter.
//!
//! Each lane has 16 32-bit registers (`r0`..`r15`, holding int32 or fp32 bits) and a
//! predicate `P`. At the start of a program `r0` = the lane's accumulator value (int32),
//! all other registers are 0 and `P` is false. After the last instruction the output
//! byte is `r0` (as int32) saturated to the output type.

use super::float::{self, canon};
use super::{Alu, Requant, SimdInstr, NUM_REGS};
use crate::arith;

/// Per-output-channel parameters `C0..C3` (one 16-byte channel-table entry:
/// four little-endian int32). FUSED_RELU with `per_channel` uses C0 as the multiplier
/// and C1 as the shift; ALU ops read them with `bsrc=chan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChanParams(pub [i32; 4]);

impl ChanParams {
    /// Bytes per channel-table entry.
    pub const SIZE: usize = 16;

    /// Parses one entry; `None` if `bytes` is shorter than 16.
    pub fn from_bytes(bytes: &[u8]) -> Option<ChanParams> {
        let b = bytes.get(..Self::SIZE)?;
        let mut c = [0i32; 4];
        for (i, v) in c.iter_mut().enumerate() {
            *v = i32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        }
        Some(ChanParams(c))
    }

    pub fn to_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (i, v) in self.0.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        out
    }
}

/// True if the program reads channel parameters (so the channel table must be valid).
pub fn uses_chan_params(program: &[SimdInstr]) -> bool {
    program.iter().any(|i| match i {
        SimdInstr::FusedRelu(r) | SimdInstr::FusedReluF(r) => r.per_channel,
        other => matches!(alu_of(other), Some(a) if a.bsrc == super::BSrc::Chan),
    })
}

fn alu_of(i: &SimdInstr) -> Option<&Alu> {
    match i {
        SimdInstr::FusedRelu(_) | SimdInstr::FusedReluF(_) => None,
        SimdInstr::Mov(a)
        | SimdInstr::Iadd(a)
        | SimdInstr::Isub(a)
        | SimdInstr::Imul(a)
        | SimdInstr::Shl(a)
        | SimdInstr::Shra(a)
        | SimdInstr::Shrr(a)
        | SimdInstr::Imin(a)
        | SimdInstr::Imax(a)
        | SimdInstr::Sel(a)
        | SimdInstr::Icmplt(a)
        | SimdInstr::Icmpeq(a)
        | SimdInstr::I2f(a)
        | SimdInstr::F2i(a)
        | SimdInstr::Fadd(a)
        | SimdInstr::Fsub(a)
        | SimdInstr::Fmul(a)
        | SimdInstr::Fdiv(a)
        | SimdInstr::Fmin(a)
        | SimdInstr::Fmax(a)
        | SimdInstr::Fexp(a)
        | SimdInstr::Fcmplt(a)
        | SimdInstr::F2ie(a)
        | SimdInstr::Fma(a) => Some(a),
    }
}

/// One lane's machine state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    pub regs: [u32; NUM_REGS],
    pub pred: bool,
}

impl Lane {
    pub fn new(acc: i32) -> Lane {
        let mut regs = [0u32; NUM_REGS];
        regs[0] = acc as u32;
        Lane { regs, pred: false }
    }

    fn i(&self, r: u8) -> i32 {
        self.regs[r as usize] as i32
    }

    fn f(&self, r: u8) -> f32 {
        f32::from_bits(self.regs[r as usize])
    }

    /// Executes one instruction.
    pub fn step(&mut self, instr: &SimdInstr, chan: &ChanParams) {
        match instr {
            SimdInstr::FusedRelu(r) => self.requant(r, chan),
            SimdInstr::FusedReluF(r) => self.requant_f(r, chan),
            other => {
                let a = alu_of(other).expect("all other SIMD ops are ALU ops");
                let active = !a.pred || (self.pred != a.pred_neg);
                if active {
                    self.alu(other, a, chan);
                }
            }
        }
    }

    fn requant(&mut self, r: &Requant, chan: &ChanParams) {
        let (mult, shift) = if r.per_channel {
            (chan.0[0], chan.0[1].clamp(0, 63) as u32)
        } else {
            (r.multiplier, r.shift)
        };
        let y = arith::scale(i64::from(self.i(r.src)), mult, shift) + i128::from(r.zero_point);
        let y = y.max(i128::from(r.act_min)).min(i128::from(r.act_max));
        self.regs[r.dst as usize] = arith::sat_i32(y) as u32;
    }

    fn requant_f(&mut self, r: &Requant, chan: &ChanParams) {
        let bits = if r.per_channel {
            chan.0[0]
        } else {
            r.multiplier
        };
        let y = float::requant_even(
            self.i(r.src),
            f32::from_bits(bits as u32),
            i32::from(r.zero_point),
            i32::from(r.act_min),
            i32::from(r.act_max),
        );
        self.regs[r.dst as usize] = y as u32;
    }

    fn operand_b(&self, a: &Alu, chan: &ChanParams) -> u32 {
        match a.bsrc {
            super::BSrc::Reg => self.regs[a.b as usize],
            super::BSrc::Imm => a.imm as u32,
            super::BSrc::Chan => chan.0[a.chan as usize] as u32,
        }
    }

    fn alu(&mut self, op: &SimdInstr, a: &Alu, chan: &ChanParams) {
        let braw = self.operand_b(a, chan);
        let (ai, bi) = (self.i(a.a), braw as i32);
        let (af, bf) = (self.f(a.a), f32::from_bits(braw));
        let fbits = |x: f32| canon(x).to_bits();
        let result: Option<u32> = match op {
            SimdInstr::Mov(_) => Some(braw),
            SimdInstr::Iadd(_) => Some(ai.wrapping_add(bi) as u32),
            SimdInstr::Isub(_) => Some(ai.wrapping_sub(bi) as u32),
            SimdInstr::Imul(_) => Some(ai.wrapping_mul(bi) as u32),
            SimdInstr::Shl(_) => Some((ai as u32) << (braw & 31)),
            SimdInstr::Shra(_) => Some((ai >> (braw & 31)) as u32),
            SimdInstr::Shrr(_) => {
                Some(arith::rounding_shift_right(i128::from(ai), braw & 31) as i32 as u32)
            }
            SimdInstr::Imin(_) => Some(ai.min(bi) as u32),
            SimdInstr::Imax(_) => Some(ai.max(bi) as u32),
            SimdInstr::Sel(_) => Some(if self.pred { ai as u32 } else { braw }),
            SimdInstr::Icmplt(_) => {
                self.pred = ai < bi;
                None
            }
            SimdInstr::Icmpeq(_) => {
                self.pred = ai == bi;
                None
            }
            SimdInstr::Fcmplt(_) => {
                self.pred = af < bf;
                None
            }
            SimdInstr::I2f(_) => Some(fbits(float::i2f(ai))),
            SimdInstr::F2i(_) => Some(float::f2i(af) as u32),
            SimdInstr::Fadd(_) => Some(fbits(af + bf)),
            SimdInstr::Fsub(_) => Some(fbits(af - bf)),
            SimdInstr::Fmul(_) => Some(fbits(af * bf)),
            SimdInstr::Fdiv(_) => Some(fbits(af / bf)),
            SimdInstr::Fmin(_) => Some(fbits(float::fmin(af, bf))),
            SimdInstr::Fmax(_) => Some(fbits(float::fmax(af, bf))),
            SimdInstr::Fexp(_) => Some(fbits(float::fexp(af))),
            SimdInstr::F2ie(_) => Some(float::f2i_even(af) as u32),
            SimdInstr::Fma(_) => Some(fbits(af.mul_add(bf, self.f(a.dst)))),
            SimdInstr::FusedRelu(_) | SimdInstr::FusedReluF(_) => {
                unreachable!("handled by requant")
            }
        };
        if let Some(v) = result {
            self.regs[a.dst as usize] = v;
        }
    }
}

/// Runs `program` on one accumulator value; returns the final `r0` as int32.
pub fn run_value(program: &[SimdInstr], acc: i32, chan: &ChanParams) -> i32 {
    let mut lane = Lane::new(acc);
    for instr in program {
        lane.step(instr, chan);
    }
    lane.regs[0] as i32
}

/// Runs `program` on one accumulator value and returns the output byte
/// (final `r0` saturated to int8 if `out_signed`, else uint8).
pub fn run(program: &[SimdInstr], acc: i32, chan: &ChanParams, out_signed: bool) -> u8 {
    arith::saturate8(i64::from(run_value(program, acc, chan)), out_signed)
}

/// Runs `program` on a row of accumulators (one output channel, so one `chan`),
/// writing one output byte per lane into `out` (`out.len()` must equal `acc.len()`).
pub fn run_row(
    program: &[SimdInstr],
    acc: &[i32],
    chan: &ChanParams,
    out_signed: bool,
    out: &mut [u8],
) {
    for (o, &a) in out.iter_mut().zip(acc) {
        *o = run(program, a, chan, out_signed);
    }
}
