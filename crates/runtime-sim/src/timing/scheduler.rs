//! The discrete-event schedule of the DMA queue and the compute queue, synchronized
//! only by the dependency flags (docs/ISA.md section 3): an instruction leaves the
//! head of its queue when its flag conditions hold; on completion it clears, then
//! sets its flags, visible to the other queue at once. A STOP waits for both queues
//! to drain (and its own flags) and ends a segment.
//!
//! The compute queue overlaps consecutive instructions the way the accumulator /
//! shift-register pair allows: the next instruction's MAC work starts when the
//! previous one's last accumulator copy is done, unless it depends on the previous
//! one (its wait lists name a flag the previous one sets or clears, it reads or
//! writes SRAM bytes the previous one writes, or either is SIMD-only work); then it
//! starts at the previous one's completion.

use super::cost::InstrCost;
use super::pipeline::{ComputeUnit, UnitRun};
use super::timeline::{Charge, InstrTiming, SegmentTiming, Timeline, Unit};
use crate::footprint::Footprint;
use nnac_isa::{FlagSet, Instr};

/// Why a compute instruction cannot overlap its predecessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    None,
    /// It depends on the predecessor's flags or SRAM writes.
    Dependency,
    /// It needs the SIMD unit the predecessor is still using.
    Simd,
}

/// A schedule that cannot complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError {
    pub index: Option<usize>,
    pub message: String,
}

fn err(index: Option<usize>, message: impl Into<String>) -> ScheduleError {
    ScheduleError {
        index,
        message: message.into(),
    }
}

fn unit_of(i: &Instr) -> Unit {
    match i.class() {
        nnac_isa::Class::Dma => Unit::Dma,
        nnac_isa::Class::Compute => Unit::Compute,
        nnac_isa::Class::Control => Unit::Stop,
    }
}

/// Everything the scheduler reads.
pub struct Inputs<'a> {
    pub instrs: &'a [Instr],
    pub costs: &'a [InstrCost],
    pub footprints: &'a [Footprint],
}

/// How `next` may follow `prev` on the compute queue. Comparing with the immediate
/// predecessor suffices: every earlier compute instruction has completed by the time
/// the predecessor releases the MAC array (its first accumulator copy waits for the
/// shift register, i.e. for the unload of everything before it).
fn lock(inp: &Inputs, prev: usize, next: usize) -> Lock {
    let simd_only = |i: usize| matches!(inp.costs[i], InstrCost::Simd(_));
    if simd_only(next) || simd_only(prev) {
        return Lock::Simd;
    }
    let (p, n) = (inp.instrs[prev].flags(), inp.instrs[next].flags());
    let waits = n.wait_set.union(n.wait_clear);
    let changes = p.set.union(p.clear);
    let (pf, nf) = (&inp.footprints[prev], &inp.footprints[next]);
    let data = nf.sram_reads.first_overlap(&pf.sram_writes).is_some()
        || nf.sram_writes.first_overlap(&pf.sram_writes).is_some();
    if !waits.intersection(changes).is_empty() || data {
        Lock::Dependency
    } else {
        Lock::None
    }
}

/// The state of one segment's schedule.
struct Segment<'a, 'b> {
    inp: &'b Inputs<'a>,
    seg: usize,
    t0: u64,
    now: u64,
    dma: Vec<usize>,
    comp: Vec<usize>,
    next_dma: usize,
    next_comp: usize,
    dma_ready: u64,
    /// Start of the compute queue's next charged interval (previous release).
    comp_mark: u64,
    prev_comp: Option<usize>,
    unit: ComputeUnit,
    /// Completions not yet applied: (cycle, instruction).
    pending: Vec<(u64, usize)>,
    /// Queue of the last completion applied.
    last_enabler: Unit,
}

impl Timeline {
    fn blank(n: usize) -> Timeline {
        Timeline {
            instrs: (0..n)
                .map(|index| InstrTiming {
                    index,
                    unit: Unit::Stop,
                    segment: 0,
                    start: 0,
                    release: 0,
                    end: 0,
                    charge: Charge::default(),
                })
                .collect(),
            segments: Vec::new(),
        }
    }
}

/// Schedules the whole program. The instruction list must end with a STOP.
pub fn schedule(inp: &Inputs) -> Result<Timeline, ScheduleError> {
    let mut tl = Timeline::blank(inp.instrs.len());
    let mut flags = FlagSet::EMPTY;
    let mut first = 0;
    let mut t = 0;
    for (i, ins) in inp.instrs.iter().enumerate() {
        tl.instrs[i].unit = unit_of(ins);
        if unit_of(ins) != Unit::Stop {
            continue;
        }
        let mut s = Segment::new(inp, tl.segments.len(), t, first..i);
        let end = s.run(&mut tl, &mut flags, i)?;
        tl.segments.push(SegmentTiming {
            start: t,
            end,
            stop: i,
        });
        t = end;
        first = i + 1;
    }
    if first != inp.instrs.len() {
        return Err(err(None, "the program does not end with STOP"));
    }
    Ok(tl)
}

impl<'a, 'b> Segment<'a, 'b> {
    fn new(inp: &'b Inputs<'a>, seg: usize, t0: u64, range: std::ops::Range<usize>) -> Self {
        let (mut dma, mut comp) = (Vec::new(), Vec::new());
        for i in range {
            match unit_of(&inp.instrs[i]) {
                Unit::Dma => dma.push(i),
                _ => comp.push(i),
            }
        }
        Segment {
            inp,
            seg,
            t0,
            now: t0,
            dma,
            comp,
            next_dma: 0,
            next_comp: 0,
            dma_ready: t0,
            comp_mark: t0,
            prev_comp: None,
            unit: ComputeUnit::new(t0),
            pending: Vec::new(),
            last_enabler: Unit::Dma,
        }
    }

    /// The compute head's earliest start (ignoring flags) and why it waits that long.
    fn comp_ready(&self, tl: &Timeline, h: usize) -> (u64, Lock) {
        match self.prev_comp {
            None => (self.t0, Lock::None),
            Some(p) => match lock(self.inp, p, h) {
                Lock::None => (tl.instrs[p].release, Lock::None),
                l => (tl.instrs[p].end, l),
            },
        }
    }

    /// The head that starts next, if one can start before the next completion.
    fn pick(&self, tl: &Timeline, flags: FlagSet) -> Option<(Unit, usize, u64)> {
        let next_done = self.pending.iter().map(|p| p.0).min();
        let ok = |i: usize, s: u64| {
            self.inp.instrs[i].flags().ready(flags) && next_done.is_none_or(|d| s < d)
        };
        let dma = self
            .dma
            .get(self.next_dma)
            .map(|&i| (Unit::Dma, i, self.dma_ready.max(self.now)));
        let comp = self
            .comp
            .get(self.next_comp)
            .map(|&i| (Unit::Compute, i, self.comp_ready(tl, i).0.max(self.now)));
        [dma, comp]
            .into_iter()
            .flatten()
            .filter(|&(_, i, s)| ok(i, s))
            .min_by_key(|&(u, _, s)| (s, u))
    }

    fn run(
        &mut self,
        tl: &mut Timeline,
        flags: &mut FlagSet,
        stop: usize,
    ) -> Result<u64, ScheduleError> {
        loop {
            if let Some((u, i, s)) = self.pick(tl, *flags) {
                match u {
                    Unit::Dma => self.start_dma(tl, i, s),
                    _ => self.start_comp(tl, i, s),
                }
                continue;
            }
            if let Some(k) = (0..self.pending.len()).min_by_key(|&k| self.pending[k]) {
                let (t, i) = self.pending.swap_remove(k);
                self.now = self.now.max(t);
                self.complete(i, flags)?;
                continue;
            }
            if self.next_dma < self.dma.len() || self.next_comp < self.comp.len() {
                return Err(self.deadlock(*flags));
            }
            if !self.inp.instrs[stop].flags().ready(*flags) {
                return Err(err(
                    Some(stop),
                    format!(
                        "STOP waits forever for its flags (flag state {})",
                        flags.to_text()
                    ),
                ));
            }
            return Ok(self.finish(tl, stop));
        }
    }

    fn record(&self, tl: &mut Timeline, i: usize, start: u64, release: u64, end: u64) {
        let r = &mut tl.instrs[i];
        r.segment = self.seg;
        r.start = start;
        r.release = release;
        r.end = end;
    }

    fn start_dma(&mut self, tl: &mut Timeline, i: usize, s: u64) {
        let InstrCost::Dma(c) = &self.inp.costs[i] else {
            unreachable!("the DMA queue holds DMA instructions only")
        };
        let end = s + c.cycles;
        self.record(tl, i, s, end, end);
        self.dma_ready = end;
        self.next_dma += 1;
        self.pending.push((end, i));
    }

    fn start_comp(&mut self, tl: &mut Timeline, i: usize, s: u64) {
        let (ready, lock) = self.comp_ready(tl, i);
        let mut ch = Charge::default();
        let locked = ready.saturating_sub(self.comp_mark);
        match lock {
            Lock::Simd => ch.simd_unload += locked,
            _ => ch.flags += locked,
        }
        let waited = s - ready.max(self.comp_mark);
        match self.last_enabler {
            Unit::Dma => ch.dma += waited,
            _ => ch.flags += waited,
        }
        let run: UnitRun = match &self.inp.costs[i] {
            InstrCost::Dot(d) => self.unit.run_dot(s, &d.passes),
            InstrCost::Simd(c) => self.unit.run_simd(s, c),
            _ => unreachable!("the compute queue holds compute instructions only"),
        };
        ch.mac_busy += run.mac_busy;
        ch.simd_work += run.simd_work;
        ch.sram_ports += run.port_stall;
        ch.simd_unload += run.unload_stall;
        self.record(tl, i, s, run.release, run.end);
        tl.instrs[i].charge = ch;
        self.comp_mark = run.release;
        self.prev_comp = Some(i);
        self.next_comp += 1;
        self.pending.push((run.end, i));
    }

    /// Applies the completion of `i`: clear, then set its flags.
    fn complete(&mut self, i: usize, flags: &mut FlagSet) -> Result<(), ScheduleError> {
        let ops = self.inp.instrs[i].flags();
        let not_set = ops.clear.iter().find(|&f| !flags.contains(f));
        let already = ops
            .set
            .iter()
            .find(|&f| flags.contains(f) && !ops.clear.contains(f));
        if let Some(f) = not_set {
            return Err(err(
                Some(i),
                format!("clears F{f}, which is already clear: a flag error"),
            ));
        }
        if let Some(f) = already {
            return Err(err(
                Some(i),
                format!("sets F{f}, which is already set: a flag error"),
            ));
        }
        *flags = ops.apply(*flags);
        self.last_enabler = unit_of(&self.inp.instrs[i]);
        Ok(())
    }

    fn deadlock(&self, flags: FlagSet) -> ScheduleError {
        let head = |q: &[usize], k: usize| {
            q.get(k)
                .map(|&i| format!("instruction {i} ({})", self.inp.instrs[i].mnemonic()))
        };
        let heads: Vec<String> = [
            head(&self.dma, self.next_dma),
            head(&self.comp, self.next_comp),
        ]
        .into_iter()
        .flatten()
        .collect();
        err(
            None,
            format!(
                "deadlock: {} wait forever (flag state {})",
                heads.join(" and "),
                flags.to_text()
            ),
        )
    }

    /// Ends the segment at its STOP: charges the last unload to the last compute
    /// instruction and the remaining DMA work to the DMA instructions.
    fn finish(&mut self, tl: &mut Timeline, stop: usize) -> u64 {
        let end = self.now.max(self.t0);
        let mut mark = self.t0;
        if let Some(&c) = self.comp.last() {
            let r = tl.instrs[c];
            tl.instrs[c].charge.simd_unload += r.end - r.release;
            mark = r.end;
        }
        for &d in &self.dma {
            let e = tl.instrs[d].end;
            if e > mark {
                tl.instrs[d].charge.dma += e - mark;
                mark = e;
            }
        }
        self.record(tl, stop, end, end, end);
        tl.instrs[stop].charge.flags += end - mark;
        end
    }
}
