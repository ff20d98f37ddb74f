//! Instructions: the opcode table, the `Instr` enum, encoding and decoding.

use crate::encoding::{check_reserved, COMPUTE_FLAGS, DMA_FLAGS, OPCODE, SIMD_LEN};
use crate::error::{DecodeError, EncodeError};
use crate::field::{FieldSpec, Fields};
use crate::flags::{FlagLayout, FlagOps};
use crate::layouts::{Dma, DotProduct, Eltwise, Scale, Stop};
use crate::simd::{SimdInstr, SIMD_SIZE};

/// Instruction class: decides size, header and queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// 32 bytes, runs on the DMA queue.
    Dma,
    /// 32 bytes, goes to both queues (STOP).
    Control,
    /// 256 bytes + SIMD program, runs on the compute queue.
    Compute,
}

impl Class {
    pub fn flag_layout(self) -> FlagLayout {
        match self {
            Class::Dma | Class::Control => DMA_FLAGS,
            Class::Compute => COMPUTE_FLAGS,
        }
    }
    /// Header fields (opcode, SIMD length, flag lists), in bit order.
    pub fn header_specs(self) -> Vec<FieldSpec> {
        let mut v = vec![OPCODE];
        if self == Class::Compute {
            v.push(SIMD_LEN);
        }
        v.extend(self.flag_layout().specs());
        v
    }
}

/// Static facts about one instruction kind.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    pub opcode: u8,
    /// Listing mnemonic and JSON `op` name.
    pub mnemonic: &'static str,
    /// Name of the layout struct.
    pub layout: &'static str,
    pub class: Class,
    /// Size in bytes without the SIMD program.
    pub size: usize,
    pub fields: &'static [FieldSpec],
}

/// Common access to the flags and SIMD program of a layout.
pub trait Body: Fields {
    fn flags(&self) -> &FlagOps;
    fn flags_mut(&mut self) -> &mut FlagOps;
    fn simd(&self) -> &[SimdInstr];
    /// `None` for instructions without a SIMD program.
    fn simd_mut(&mut self) -> Option<&mut Vec<SimdInstr>>;
}

macro_rules! impl_body {
    ($t:ty, no_simd) => {
        impl Body for $t {
            fn flags(&self) -> &FlagOps {
                &self.flags
            }
            fn flags_mut(&mut self) -> &mut FlagOps {
                &mut self.flags
            }
            fn simd(&self) -> &[SimdInstr] {
                &[]
            }
            fn simd_mut(&mut self) -> Option<&mut Vec<SimdInstr>> {
                None
            }
        }
    };
    ($t:ty, simd) => {
        impl Body for $t {
            fn flags(&self) -> &FlagOps {
                &self.flags
            }
            fn flags_mut(&mut self) -> &mut FlagOps {
                &mut self.flags
            }
            fn simd(&self) -> &[SimdInstr] {
                &self.simd
            }
            fn simd_mut(&mut self) -> Option<&mut Vec<SimdInstr>> {
                Some(&mut self.simd)
            }
        }
    };
}
impl_body!(Dma, no_simd);
impl_body!(Stop, no_simd);
impl_body!(DotProduct, simd);
impl_body!(Scale, simd);
impl_body!(Eltwise, simd);

macro_rules! instr_table {
    ($( $var:ident = $code:literal, $mn:literal, $lay:ident, $class:ident; )*) => {
        /// One instruction, with its flags and (for compute kinds) its SIMD program.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Instr { $( $var($lay), )* }

        impl Instr {
            /// The opcode table.
            pub const KINDS: &'static [Kind] = &[ $( Kind {
                opcode: $code, mnemonic: $mn, layout: stringify!($lay),
                class: Class::$class, size: $lay::SIZE, fields: $lay::FIELDS,
            }, )* ];

            pub fn kind(&self) -> &'static Kind {
                let code = match self { $( Instr::$var(_) => $code, )* };
                Self::kind_of(code).expect("every variant is in the table")
            }
            pub fn kind_of(opcode: u8) -> Option<&'static Kind> {
                Self::KINDS.iter().find(|k| k.opcode == opcode)
            }
            pub fn body(&self) -> &dyn Body {
                match self { $( Instr::$var(x) => x, )* }
            }
            pub fn body_mut(&mut self) -> &mut dyn Body {
                match self { $( Instr::$var(x) => x, )* }
            }
            /// A default-valued instruction for `mnemonic` (fields then set by name).
            pub fn from_mnemonic(mnemonic: &str) -> Option<Instr> {
                match mnemonic { $( $mn => Some(Instr::$var($lay::default())), )* _ => None }
            }
            fn unpack(opcode: u8, buf: &[u8], base: usize) -> Option<Result<Instr, DecodeError>> {
                match opcode { $( $code => Some($lay::unpack(buf, base, $mn).map(Instr::$var)), )* _ => None }
            }
        }
    };
}

instr_table! {
    DmaRead = 0x01, "DMA_READ", Dma, Dma;
    DmaWrite = 0x02, "DMA_WRITE", Dma, Dma;
    Stop = 0x03, "STOP", Stop, Control;
    Conv = 0x81, "CONV", DotProduct, Compute;
    Deconv = 0x82, "DECONV", DotProduct, Compute;
    InnerProduct = 0x83, "INNER_PRODUCT", DotProduct, Compute;
    Scale = 0x84, "SCALE", Scale, Compute;
    Eltwise = 0x85, "ELTWISE", Eltwise, Compute;
}

/// An instruction at its place in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub index: usize,
    /// Byte offset in the instruction stream.
    pub offset: usize,
    /// Bytes including the SIMD program.
    pub size: usize,
    pub instr: Instr,
}

impl Instr {
    pub fn mnemonic(&self) -> &'static str {
        self.kind().mnemonic
    }
    pub fn class(&self) -> Class {
        self.kind().class
    }
    pub fn flags(&self) -> &FlagOps {
        self.body().flags()
    }
    pub fn flags_mut(&mut self) -> &mut FlagOps {
        self.body_mut().flags_mut()
    }
    pub fn simd(&self) -> &[SimdInstr] {
        self.body().simd()
    }
    /// Encoded size in bytes, including the SIMD program.
    pub fn encoded_size(&self) -> usize {
        self.kind().size + self.simd().len() * SIMD_SIZE
    }

    /// Appends the encoding (instruction, then its SIMD program) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let k = self.kind();
        let mut buf = vec![0u8; k.size];
        OPCODE.pack(&mut buf, k.mnemonic, i64::from(k.opcode))?;
        if k.class == Class::Compute {
            SIMD_LEN.pack(&mut buf, k.mnemonic, self.simd().len() as i64)?;
        }
        k.class
            .flag_layout()
            .pack(self.flags(), &mut buf, k.mnemonic)?;
        self.body().pack(&mut buf, k.mnemonic)?;
        out.extend_from_slice(&buf);
        for s in self.simd() {
            s.encode_into(out)?;
        }
        Ok(())
    }

    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(self.encoded_size());
        self.encode_into(&mut out)?;
        Ok(out)
    }

    /// Decodes the instruction (and its SIMD program) at `offset`; returns it and its size.
    pub fn decode(stream: &[u8], offset: usize) -> Result<(Instr, usize), DecodeError> {
        let opcode = *stream
            .get(offset)
            .ok_or_else(|| DecodeError::new(offset, "truncated: expected an instruction"))?;
        let k = Self::kind_of(opcode)
            .ok_or_else(|| DecodeError::new(offset, format!("unknown opcode {opcode:#04x}")))?;
        let buf = stream.get(offset..offset + k.size).ok_or_else(|| {
            DecodeError::new(
                offset,
                format!(
                    "truncated {}: need {} bytes, {} left",
                    k.mnemonic,
                    k.size,
                    stream.len() - offset
                ),
            )
        })?;
        let header = k.class.header_specs();
        check_reserved(buf, offset, k.mnemonic, header.iter().chain(k.fields))?;
        let flags = k.class.flag_layout().unpack(buf, offset, k.mnemonic)?;
        let mut instr = Self::unpack(opcode, buf, offset).expect("opcode is in the table")?;
        *instr.flags_mut() = flags;
        let mut size = k.size;
        if let Some(simd) = instr.body_mut().simd_mut() {
            let n = SIMD_LEN.unpack(buf, offset, k.mnemonic)? as usize;
            for _ in 0..n {
                simd.push(SimdInstr::decode(stream, offset + size)?);
                size += SIMD_SIZE;
            }
        }
        Ok((instr, size))
    }
}

/// Encodes a whole program. Errors name the instruction index.
pub fn encode_program(instrs: &[Instr]) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    for (i, ins) in instrs.iter().enumerate() {
        ins.encode_into(&mut out).map_err(|e| e.at_index(i))?;
    }
    Ok(out)
}

/// Decodes a whole instruction stream: one or more segments, each ending with STOP
/// (docs/ISA.md 2.1); the stream must end with STOP.
pub fn decode_program(stream: &[u8]) -> Result<Vec<Located>, DecodeError> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < stream.len() {
        let (instr, size) = Instr::decode(stream, offset)?;
        out.push(Located {
            index: out.len(),
            offset,
            size,
            instr,
        });
        offset += size;
    }
    if !matches!(
        out.last(),
        Some(Located {
            instr: Instr::Stop(_),
            ..
        })
    ) {
        return Err(DecodeError::new(
            offset,
            "instruction stream does not end with STOP",
        ));
    }
    Ok(out)
}

/// Checks the rules `decode_program` enforces, for a program about to be written:
/// the last instruction is STOP.
pub fn check_program(instrs: &[Instr]) -> Result<(), crate::error::ProgramError> {
    match instrs.last() {
        Some(Instr::Stop(_)) => Ok(()),
        _ => Err(crate::error::ProgramError::NoFinalStop),
    }
}

/// The segments of a program: index ranges that each end with (and include) a STOP
/// (docs/ISA.md 2.1). Instructions after the last STOP (a program `check_program`
/// refuses) form no segment.
pub fn segments(instrs: &[Instr]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, ins) in instrs.iter().enumerate() {
        if matches!(ins, Instr::Stop(_)) {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    out
}
