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

impl ActView {
    /// Stores a tile: `data[i * n + c]` as channel `c0 + c` of pixel `pix.start + i`,
    /// for `n` channels and the pixels of `pix`, with the result of [`ActView::store`]
    /// pixel by pixel in order. On a planar view whose channel runs are consecutive
    /// bytes that do not overlap, inside memory, it writes channel plane by channel
    /// plane instead (one contiguous run per channel, the same bytes).
    pub fn store_tile(
        &self,
        mem: &mut Memory,
        pix: &PixRange,
        c0: u64,
        n: u64,
        data: &[u8],
    ) -> Result<(), ExecError> {
        let count = pix.count;
        let (y0, x0) = pix.yx(pix.start);
        let planar = n > 0
            && count > 0
            && self.pix_pitch == 1
            && self.row_pitch == pix.width
            && (n == 1 || self.chan_pitch >= count)
            && data.len() as u64 == n * count
            && mem
                .slice(self.at(y0, x0, c0), (n - 1) * self.chan_pitch + count)
                .is_ok();
        if planar {
            let hull = (n - 1) * self.chan_pitch + count;
            let dst = mem.slice_mut(self.at(y0, x0, c0), hull)?;
            store_planes(
                dst,
                self.chan_pitch as usize,
                data,
                n as usize,
                count as usize,
            );
            return Ok(());
        }
        for (i, row) in data.chunks_exact(n.max(1) as usize).enumerate() {
            self.store(mem, pix.yx(pix.start + i as u64), c0, row)?;
        }
        Ok(())
    }
}

/// `dst[c * cp + p] = data[p * n + c]` for `p < count`, `c < n`: sixteen pixels x
/// sixteen channels at a time transposed in registers ([`transpose16`], x86-64),
/// then eight x eight as eight words ([`super::gather::transpose8`]), the rest byte
/// by byte.
fn store_planes(dst: &mut [u8], cp: usize, data: &[u8], n: usize, count: usize) {
    let (p16, c16) = if cfg!(target_arch = "x86_64") {
        (count / 16 * 16, n / 16 * 16)
    } else {
        (0, 0)
    };
    #[cfg(target_arch = "x86_64")]
    for cb in (0..c16).step_by(16) {
        for pb in (0..p16).step_by(16) {
            transpose16(dst, cp, data, n, (pb, cb));
        }
    }
    // Channels below c16 past pixel p16, then the channels from c16 on.
    store_planes8(dst, cp, data, n, (p16..count, 0..c16));
    store_planes8(dst, cp, data, n, (0..count, c16..n));
}

/// [`store_planes`] for the pixels and channels of `ranges`, eight x eight at a time
/// where whole, byte by byte elsewhere.
fn store_planes8(
    dst: &mut [u8],
    cp: usize,
    data: &[u8],
    n: usize,
    (pixels, chans): (std::ops::Range<usize>, std::ops::Range<usize>),
) {
    let full_p = pixels.start + pixels.len() / 8 * 8;
    let full_c = chans.start + chans.len() / 8 * 8;
    for cb in (chans.start..full_c).step_by(8) {
        for pb in (pixels.start..full_p).step_by(8) {
            let mut a = [0u64; 8];
            for (r, w) in a.iter_mut().enumerate() {
                let o = (pb + r) * n + cb;
                *w = u64::from_le_bytes(data[o..o + 8].try_into().expect("8 bytes"));
            }
            super::gather::transpose8(&mut a);
            for (j, w) in a.iter().enumerate() {
                let o = (cb + j) * cp + pb;
                dst[o..o + 8].copy_from_slice(&w.to_le_bytes());
            }
        }
    }
    for c in chans {
        let from = if c < full_c { full_p } else { pixels.start };
        for p in from..pixels.end {
            dst[c * cp + p] = data[p * n + c];
        }
    }
}

/// The sixteen pixels x sixteen channels at `(pb, cb)` of [`store_planes`]: sixteen
/// 16-byte loads (a pixel's channels), four rounds of SSE2 interleaves (bytes, then
/// 16-, 32- and 64-bit elements; the rows taken in bit-reversed order, so that row
/// `k` of the result is channel `k`), sixteen 16-byte stores (a channel's pixels).
#[cfg(target_arch = "x86_64")]
fn transpose16(dst: &mut [u8], cp: usize, data: &[u8], n: usize, (pb, cb): (usize, usize)) {
    use std::arch::x86_64::*;
    const BIT_REVERSED: [usize; 16] = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15];
    // Every load and store inside its slice, checked before the unsafe block.
    assert!((pb + 15) * n + cb + 16 <= data.len() && (cb + 15) * cp + pb + 16 <= dst.len());
    // SAFETY: SSE2 is part of every x86-64 CPU; the assert above bounds the sixteen
    // loads (`data[(pb + r) * n + cb..][..16]`, r < 16) and stores
    // (`dst[(cb + k) * cp + pb..][..16]`, k < 16).
    unsafe {
        let mut v: [__m128i; 16] = std::array::from_fn(|i| {
            let r = BIT_REVERSED[i];
            _mm_loadu_si128(data.as_ptr().add((pb + r) * n + cb) as *const __m128i)
        });
        for round in 0..4 {
            let mut next = v;
            for i in 0..8 {
                let (a, b) = (v[i], v[i + 8]);
                (next[2 * i], next[2 * i + 1]) = match round {
                    0 => (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b)),
                    1 => (_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b)),
                    2 => (_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b)),
                    _ => (_mm_unpacklo_epi64(a, b), _mm_unpackhi_epi64(a, b)),
                };
            }
            v = next;
        }
        for (k, row) in v.iter().enumerate() {
            _mm_storeu_si128(
                dst.as_mut_ptr().add((cb + k) * cp + pb) as *mut __m128i,
                *row,
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plane_store_equals_pixel_stores() {
        for (h, w, n, start, count) in [(5, 7, 13, 3, 29), (4, 8, 16, 0, 32), (3, 3, 1, 2, 5)] {
            let pix = PixRange {
                start,
                count,
                width: w,
            };
            let cp = h * w + 3;
            let view = ActView::new(16, w as u32, 1, cp as u32);
            let data: Vec<u8> = (0..n * count).map(|i| (i * 7 + 1) as u8).collect();
            let mem = || Memory {
                name: "sram",
                base: 0,
                bytes: vec![0xAA; (16 + cp * n + 8) as usize],
            };
            let (mut planes, mut pixels) = (mem(), mem());
            view.store_tile(&mut planes, &pix, 0, n, &data).unwrap();
            for (i, row) in data.chunks_exact(n as usize).enumerate() {
                view.store(&mut pixels, pix.yx(start + i as u64), 0, row)
                    .unwrap();
            }
            assert_eq!(planes.bytes, pixels.bytes, "{h}x{w}x{n}");
        }
    }

    #[test]
    fn planes_are_the_transposed_tile() {
        // Channel and pixel counts around the 8 x 8 and 16 x 16 blocks; planes right
        // after each other and further apart. No byte outside the planes changes.
        let sizes = [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 96, 100];
        for (k, &n) in sizes.iter().enumerate() {
            for &count in &sizes[..sizes.len() - 1] {
                let cp = count + k % 3 * 5;
                let data: Vec<u8> = (0..n * count).map(|i| (i * 7 + 1) as u8).collect();
                let mut got = vec![0xAA; cp * n + 8];
                let mut want = got.clone();
                for p in 0..count {
                    for c in 0..n {
                        want[c * cp + p] = data[p * n + c];
                    }
                }
                store_planes(&mut got, cp, &data, n, count);
                assert!(
                    got == want,
                    "{n} channels x {count} pixels, planes {cp} apart"
                );
            }
        }
    }
}
