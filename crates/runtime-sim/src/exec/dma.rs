//! DMA_READ (DRAM to SRAM) and DMA_WRITE (SRAM to DRAM): `rows` rows of `row_len`
//! bytes; row `r` starts at `dram_addr + r * dram_stride` in DRAM and at
//! `sram_addr + r * sram_stride` in SRAM.

use crate::error::ExecError;
use crate::memory::{Dram, Memory};
use nnac_isa::Dma;

/// Direction of a DMA move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

/// SRAM byte ranges of the rows of a move.
pub fn sram_rows(d: &Dma) -> Vec<(u64, u64)> {
    (0..u64::from(d.rows))
        .map(|r| {
            let a = u64::from(d.sram_addr) + r * u64::from(d.sram_stride);
            (a, a + u64::from(d.row_len))
        })
        .collect()
}

/// Checks that destination rows do not overlap each other (one move writes each
/// byte at most once).
pub fn check(d: &Dma, dir: Dir) -> Result<(), ExecError> {
    let (stride, name) = match dir {
        Dir::Read => (u64::from(d.sram_stride), "sram_stride"),
        Dir::Write => (d.dram_stride, "dram_stride"),
    };
    if d.rows > 1 && stride < u64::from(d.row_len) {
        return Err(ExecError::DmaRowsOverlap {
            stride_name: name,
            stride,
            row_len: d.row_len,
            rows: d.rows,
        });
    }
    Ok(())
}

pub fn execute(d: &Dma, dir: Dir, dram: &mut Dram, sram: &mut Memory) -> Result<u64, ExecError> {
    check(d, dir)?;
    let len = u64::from(d.row_len);
    for r in 0..u64::from(d.rows) {
        let da = r
            .checked_mul(d.dram_stride)
            .and_then(|o| o.checked_add(d.dram_addr))
            .ok_or(ExecError::DmaAddrOverflow { row: r })?;
        let sa = u64::from(d.sram_addr) + r * u64::from(d.sram_stride);
        match dir {
            Dir::Read => {
                let src = dram.slice(da, len)?;
                sram.slice_mut(sa, len)?.copy_from_slice(src);
            }
            Dir::Write => {
                let src = sram.slice(sa, len)?;
                dram.slice_mut(da, len)?.copy_from_slice(src);
            }
        }
    }
    Ok(len * u64::from(d.rows))
}
