//! The critical timeline of a segment laid out by cause: the timing model charges
//! every cycle of a segment to exactly one instruction (`timing::Charge`): each
//! compute instruction from the previous one's release to its own (its waits, then
//! its work), then the DMA instructions the segment still waits for, then the STOP.
//! Walking them in that order tiles the segment; within an instruction the causes
//! are laid out in [`Cause::ALL`] order.

use crate::palette::Cause;
use nnac_runtime_sim::timing::{Timeline, Unit};

/// Cycles `[start, end)` of a segment charged to `cause` by instruction `instr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charged {
    pub start: u64,
    pub end: u64,
    pub cause: Cause,
    pub instr: usize,
}

/// The charged intervals of timeline segment `seg`, in time order.
pub fn charged(tl: &Timeline, seg: usize) -> Vec<Charged> {
    let Some(s) = tl.segments.get(seg) else {
        return Vec::new();
    };
    let first = if seg == 0 {
        0
    } else {
        tl.segments[seg - 1].stop + 1
    };
    let instrs = &tl.instrs[first..=s.stop.min(tl.instrs.len().saturating_sub(1))];
    let order = [Unit::Compute, Unit::Dma, Unit::Stop];
    let mut out = Vec::new();
    let mut mark = s.start;
    for unit in order {
        for t in instrs.iter().filter(|t| t.unit == unit) {
            for cause in Cause::ALL {
                let n = cause.of(&t.charge);
                if n > 0 {
                    out.push(Charged {
                        start: mark,
                        end: mark + n,
                        cause,
                        instr: t.index,
                    });
                    mark += n;
                }
            }
        }
    }
    out
}
