//! Everything that can stop a simulation.

use nnac_isa::error::{CheckError, HostOpError, ProgramError};
use nnac_isa::{DotProduct, FlagOps, FlagSet};
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
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The program was compiled for another hardware configuration.
    HwMismatch { program: String, given: String },
    /// The program uses something the simulator does not run yet.
    Unsupported(String),
    /// The program as a whole is unusable (descriptors outside DRAM, two
    /// descriptors of one name, DRAM too large).
    Program(String),
    /// The program breaks a rule of docs/ISA.md section 2 (no final STOP, flags
    /// beyond the hardware, a bad prologue split).
    Rule(ProgramError),
    /// The host-op section is invalid.
    HostOps(HostOpError),
    /// The DRAM image lies outside the program's DRAM.
    Image(MemError),
    /// An output cannot be read back.
    Output(IoError),
    /// Missing or unknown input.
    Input(String),
    /// Input data that does not fit its descriptor.
    InputData(IoError),
    /// One instruction is malformed or touches memory outside its range.
    Instr { at: InstrRef, error: ExecError },
    /// A data race the flags do not prevent.
    Hazard(Box<Hazard>),
    /// No queue can make progress.
    Deadlock(String),
    /// A host op failed (bad op text, operand outside DRAM, shape mismatch).
    Host { name: String, message: String },
}

impl SimError {
    /// Instruction `index` (`mnemonic`) failed with `error`.
    pub fn instr(index: usize, mnemonic: &'static str, error: ExecError) -> SimError {
        SimError::Instr {
            at: InstrRef { index, mnemonic },
            error,
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
            SimError::Rule(e) => write!(f, "program: {e}"),
            SimError::HostOps(e) => write!(f, "program: {e}"),
            SimError::Image(e) => write!(f, "program: {e}"),
            SimError::Output(e) => write!(f, "program: {e}"),
            SimError::Input(m) => write!(f, "input: {m}"),
            SimError::InputData(e) => write!(f, "input: {e}"),
            SimError::Instr { at, error } => write!(f, "instruction {at}: {error}"),
            SimError::Hazard(h) => write!(f, "{h}"),
            SimError::Deadlock(m) => write!(f, "deadlock: {m}"),
            SimError::Host { name, message } => write!(f, "host op '{name}': {message}"),
        }
    }
}

impl std::error::Error for SimError {}

/// An access outside a memory, with the range asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemError {
    /// `[addr, addr + len)` is not inside `memory` (`[base, end)`).
    Outside {
        memory: &'static str,
        addr: u64,
        len: u64,
        base: u64,
        end: u64,
    },
    /// `[addr, addr + len)` meets `[lo, hi)` of `memory`, which is being written.
    TakenOut {
        memory: &'static str,
        addr: u64,
        len: u64,
        lo: u64,
        hi: u64,
    },
    /// `[addr, addr + len)` is not inside one segment of the program's DRAM.
    OutsideDram {
        addr: u64,
        len: u64,
        /// The DRAM's segments `[lo, hi)`.
        segments: Vec<std::ops::Range<u64>>,
    },
}

impl fmt::Display for MemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemError::Outside {
                memory,
                addr,
                len,
                base,
                end,
            } => write!(
                f,
                "{memory} range [{addr:#x}, {:#x}) is outside {memory} [{base:#x}, {end:#x})",
                addr.saturating_add(*len)
            ),
            MemError::TakenOut {
                memory,
                addr,
                len,
                lo,
                hi,
            } => write!(
                f,
                "{memory} range [{addr:#x}, {:#x}) meets [{lo:#x}, {hi:#x}), which the instruction is writing",
                addr.saturating_add(*len)
            ),
            MemError::OutsideDram {
                addr,
                len,
                segments,
            } => {
                let segs: Vec<String> = segments
                    .iter()
                    .map(|s| format!("[{:#x}, {:#x})", s.start, s.end))
                    .collect();
                write!(
                    f,
                    "DRAM range [{addr:#x}, {:#x}) is not inside the program's DRAM (image and I/O tensors: {})",
                    addr.saturating_add(*len),
                    if segs.is_empty() { "none".to_string() } else { segs.join(", ") }
                )
            }
        }
    }
}

impl std::error::Error for MemError {}

/// Program input or output data that does not fit its descriptor or its DRAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoError {
    /// Data of the wrong length for the descriptor `name`.
    Size {
        name: String,
        needed: u64,
        shape: Vec<u32>,
        got: usize,
    },
    /// The tensor lies outside the program's DRAM.
    Mem(MemError),
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Size {
                name,
                needed,
                shape,
                got,
            } => write!(
                f,
                "'{name}' needs {needed} bytes (shape {shape:?}), got {got}"
            ),
            IoError::Mem(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for IoError {}

impl From<MemError> for IoError {
    fn from(e: MemError) -> Self {
        IoError::Mem(e)
    }
}

/// Why one instruction cannot execute (its index is added by [`SimError::Instr`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecError {
    /// A semantic rule of docs/ISA.md section 5 (`nnac_isa::checks`).
    Check(CheckError),
    /// A memory access outside SRAM or the program's DRAM.
    Mem(MemError),
    /// A DMA whose destination rows overlap (`stride_name` = `sram_stride` or
    /// `dram_stride`).
    DmaRowsOverlap {
        stride_name: &'static str,
        stride: u64,
        row_len: u32,
        rows: u32,
    },
    /// The DRAM address of DMA row `row` overflows.
    DmaAddrOverflow { row: u64 },
    /// `groups` does not divide both channel counts.
    Groups { groups: u32, in_c: u32, out_c: u32 },
    /// A channel tile `[start, end)` beyond `limit_name` = `limit`.
    Channels {
        start: u64,
        end: u64,
        limit_name: &'static str,
        limit: u64,
    },
    /// A pixel tile `[start, end)` beyond `limit_name` = `limit`.
    Pixels {
        start: u64,
        end: u64,
        limit_name: &'static str,
        limit: u64,
    },
    /// The output size disagrees with the (transposed) convolution of the input;
    /// `expected_*` is what the geometry implies (`None`: the kernel does not fit).
    DotGeometry {
        transposed: bool,
        expected_h: Option<u64>,
        expected_w: Option<u64>,
        dot: Box<DotProduct>,
    },
    /// `pool=none` with a pooling window or stride.
    PoolFieldsWithoutPool,
    /// Pooling with a window other than 2 or 3 or a stride other than 1 or 2.
    PoolShape { win: u32, stride: u32 },
    /// A pooling pad not smaller than the window.
    PoolPads { pads: [u32; 4], win: u64 },
    /// The pooling window is larger than the padded output.
    PoolWindow {
        win: u64,
        padded_h: u64,
        padded_w: u64,
    },
    /// A depthwise tap reads input outside the tile's input box.
    OutsideInputBox { y: u64, x: u64, channel: u64 },
    /// The instruction `access`es ("reads", "writes") SRAM `[lo, hi)` beyond its size.
    BeyondSram {
        access: &'static str,
        lo: u64,
        hi: u64,
        sram_bytes: u64,
    },
    /// Completing the instruction would clear a clear flag or set a set one
    /// (docs/ISA.md 3.1): `what` says which, `flags` are the offending flags.
    FlagState {
        what: &'static str,
        flags: FlagSet,
        state: FlagSet,
    },
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Check(e) => write!(f, "{e}"),
            ExecError::Mem(e) => write!(f, "{e}"),
            ExecError::DmaRowsOverlap {
                stride_name,
                stride,
                row_len,
                rows,
            } => write!(
                f,
                "{stride_name}={stride} is smaller than row_len={row_len} with {rows} rows: destination rows overlap"
            ),
            ExecError::DmaAddrOverflow { row } => {
                write!(f, "DRAM address of row {row} overflows")
            }
            ExecError::Groups {
                groups,
                in_c,
                out_c,
            } => write!(
                f,
                "groups={groups} does not divide in_c={in_c} and out_c={out_c}"
            ),
            ExecError::Channels {
                start,
                end,
                limit_name,
                limit,
            } => write!(f, "channels [{start}, {end}) exceed {limit_name}={limit}"),
            ExecError::Pixels {
                start,
                end,
                limit_name,
                limit,
            } => write!(f, "pixels [{start}, {end}) exceed {limit_name}={limit}"),
            ExecError::DotGeometry {
                transposed,
                expected_h,
                expected_w,
                dot: d,
            } => write!(
                f,
                "output {}x{} does not match the {}convolution of {}x{} (kernel {}x{}, pads {}/{}/{}/{}, stride {}x{}, dilation {}x{}): expected {expected_h:?}x{expected_w:?}",
                d.out_h,
                d.out_w,
                if *transposed { "transposed " } else { "" },
                d.in_h,
                d.in_w,
                d.kernel_h,
                d.kernel_w,
                d.pad_top,
                d.pad_left,
                d.pad_bottom,
                d.pad_right,
                d.stride_h,
                d.stride_w,
                d.dil_h,
                d.dil_w
            ),
            ExecError::PoolFieldsWithoutPool => {
                write!(f, "pool=none needs pool_win=0 and pool_stride=0")
            }
            ExecError::PoolShape { win, stride } => write!(
                f,
                "pooling needs pool_win 2 or 3 and pool_stride 1 or 2 (got {win} and {stride})"
            ),
            ExecError::PoolPads { pads, win } => write!(
                f,
                "pooling pads {pads:?} must be smaller than the window {win}"
            ),
            ExecError::PoolWindow {
                win,
                padded_h,
                padded_w,
            } => write!(
                f,
                "pooling window {win} larger than the padded output {padded_h}x{padded_w}"
            ),
            ExecError::OutsideInputBox { y, x, channel } => write!(
                f,
                "input ({y}, {x}) of channel {channel} is outside the tile's input box"
            ),
            ExecError::BeyondSram {
                access,
                lo,
                hi,
                sram_bytes,
            } => write!(
                f,
                "{access} SRAM [{lo:#x}, {hi:#x}) but SRAM is {sram_bytes:#x} bytes"
            ),
            ExecError::FlagState { what, flags, state } => write!(
                f,
                "{what} {} on completion (flag state {}): a flag error",
                flags.to_text(),
                state_text(*state)
            ),
        }
    }
}

impl std::error::Error for ExecError {}

impl From<MemError> for ExecError {
    fn from(e: MemError) -> Self {
        ExecError::Mem(e)
    }
}

impl From<CheckError> for ExecError {
    fn from(e: CheckError) -> Self {
        ExecError::Check(e)
    }
}

impl From<ProgramError> for SimError {
    fn from(e: ProgramError) -> Self {
        SimError::Rule(e)
    }
}

impl From<HostOpError> for SimError {
    fn from(e: HostOpError) -> Self {
        SimError::HostOps(e)
    }
}
