//! Run statistics.

/// Where the first accumulator overflow happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverflowSite {
    pub index: usize,
    pub mnemonic: &'static str,
    /// Flattened output pixel (y * out_w + x, before pooling).
    pub pixel: u64,
    pub channel: u64,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Instructions completed (STOP not counted).
    pub instructions: u64,
    pub dma_instructions: u64,
    pub compute_instructions: u64,
    /// Multiply-accumulates of the dot-product instructions.
    pub macs: u64,
    /// Bytes moved by DMA.
    pub dma_bytes: u64,
    /// Accumulator values whose exact value lay outside the accumulator range and
    /// were wrapped (docs/ISA.md section 6). A correct compiler output has 0.
    pub acc_overflows: u64,
    pub first_overflow: Option<OverflowSite>,
    /// Instruction starts while the other queue had an instruction in flight.
    pub overlapped_starts: u64,
    /// Host ops run between segments.
    pub host_ops: u64,
    /// Segments run (STOPs reached).
    pub segments: u64,
}

impl RunStats {
    /// Adds another frame's statistics.
    pub fn merge(&mut self, o: &RunStats) {
        self.instructions += o.instructions;
        self.dma_instructions += o.dma_instructions;
        self.compute_instructions += o.compute_instructions;
        self.macs += o.macs;
        self.dma_bytes += o.dma_bytes;
        self.acc_overflows += o.acc_overflows;
        self.first_overflow = self.first_overflow.or(o.first_overflow);
        self.overlapped_starts += o.overlapped_starts;
        self.host_ops += o.host_ops;
        self.segments += o.segments;
    }
}
