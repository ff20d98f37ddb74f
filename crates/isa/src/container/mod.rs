//! The `.nnab` program container (format described in docs/ISA.md, "Container").

mod file;
mod hostops;
mod image;
mod io;
mod layers;
mod prologue;
mod wire;

pub use hostops::{HostOp, HostOps, HOSTOPS_VERSION, MAX_HOST_INPUTS};
pub use image::{ImageBytes, SharedBuffer};
pub use io::{IoDesc, IoDir, IoDtype, IoLayout, MAX_RANK};
pub use layers::{LayerTable, NO_LAYER};
pub use prologue::{check_body_start, prologue_segments, PROLOGUE_VERSION};

use crate::error::ProgramError;
use crate::hw::HwConfig;
use crate::instr::{Instr, Located};
use std::fmt;

/// First 8 bytes of every `.nnab` file.
pub const MAGIC: [u8; 8] = *b"NNAB\r\n\x1a\n";
/// The format version this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Section kinds, in the order they appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SectionKind {
    Instructions = 1,
    Dram = 2,
    Io = 3,
    HostOps = 4,
    Metadata = 5,
    Layers = 6,
    Prologue = 7,
}

impl SectionKind {
    pub const ALL: [SectionKind; 7] = [
        SectionKind::Instructions,
        SectionKind::Dram,
        SectionKind::Io,
        SectionKind::HostOps,
        SectionKind::Metadata,
        SectionKind::Layers,
        SectionKind::Prologue,
    ];
    pub fn from_u32(v: u32) -> Option<SectionKind> {
        Self::ALL.into_iter().find(|k| *k as u32 == v)
    }
    pub fn name(self) -> &'static str {
        match self {
            SectionKind::Instructions => "instructions",
            SectionKind::Dram => "dram",
            SectionKind::Io => "io",
            SectionKind::HostOps => "hostops",
            SectionKind::Metadata => "metadata",
            SectionKind::Layers => "layers",
            SectionKind::Prologue => "prologue",
        }
    }
}

/// Initial DRAM contents (weights, constants), loaded at `base`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DramImage {
    pub base: u64,
    pub bytes: ImageBytes,
}

/// Program metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metadata {
    /// Source model (file name or model name).
    pub source_model: String,
    /// The compiler that produced the program, e.g. "nnac 0.1.0".
    pub compiler_version: String,
    /// The hardware the program was compiled for.
    pub hw: HwConfig,
    /// Facts about how the program was made, for the tools that run it (e.g.
    /// [`NOTE_CALIBRATION`]: calibrated on synthetic frames; [`NOTE_HOST_REASON`]
    /// followed by a layer name: why that host op is not on the NNA). Written only when not empty,
    /// so programs without notes keep their bytes (docs/ISA.md, "Metadata").
    pub notes: Vec<MetaNote>,
}

/// One metadata note: a key and its text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetaNote {
    pub key: String,
    pub value: String,
}

/// Key of the note saying the program was calibrated on synthetic frames (its value
/// states their distribution).
pub const NOTE_CALIBRATION: &str = "calibration";
/// Prefix of the key `host-reason:<layer>`: why that host op is not on the NNA.
pub const NOTE_HOST_REASON: &str = "host-reason:";

impl Metadata {
    /// The value of note `key`, if any.
    pub fn note(&self, key: &str) -> Option<&str> {
        self.notes
            .iter()
            .find(|n| n.key == key)
            .map(|n| n.value.as_str())
    }

    /// Why host op `layer` is not on the NNA, if recorded.
    pub fn host_reason(&self, layer: &str) -> Option<&str> {
        self.note(&format!("{NOTE_HOST_REASON}{layer}"))
    }
}

/// A whole NNA program.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Program {
    /// Instruction stream: segments, each ending with STOP; the last instruction is
    /// STOP (docs/ISA.md 2.1).
    pub instrs: Vec<Instr>,
    pub dram: DramImage,
    /// Inputs and outputs, in order.
    pub io: Vec<IoDesc>,
    /// Optional host-op section: ops the host runs between segments.
    pub host_ops: Option<HostOps>,
    pub meta: Metadata,
    /// Optional layer table: the source layer of every instruction.
    pub layers: Option<LayerTable>,
    /// Optional prologue/body split: the index of the first BODY instruction (run
    /// once per frame); the instructions before it are the PROLOGUE (run once when
    /// the program is loaded) and end with a STOP. `None`: the whole program runs
    /// every frame (docs/ISA.md 2.2).
    pub body_start: Option<usize>,
}

/// A container that cannot be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerError {
    /// File offset of the problem, when known.
    pub offset: Option<usize>,
    /// Section involved, when known.
    pub section: Option<&'static str>,
    pub message: String,
}

impl ContainerError {
    pub fn new(message: impl fmt::Display) -> Self {
        ContainerError {
            offset: None,
            section: None,
            message: message.to_string(),
        }
    }
    pub fn at(offset: usize, section: &'static str, message: impl fmt::Display) -> Self {
        ContainerError {
            offset: Some(offset),
            section: Some(section),
            message: message.to_string(),
        }
    }
}

impl fmt::Display for ContainerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.section {
            write!(f, "{s} section: ")?;
        }
        if let Some(o) = self.offset {
            write!(f, "at file offset {o}: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for ContainerError {}

impl Program {
    /// A program for `hw` with no instructions but STOP.
    pub fn new(hw: HwConfig) -> Program {
        Program {
            instrs: vec![Instr::Stop(Default::default())],
            meta: Metadata {
                hw,
                ..Metadata::default()
            },
            ..Program::default()
        }
    }

    /// Checks that the program fits its hardware configuration: every flag index is
    /// below `hw.flags`.
    pub fn check_hw(&self) -> Result<(), ProgramError> {
        for (i, ins) in self.instrs.iter().enumerate() {
            if let Some(m) = ins.flags().all().highest() {
                if m >= self.meta.hw.flags {
                    return Err(ProgramError::Flag {
                        index: i,
                        mnemonic: ins.mnemonic(),
                        flag: m,
                        hw_flags: self.meta.hw.flags,
                    });
                }
            }
        }
        Ok(())
    }

    /// Errs unless the program was compiled for exactly `hw` (the simulator's check).
    pub fn require_hw(&self, hw: &HwConfig) -> Result<(), ProgramError> {
        if &self.meta.hw == hw {
            return Ok(());
        }
        Err(ProgramError::HwMismatch {
            program: self.meta.hw.fingerprint(),
            target: hw.fingerprint(),
        })
    }

    /// The instructions with their index, stream offset and encoded size.
    pub fn located(&self) -> Vec<Located> {
        let mut offset = 0;
        self.instrs
            .iter()
            .enumerate()
            .map(|(index, instr)| {
                let size = instr.encoded_size();
                let l = Located {
                    index,
                    offset,
                    size,
                    instr: instr.clone(),
                };
                offset += size;
                l
            })
            .collect()
    }

    /// The index of the first instruction run every frame (0 without a prologue).
    pub fn body_start(&self) -> usize {
        self.body_start.unwrap_or(0)
    }

    /// The segments of the prologue: `0..prologue_segments` (empty without one).
    pub fn prologue_segments(&self) -> usize {
        prologue_segments(self.body_start(), &self.instrs)
    }

    /// Encoded instruction stream size in bytes.
    pub fn code_size(&self) -> usize {
        self.instrs.iter().map(Instr::encoded_size).sum()
    }
}
