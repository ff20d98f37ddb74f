//! One SRAM buffer: its size and the steps it is live over (placed by
//! [`crate::place::alloc`]).

use crate::base::job::BufId;

/// One buffer to place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    /// The layer (node name) the buffer belongs to, for errors.
    pub owner: String,
    pub size: u64,
    pub first: usize,
    pub last: usize,
}

/// Alignment of DRAM image parts and I/O tensors.
pub(crate) const DRAM_ALIGN: u64 = 64;

/// SRAM buffer alignment in bytes.
pub const SRAM_ALIGN: u64 = 64;

impl std::ops::Index<BufId> for Vec<Buffer> {
    type Output = Buffer;
    fn index(&self, id: BufId) -> &Buffer {
        &self[id.index()]
    }
}

impl std::ops::IndexMut<BufId> for Vec<Buffer> {
    fn index_mut(&mut self, id: BufId) -> &mut Buffer {
        &mut self[id.index()]
    }
}

impl std::ops::Index<BufId> for [Buffer] {
    type Output = Buffer;
    fn index(&self, id: BufId) -> &Buffer {
        &self[id.index()]
    }
}

impl std::ops::IndexMut<BufId> for [Buffer] {
    fn index_mut(&mut self, id: BufId) -> &mut Buffer {
        &mut self[id.index()]
    }
}
