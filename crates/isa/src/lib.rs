//! nnac-isa: the contract between the nnac backend and the NNA simulator.
//!
//! - [`hw`]: the hardware configuration ([`HwConfig`]).
//! - [`layouts`]: THE instruction table (field name, bit offset, width, range).
//! - [`instr`]: the opcode table, [`Instr`], encoding and decoding of streams.
//! - [`flags`]: dependency flags ([`FlagOps`]).
//! - [`checks`]: semantic rules of compute instructions (shapes, tiles, pooling).
//! - [`simd`]: the SIMD ISA and its executor; [`arith`]: shared integer arithmetic.
//! - [`container`]: the `.nnab` program container ([`Program`]).
//! - [`listing`]: human listing, JSON lines, text assembly/disassembly.
//! - [`docs`]: markdown field tables (checked against docs/ISA.md by a test).
//!
//! docs/ISA.md is the normative description; the code follows it.

pub mod arith;
pub mod bits;
pub mod checks;
pub mod container;
pub mod crc32;
pub mod docs;
pub mod encoding;
pub mod error;
pub mod field;
pub mod flags;
pub mod hazard;
pub mod hw;
pub mod instr;
pub mod layouts;
pub mod listing;
pub mod simd;

pub use container::{
    check_body_start, ContainerError, DramImage, HostOp, HostOps, ImageBytes, IoDesc, IoDir,
    IoDtype, IoLayout, LayerTable, MetaNote, Metadata, Program, SharedBuffer, NOTE_CALIBRATION,
    NOTE_HOST_REASON,
};
pub use error::{DecodeError, EncodeError};
pub use flags::{FlagOps, FlagSet};
pub use hw::HwConfig;
pub use instr::{decode_program, encode_program, Class, Instr, Located};
pub use layouts::{Dma, DotProduct, EltOp, Eltwise, Order, PoolKind, Scale, Stop};
pub use simd::{Alu, BSrc, ChanParams, Requant, SimdInstr};
