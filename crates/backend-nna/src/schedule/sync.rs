//! Dependency flags. Two schemes:
//!
//! [`assign`] (the default): from the SRAM buffers every instruction reads and
//! writes, each instruction `j` waits for the latest instruction `i < j` of the other
//! queue whose buffers overlap its own with at least one write (RAW, WAR, WAW), unless
//! an earlier instruction of its queue already waited for `i` or later. Such an edge
//! gets a flag (a fresh one while any is left, else the reusable one whose previous
//! waiter is oldest; if a segment runs out that way, it is assigned again reusing the
//! first reusable flag, which needs fewer): `i` sets it, `j` waits for it and clears
//! it. Two instructions that both carry their exact SRAM bytes ([`Access::bytes`]:
//! those touching a buffer moved by DMA in bands of rows) overlap only if those bytes
//! meet. A flag is reused for a later edge `(i', j')` only if its previous waiter `j`
//! ran on `j'`'s queue (so `j'` starts after `j` cleared it and never sees the old set
//! state) and lies before `i'` in program order; `i'` (on the previous setter's queue)
//! waits until the flag is clear before it can set it again. Every wait then points
//! backwards in program order, so no interleaving deadlocks; no flag is set twice or
//! cleared twice; and every conflicting pair of instructions in different queues is
//! ordered.
//!
//! [`serialise`] (the fallback when flags run out): the program runs in program order.
//!
//! Both work per segment: a STOP (a host-op boundary, docs/ISA.md 2.1) drains both
//! queues and clears every flag, so instructions in different segments need no flag
//! and every segment starts with all flags free.
//!
//! Consecutive instructions of one queue are ordered by the queue itself. Where the
//! program switches queue (instruction `i` on one queue, `i+1` on the other), `i`
//! sets a hand-over flag on completion and `i+1` waits for it and clears it on its
//! own completion. Hand-over `k` uses flag `k % 2`: when hand-over `k+2` sets that
//! flag again, hand-over `k`'s waiter (which cleared it) has completed, because every
//! instruction completes before the next one in program order starts. So no two
//! instructions are ever in flight at once (no race on any byte), no flag is set
//! twice or cleared twice, and two flags suffice. This serialises the queues
//! completely (no DMA/compute overlap); a buffer-based assignment is future work.

use crate::base::job::BufId;
use nnac_isa::hazard::{footprint, Intervals};
use nnac_isa::{Class, HwConfig, Instr};
use std::ops::Range;

/// Flags the serialising scheme needs.
pub(crate) const FLAGS_USED: u32 = 2;

/// The SRAM bytes an instruction reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SramBytes {
    pub reads: Intervals,
    pub writes: Intervals,
}

/// The SRAM bytes `ins` reads and writes (`nnac_isa::hazard::footprint`).
pub(crate) fn sram_footprint(ins: &Instr, hw: &HwConfig) -> SramBytes {
    let f = footprint(ins, hw);
    SramBytes {
        reads: f.sram_reads,
        writes: f.sram_writes,
    }
}

/// Buffers one instruction reads and writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Access {
    pub reads: Vec<BufId>,
    pub writes: Vec<BufId>,
    /// The exact SRAM bytes the instruction reads and writes (`sram_footprint`),
    /// kept for the instructions that touch a buffer moved by DMA in bands
    /// (`Lowered::banded`). Two instructions that both have it conflict only if
    /// these bytes overlap, so the DMA of one band waits only for the tiles that
    /// write (or read) that band; any other pair compares whole buffers.
    pub bytes: Option<Box<SramBytes>>,
}

fn overlaps(a: Range<u64>, b: Range<u64>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Whether two instructions with SRAM bytes `a` and `b` conflict: one writes a byte
/// the other reads or writes (RAW, WAR, WAW).
pub(crate) fn bytes_conflict(a: &SramBytes, b: &SramBytes) -> bool {
    let meet = |p: &Intervals, q: &Intervals| p.first_overlap(q).is_some();
    meet(&a.writes, &b.writes) || meet(&a.writes, &b.reads) || meet(&a.reads, &b.writes)
}

fn conflict(x: &Access, y: &Access, span: &dyn Fn(BufId) -> Range<u64>) -> bool {
    if let (Some(a), Some(b)) = (&x.bytes, &y.bytes) {
        return bytes_conflict(a, b);
    }
    let any = |p: &[BufId], q: &[BufId]| {
        p.iter()
            .any(|&a| q.iter().any(|&b| overlaps(span(a), span(b))))
    };
    any(&x.writes, &y.writes) || any(&x.writes, &y.reads) || any(&x.reads, &y.writes)
}

/// The cross-queue edges `(i, j)`: `j` must start after `i` completes.
fn edges(
    instrs: &[Instr],
    acc: &[Access],
    span: &dyn Fn(BufId) -> Range<u64>,
) -> Vec<(usize, usize)> {
    // Per queue: instruction indices, and the latest other-queue index already waited for.
    let mut queues: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    let mut covered: [Option<usize>; 2] = [None, None];
    let mut out = Vec::new();
    for j in 0..instrs.len() {
        let q = usize::from(is_dma(&instrs[j]));
        let other = &queues[1 - q];
        let need = other
            .iter()
            .rev()
            .take_while(|&&i| covered[q].is_none_or(|c| i > c))
            .find(|&&i| conflict(&acc[i], &acc[j], span))
            .copied();
        if let Some(i) = need {
            covered[q] = Some(i);
            out.push((i, j));
        }
        queues[q].push(j);
    }
    out
}

/// The runs of instructions between STOPs (STOPs excluded).
fn segments(instrs: &[Instr]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, ins) in instrs.iter().enumerate() {
        if ins.class() == Class::Control {
            out.push(start..i);
            start = i + 1;
        }
    }
    out.push(start..instrs.len());
    out
}

/// Assigns flags for the edges of `instrs`, segment by segment. `span(b)` is
/// buffer `b`'s SRAM range. Returns the most flags a segment uses, or `None` if
/// `max_flags` do not suffice.
pub(crate) fn assign(
    instrs: &mut [Instr],
    acc: &[Access],
    span: &dyn Fn(BufId) -> Range<u64>,
    max_flags: u32,
) -> Option<u32> {
    let mut used = 0;
    for r in segments(instrs) {
        let (seg, acc) = (&mut instrs[r.clone()], &acc[r]);
        let edges = edges(seg, acc, span);
        let n = assign_segment(seg, &edges, max_flags, true)
            .or_else(|| assign_segment(seg, &edges, max_flags, false))?;
        used = used.max(n);
    }
    Some(used)
}

/// Flags for the `edges` of one segment. With `fresh_first`, a new flag while any
/// is left, else the reusable one whose previous waiter is oldest; without, the
/// first reusable one (fewest flags: the fallback when the first way runs out).
/// Changes `instrs` only when it succeeds.
fn assign_segment(
    instrs: &mut [Instr],
    edges: &[(usize, usize)],
    max_flags: u32,
    fresh_first: bool,
) -> Option<u32> {
    // Per flag: its last edge.
    let mut last: Vec<(usize, usize)> = Vec::new();
    let mut plan = Vec::with_capacity(edges.len());
    for &(i, j) in edges {
        // A fresh flag while there is one: reusing a flag makes its new setter wait
        // for the previous waiter (below), a dependency the program does not have.
        // Then the reusable flag with the oldest previous waiter (the likeliest to be
        // done): one whose previous waiter ran on `j`'s queue (so `j` cannot see the
        // old set state) and lies before `i` in program order.
        let mut reusable = last
            .iter()
            .enumerate()
            .filter(|&(_, &(_, pj))| pj < i && is_dma(&instrs[pj]) == is_dma(&instrs[j]));
        let free = if fresh_first {
            reusable.min_by_key(|&(_, &(_, pj))| pj).map(|(f, _)| f)
        } else {
            reusable.next().map(|(f, _)| f)
        };
        let fresh = fresh_first || free.is_none();
        let f = match free {
            _ if fresh && (last.len() as u32) < max_flags => {
                last.push((i, j));
                last.len() - 1
            }
            Some(f) => f,
            None => return None,
        };
        // A previous setter on `i`'s queue has completed, but its waiter may not have
        // cleared the flag yet: wait for that.
        let reused = last[f] != (i, j);
        last[f] = (i, j);
        plan.push((i, j, f as u32, reused));
    }
    for (i, j, f, wait_clear) in plan {
        let s = instrs[i].flags_mut();
        s.set.insert(f);
        if wait_clear {
            s.wait_clear.insert(f);
        }
        let w = instrs[j].flags_mut();
        w.wait_set.insert(f);
        w.clear.insert(f);
    }
    Some(last.len() as u32)
}

fn is_dma(i: &Instr) -> bool {
    i.class() == Class::Dma
}

/// Adds the hand-over flags to `instrs` (without the final STOP), segment by
/// segment.
pub(crate) fn serialise(instrs: &mut [Instr]) {
    for r in segments(instrs) {
        serialise_segment(&mut instrs[r]);
    }
}

fn serialise_segment(instrs: &mut [Instr]) {
    let mut handover = 0u32;
    for i in 1..instrs.len() {
        if is_dma(&instrs[i - 1]) != is_dma(&instrs[i]) {
            let f = handover % FLAGS_USED;
            handover += 1;
            let prev = instrs[i - 1].flags_mut();
            prev.set.insert(f);
            let next = instrs[i].flags_mut();
            next.wait_set.insert(f);
            next.clear.insert(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::{Dma, DotProduct};

    fn acc(r: &[usize], w: &[usize]) -> Access {
        Access {
            reads: r.iter().map(|&b| BufId::new(b)).collect(),
            writes: w.iter().map(|&b| BufId::new(b)).collect(),
            bytes: None,
        }
    }

    #[test]
    fn assign_orders_only_conflicts_and_reuses_flags() {
        let d = || Instr::DmaRead(Dma::default());
        let c = || Instr::Conv(DotProduct::default());
        // load b0, load b1, conv b0->b2, load b3 (free), conv b1->b0 (WAR on b0's reader? no:
        // writes b0 which the load at 0 wrote: WAW with instr 0 on the DMA queue).
        let mut p = vec![d(), d(), c(), d(), c()];
        let a = vec![
            acc(&[], &[0]),
            acc(&[], &[1]),
            acc(&[0], &[2]),
            acc(&[], &[3]),
            acc(&[1], &[0]),
        ];
        let span = |b: BufId| b.index() as u64 * 100..b.index() as u64 * 100 + 50;
        let n = assign(&mut p, &a, &span, 8).unwrap();
        // Edges: 0 -> 2 (RAW b0), 1 -> 4 (RAW b1). The load at 3 waits for nothing.
        assert_eq!(p[0].flags().set.to_text(), "F0");
        assert_eq!(p[2].flags().wait_set.to_text(), "F0");
        assert!(p[3].flags().all().is_empty());
        assert_eq!(p[4].flags().wait_set.to_text(), "F1");
        assert_eq!(p[1].flags().set.to_text(), "F1");
        assert_eq!(n, 2);
        assert_eq!(assign(&mut [d(), d(), c(), d(), c()], &a, &span, 1), None);
    }

    #[test]
    fn fresh_flags_first_then_the_oldest_waiter() {
        let d = || Instr::DmaRead(Dma::default());
        let c = || Instr::Conv(DotProduct::default());
        // load b0, conv reads b0, load b1, conv reads b1, load b2, conv reads b2.
        let prog = || vec![d(), c(), d(), c(), d(), c()];
        let a = vec![
            acc(&[], &[0]),
            acc(&[0], &[3]),
            acc(&[], &[1]),
            acc(&[1], &[4]),
            acc(&[], &[2]),
            acc(&[2], &[5]),
        ];
        let span = |b: BufId| b.index() as u64 * 100..b.index() as u64 * 100 + 50;
        // Flags to spare: three fresh ones, no load waits for a conv.
        let mut p = prog();
        assert_eq!(assign(&mut p, &a, &span, 8), Some(3));
        assert!(p.iter().all(|i| i.flags().wait_clear.is_empty()));
        assert_eq!(p[4].flags().set.to_text(), "F2");
        // Two flags: the third edge reuses the flag whose waiter is oldest (F0, the
        // conv at 1), so the third load waits for that conv to clear it.
        let mut p = prog();
        assert_eq!(assign(&mut p, &a, &span, 2), Some(2));
        assert_eq!(p[4].flags().set.to_text(), "F0");
        assert_eq!(p[4].flags().wait_clear.to_text(), "F0");
        assert_eq!(p[5].flags().wait_set.to_text(), "F0");
    }

    #[test]
    fn hands_over_at_each_queue_switch() {
        let d = || Instr::DmaRead(Dma::default());
        let c = || Instr::Conv(DotProduct::default());
        let mut p = vec![d(), d(), c(), c(), Instr::DmaWrite(Dma::default())];
        serialise(&mut p);
        assert!(p[0].flags().all().is_empty());
        assert_eq!(p[1].flags().set.to_text(), "F0");
        assert_eq!(p[2].flags().wait_set.to_text(), "F0");
        assert_eq!(p[2].flags().clear.to_text(), "F0");
        assert!(p[2].flags().set.is_empty());
        assert_eq!(p[3].flags().set.to_text(), "F1");
        assert_eq!(p[4].flags().wait_set.to_text(), "F1");
        assert_eq!(p[4].flags().clear.to_text(), "F1");
    }
}
