//! The result of scheduling: when every instruction ran and which cycles of the
//! critical timeline are charged to it, by cause.

/// The queue an instruction runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unit {
    Dma,
    Compute,
    /// STOP: ends a segment once both queues have drained.
    Stop,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Dma => "DMA",
            Unit::Compute => "compute",
            Unit::Stop => "STOP",
        }
    }
}

/// Cycles of the program's timeline charged to one instruction. Every cycle of every
/// segment is charged to exactly one instruction: to the compute instruction the
/// compute queue is working on or waiting for, and, once the compute queue of a
/// segment is done, to the DMA instruction the segment still waits for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Charge {
    /// MAC-array cycles computing dot-product terms.
    pub mac_busy: u64,
    /// SIMD-only work (SCALE / ELTWISE programs).
    pub simd_work: u64,
    /// Waiting for a flag a DMA instruction provides (data or weights arriving, a
    /// buffer being freed by a DMA-write), or for DMA work after the compute queue
    /// of the segment is done.
    pub dma: u64,
    /// Waiting for the previous compute instruction to complete because this one
    /// depends on it (a flag it sets or clears, or SRAM bytes it writes), or for a
    /// flag the compute queue itself provides; and at a STOP for its flags.
    pub flags: u64,
    /// MAC-array (or SIMD) cycles beyond one per term (per row): SRAM reads or
    /// writes needing more than the ports deliver in a cycle.
    pub sram_ports: u64,
    /// Waiting for the SIMD unit: the shift register still unloading the previous
    /// slice, SIMD-only work waiting for an unload, and the last unload of a segment.
    pub simd_unload: u64,
}

impl Charge {
    pub fn total(&self) -> u64 {
        self.mac_busy + self.simd_work + self.stalls()
    }
    pub fn stalls(&self) -> u64 {
        self.dma + self.flags + self.sram_ports + self.simd_unload
    }
    pub fn add(&mut self, o: &Charge) {
        self.mac_busy += o.mac_busy;
        self.simd_work += o.simd_work;
        self.dma += o.dma;
        self.flags += o.flags;
        self.sram_ports += o.sram_ports;
        self.simd_unload += o.simd_unload;
    }
}

/// When one instruction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstrTiming {
    pub index: usize,
    pub unit: Unit,
    /// Segment (0-based; segments are separated by STOPs).
    pub segment: usize,
    /// Cycle it left the head of its queue.
    pub start: u64,
    /// Cycle the next instruction of its queue may start (compute: the MAC array is
    /// free; DMA and STOP: = end).
    pub release: u64,
    /// Cycle it completed (flags applied).
    pub end: u64,
    pub charge: Charge,
}

/// One STOP-terminated segment of the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentTiming {
    pub start: u64,
    pub end: u64,
    /// Index of its STOP.
    pub stop: usize,
}

/// The schedule of a whole program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    pub instrs: Vec<InstrTiming>,
    pub segments: Vec<SegmentTiming>,
}

impl Timeline {
    /// NNA cycles of the program (host-op time between segments not included).
    pub fn total_cycles(&self) -> u64 {
        self.segments.last().map_or(0, |s| s.end)
    }
}
