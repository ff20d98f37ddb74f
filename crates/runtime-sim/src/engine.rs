//! The two queues, the dependency flags, and the interleaving of start and
//! completion events (docs/ISA.md sections 2 and 3).
//!
//! Every instruction has a start event (its queue's previous instruction has
//! completed and its flag conditions hold) and a completion event (it executes, then
//! clears and sets its flags). Between the two it is in flight, and the other queue
//! may start and complete instructions meanwhile.
//!
//! Race detection is happens-before based: each queue carries a vector clock (how
//! many instructions of each queue it knows to have completed), a completion stores
//! its queue's clock into every flag it changes, and a start joins the clocks of the
//! flags it waited on. An instruction that starts while a conflicting instruction of
//! the other queue is in flight, or has completed without that completion being
//! ordered before this start by flags, is a race: some interleaving the flags allow
//! runs the two at the same time (docs/ISA.md 3.3). So a missing flag is reported
//! under every schedule, not only under the one that happens to overlap the two.

use crate::error::{state_text, ExecError, Hazard, HazardKind, InstrRef, SimError};
use crate::exec::dot::DotPrep;
use crate::exec::patch_cache::PatchCache;
use crate::exec::weight_cache::WeightCache;
use crate::exec::{self, Caches, ExecStats, Prep};
use crate::footprint::{Footprint, Footprints};
use crate::memory::{Dram, Memory};
use crate::rng::SplitMix64;
use crate::stats::{OverflowSite, RunStats};
use nnac_isa::{Class, FlagOps, FlagSet, HwConfig, Instr};

/// How the two queues are interleaved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// One stream in program order: each instruction starts and completes before the
    /// next; an instruction whose flags do not allow it to start is a deadlock.
    Serial,
    /// Start whatever can start (DMA queue first), complete the oldest in-flight
    /// instruction only when nothing can start: maximal overlap.
    #[default]
    Eager,
    /// Pick uniformly among the possible events, from a seeded generator.
    Random { seed: u64 },
}

const DMA: usize = 0;
const COMPUTE: usize = 1;
const QUEUE_NAMES: [&str; 2] = ["DMA", "compute"];

/// Instruction indices of one queue and how far it has got.
#[derive(Debug, Default)]
struct Queue {
    instrs: Vec<usize>,
    started: usize,
    completed: usize,
}

impl Queue {
    fn in_flight(&self) -> Option<usize> {
        (self.started > self.completed).then(|| self.instrs[self.completed])
    }
    fn head(&self) -> Option<usize> {
        (self.started == self.completed)
            .then(|| self.instrs.get(self.started).copied())
            .flatten()
    }
    fn drained(&self) -> bool {
        self.completed == self.instrs.len()
    }
}

/// One possible next event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Start(usize),
    Complete(usize),
    Stop,
}

/// The machine while a program runs.
pub struct Engine<'a> {
    instrs: &'a [Instr],
    /// Computed on demand: only instructions that start while the other queue has
    /// one in flight (or completed unordered) need theirs.
    fps: &'a Footprints<'a>,
    hw: &'a HwConfig,
    queues: [Queue; 2],
    /// Index ranges of the segments, each ending with its STOP.
    segments: Vec<std::ops::Range<usize>>,
    /// The segment running now.
    current: std::ops::Range<usize>,
    stop: usize,
    flags: FlagSet,
    /// `clock[q][r]`: instructions of queue `r` known by queue `q` to have completed.
    clock: [[usize; 2]; 2],
    flag_clock: Vec<[usize; 2]>,
    pub dram: Dram<'a>,
    pub sram: Memory,
    pub stats: RunStats,
    /// Prepared dot-product instructions kept between executions, by instruction
    /// index (see [`exec::Prep::Keep`]), for the instructions `keep` marks; the
    /// others are prepared afresh each time. Whoever sets `keep` guarantees that a
    /// marked instruction's parameter bytes never change.
    pub preps: Vec<Option<DotPrep>>,
    /// The last dot product's gathered input patches (`exec::patch_cache`), dropped
    /// when an instruction writes the SRAM they were gathered from, and at every run.
    patches: PatchCache,
    /// Converted tile weights shared by the instructions reading the same weights
    /// (`exec::weight_cache`), dropped when an instruction writes their bytes.
    weights: WeightCache,
    pub keep: Vec<bool>,
}

fn queue_of(i: &Instr) -> Option<usize> {
    match i.class() {
        Class::Dma => Some(DMA),
        Class::Compute => Some(COMPUTE),
        Class::Control => None,
    }
}

fn iref(instrs: &[Instr], index: usize) -> InstrRef {
    InstrRef {
        index,
        mnemonic: instrs[index].mnemonic(),
    }
}

impl<'a> Engine<'a> {
    /// `instrs` must end with STOP (the decoder guarantees it).
    pub fn new(
        instrs: &'a [Instr],
        fps: &'a Footprints<'a>,
        hw: &'a HwConfig,
        dram: Dram<'a>,
        sram: Memory,
    ) -> Engine<'a> {
        Engine {
            instrs,
            fps,
            hw,
            queues: [Queue::default(), Queue::default()],
            segments: nnac_isa::instr::segments(instrs),
            current: 0..0,
            stop: 0,
            flags: FlagSet::EMPTY,
            clock: [[0; 2]; 2],
            flag_clock: vec![[0; 2]; hw.flags as usize],
            dram,
            sram,
            stats: RunStats::default(),
            preps: std::iter::repeat_with(|| None).take(instrs.len()).collect(),
            patches: PatchCache::default(),
            weights: WeightCache::default(),
            keep: Vec::new(),
        }
    }

    fn ops(&self, index: usize) -> &FlagOps {
        self.instrs[index].flags()
    }

    fn can_start(&self, q: usize) -> bool {
        self.queues[q]
            .head()
            .is_some_and(|i| self.ops(i).ready(self.flags))
    }

    fn stop_ready(&self) -> bool {
        self.queues.iter().all(Queue::drained) && self.ops(self.stop).ready(self.flags)
    }

    fn events(&self) -> Vec<Event> {
        let mut ev = Vec::with_capacity(4);
        for q in [DMA, COMPUTE] {
            if self.can_start(q) {
                ev.push(Event::Start(q));
            }
            if self.queues[q].in_flight().is_some() {
                ev.push(Event::Complete(q));
            }
        }
        if self.stop_ready() {
            ev.push(Event::Stop);
        }
        ev
    }

    /// Loads segment `k` into the queues; flags and clocks start clear.
    fn enter_segment(&mut self, k: usize) {
        let r = self.segments[k].clone();
        self.queues = [Queue::default(), Queue::default()];
        for i in r.start..r.end {
            if let Some(q) = queue_of(&self.instrs[i]) {
                self.queues[q].instrs.push(i);
            }
        }
        self.stop = r.end - 1;
        self.current = r;
        self.flags = FlagSet::EMPTY;
        self.clock = [[0; 2]; 2];
        self.flag_clock.iter_mut().for_each(|c| *c = [0; 2]);
    }

    /// Number of segments (STOPs) of the program.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Runs segments `segs` (all: `0..segment_count()`) to their STOPs under
    /// `schedule`; after segment `k`'s STOP (queues drained, flags cleared) calls
    /// `host(k, dram, stats)`. DRAM and SRAM keep their contents between calls (a
    /// prologue, then the body once per frame).
    pub fn run(
        &mut self,
        schedule: Schedule,
        segs: std::ops::Range<usize>,
        host: &mut dyn FnMut(usize, &mut Dram, &mut RunStats) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        self.patches.clear();
        let mut rng = SplitMix64::new(match schedule {
            Schedule::Random { seed } => seed,
            _ => 0,
        });
        for k in segs {
            self.enter_segment(k);
            match schedule {
                Schedule::Serial => self.run_serial()?,
                Schedule::Eager => self.run_with(|ev, eng| eng.eager_pick(ev))?,
                Schedule::Random { .. } => self.run_with(|ev, _| ev[rng.below(ev.len())])?,
            }
            self.flags = FlagSet::EMPTY;
            self.stats.segments += 1;
            host(k, &mut self.dram, &mut self.stats)?;
        }
        Ok(())
    }

    fn run_serial(&mut self) -> Result<(), SimError> {
        for index in self.current.clone() {
            let Some(q) = queue_of(&self.instrs[index]) else {
                if !self.stop_ready() {
                    return Err(self.deadlock("serial schedule"));
                }
                return Ok(());
            };
            if !self.can_start(q) {
                return Err(self.deadlock("serial schedule (program order)"));
            }
            self.start(q)?;
            self.complete(q)?;
        }
        Ok(())
    }

    fn eager_pick(&self, ev: &[Event]) -> Event {
        let oldest_completion = ev
            .iter()
            .filter_map(|e| match e {
                Event::Complete(q) => self.queues[*q].in_flight().map(|i| (i, *e)),
                _ => None,
            })
            .min_by_key(|(i, _)| *i);
        ev.iter()
            .copied()
            .find(|e| matches!(e, Event::Start(_)))
            .or(oldest_completion.map(|(_, e)| e))
            .unwrap_or(ev[0])
    }

    fn run_with(&mut self, mut pick: impl FnMut(&[Event], &Self) -> Event) -> Result<(), SimError> {
        loop {
            let ev = self.events();
            if ev.is_empty() {
                return Err(self.deadlock("both queues wait forever"));
            }
            match pick(&ev, self) {
                Event::Start(q) => self.start(q)?,
                Event::Complete(q) => self.complete(q)?,
                Event::Stop => return Ok(()),
            }
        }
    }

    fn start(&mut self, q: usize) -> Result<(), SimError> {
        let j = self.queues[q].head().expect("start only at a ready head");
        let ops = *self.ops(j);
        for f in ops.wait_set.union(ops.wait_clear).iter() {
            self.clock[q] = join(self.clock[q], self.flag_clock[f as usize]);
        }
        self.check_races(q, j)?;
        let o = 1 - q;
        if self.queues[o].in_flight().is_some() {
            self.stats.overlapped_starts += 1;
        }
        self.queues[q].started += 1;
        Ok(())
    }

    /// Races of `j` (starting in queue `q`) with instructions of the other queue that
    /// are in flight or completed but not known to `q`.
    fn check_races(&self, q: usize, j: usize) -> Result<(), SimError> {
        let o = 1 - q;
        let other = &self.queues[o];
        for &i in &other.instrs[self.clock[q][o].min(other.started)..other.started] {
            let (e, l) = (i.min(j), i.max(j));
            if let Some((kind, range)) = conflict(self.fps.get(e), self.fps.get(l)) {
                return Err(SimError::Hazard(Box::new(Hazard {
                    kind,
                    earlier: iref(self.instrs, e),
                    earlier_flags: *self.ops(e),
                    later: iref(self.instrs, l),
                    later_flags: *self.ops(l),
                    range,
                    state: self.flags,
                    started: iref(self.instrs, j),
                })));
            }
        }
        Ok(())
    }

    fn complete(&mut self, q: usize) -> Result<(), SimError> {
        let j = self.queues[q]
            .in_flight()
            .expect("complete only in-flight instructions");
        let at = iref(self.instrs, j);
        let prep = match self.keep.get(j) {
            Some(true) => Prep::Keep(&mut self.preps[j]),
            _ => Prep::Fresh,
        };
        let instr = &self.instrs[j];
        let caches = Caches {
            patches: &mut self.patches,
            weights: &mut self.weights,
        };
        let st = exec::execute(instr, self.hw, &mut self.dram, &mut self.sram, prep, caches)
            .map_err(|error| SimError::Instr { at, error })?;
        let writes = self.fps.write_hull(j);
        self.patches.note_write(writes);
        self.weights.note_write(writes);
        self.record(j, &st);
        self.apply_flags(j)?;
        self.queues[q].completed += 1;
        self.clock[q][q] = self.queues[q].completed;
        let ops = *self.ops(j);
        for f in ops.set.union(ops.clear).iter() {
            let fc = &mut self.flag_clock[f as usize];
            *fc = join(*fc, self.clock[q]);
        }
        Ok(())
    }

    /// Clears then sets the instruction's flags; setting a set flag or clearing a
    /// clear one is a program error (docs/ISA.md 3.1).
    fn apply_flags(&mut self, j: usize) -> Result<(), SimError> {
        let ops = *self.ops(j);
        let not_set: Vec<u32> = ops
            .clear
            .iter()
            .filter(|&f| !self.flags.contains(f))
            .collect();
        let already: Vec<u32> = ops
            .set
            .iter()
            .filter(|&f| self.flags.contains(f) && !ops.clear.contains(f))
            .collect();
        let err = |what: &'static str, s: &[u32]| SimError::Instr {
            at: iref(self.instrs, j),
            error: ExecError::FlagState {
                what,
                flags: FlagSet::of(s),
                state: self.flags,
            },
        };
        if !not_set.is_empty() {
            return Err(err("clears flags that are already clear:", &not_set));
        }
        if !already.is_empty() {
            return Err(err("sets flags that are already set:", &already));
        }
        self.flags = ops.apply(self.flags);
        Ok(())
    }

    fn record(&mut self, j: usize, st: &ExecStats) {
        let s = &mut self.stats;
        s.instructions += 1;
        match queue_of(&self.instrs[j]) {
            Some(DMA) => s.dma_instructions += 1,
            _ => s.compute_instructions += 1,
        }
        s.macs += st.macs;
        s.dma_bytes += st.dma_bytes;
        s.acc_overflows += st.overflows;
        if let (None, Some((pixel, channel))) = (s.first_overflow, st.first_overflow) {
            s.first_overflow = Some(OverflowSite {
                index: j,
                mnemonic: self.instrs[j].mnemonic(),
                pixel,
                channel,
            });
        }
    }

    fn describe_queue(&self, q: usize) -> String {
        let queue = &self.queues[q];
        match (queue.in_flight(), queue.head()) {
            (Some(i), _) => format!(
                "{} queue: {} in flight",
                QUEUE_NAMES[q],
                iref(self.instrs, i)
            ),
            (None, Some(i)) => format!(
                "{} queue: {} {}",
                QUEUE_NAMES[q],
                iref(self.instrs, i),
                self.unmet(i)
            ),
            (None, None) => format!("{} queue: drained", QUEUE_NAMES[q]),
        }
    }

    fn unmet(&self, i: usize) -> String {
        let ops = self.ops(i);
        let need_set: Vec<u32> = ops
            .wait_set
            .iter()
            .filter(|&f| !self.flags.contains(f))
            .collect();
        let need_clear: Vec<u32> = ops
            .wait_clear
            .iter()
            .filter(|&f| self.flags.contains(f))
            .collect();
        let mut parts = Vec::new();
        if !need_set.is_empty() {
            parts.push(format!(
                "waits for {} to be set",
                FlagSet::of(&need_set).to_text()
            ));
        }
        if !need_clear.is_empty() {
            parts.push(format!(
                "waits for {} to be clear",
                FlagSet::of(&need_clear).to_text()
            ));
        }
        if parts.is_empty() {
            "can start".to_string()
        } else {
            parts.join(" and ")
        }
    }

    fn deadlock(&self, why: &str) -> SimError {
        let mut parts = vec![self.describe_queue(DMA), self.describe_queue(COMPUTE)];
        if self.queues.iter().all(Queue::drained) {
            parts.push(format!(
                "STOP {} {}",
                iref(self.instrs, self.stop),
                self.unmet(self.stop)
            ));
        } else if why.starts_with("serial") {
            let next = (0..self.instrs.len())
                .find(|&i| {
                    queue_of(&self.instrs[i]).is_some_and(|q| self.queues[q].head() == Some(i))
                })
                .map(|i| {
                    format!(
                        "next in program order: {} {}",
                        iref(self.instrs, i),
                        self.unmet(i)
                    )
                });
            parts.extend(next);
        }
        SimError::Deadlock(format!(
            "{why}: {}; flag state {}",
            parts.join("; "),
            state_text(self.flags)
        ))
    }
}

/// Component-wise maximum of two vector clocks.
fn join(a: [usize; 2], b: [usize; 2]) -> [usize; 2] {
    [a[0].max(b[0]), a[1].max(b[1])]
}

/// The first conflict between `e` (earlier in program order) and `l` (later).
fn conflict(e: &Footprint, l: &Footprint) -> Option<(HazardKind, (u64, u64))> {
    if let Some(r) = l.sram_reads.first_overlap(&e.sram_writes) {
        return Some((HazardKind::ReadAfterWrite, r));
    }
    if let Some(r) = l.sram_writes.first_overlap(&e.sram_reads) {
        return Some((HazardKind::WriteAfterRead, r));
    }
    l.sram_writes
        .first_overlap(&e.sram_writes)
        .map(|r| (HazardKind::WriteAfterWrite, r))
}
