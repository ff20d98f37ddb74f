//! The prologue section (kind 7, optional): the program is split into a PROLOGUE,
//! run once when the program is loaded (e.g. the DMAs that make the weights
//! resident in SRAM), and a BODY, run once per frame (docs/ISA.md 2.2 and 10).
//!
//! Layout (little-endian): magic `PROL`, u32 version ([`PROLOGUE_VERSION`]), u32
//! `body_start`: the index of the first body instruction. The instruction before it
//! is a STOP, so the prologue is whole segments; the body is not empty. Segment
//! numbers (host-op records, listings, the profiler) count the prologue's segments
//! too: the body's first segment is the number of STOPs in the prologue. No host op
//! runs in the prologue.

use super::wire::{Reader, Writer};
use super::{ContainerError, HostOps};
use crate::error::ProgramError;
use crate::instr::Instr;

const PROLOGUE_MAGIC: [u8; 4] = *b"PROL";
/// Version 1: `body_start` only.
pub const PROLOGUE_VERSION: u32 = 1;

/// Checks `body_start` against the program: `0 < body_start < instrs.len()`, the
/// instruction before it is a STOP, and no host op runs after a prologue segment.
pub fn check_body_start(
    body_start: usize,
    instrs: &[Instr],
    host_ops: Option<&HostOps>,
) -> Result<(), ProgramError> {
    if body_start == 0 || body_start >= instrs.len() {
        return Err(ProgramError::BodyStartRange {
            body_start,
            instrs: instrs.len(),
        });
    }
    if !matches!(instrs[body_start - 1], Instr::Stop(_)) {
        return Err(ProgramError::BodyStartNotAfterStop {
            body_start,
            mnemonic: instrs[body_start - 1].mnemonic(),
        });
    }
    let first_body_segment = prologue_segments(body_start, instrs);
    if let Some(op) = host_ops.and_then(|h| {
        h.ops
            .iter()
            .find(|o| (o.segment as usize) < first_body_segment)
    }) {
        return Err(ProgramError::HostOpInPrologue {
            name: op.name.clone(),
            segment: op.segment,
            first_body_segment,
        });
    }
    Ok(())
}

/// Number of segments (STOPs) in `instrs[..body_start]`.
pub fn prologue_segments(body_start: usize, instrs: &[Instr]) -> usize {
    instrs
        .iter()
        .take(body_start)
        .filter(|i| matches!(i, Instr::Stop(_)))
        .count()
}

pub(super) fn write(body_start: usize) -> Vec<u8> {
    let mut w = Writer::default();
    w.bytes(&PROLOGUE_MAGIC);
    w.u32(PROLOGUE_VERSION);
    w.u32(body_start as u32);
    w.0
}

/// Parses the section and checks `body_start` against the decoded program.
pub(super) fn read(
    r: &mut Reader,
    instrs: &[Instr],
    host_ops: Option<&HostOps>,
) -> Result<usize, ContainerError> {
    let magic_at = r.error("bad prologue magic");
    if r.bytes(4)? != PROLOGUE_MAGIC {
        return Err(magic_at);
    }
    let v = r.u32()?;
    if v != PROLOGUE_VERSION {
        return Err(r.error(format!("unsupported prologue version {v}")));
    }
    let at = r.error("");
    let body_start = r.u32()? as usize;
    check_body_start(body_start, instrs, host_ops).map_err(|m| ContainerError {
        message: m.to_string(),
        ..at
    })?;
    r.finish()?;
    Ok(body_start)
}
