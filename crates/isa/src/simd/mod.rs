//! The SIMD ISA: instructions that follow a compute instruction and run on every
//! accumulator row (one value per lane, 96 lanes). Every SIMD instruction is
//! [`SIMD_SIZE`] bytes. The executor is in [`exec`], the float helpers in [`float`].

pub mod exec;
pub mod float;

use crate::encoding::{check_reserved, OPCODE};
use crate::error::{DecodeError, EncodeError};
use crate::field::{field_enum, layout, FieldSpec, Fields};

pub use exec::{run, run_row, ChanParams};

/// Bytes per SIMD instruction.
pub const SIMD_SIZE: usize = 16;
/// Registers per lane.
pub const NUM_REGS: usize = 16;

field_enum! {
    /// Where ALU operand B comes from.
    BSrc { Reg = "reg", Imm = "imm", Chan = "chan" }
}

layout! {
    /// Two-operand ALU instruction: `dst = op(a, B)`; `B` is register `b`, `imm`, or
    /// channel parameter `chan`, per `bsrc`. Optionally predicated.
    Alu, size 16, extra {} {
        /// destination register
        dst: u8 = [8, 4, Reg];
        /// operand A register
        a: u8 = [12, 4, Reg];
        /// operand B register (when bsrc=reg)
        b: u8 = [16, 4, Reg];
        /// operand B source
        bsrc: BSrc = [20, 2, Enum];
        /// execute only in lanes where the predicate is (pred_neg ? false : true)
        pred: bool = [22, 1, Bool];
        /// invert the predicate test
        pred_neg: bool = [23, 1, Bool];
        /// channel parameter index for bsrc=chan
        chan: u32 = [24, 2, Dec];
        /// immediate (int32, or fp32 bits for float ops) for bsrc=imm
        imm: i32 = [32, 32, Imm];
    }
}

layout! {
    /// FUSED_RELU: requantize, add zero point, clamp (ReLU).
    Requant, size 16, extra {} {
        /// destination register
        dst: u8 = [8, 4, Reg];
        /// source register (int32)
        src: u8 = [12, 4, Reg];
        /// take multiplier and shift from channel parameters C0 and C1
        per_channel: bool = [16, 1, Bool];
        /// right shift (when per_channel=0)
        shift: u32 = [24, 6, Dec];
        /// lower clamp (after the zero point)
        act_min: i16 = [32, 16, Dec];
        /// upper clamp (after the zero point)
        act_max: i16 = [48, 16, Dec];
        /// output zero point
        zero_point: i16 = [64, 16, Dec];
        /// multiplier (when per_channel=0)
        multiplier: i32 = [96, 32, Dec];
    }
}

/// Static facts about one SIMD opcode.
#[derive(Debug, Clone, Copy)]
pub struct SimdKind {
    pub opcode: u8,
    pub mnemonic: &'static str,
    pub layout: &'static str,
    pub fields: &'static [FieldSpec],
    /// Operands are fp32 (immediates are shown as float literals).
    pub float: bool,
    /// One-line meaning, for docs.
    pub doc: &'static str,
}

macro_rules! simd_table {
    ($( $var:ident = $code:literal, $mn:literal, $lay:ident, $float:literal, $doc:literal; )*) => {
        /// One SIMD instruction.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum SimdInstr { $( #[doc = $doc] $var($lay), )* }

        impl SimdInstr {
            /// The SIMD opcode table.
            pub const KINDS: &'static [SimdKind] = &[ $( SimdKind {
                opcode: $code, mnemonic: $mn, layout: stringify!($lay),
                fields: $lay::FIELDS, float: $float, doc: $doc,
            }, )* ];

            pub fn kind(&self) -> &'static SimdKind {
                let code = match self { $( SimdInstr::$var(_) => $code, )* };
                Self::kind_of(code).expect("every variant is in the table")
            }
            pub fn kind_of(opcode: u8) -> Option<&'static SimdKind> {
                Self::KINDS.iter().find(|k| k.opcode == opcode)
            }
            pub fn body(&self) -> &dyn Fields {
                match self { $( SimdInstr::$var(x) => x, )* }
            }
            pub fn body_mut(&mut self) -> &mut dyn Fields {
                match self { $( SimdInstr::$var(x) => x, )* }
            }
            /// A default-valued instruction for `mnemonic`.
            pub fn from_mnemonic(mnemonic: &str) -> Option<SimdInstr> {
                match mnemonic { $( $mn => Some(SimdInstr::$var($lay::default())), )* _ => None }
            }
            fn unpack(opcode: u8, buf: &[u8], base: usize) -> Option<Result<SimdInstr, DecodeError>> {
                match opcode { $( $code => Some($lay::unpack(buf, base, $mn).map(SimdInstr::$var)), )* _ => None }
            }
        }
    };
}

simd_table! {
    FusedRelu = 0x01, "FUSED_RELU", Requant, false, "dst = clamp(rshift_round(src*mult, shift) + zp, act_min, act_max)";
    FusedReluF = 0x02, "FUSED_RELU_F", Requant, false, "dst = clamp(round_half_even(fp32(src) * S) + zp, act_min, act_max), S = fp32 bits of C0 (per_channel) or of mult; shift unused";
    Mov = 0x10, "MOV", Alu, false, "dst = B";
    Iadd = 0x11, "IADD", Alu, false, "dst = a + B (int32, wrapping)";
    Isub = 0x12, "ISUB", Alu, false, "dst = a - B (int32, wrapping)";
    Imul = 0x13, "IMUL", Alu, false, "dst = low 32 bits of a * B";
    Shl = 0x14, "SHL", Alu, false, "dst = a << (B & 31)";
    Shra = 0x15, "SHRA", Alu, false, "dst = a >> (B & 31), arithmetic (floor)";
    Shrr = 0x16, "SHRR", Alu, false, "dst = rshift_round(a, B & 31) (ties toward +inf)";
    Imin = 0x17, "IMIN", Alu, false, "dst = min(a, B), signed";
    Imax = 0x18, "IMAX", Alu, false, "dst = max(a, B), signed";
    Sel = 0x19, "SEL", Alu, false, "dst = P ? a : B";
    Icmplt = 0x1A, "ICMPLT", Alu, false, "P = a < B, signed (dst unused)";
    Icmpeq = 0x1B, "ICMPEQ", Alu, false, "P = a == B (dst unused)";
    I2f = 0x20, "I2F", Alu, false, "dst = fp32(a), round to nearest even (B unused)";
    F2i = 0x21, "F2I", Alu, true, "dst = int32(a), round half away from zero, saturating, NaN -> 0 (B unused)";
    Fadd = 0x22, "FADD", Alu, true, "dst = a + B (fp32)";
    Fsub = 0x23, "FSUB", Alu, true, "dst = a - B (fp32)";
    Fmul = 0x24, "FMUL", Alu, true, "dst = a * B (fp32)";
    Fdiv = 0x25, "FDIV", Alu, true, "dst = a / B (fp32)";
    Fmin = 0x26, "FMIN", Alu, true, "dst = min(a, B) (fp32, see ISA.md)";
    Fmax = 0x27, "FMAX", Alu, true, "dst = max(a, B) (fp32, see ISA.md)";
    Fexp = 0x28, "FEXP", Alu, true, "dst = exp(a) by the ISA.md algorithm (B unused)";
    Fcmplt = 0x29, "FCMPLT", Alu, true, "P = a < B (fp32; false if either is NaN)";
    F2ie = 0x2A, "F2IE", Alu, true, "dst = int32(a), round half to even, saturating, NaN -> 0 (B unused)";
    Fma = 0x2B, "FMA", Alu, true, "dst = a * B + dst (fp32, rounded once)";
}

impl SimdInstr {
    /// Encodes to [`SIMD_SIZE`] bytes appended to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let k = self.kind();
        let mut buf = [0u8; SIMD_SIZE];
        OPCODE.pack(&mut buf, k.mnemonic, i64::from(k.opcode))?;
        self.body().pack(&mut buf, k.mnemonic)?;
        out.extend_from_slice(&buf);
        Ok(())
    }

    /// Decodes one SIMD instruction at `offset` of `stream`.
    pub fn decode(stream: &[u8], offset: usize) -> Result<SimdInstr, DecodeError> {
        let buf = stream.get(offset..offset + SIMD_SIZE).ok_or_else(|| {
            DecodeError::new(
                offset,
                format!(
                    "truncated SIMD instruction: need {SIMD_SIZE} bytes, {} left",
                    stream.len().saturating_sub(offset)
                ),
            )
        })?;
        let opcode = buf[0];
        let kind = Self::kind_of(opcode).ok_or_else(|| {
            DecodeError::new(offset, format!("unknown SIMD opcode {opcode:#04x}"))
        })?;
        check_reserved(
            buf,
            offset,
            kind.mnemonic,
            std::iter::once(&OPCODE).chain(kind.fields),
        )?;
        Self::unpack(opcode, buf, offset).expect("opcode is in the table")
    }
}
