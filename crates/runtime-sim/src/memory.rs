//! A bounds-checked byte memory (SRAM, or the DRAM window of a program).

use crate::error::MemError;

/// Asks the kernel to back the whole 2 MiB pages inside `buf` with transparent huge
/// pages (Linux, where THP is on for regions that ask, the default): the SRAM and
/// the DRAM image are tens of megabytes a program touches once per load, and one
/// fault per 2 MiB instead of per 4 KiB takes most of that load's page-fault time.
/// Advice only: the contents are unchanged, and a kernel that declines changes
/// nothing.
fn advise_huge_pages(buf: &mut [u8]) {
    const HUGE: usize = 2 << 20;
    #[cfg(target_os = "linux")]
    {
        let start = buf.as_mut_ptr() as usize;
        let (lo, hi) = (
            start.next_multiple_of(HUGE),
            (start + buf.len()) / HUGE * HUGE,
        );
        if hi > lo {
            // SAFETY: [lo, hi) lies inside `buf`, memory this process owns; MADV_HUGEPAGE
            // changes how the kernel backs the pages, never their contents, and its
            // failure (EINVAL without THP) is harmless, so the result is ignored.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (buf, HUGE);
}

/// `bytes[i]` holds address `base + i`.
#[derive(Debug, Clone)]
pub struct Memory {
    pub name: &'static str,
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl Memory {
    pub fn zeroed(name: &'static str, base: u64, len: usize) -> Memory {
        let mut bytes = vec![0; len];
        advise_huge_pages(&mut bytes);
        Memory { name, base, bytes }
    }

    /// End address (exclusive).
    pub fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Index of `[addr, addr + len)` in `bytes`, or an error naming the range.
    pub fn index(&self, addr: u64, len: u64) -> Result<usize, MemError> {
        let end = addr.checked_add(len);
        match end {
            Some(end) if addr >= self.base && end <= self.end() => Ok((addr - self.base) as usize),
            _ => Err(MemError::Outside {
                memory: self.name,
                addr,
                len,
                base: self.base,
                end: self.end(),
            }),
        }
    }

    /// The bytes `[addr, addr + len)`.
    pub fn slice(&self, addr: u64, len: u64) -> Result<&[u8], MemError> {
        let i = self.index(addr, len)?;
        Ok(&self.bytes[i..i + len as usize])
    }

    /// The bytes `[addr, addr + len)`, writable.
    pub fn slice_mut(&mut self, addr: u64, len: u64) -> Result<&mut [u8], MemError> {
        let i = self.index(addr, len)?;
        Ok(&mut self.bytes[i..i + len as usize])
    }

    /// Little-endian i32 at `addr`.
    pub fn i32_at(&self, addr: u64) -> Result<i32, MemError> {
        let b = self.slice(addr, 4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_checked_without_overflow() {
        let mut m = Memory::zeroed("SRAM", 0x100, 16);
        assert!(m.slice(0x100, 16).is_ok());
        assert!(m.slice(0xff, 1).is_err());
        assert!(m.slice(0x108, 9).is_err());
        assert!(m.slice(u64::MAX, 2).is_err());
        m.slice_mut(0x104, 4)
            .unwrap()
            .copy_from_slice(&(-2i32).to_le_bytes());
        assert_eq!(m.i32_at(0x104).unwrap(), -2);
    }
}

/// The program's DRAM: the DRAM image and every I/O tensor, as disjoint segments
/// (merged where they touch or overlap). An access must lie inside one segment.
#[derive(Debug, Clone)]
pub struct Dram {
    segs: Vec<Memory>,
}

impl Dram {
    /// The segments covering `spans`: sorted, merged where they touch or overlap.
    pub fn layout(mut spans: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
        spans.retain(|s| s.0 < s.1);
        spans.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (lo, hi) in spans {
            match merged.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        merged
    }

    /// Zero-filled segments of a [`Dram::layout`].
    pub fn zeroed(layout: &[(u64, u64)]) -> Dram {
        Dram {
            segs: layout
                .iter()
                .map(|&(lo, hi)| Memory::zeroed("DRAM", lo, (hi - lo) as usize))
                .collect(),
        }
    }

    /// Total bytes.
    pub fn len(&self) -> u64 {
        self.segs.iter().map(|s| s.bytes.len() as u64).sum()
    }

    fn find(&self, addr: u64) -> Option<usize> {
        let i = self.segs.partition_point(|s| s.base <= addr);
        i.checked_sub(1)
    }

    fn err(&self, addr: u64, len: u64) -> MemError {
        MemError::OutsideDram {
            addr,
            len,
            segments: self.segs.iter().map(|s| s.base..s.end()).collect(),
        }
    }

    /// The bytes `[addr, addr + len)`, inside one segment.
    pub fn slice(&self, addr: u64, len: u64) -> Result<&[u8], MemError> {
        let i = self.find(addr).ok_or_else(|| self.err(addr, len))?;
        self.segs[i]
            .slice(addr, len)
            .map_err(|_| self.err(addr, len))
    }

    /// The bytes `[addr, addr + len)`, inside one segment, writable.
    pub fn slice_mut(&mut self, addr: u64, len: u64) -> Result<&mut [u8], MemError> {
        let i = self.find(addr).ok_or_else(|| self.err(addr, len))?;
        if self.segs[i].index(addr, len).is_err() {
            return Err(self.err(addr, len));
        }
        Ok(self.segs[i].slice_mut(addr, len).expect("checked above"))
    }
}
