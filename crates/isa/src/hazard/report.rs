//! What the hazard check finds, and how it is printed.

use super::footprint::Space;
use crate::flags::{FlagOps, FlagSet};
use std::fmt;

/// One instruction: stream index, byte offset in the instruction stream, mnemonic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct InstrRef {
    pub index: usize,
    pub offset: usize,
    pub mnemonic: &'static str,
}

impl fmt::Display for InstrRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{} {} (offset {:#x})",
            self.index, self.mnemonic, self.offset
        )
    }
}

/// Progress of the two queues: instructions each has completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Progress {
    pub dma_done: usize,
    pub compute_done: usize,
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "after {} DMA and {} compute instructions completed",
            self.dma_done, self.compute_done
        )
    }
}

/// The kind of a conflicting access pair, by program order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RaceKind {
    /// The earlier instruction writes, the later reads.
    Raw,
    /// The earlier instruction reads, the later writes.
    War,
    /// Both write.
    Waw,
}

impl RaceKind {
    pub fn name(self) -> &'static str {
        match self {
            RaceKind::Raw => "RAW",
            RaceKind::War => "WAR",
            RaceKind::Waw => "WAW",
        }
    }
}

/// Overlapping bytes of one access pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict {
    pub kind: RaceKind,
    pub space: Space,
    /// The lowest-addressed overlapping range `[lo, hi)`.
    pub range: (u64, u64),
    /// True if the DMA instruction is the writer (false: the compute instruction).
    pub dma_writes: bool,
}

/// A DMA and a compute instruction that the flags allow in flight together, with
/// overlapping footprints and at least one of them writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Race {
    pub dma: InstrRef,
    pub compute: InstrRef,
    /// A state in which both are in flight.
    pub at: Progress,
    /// Every conflicting access pair (WAW, then DMA-writes, then compute-writes).
    pub conflicts: Vec<Conflict>,
    /// Which flag would order them.
    pub suggestion: String,
}

impl fmt::Display for Race {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.conflicts[0];
        let (earlier, later) = if self.dma.index < self.compute.index {
            (self.dma, self.compute)
        } else {
            (self.compute, self.dma)
        };
        write!(
            f,
            "race ({}): {} and {} can run at the same time ({}) and both access {} [{:#x}, {:#x})",
            c.kind.name(),
            earlier,
            later,
            self.at,
            c.space.name(),
            c.range.0,
            c.range.1
        )?;
        let writer = |dma_writes| {
            if dma_writes {
                self.dma.index
            } else {
                self.compute.index
            }
        };
        write!(f, " (#{} writes)", writer(c.dma_writes))?;
        for c in &self.conflicts[1..] {
            write!(
                f,
                "; also {} on {} [{:#x}, {:#x})",
                c.kind.name(),
                c.space.name(),
                c.range.0,
                c.range.1
            )?;
        }
        write!(f, "; {}", self.suggestion)
    }
}

/// One queue's head in a deadlocked state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub instr: InstrRef,
    /// Flags it waits to be set that are clear.
    pub needs_set: FlagSet,
    /// Flags it waits to be clear that are set.
    pub needs_clear: FlagSet,
    /// Flags among `needs_set` that no instruction ever sets (and `needs_clear`
    /// that none ever clears): the wait can never be satisfied.
    pub never: FlagSet,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} waits for", self.instr)?;
        let mut sep = "";
        if !self.needs_set.is_empty() {
            write!(f, " {} set", self.needs_set.to_text())?;
            sep = " and";
        }
        if !self.needs_clear.is_empty() {
            write!(f, "{sep} {} clear", self.needs_clear.to_text())?;
        }
        if !self.never.is_empty() {
            write!(f, " (no instruction ever changes {})", self.never.to_text())?;
        }
        Ok(())
    }
}

/// A reachable state in which neither queue can move and STOP has not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deadlock {
    pub at: Progress,
    /// Flags set in that state.
    pub flags: FlagSet,
    /// The blocked heads (a drained queue has none; STOP appears once, when both
    /// queues are drained).
    pub blocked: Vec<Blocked>,
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = if self.flags.is_empty() {
            "none".to_string()
        } else {
            self.flags.to_text()
        };
        write!(f, "deadlock {} (flags set: {flags}):", self.at)?;
        for (k, b) in self.blocked.iter().enumerate() {
            write!(f, "{} {b}", if k == 0 { "" } else { ";" })?;
        }
        Ok(())
    }
}

/// What went wrong with a flag on completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FlagErrorKind {
    /// Sets a flag that is already set.
    SetWhileSet,
    /// Clears a flag that is already clear.
    ClearWhileClear,
}

/// A completion that sets a set flag or clears a clear flag in some interleaving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagError {
    pub instr: InstrRef,
    pub flag: u32,
    pub kind: FlagErrorKind,
    /// A state in which the completion does it (the instruction is in flight).
    pub at: Progress,
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (verb, state) = match self.kind {
            FlagErrorKind::SetWhileSet => ("sets", "set"),
            FlagErrorKind::ClearWhileClear => ("clears", "clear"),
        };
        write!(
            f,
            "flag error: {} {verb} F{} while it is already {state} (completing {})",
            self.instr, self.flag, self.at
        )
    }
}

/// An instruction naming a flag the hardware does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagRange {
    pub instr: InstrRef,
    pub flag: u32,
    pub hw_flags: u32,
}

impl fmt::Display for FlagRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "flag out of range: {} uses F{} but the hardware has {} flags (F0..F{})",
            self.instr,
            self.flag,
            self.hw_flags,
            self.hw_flags.saturating_sub(1)
        )
    }
}

/// A body instruction writing an SRAM byte the prologue wrote and the body reads
/// (docs/ISA.md 2.2): from the second frame on, the body would read other data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResidentWrite {
    pub instr: InstrRef,
    /// The lowest range of resident bytes it writes, `[lo, hi)`.
    pub bytes: (u64, u64),
}

impl fmt::Display for ResidentWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "resident overwrite: {} (body) writes SRAM [{:#x}, {:#x}), which the prologue loaded and the body reads: the next frame would read other data",
            self.instr, self.bytes.0, self.bytes.1
        )
    }
}

/// Everything the check found, each list in a deterministic order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HazardReport {
    pub dma_instrs: usize,
    pub compute_instrs: usize,
    /// Grid cells `(dma progress, compute progress)` the exploration visited.
    pub states: u64,
    /// In instruction order.
    pub flag_ranges: Vec<FlagRange>,
    /// In exploration order (DMA progress, then compute progress).
    pub flag_errors: Vec<FlagError>,
    pub races: Vec<Race>,
    pub deadlocks: Vec<Deadlock>,
    /// Body instructions overwriting resident prologue data, in program order.
    pub resident_writes: Vec<ResidentWrite>,
    /// Findings beyond [`super::MAX_FINDINGS`] per kind, counted but not stored.
    pub suppressed: usize,
}

impl HazardReport {
    /// True if nothing was found.
    pub fn is_clean(&self) -> bool {
        self.flag_ranges.is_empty()
            && self.flag_errors.is_empty()
            && self.races.is_empty()
            && self.deadlocks.is_empty()
            && self.resident_writes.is_empty()
            && self.suppressed == 0
    }

    /// Number of findings, including suppressed ones.
    pub fn count(&self) -> usize {
        self.flag_ranges.len()
            + self.flag_errors.len()
            + self.races.len()
            + self.deadlocks.len()
            + self.resident_writes.len()
            + self.suppressed
    }

    /// Every stored finding as one line of text, in report order.
    pub fn lines(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        v.extend(self.flag_ranges.iter().map(ToString::to_string));
        v.extend(self.flag_errors.iter().map(ToString::to_string));
        v.extend(self.races.iter().map(ToString::to_string));
        v.extend(self.deadlocks.iter().map(ToString::to_string));
        v.extend(self.resident_writes.iter().map(ToString::to_string));
        if self.suppressed > 0 {
            v.push(format!("... and {} more findings", self.suppressed));
        }
        v
    }
}

/// Text naming the flag that would order `earlier` before `later`.
pub fn suggest(
    kind: RaceKind,
    earlier: (InstrRef, &FlagOps),
    later: (InstrRef, &FlagOps),
) -> String {
    let (e, eo) = earlier;
    let (l, lo) = later;
    let sets = FlagSet::of(
        &eo.set
            .iter()
            .filter(|&f| !lo.wait_set.contains(f))
            .collect::<Vec<_>>(),
    );
    let clears = FlagSet::of(
        &eo.clear
            .iter()
            .filter(|&f| !lo.wait_clear.contains(f))
            .collect::<Vec<_>>(),
    );
    match kind {
        RaceKind::War if !clears.is_empty() => format!(
            "missing flag: #{} should wait_clear {} (cleared when #{} completes)",
            l.index,
            clears.to_text(),
            e.index
        ),
        _ if !sets.is_empty() => format!(
            "missing flag: #{} should wait_set {} (set when #{} completes)",
            l.index,
            sets.to_text(),
            e.index
        ),
        _ => format!(
            "missing flag: no flag orders #{} before #{}; let #{} set (or clear) a flag that #{} waits for",
            e.index, l.index, e.index, l.index
        ),
    }
}
