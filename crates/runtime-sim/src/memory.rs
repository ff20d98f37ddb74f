//! A bounds-checked byte memory (SRAM, or the DRAM window of a program).

use crate::error::MemError;

/// Where `[addr, addr + len)` starts in `bytes`, which hold the addresses from `base`
/// on; `None` unless every byte of the range is there.
fn offset_in(base: u64, bytes: &[u8], addr: u64, len: u64) -> Option<usize> {
    let end = addr.checked_add(len)?;
    (addr >= base && end <= base + bytes.len() as u64).then(|| (addr - base) as usize)
}

/// `bytes[i]` holds address `base + i`.
#[derive(Debug, Clone)]
pub struct Memory {
    pub name: &'static str,
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl Memory {
    /// `len` zero bytes from `base` (on huge pages where they are large, see
    /// [`crate::pages`]).
    pub fn zeroed(name: &'static str, base: u64, len: usize) -> Memory {
        Memory {
            name,
            base,
            bytes: crate::pages::zeroed(len),
        }
    }

    /// End address (exclusive).
    pub fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Index of `[addr, addr + len)` in `bytes`, or an error naming the range.
    pub fn index(&self, addr: u64, len: u64) -> Result<usize, MemError> {
        offset_in(self.base, &self.bytes, addr, len).ok_or(MemError::Outside {
            memory: self.name,
            addr,
            len,
            base: self.base,
            end: self.end(),
        })
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

    /// The bytes `[addr, addr + len)`, writable, and the rest of the memory, readable.
    pub fn split_around(
        &mut self,
        addr: u64,
        len: u64,
    ) -> Result<(Around<'_>, &mut [u8]), MemError> {
        let i = self.index(addr, len)?;
        let (below, rest) = self.bytes.split_at_mut(i);
        let (hole, above) = rest.split_at_mut(len as usize);
        let around = Around {
            name: self.name,
            base: self.base,
            below,
            hole: (addr, addr + len),
            above,
        };
        Ok((around, hole))
    }
}

/// Bytes read by address: a whole [`Memory`], or what lies around a range of one
/// taken out to be written ([`Memory::split_around`]).
pub trait ReadBytes: Sync {
    /// The bytes `[addr, addr + len)`.
    fn read(&self, addr: u64, len: u64) -> Result<&[u8], MemError>;

    /// Asks the CPU to bring the bytes `[addr, addr + len)` into its caches ahead of
    /// their use: a hint, which changes nothing the memory holds; a range that cannot
    /// be read is ignored.
    fn prefetch(&self, addr: u64, len: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Ok(bytes) = self.read(addr, len) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            for line in bytes.chunks(64) {
                // SAFETY: a prefetch of an address inside a live slice (SSE, part of
                // every x86-64) neither faults nor changes memory.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr() as *const i8) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (addr, len);
    }
}

impl ReadBytes for Memory {
    fn read(&self, addr: u64, len: u64) -> Result<&[u8], MemError> {
        self.slice(addr, len)
    }
}

/// A [`Memory`] but for a range taken out ([`Memory::split_around`]): the bytes
/// below it and above it.
pub struct Around<'m> {
    name: &'static str,
    base: u64,
    below: &'m [u8],
    /// The range taken out, `[lo, hi)`.
    hole: (u64, u64),
    above: &'m [u8],
}

impl ReadBytes for Around<'_> {
    /// The bytes `[addr, addr + len)`, if all below or all above the range taken out.
    fn read(&self, addr: u64, len: u64) -> Result<&[u8], MemError> {
        let (lo, hi) = self.hole;
        let (base, bytes) = match addr.checked_add(len) {
            Some(end) if end <= lo => (self.base, self.below),
            _ if addr >= hi => (hi, self.above),
            _ => {
                return Err(MemError::TakenOut {
                    memory: self.name,
                    addr,
                    len,
                    lo,
                    hi,
                })
            }
        };
        let i = offset_in(base, bytes, addr, len).ok_or(MemError::Outside {
            memory: self.name,
            addr,
            len,
            base: self.base,
            end: hi + self.above.len() as u64,
        })?;
        Ok(&bytes[i..i + len as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_around_a_range_taken_out_read_as_before() {
        let mut m = Memory::zeroed("SRAM", 0x100, 32);
        for (i, b) in m.bytes.iter_mut().enumerate() {
            *b = i as u8;
        }
        let whole = m.clone();
        let (around, hole) = m.split_around(0x108, 8).unwrap();
        assert_eq!(hole, whole.slice(0x108, 8).unwrap());
        for (addr, len) in [(0x100, 8), (0x104, 4), (0x110, 16), (0x11f, 1), (0x110, 0)] {
            assert_eq!(
                around.read(addr, len).unwrap(),
                whole.slice(addr, len).unwrap()
            );
        }
        // Into or across the range taken out, or outside the memory: errors.
        for (addr, len) in [
            (0x104, 5),
            (0x108, 1),
            (0x10f, 2),
            (0x100, 32),
            (0x11f, 2),
            (0xff, 1),
        ] {
            assert!(around.read(addr, len).is_err(), "{addr:#x}+{len}");
        }
        hole.fill(0xee);
        assert_eq!(m.slice(0x108, 8).unwrap(), &[0xee; 8]);
        assert!(m.split_around(0x11c, 5).is_err());
    }

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
        // A prefetch is a hint: in range, across the end or wrapping, nothing changes.
        let before = m.slice(0x100, 16).unwrap().to_vec();
        for (addr, len) in [(0x100, 16), (0x104, 100), (0xf0, 8), (u64::MAX, 2)] {
            m.prefetch(addr, len);
        }
        assert_eq!(m.slice(0x100, 16).unwrap(), &before[..]);
    }
}

/// One DRAM segment: `bytes[i]` holds address `base + i`, except where the program's
/// DRAM image is still borrowed.
#[derive(Debug, Clone)]
struct Segment<'a> {
    base: u64,
    /// The segment's bytes. While `image` is borrowed, the bytes at its place here
    /// are zeros nothing has touched (fresh pages are neither faulted nor copied)
    /// and the image's bytes are the segment's.
    bytes: Vec<u8>,
    /// The program's DRAM image, borrowed (its offset in `bytes`, its bytes) until an
    /// access needs it in `bytes`: a write to it, or any access across its edge.
    /// The weights, most of a program's bytes, are then read where the container put
    /// them, not copied a second time.
    image: Option<(usize, &'a [u8])>,
}

impl<'a> Segment<'a> {
    fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Whether `[at, at + len)` shares a byte with the borrowed image.
    fn meets_image(&self, at: usize, len: usize) -> bool {
        self.image
            .is_some_and(|(off, img)| at < off + img.len() && off < at + len)
    }

    /// Copies the borrowed image into `bytes`, once.
    fn own_image(&mut self) {
        if let Some((off, img)) = self.image.take() {
            self.bytes[off..off + img.len()].copy_from_slice(img);
        }
    }

    fn read(&mut self, at: usize, len: usize) -> &[u8] {
        if let Some((off, img)) = self.image {
            if at >= off && at + len <= off + img.len() {
                return &img[at - off..at - off + len];
            }
        }
        if self.meets_image(at, len) {
            self.own_image();
        }
        &self.bytes[at..at + len]
    }

    fn write(&mut self, at: usize, len: usize) -> &mut [u8] {
        if self.meets_image(at, len) {
            self.own_image();
        }
        &mut self.bytes[at..at + len]
    }
}

/// The program's DRAM: the DRAM image and every I/O tensor, as disjoint segments
/// (merged where they touch or overlap). An access must lie inside one segment.
#[derive(Debug, Clone)]
pub struct Dram<'a> {
    segs: Vec<Segment<'a>>,
}

impl<'a> Dram<'a> {
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

    /// The segments of a [`Dram::layout`], zeros except for `image` at `base` (which
    /// must lie inside one segment; it is borrowed, see [`Segment`]).
    pub fn with_image(
        layout: &[(u64, u64)],
        base: u64,
        image: &'a [u8],
    ) -> Result<Dram<'a>, MemError> {
        let mut dram = Dram {
            segs: layout
                .iter()
                .map(|&(lo, hi)| Segment {
                    base: lo,
                    bytes: vec![0; (hi - lo) as usize],
                    image: None,
                })
                .collect(),
        };
        if !image.is_empty() {
            let (i, at) = dram.locate(base, image.len() as u64)?;
            dram.segs[i].image = Some((at, image));
        }
        Ok(dram)
    }

    /// Total bytes.
    pub fn len(&self) -> u64 {
        self.segs.iter().map(|s| s.bytes.len() as u64).sum()
    }

    /// The segment holding `[addr, addr + len)` and where the range starts in it.
    fn locate(&self, addr: u64, len: u64) -> Result<(usize, usize), MemError> {
        let i = self.segs.partition_point(|s| s.base <= addr);
        i.checked_sub(1)
            .and_then(|i| {
                Some((
                    i,
                    offset_in(self.segs[i].base, &self.segs[i].bytes, addr, len)?,
                ))
            })
            .ok_or_else(|| MemError::OutsideDram {
                addr,
                len,
                segments: self.segs.iter().map(|s| s.base..s.end()).collect(),
            })
    }

    /// The bytes `[addr, addr + len)`, inside one segment. Takes `&mut self`: a read
    /// across the edge of the borrowed image first copies the image in.
    pub fn slice(&mut self, addr: u64, len: u64) -> Result<&[u8], MemError> {
        let (i, at) = self.locate(addr, len)?;
        Ok(self.segs[i].read(at, len as usize))
    }

    /// The bytes `[addr, addr + len)`, inside one segment, writable.
    pub fn slice_mut(&mut self, addr: u64, len: u64) -> Result<&mut [u8], MemError> {
        let (i, at) = self.locate(addr, len)?;
        Ok(self.segs[i].write(at, len as usize))
    }
}

#[cfg(test)]
mod dram_tests {
    use super::*;

    #[test]
    fn the_borrowed_image_reads_and_writes_as_if_copied() {
        // Segment 0x100..0x120: image 0x104..0x10c, zeros around it.
        let image: Vec<u8> = (1..=8).collect();
        let layout = Dram::layout(vec![(0x104, 0x10c), (0x100, 0x104), (0x10c, 0x120)]);
        let mut dram = Dram::with_image(&layout, 0x104, &image).unwrap();
        assert_eq!(dram.slice(0x104, 8).unwrap(), &image[..]);
        assert!(
            dram.segs[0].image.is_some(),
            "a read inside the image borrows"
        );
        dram.slice_mut(0x10c, 4).unwrap().fill(9);
        assert!(
            dram.segs[0].image.is_some(),
            "a write beside the image borrows"
        );
        // A read across the image's edge sees both sides.
        assert_eq!(dram.slice(0x10a, 4).unwrap(), &[7, 8, 9, 9]);
        assert!(dram.segs[0].image.is_none());
        let mut dram = Dram::with_image(&layout, 0x104, &image).unwrap();
        dram.slice_mut(0x105, 2).unwrap().fill(0);
        assert_eq!(
            dram.slice(0x100, 12).unwrap(),
            &[0, 0, 0, 0, 1, 0, 0, 4, 5, 6, 7, 8]
        );
        assert!(dram.slice(0x11f, 2).is_err());
        assert!(dram.slice(0xff, 1).is_err());
    }
}
