//! Static hazard check: proves from the program alone that no interleaving of the
//! two queues the dependency flags allow races on a byte or deadlocks
//! (docs/ISA.md 3.3). Independent of the backend's flag assigner and of the simulator.
//!
//! # Model
//!
//! The DMA queue holds the DMA_READ / DMA_WRITE instructions `d0 .. d(m-1)`, the
//! compute queue the compute instructions `c0 .. c(n-1)`, both in program order; STOP
//! ends both. A program is a sequence of segments, each ending with STOP (docs/ISA.md
//! 2.1): at a STOP both queues drain and every flag is cleared before the next segment
//! (and the host ops between them) starts, so a STOP is a full barrier. Each segment
//! is checked on its own, from the all-clear flag state, with the model below;
//! accesses in different segments never overlap in time, and a deadlock is a segment
//! that cannot reach its STOP. Progress in findings counts instructions of the whole
//! program. Each queue runs one instruction at a time, in order (ISA.md 2), so two
//! instructions of the *same* queue never overlap in time and are safe by ordering:
//! only DMA/compute pairs can race. An instruction has two events: *start* (when it
//! is its queue's head, the previous one has completed, and its `wait_set` flags are
//! set and its `wait_clear` flags clear) and *completion* (it clears, then sets, its
//! flags). All its memory accesses happen between the two. The two queues may run at
//! any relative speed, so every interleaving of events that respects these rules is
//! possible, and nothing else is.
//!
//! The abstract state after any prefix of events is `(i, j, a, b)`: `i` DMA and `j`
//! compute instructions have completed, `a` / `b` says whether `d_i` / `c_j` is in
//! flight. The flag state is a function of `(i, j)`: in an interleaving without a flag
//! error, every completion either sets a clear flag, clears a set flag, or (flag in
//! both lists) clears and sets a set flag, so each flag's value is its number of sets
//! minus clears among the completed instructions, whatever their order
//! ([`queues::NetCounts`]). Starting changes no flag, so whether a head may start
//! depends only on `(i, j)` too. Hence the states reachable by some interleaving are
//! exactly those the sweep in [`explore`] reaches (at most `4(m+1)(n+1)`; every
//! transition increases `i`, `j` or the phase, so one ordered pass suffices, and only
//! the reached span of each row is visited). A path on which a completion sets a set
//! flag or clears a clear flag is reported as a flag error and not followed further
//! (the simulator stops there); other paths to the same states still are.
//!
//! Findings:
//! - **race**: a reachable state with `d_i` and `c_j` both in flight whose footprints
//!   ([`footprint()`]) overlap with at least one writing. Such a state is realizable, so
//!   the accesses can interleave. Conversely, if no such state exists, every pair of
//!   conflicting instructions is ordered in time in every execution. Footprints are
//!   exact or supersets (never missing a byte), so a clean report is a proof; a race
//!   reported through an over-approximated input window may be spurious. Only the DMA
//!   queue touches DRAM, so DRAM races are impossible by construction (footprints
//!   cover DRAM anyway).
//! - **deadlock**: a reachable state with no head in flight, no head able to start,
//!   and not (both queues drained and STOP able to start).
//! - **flag error**: a reachable completion setting a set flag or clearing a clear one.
//! - **flag range**: a flag number >= the hardware's `flags`.
//! - **resident overwrite** (programs with a prologue, docs/ISA.md 2.2): a body
//!   instruction writing an SRAM byte the prologue wrote and the body reads
//!   ([`resident`]). The prologue's completion before the body and the all-clear
//!   flags at every body start follow from its final STOP.

pub mod explore;
pub mod footprint;
pub mod geometry;
pub mod intervals;
pub mod queues;
pub mod report;
pub mod resident;

pub use footprint::{footprint, Footprint, Space};
pub use intervals::Intervals;
pub use report::{
    Blocked, Conflict, Deadlock, FlagError, FlagErrorKind, FlagRange, HazardReport, InstrRef,
    Progress, Race, RaceKind, ResidentWrite,
};

use crate::container::Program;
use crate::hw::HwConfig;
use crate::instr::{check_program as check_stop, Instr};
use std::fmt;

/// Most findings of one kind kept in a report; the rest are only counted.
pub const MAX_FINDINGS: usize = 1000;

/// A program the check cannot analyse (no STOP, or an instruction whose geometry
/// breaks docs/ISA.md section 5, so its footprint is undefined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HazardError {
    /// The program as a whole breaks a rule (no final STOP, a bad prologue split).
    Program(crate::error::ProgramError),
    /// Instruction `instr` breaks a semantic rule.
    Instr {
        instr: InstrRef,
        error: crate::error::CheckError,
    },
}

impl fmt::Display for HazardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HazardError::Instr { instr, error } => write!(f, "instruction {instr}: {error}"),
            HazardError::Program(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for HazardError {}

/// Index, stream offset and mnemonic of every instruction.
pub fn instr_refs(instrs: &[Instr]) -> Vec<InstrRef> {
    let mut offset = 0;
    instrs
        .iter()
        .enumerate()
        .map(|(index, ins)| {
            let r = InstrRef {
                index,
                offset,
                mnemonic: ins.mnemonic(),
            };
            offset += ins.encoded_size();
            r
        })
        .collect()
}

/// Checks `p` against its own hardware configuration, with its prologue/body split.
pub fn check_program(p: &Program) -> Result<HazardReport, HazardError> {
    let mut report = check_instrs(&p.instrs, &p.meta.hw)?;
    if let Some(b) = p.body_start {
        crate::container::check_body_start(b, &p.instrs, p.host_ops.as_ref())
            .map_err(HazardError::Program)?;
        let refs = instr_refs(&p.instrs);
        report.resident_writes = resident::resident_writes(&p.instrs, &refs, b, &p.meta.hw);
    }
    Ok(report)
}

/// Checks an instruction stream for `hw` (uses `hw.flags` and `hw.mac_cols`).
pub fn check_instrs(instrs: &[Instr], hw: &HwConfig) -> Result<HazardReport, HazardError> {
    check_stop(instrs).map_err(HazardError::Program)?;
    let refs = instr_refs(instrs);
    let mut report = HazardReport::default();
    for (r, ins) in refs.iter().zip(instrs) {
        footprint::check_geometry(ins).map_err(|error| HazardError::Instr { instr: *r, error })?;
        for flag in ins.flags().all().iter().filter(|&f| f >= hw.flags) {
            report.flag_ranges.push(FlagRange {
                instr: *r,
                flag,
                hw_flags: hw.flags,
            });
        }
    }
    let pairs: Vec<(InstrRef, &Instr)> = refs.into_iter().zip(instrs).collect();
    for seg in crate::instr::segments(instrs) {
        report = check_segment(&pairs[seg], hw, report);
    }
    Ok(report)
}

/// Explores one segment (ending with its STOP) and adds its findings to `report`,
/// with progress counted from the start of the program.
fn check_segment(
    pairs: &[(InstrRef, &Instr)],
    hw: &HwConfig,
    mut report: HazardReport,
) -> HazardReport {
    let queues = queues::Queues::new(pairs, hw);
    let base = Progress {
        dma_done: report.dma_instrs,
        compute_done: report.compute_instrs,
    };
    let seen = (
        report.flag_errors.len(),
        report.races.len(),
        report.deadlocks.len(),
    );
    report.dma_instrs += queues.dma.len();
    report.compute_instrs += queues.compute.len();
    let mut ex = explore::Explorer::new(&queues, report);
    ex.run();
    let mut report = ex.report;
    let shift = |p: &mut Progress| {
        p.dma_done += base.dma_done;
        p.compute_done += base.compute_done;
    };
    report.flag_errors[seen.0..]
        .iter_mut()
        .for_each(|f| shift(&mut f.at));
    report.races[seen.1..]
        .iter_mut()
        .for_each(|r| shift(&mut r.at));
    report.deadlocks[seen.2..]
        .iter_mut()
        .for_each(|d| shift(&mut d.at));
    report
}
