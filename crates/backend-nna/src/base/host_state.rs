//! The walk's host-op state: DRAM tensors of host ops, their records before the
//! addresses are known, and the fix-ups resolved when the walk ends (by
//! [`crate::lower::host`]).

use crate::base::buffer::DRAM_ALIGN;
use crate::base::job::JobId;
use nnac_ir::NodeId;
use nnac_isa::IoDesc;
use std::collections::BTreeMap;

/// Where a DRAM tensor lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DramRef {
    /// At this address of the DRAM image (constants).
    Image(u64),
    /// At this offset of the scratch area (after the I/O tensors).
    Scratch(u64),
    /// At the address of I/O descriptor `k` (a graph output written by a host op).
    Io(usize),
}

/// A value in DRAM: its tensor and its descriptor (address filled in at the end).
#[derive(Debug, Clone)]
pub(crate) struct DramVal {
    pub(crate) tensor: usize,
    pub(crate) desc: IoDesc,
}

/// One host op before its addresses are known.
#[derive(Debug, Clone)]
pub(crate) struct HostRec {
    pub(crate) segment: u32,
    pub(crate) name: String,
    pub(crate) op: String,
    pub(crate) inputs: Vec<DramVal>,
    pub(crate) output: DramVal,
}

/// The host-op state of the walk.
#[derive(Debug, Default)]
pub(crate) struct HostState {
    pub(crate) tensors: Vec<DramRef>,
    pub(crate) vals: BTreeMap<NodeId, DramVal>,
    pub(crate) recs: Vec<HostRec>,
    /// DMA jobs whose DRAM address is relative to that of a tensor.
    pub(crate) fixups: Vec<TensorFixup>,
    /// I/O descriptors that alias another one's DRAM: `(alias, target)`.
    pub(crate) io_alias: Vec<IoAlias>,
    pub(crate) scratch_end: u64,
    /// STOP jobs emitted so far.
    pub(crate) stops: u32,
}

impl HostState {
    pub(crate) fn tensor(&mut self, at: DramRef) -> usize {
        self.tensors.push(at);
        self.tensors.len() - 1
    }

    pub(crate) fn scratch(&mut self, bytes: u64) -> usize {
        let off = self.scratch_end.div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
        self.scratch_end = off + bytes;
        self.tensor(DramRef::Scratch(off))
    }
}

/// A DMA job whose DRAM address is relative to that of a host tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TensorFixup {
    pub(crate) job: JobId,
    /// Index of the tensor in `HostState::tensors`.
    pub(crate) tensor: usize,
}

/// An I/O descriptor that aliases another one's DRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IoAlias {
    pub(crate) alias: usize,
    pub(crate) target: usize,
}
