//! The program split into its two queues, with what the exploration needs per
//! instruction: flag lists as small vectors, footprints, and prefix flag counts.

use super::footprint::{footprint, Footprint};
use super::intervals::Intervals;
use super::report::InstrRef;
use crate::flags::{FlagOps, FlagSet};
use crate::hw::HwConfig;
use crate::instr::{Class, Instr};

/// One queued instruction.
pub struct Queued {
    pub r: InstrRef,
    pub ops: FlagOps,
    /// `wait_set`, `wait_clear` as flag numbers.
    pub wait_set: Vec<u32>,
    pub wait_clear: Vec<u32>,
    /// Flags that must be set when it completes (its `clear` list).
    pub must_be_set: Vec<u32>,
    /// Flags that must be clear when it completes (`set` but not `clear`).
    pub must_be_clear: Vec<u32>,
    pub fp: Footprint,
    /// Hull of every SRAM and of every DRAM byte it touches (a quick race filter).
    pub hulls: [Option<(u64, u64)>; 2],
}

fn hull(a: &Intervals, b: &Intervals) -> Option<(u64, u64)> {
    match (a.hull(), b.hull()) {
        (Some(x), Some(y)) => Some((x.0.min(y.0), x.1.max(y.1))),
        (x, y) => x.or(y),
    }
}

/// True if the hulls of `a` and `b` share a byte in some memory.
pub fn hulls_meet(a: &Queued, b: &Queued) -> bool {
    a.hulls.iter().zip(&b.hulls).any(|pair| match pair {
        (Some(x), Some(y)) => x.0 < y.1 && y.0 < x.1,
        _ => false,
    })
}

fn list(s: FlagSet) -> Vec<u32> {
    s.iter().collect()
}

impl Queued {
    pub fn new(r: InstrRef, ins: &Instr, hw: &HwConfig) -> Queued {
        let ops = *ins.flags();
        let set_only = FlagSet::of(
            &ops.set
                .iter()
                .filter(|&f| !ops.clear.contains(f))
                .collect::<Vec<_>>(),
        );
        let fp = footprint(ins, hw);
        let hulls = [
            hull(&fp.sram_reads, &fp.sram_writes),
            hull(&fp.dram_reads, &fp.dram_writes),
        ];
        Queued {
            r,
            ops,
            hulls,
            wait_set: list(ops.wait_set),
            wait_clear: list(ops.wait_clear),
            must_be_set: list(ops.clear),
            must_be_clear: list(set_only),
            fp,
        }
    }
}

/// Per flag, the net number of sets minus clears of the first `k` instructions of a
/// queue, for every `k`. In any interleaving without a flag error each flag
/// alternates clear/set, so its value is (DMA net + compute net) of the completed
/// prefixes: a function of how far each queue has come, not of the order.
pub struct NetCounts {
    flags: usize,
    v: Vec<i32>,
}

impl NetCounts {
    pub fn new(queue: &[Queued], flags: usize) -> NetCounts {
        let mut v = vec![0i32; (queue.len() + 1) * flags];
        for (k, q) in queue.iter().enumerate() {
            let (prev, rest) = v.split_at_mut((k + 1) * flags);
            let row = &mut rest[..flags];
            row.copy_from_slice(&prev[k * flags..]);
            for &f in &q.must_be_clear {
                row[f as usize] += 1;
            }
            for f in q.ops.clear.iter().filter(|&f| !q.ops.set.contains(f)) {
                row[f as usize] -= 1;
            }
        }
        NetCounts { flags, v }
    }

    pub fn get(&self, k: usize, flag: u32) -> i32 {
        self.v[k * self.flags + flag as usize]
    }
}

/// The two queues and STOP.
pub struct Queues {
    pub dma: Vec<Queued>,
    pub compute: Vec<Queued>,
    pub stop: Queued,
    pub dma_net: NetCounts,
    pub compute_net: NetCounts,
    /// Flags some instruction sets / clears.
    pub ever_set: FlagSet,
    pub ever_cleared: FlagSet,
}

impl Queues {
    /// Splits one segment `instrs` (which must end with its only STOP) by class.
    pub fn new(instrs: &[(InstrRef, &Instr)], hw: &HwConfig) -> Queues {
        let (mut dma, mut compute, mut stop) = (Vec::new(), Vec::new(), None);
        let (mut ever_set, mut ever_cleared, mut top) = (FlagSet::EMPTY, FlagSet::EMPTY, 0);
        for &(r, ins) in instrs {
            let q = Queued::new(r, ins, hw);
            ever_set = ever_set.union(q.ops.set);
            ever_cleared = ever_cleared.union(q.ops.clear);
            top = top.max(q.ops.all().highest().map_or(0, |h| h as usize + 1));
            match ins.class() {
                Class::Dma => dma.push(q),
                Class::Compute => compute.push(q),
                Class::Control => stop = Some(q),
            }
        }
        let stop = stop.expect("the caller checked that the program ends with STOP");
        Queues {
            dma_net: NetCounts::new(&dma, top.max(1)),
            compute_net: NetCounts::new(&compute, top.max(1)),
            dma,
            compute,
            stop,
            ever_set,
            ever_cleared,
        }
    }

    /// Value of `flag` once `i` DMA and `j` compute instructions have completed
    /// (> 0: set).
    pub fn value(&self, i: usize, j: usize, flag: u32) -> i32 {
        self.dma_net.get(i, flag) + self.compute_net.get(j, flag)
    }

    /// True if `q` may start in state (i, j).
    pub fn ready(&self, q: &Queued, i: usize, j: usize) -> bool {
        q.wait_set.iter().all(|&f| self.value(i, j, f) > 0)
            && q.wait_clear.iter().all(|&f| self.value(i, j, f) <= 0)
    }

    /// The flags set in state (i, j).
    pub fn state(&self, i: usize, j: usize) -> FlagSet {
        let flags = self.dma_net.flags as u32;
        FlagSet::of(
            &(0..flags)
                .filter(|&f| self.value(i, j, f) > 0)
                .collect::<Vec<_>>(),
        )
    }
}
