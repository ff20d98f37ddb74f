//! Everything that can stop a simulation.

use nnac_isa::{FlagOps, FlagSet};
use std::fmt;

/// An instruction named in an error: its index in the program and its mnemonic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstrRef {
    pub index: usize,
    pub mnemonic: &'static str,
}

impl fmt::Display for InstrRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} {}", self.index, self.mnemonic)
    }
}

/// Kind of a data race between the two queues, in program order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HazardKind {
    /// The later instruction reads bytes the earlier one writes.
    ReadAfterWrite,
    /// The later instruction writes bytes the earlier one reads.
    WriteAfterRead,
    /// Both write the same bytes.
    WriteAfterWrite,
}

impl HazardKind {
    pub fn short(self) -> &'static str {
        match self {
            HazardKind::ReadAfterWrite => "RAW",
            HazardKind::WriteAfterRead => "WAR",
            HazardKind::WriteAfterWrite => "WAW",
        }
    }
}

/// Two instructions of different queues touch the same SRAM bytes (at least one
/// writing) and the later one started before the earlier one completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hazard {
    pub kind: HazardKind,
    /// The instruction earlier in program order (not yet completed).
    pub earlier: InstrRef,
    pub earlier_flags: FlagOps,
    /// The instruction that started too early.
    pub later: InstrRef,
    pub later_flags: FlagOps,
    /// First conflicting SRAM byte range `[start, end)`.
    pub range: (u64, u64),
    /// Flag state when `started` started.
    pub state: FlagSet,
    /// The instruction whose start revealed the race (`earlier` or `later`: a queue
    /// may run ahead of program order).
    pub started: InstrRef,
}

/// Why a run stopped without producing outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The program was compiled for another hardware configuration.
    HwMismatch { program: String, given: String },
    /// The program uses something the simulator does not run yet.
    Unsupported(String),
    /// The program as a whole is unusable (flags beyond the hardware, descriptors
    /// outside DRAM, ...).
    Program(String),
    /// Missing, unknown or wrongly sized input.
    Input(String),
    /// One instruction is malformed or touches memory outside its range.
    Instr { at: InstrRef, message: String },
    /// A data race the flags do not prevent.
    Hazard(Box<Hazard>),
    /// No queue can make progress.
    Deadlock(String),
    /// A host op failed (bad op text, operand outside DRAM, shape mismatch).
    Host { name: String, message: String },
}

impl SimError {
    pub fn instr(index: usize, mnemonic: &'static str, message: impl Into<String>) -> SimError {
        SimError::Instr {
            at: InstrRef { index, mnemonic },
            message: message.into(),
        }
    }
}

/// `wait_set=F1 wait_clear=- set=F2 clear=F1`.
pub fn flags_text(f: &FlagOps) -> String {
    let t = |s: FlagSet| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_text()
        }
    };
    format!(
        "wait_set={} wait_clear={} set={} clear={}",
        t(f.wait_set),
        t(f.wait_clear),
        t(f.set),
        t(f.clear)
    )
}

/// The current flag state, `{F0,F3}`.
pub fn state_text(s: FlagSet) -> String {
    format!("{{{}}}", s.to_text())
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.kind {
            HazardKind::ReadAfterWrite => "reads SRAM bytes that earlier",
            HazardKind::WriteAfterRead => "writes SRAM bytes that earlier",
            HazardKind::WriteAfterWrite => "writes SRAM bytes that earlier",
        };
        let what = match self.kind {
            HazardKind::ReadAfterWrite => "still has to write",
            HazardKind::WriteAfterRead => "still has to read",
            HazardKind::WriteAfterWrite => "also writes and has not completed",
        };
        write!(
            f,
            "{} hazard: instruction {} {verb} {} {what}, and the flags do not order them: SRAM [{:#x}, {:#x}); flags of {}: {}; flags of {}: {}; flag state when {} started: {}",
            self.kind.short(),
            self.later,
            self.earlier,
            self.range.0,
            self.range.1,
            self.earlier,
            flags_text(&self.earlier_flags),
            self.later,
            flags_text(&self.later_flags),
            self.started,
            state_text(self.state)
        )
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::HwMismatch { program, given } => write!(
                f,
                "the program was compiled for a different hardware configuration (program: {program}; given: {given})"
            ),
            SimError::Unsupported(m) => write!(f, "unsupported: {m}"),
            SimError::Program(m) => write!(f, "program: {m}"),
            SimError::Input(m) => write!(f, "input: {m}"),
            SimError::Instr { at, message } => write!(f, "instruction {at}: {message}"),
            SimError::Hazard(h) => write!(f, "{h}"),
            SimError::Deadlock(m) => write!(f, "deadlock: {m}"),
            SimError::Host { name, message } => write!(f, "host op '{name}': {message}"),
        }
    }
}

impl std::error::Error for SimError {}
