//! Addressing of activation tensors in SRAM: element (y, x, c) of a tensor at
//! `addr` lives at `addr + y * row_pitch + x * pix_pitch + c * chan_pitch`
//! (docs/ISA.md section 4; HWC has `chan_pitch = 1`, planar CHW `pix_pitch = 1`).

use crate::error::ExecError;
use crate::memory::Memory;

/// A pitched activation tensor view (any layout: HWC, planar, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActView {
    pub addr: u64,
    pub row_pitch: u64,
    pub pix_pitch: u64,
    pub chan_pitch: u64,
}

impl ActView {
    pub fn new(addr: u32, row_pitch: u32, pix_pitch: u32, chan_pitch: u32) -> ActView {
        ActView {
            addr: u64::from(addr),
            row_pitch: u64::from(row_pitch),
            pix_pitch: u64::from(pix_pitch),
            chan_pitch: u64::from(chan_pitch),
        }
    }

    /// Address of channel `c` of pixel (y, x).
    pub fn at(&self, y: u64, x: u64, c: u64) -> u64 {
        self.addr + y * self.row_pitch + x * self.pix_pitch + c * self.chan_pitch
    }

    /// Bytes from channel `c0` to channel `c0 + n - 1` inclusive (`n >= 1`).
    fn hull(&self, n: u64) -> u64 {
        (n.max(1) - 1) * self.chan_pitch + 1
    }

    /// Channels `c0 .. c0+n` of pixel (y, x): the bytes and the step between them.
    pub fn chans<'m>(
        &self,
        mem: &'m Memory,
        (y, x): (u64, u64),
        c0: u64,
        n: u64,
    ) -> Result<Strided<'m>, ExecError> {
        self.chans_at(mem, self.at(y, x, c0), n)
    }

    /// `n` channels of a pixel starting at address `addr` (the first channel's).
    pub fn chans_at<'m>(
        &self,
        mem: &'m Memory,
        addr: u64,
        n: u64,
    ) -> Result<Strided<'m>, ExecError> {
        let bytes = mem.slice(addr, self.hull(n))?;
        Ok(Strided {
            bytes,
            step: self.chan_pitch.max(1) as usize,
        })
    }

    /// Stores `data` as channels `c0 ..` of pixel (y, x).
    pub fn store(
        &self,
        mem: &mut Memory,
        (y, x): (u64, u64),
        c0: u64,
        data: &[u8],
    ) -> Result<(), ExecError> {
        let n = data.len() as u64;
        let dst = mem.slice_mut(self.at(y, x, c0), self.hull(n))?;
        if self.chan_pitch == 1 {
            dst.copy_from_slice(data);
        } else {
            let step = self.chan_pitch.max(1) as usize;
            for (d, &b) in dst.iter_mut().step_by(step).zip(data) {
                *d = b;
            }
        }
        Ok(())
    }
}

/// Consecutive channels of one pixel: every `step`-th byte of `bytes`.
#[derive(Debug, Clone, Copy)]
pub struct Strided<'m> {
    bytes: &'m [u8],
    step: usize,
}

impl<'m> Strided<'m> {
    pub fn iter(&self) -> impl Iterator<Item = &'m u8> + 'm {
        self.bytes.iter().step_by(self.step)
    }

    /// The bytes as a contiguous slice when the channels are adjacent.
    pub fn contiguous(&self) -> Option<&'m [u8]> {
        (self.step == 1).then_some(self.bytes)
    }

    /// Byte `i` (the `i`-th channel); `i` below the channel count asked for.
    #[inline]
    pub fn get(&self, i: usize) -> u8 {
        self.bytes[i * self.step]
    }
}

/// The flattened pixel range of a tile, with its first and last (y, x).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixRange {
    pub start: u64,
    pub count: u64,
    pub width: u64,
}

impl PixRange {
    pub fn end(&self) -> u64 {
        self.start + self.count
    }
    /// First and last row touched.
    pub fn rows(&self) -> (u64, u64) {
        (self.start / self.width, (self.end() - 1) / self.width)
    }
    pub fn yx(&self, p: u64) -> (u64, u64) {
        (p / self.width, p % self.width)
    }
}
