//! One SRAM buffer: its size and the steps it is live over (placed by
//! [`crate::place::alloc`]).

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
pub const DRAM_ALIGN: u64 = 64;

/// SRAM buffer alignment in bytes.
pub const SRAM_ALIGN: u64 = 64;
