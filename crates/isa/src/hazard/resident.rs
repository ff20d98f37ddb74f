//! The prologue/body split (docs/ISA.md 2.2): data the prologue leaves in SRAM must
//! survive every frame. The prologue ends with a STOP, so it completes before the
//! body starts, and every segment (the body's first included) starts from the
//! all-clear flag state: the flags at body start are the same every frame. What
//! remains to prove is that the body never writes (by DMA or compute) an SRAM byte
//! that the prologue wrote and the body reads: frame 1 would read the prologue's
//! data there, frame 2 whatever the body left. Every such write is a
//! [`ResidentWrite`], naming the instruction and the first bytes it overwrites.
//! Footprints are exact or supersets, so a clean result is a proof.

use super::footprint::footprint;
use super::intervals::Intervals;
use super::report::{InstrRef, ResidentWrite};
use crate::hw::HwConfig;
use crate::instr::Instr;

/// The SRAM bytes written by `instrs[..body_start]` and read by `instrs[body_start..]`.
pub fn resident_bytes(instrs: &[Instr], body_start: usize, hw: &HwConfig) -> Intervals {
    let (prologue, body) = instrs.split_at(body_start.min(instrs.len()));
    let union = |part: &[Instr], reads: bool| {
        let ranges = part
            .iter()
            .flat_map(|ins| {
                let f = footprint(ins, hw);
                let set = if reads { f.sram_reads } else { f.sram_writes };
                set.ranges().to_vec()
            })
            .collect();
        Intervals::from_ranges(ranges)
    };
    union(prologue, false).intersect(&union(body, true))
}

/// Every body instruction writing a resident byte (in program order).
pub fn resident_writes(
    instrs: &[Instr],
    refs: &[InstrRef],
    body_start: usize,
    hw: &HwConfig,
) -> Vec<ResidentWrite> {
    let resident = resident_bytes(instrs, body_start, hw);
    if resident.is_empty() {
        return Vec::new();
    }
    instrs
        .iter()
        .zip(refs)
        .skip(body_start)
        .filter_map(|(ins, r)| {
            let bytes = footprint(ins, hw).sram_writes.first_overlap(&resident)?;
            Some(ResidentWrite { instr: *r, bytes })
        })
        .collect()
}
