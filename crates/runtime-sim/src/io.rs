//! Program inputs and outputs (and host-op tensors): where their bytes live in DRAM.
//!
//! Host data is always in the descriptor's logical order (row-major over `shape`,
//! e.g. NCHW). A `Dense` tensor is stored that way at `dram_addr`; an `Hwc` tensor
//! of shape `[1, C, H, W]` / `[C, H, W]` stores element (c, y, x) at
//! `dram_addr + y * row_pitch + x * pix_pitch + c`.

use crate::error::IoError;
use crate::memory::Dram;
use nnac_isa::{IoDesc, IoLayout};

/// Number of elements of a descriptor.
pub fn numel(d: &IoDesc) -> u64 {
    d.shape.iter().map(|&s| u64::from(s)).product()
}

/// (C, H, W) of an HWC descriptor.
fn chw(d: &IoDesc) -> (u64, u64, u64) {
    let s: Vec<u64> = d
        .shape
        .iter()
        .rev()
        .take(3)
        .map(|&v| u64::from(v))
        .collect();
    (s[2], s[1], s[0])
}

/// `[lo, hi)` DRAM bytes the descriptor occupies (`None` for an empty tensor).
pub fn dram_extent(d: &IoDesc) -> Option<(u64, u64)> {
    if numel(d) == 0 {
        return None;
    }
    let len = match d.layout {
        IoLayout::Dense => numel(d).checked_mul(d.dtype.size())?,
        IoLayout::Hwc {
            row_pitch,
            pix_pitch,
        } => {
            let (c, h, w) = chw(d);
            (h - 1) * u64::from(row_pitch) + (w - 1) * u64::from(pix_pitch) + c
        }
    };
    Some((d.dram_addr, d.dram_addr.checked_add(len)?))
}

/// Calls `f(logical_index, dram_addr)` for every element.
fn for_each_element(d: &IoDesc, mut f: impl FnMut(usize, u64)) {
    match d.layout {
        IoLayout::Dense => {
            for i in 0..numel(d) {
                f(i as usize, d.dram_addr + i);
            }
        }
        IoLayout::Hwc {
            row_pitch,
            pix_pitch,
        } => {
            let (c, h, w) = chw(d);
            for ci in 0..c {
                for y in 0..h {
                    for x in 0..w {
                        let logical = ((ci * h + y) * w + x) as usize;
                        f(
                            logical,
                            d.dram_addr + y * u64::from(row_pitch) + x * u64::from(pix_pitch) + ci,
                        );
                    }
                }
            }
        }
    }
}

/// Writes host data (logical order) into DRAM.
pub fn write_input(d: &IoDesc, data: &[u8], dram: &mut Dram) -> Result<(), IoError> {
    if data.len() as u64 != numel(d) {
        return Err(IoError::Size {
            name: d.name.clone(),
            needed: numel(d),
            shape: d.shape.clone(),
            got: data.len(),
        });
    }
    if let Some((lo, hi)) = dram_extent(d) {
        let region = dram.slice_mut(lo, hi - lo)?;
        match d.layout {
            IoLayout::Dense => region.copy_from_slice(data),
            IoLayout::Hwc { .. } => for_each_element(d, |i, a| region[(a - lo) as usize] = data[i]),
        }
    }
    Ok(())
}

/// Reads an output (logical order) from DRAM.
pub fn read_output(d: &IoDesc, dram: &mut Dram) -> Result<Vec<u8>, IoError> {
    let mut out = vec![0u8; numel(d) as usize];
    if let Some((lo, hi)) = dram_extent(d) {
        let region = dram.slice(lo, hi - lo)?;
        match d.layout {
            IoLayout::Dense => out.copy_from_slice(region),
            IoLayout::Hwc { .. } => for_each_element(d, |i, a| out[i] = region[(a - lo) as usize]),
        }
    }
    Ok(out)
}
