//! The sweep over the reachable states of the two queues (model: see the module docs
//! of [`super`]).
//!
//! A state is `(i, j, phase)`: `i` DMA and `j` compute instructions have completed,
//! and `phase` says whether each queue's head is in flight. Every transition either
//! starts a head (same `i`, `j`) or completes one (`i+1` or `j+1`), so sweeping `i`
//! upwards, and within a row `j` upwards with phases in the order below, visits every
//! state after all its predecessors. Only two rows are kept, and only the span of `j`
//! actually reached in a row is swept.

use super::footprint::Space;
use super::queues::{hulls_meet, Queued, Queues};
use super::report::{
    suggest, Blocked, Conflict, Deadlock, FlagError, FlagErrorKind, HazardReport, Progress, Race,
    RaceKind,
};
use super::MAX_FINDINGS;
use crate::flags::FlagSet;
use std::collections::BTreeSet;

/// Neither head in flight.
const IDLE: u8 = 1;
/// DMA head in flight.
const DMA: u8 = 2;
/// Compute head in flight.
const COMP: u8 = 4;
/// Both in flight.
const BOTH: u8 = 8;

pub struct Explorer<'a> {
    q: &'a Queues,
    pub report: HazardReport,
    seen_flag_errors: BTreeSet<(usize, u32, FlagErrorKind)>,
}

impl<'a> Explorer<'a> {
    pub fn new(q: &'a Queues, report: HazardReport) -> Self {
        Explorer {
            q,
            report,
            seen_flag_errors: BTreeSet::new(),
        }
    }

    /// Visits every reachable state.
    pub fn run(&mut self) {
        let q = self.q;
        let (m, n) = (q.dma.len(), q.compute.len());
        let mut cur = vec![0u8; n + 2];
        let mut next = vec![0u8; n + 2];
        cur[0] = IDLE;
        let (mut lo, mut hi) = (0usize, 0usize);
        for i in 0..=m {
            let (mut nlo, mut nhi) = (usize::MAX, 0usize);
            let mut j = lo;
            while j <= hi {
                if cur[j] != 0 {
                    let mask = self.cell(i, j, cur[j]);
                    cur[j] = 0;
                    if mask & (COMP | BOTH) != 0 && self.completes(&q.compute[j], i, j) {
                        cur[j + 1] |= if mask & COMP != 0 { IDLE } else { 0 };
                        cur[j + 1] |= if mask & BOTH != 0 { DMA } else { 0 };
                        hi = hi.max(j + 1);
                    }
                    if mask & (DMA | BOTH) != 0 && self.completes(&q.dma[i], i, j) {
                        next[j] |= if mask & DMA != 0 { IDLE } else { 0 };
                        next[j] |= if mask & BOTH != 0 { COMP } else { 0 };
                        (nlo, nhi) = (nlo.min(j), nhi.max(j));
                    }
                }
                j += 1;
            }
            if nlo == usize::MAX {
                break;
            }
            std::mem::swap(&mut cur, &mut next);
            (lo, hi) = (nlo, nhi);
        }
    }

    /// Adds the starts possible in cell (i, j), reports what the cell shows, and
    /// returns the completed phase mask.
    fn cell(&mut self, i: usize, j: usize, mut mask: u8) -> u8 {
        self.report.states += 1;
        let (m, n) = (self.q.dma.len(), self.q.compute.len());
        let dma_ready = i < m && mask & (IDLE | COMP) != 0 && self.q.ready(&self.q.dma[i], i, j);
        let comp_ready =
            j < n && mask & (IDLE | DMA) != 0 && self.q.ready(&self.q.compute[j], i, j);
        if mask & IDLE != 0 {
            mask |= if dma_ready { DMA } else { 0 } | if comp_ready { COMP } else { 0 };
            let finished = i == m && j == n && self.q.ready(&self.q.stop, i, j);
            if !dma_ready && !comp_ready && !finished {
                self.deadlock(i, j);
            }
        }
        if (mask & DMA != 0 && comp_ready) || (mask & COMP != 0 && dma_ready) {
            mask |= BOTH;
        }
        if mask & BOTH != 0 {
            self.race(i, j);
        }
        mask
    }

    fn at(i: usize, j: usize) -> Progress {
        Progress {
            dma_done: i,
            compute_done: j,
        }
    }

    fn full(&mut self, len: usize) -> bool {
        if len >= MAX_FINDINGS {
            self.report.suppressed += 1;
            return true;
        }
        false
    }

    /// Checks the flag effects of `q` completing in state (i, j); false (and the
    /// path is cut, as the simulator stops there) on a flag error.
    fn completes(&mut self, q: &Queued, i: usize, j: usize) -> bool {
        let mut ok = true;
        let bad_clear = q
            .must_be_set
            .iter()
            .filter(|&&f| self.q.value(i, j, f) <= 0);
        let bad_set = q
            .must_be_clear
            .iter()
            .filter(|&&f| self.q.value(i, j, f) > 0);
        let errors: Vec<(u32, FlagErrorKind)> = bad_clear
            .map(|&f| (f, FlagErrorKind::ClearWhileClear))
            .chain(bad_set.map(|&f| (f, FlagErrorKind::SetWhileSet)))
            .collect();
        for (flag, kind) in errors {
            ok = false;
            if !self.seen_flag_errors.insert((q.r.index, flag, kind)) {
                continue;
            }
            if self.full(self.report.flag_errors.len()) {
                continue;
            }
            self.report.flag_errors.push(FlagError {
                instr: q.r,
                flag,
                kind,
                at: Self::at(i, j),
            });
        }
        ok
    }

    fn blocked(&self, q: &Queued, i: usize, j: usize) -> Blocked {
        let needs_set: Vec<u32> = q
            .wait_set
            .iter()
            .copied()
            .filter(|&f| self.q.value(i, j, f) <= 0)
            .collect();
        let needs_clear: Vec<u32> = q
            .wait_clear
            .iter()
            .copied()
            .filter(|&f| self.q.value(i, j, f) > 0)
            .collect();
        let never = needs_set
            .iter()
            .copied()
            .filter(|&f| !self.q.ever_set.contains(f))
            .chain(
                needs_clear
                    .iter()
                    .copied()
                    .filter(|&f| !self.q.ever_cleared.contains(f)),
            )
            .collect::<Vec<_>>();
        Blocked {
            instr: q.r,
            needs_set: FlagSet::of(&needs_set),
            needs_clear: FlagSet::of(&needs_clear),
            never: FlagSet::of(&never),
        }
    }

    fn deadlock(&mut self, i: usize, j: usize) {
        if self.full(self.report.deadlocks.len()) {
            return;
        }
        let q = self.q;
        let (m, n) = (q.dma.len(), q.compute.len());
        let mut blocked = Vec::new();
        if i < m {
            blocked.push(self.blocked(&q.dma[i], i, j));
        }
        if j < n {
            blocked.push(self.blocked(&q.compute[j], i, j));
        }
        if i == m && j == n {
            blocked.push(self.blocked(&q.stop, i, j));
        }
        self.report.deadlocks.push(Deadlock {
            at: Self::at(i, j),
            flags: q.state(i, j),
            blocked,
        });
    }

    /// Reports the conflicting accesses of DMA head `i` and compute head `j`, both
    /// in flight.
    fn race(&mut self, i: usize, j: usize) {
        let q = self.q;
        let (d, c) = (&q.dma[i], &q.compute[j]);
        if !hulls_meet(d, c) {
            return;
        }
        let conflicts = conflicts(d, c);
        let Some(first) = conflicts.first() else {
            return;
        };
        if self.full(self.report.races.len()) {
            return;
        }
        let (earlier, later) = if d.r.index < c.r.index {
            (d, c)
        } else {
            (c, d)
        };
        let suggestion = suggest(first.kind, (earlier.r, &earlier.ops), (later.r, &later.ops));
        self.report.races.push(Race {
            dma: d.r,
            compute: c.r,
            at: Self::at(i, j),
            conflicts,
            suggestion,
        });
    }
}

/// Every overlapping access pair of `d` (DMA) and `c` (compute), WAW first.
fn conflicts(d: &Queued, c: &Queued) -> Vec<Conflict> {
    let mut out = Vec::new();
    let dma_first = d.r.index < c.r.index;
    for space in [Space::Sram, Space::Dram] {
        let pairs = [
            (d.fp.writes(space), c.fp.writes(space), RaceKind::Waw, true),
            (
                d.fp.writes(space),
                c.fp.reads(space),
                if dma_first {
                    RaceKind::Raw
                } else {
                    RaceKind::War
                },
                true,
            ),
            (
                d.fp.reads(space),
                c.fp.writes(space),
                if dma_first {
                    RaceKind::War
                } else {
                    RaceKind::Raw
                },
                false,
            ),
        ];
        for (a, b, kind, dma_writes) in pairs {
            if let Some(range) = a.first_overlap(b) {
                out.push(Conflict {
                    kind,
                    space,
                    range,
                    dma_writes,
                });
            }
        }
    }
    out
}
