//! The patch gather of the byte kernel ([`super::quad`]): for every output pixel of a
//! block and every kernel tap, the input channels of one convolution group, as patch
//! bytes (`code ^ xor`: biased for int8 inputs), in term order (ky, kx, ic).
//!
//! A planar input (channels a plane apart) makes each pixel's channels a strided
//! byte gather. The block's pixels go in groups of eight per tap: eight channels x
//! eight pixels are read as eight words, transposed in registers and stored as eight
//! words. Where the eight pixels read eight consecutive bytes (1x1 convolutions of
//! dense planes, the interior of larger kernels at stride 1) a word is one load, and
//! two such groups that follow each other are one group of sixteen (sixteen bytes per
//! channel, SSE2 interleaves straight from SRAM into the patch rows); where a row
//! ends or the padding begins inside the group, a word is one masked load per run of
//! consecutive bytes with the padding's bytes added; strided pixels are read byte by
//! byte. Channels past the last multiple of eight (the three of an image) are read a
//! word per channel and stored byte by byte. Eight pixels all in the padding are
//! filled, and the last pixels of a block short of eight are gathered pixel by
//! pixel. A group of fewer than eight channels whose whole input is in SRAM (an
//! image's three) is gathered pixel by pixel, tap by tap, straight from that input
//! ([`gather_small`]).

use super::dot_geom::DotGeom;
use super::tensor::Strided;
use crate::error::ExecError;
use crate::memory::Memory;

/// Patch bytes (`code ^ xor`) of consecutive channels.
#[inline]
pub fn fill_bytes(dst: &mut [u8], src: &Strided<'_>, xor: u8) {
    match src.contiguous() {
        Some(b) => dst.iter_mut().zip(b).for_each(|(o, &v)| *o = v ^ xor),
        None => dst
            .iter_mut()
            .zip(src.iter())
            .for_each(|(o, &v)| *o = v ^ xor),
    }
}

/// Transposes an 8 x 8 byte matrix held as eight little-endian words (row `r` =
/// word `r`, column `j` = byte `j`): afterwards byte `j` of word `r` is what byte `r`
/// of word `j` was.
#[inline]
pub fn transpose8(a: &mut [u64; 8]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of every x86-64 CPU; the loads and stores are of the
        // array's own words.
        unsafe { transpose8_sse2(a) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    transpose8_swar(a)
}

/// [`transpose8`] as three rounds of byte, 16-bit and 32-bit interleaves.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn transpose8_sse2(a: &mut [u64; 8]) {
    use std::arch::x86_64::*;
    let r = |i: usize| _mm_cvtsi64_si128(a[i] as i64);
    let t0 = _mm_unpacklo_epi8(r(0), r(1));
    let t1 = _mm_unpacklo_epi8(r(2), r(3));
    let t2 = _mm_unpacklo_epi8(r(4), r(5));
    let t3 = _mm_unpacklo_epi8(r(6), r(7));
    let u0 = _mm_unpacklo_epi16(t0, t1);
    let u1 = _mm_unpackhi_epi16(t0, t1);
    let u2 = _mm_unpacklo_epi16(t2, t3);
    let u3 = _mm_unpackhi_epi16(t2, t3);
    let v = [
        _mm_unpacklo_epi32(u0, u2),
        _mm_unpackhi_epi32(u0, u2),
        _mm_unpacklo_epi32(u1, u3),
        _mm_unpackhi_epi32(u1, u3),
    ];
    for (pair, v) in a.chunks_exact_mut(2).zip(v) {
        _mm_storeu_si128(pair.as_mut_ptr() as *mut __m128i, v);
    }
}

/// [`transpose8`] in plain word arithmetic (the definition the SSE2 form is tested
/// against).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn transpose8_swar(a: &mut [u64; 8]) {
    for i in 0..4 {
        let t = ((a[i] >> 32) ^ a[i + 4]) & 0x0000_0000_FFFF_FFFF;
        a[i] ^= t << 32;
        a[i + 4] ^= t;
    }
    for i in [0, 1, 4, 5] {
        let t = ((a[i] >> 16) ^ a[i + 2]) & 0x0000_FFFF_0000_FFFF;
        a[i] ^= t << 16;
        a[i + 2] ^= t;
    }
    for i in [0, 2, 4, 6] {
        let t = ((a[i] >> 8) ^ a[i + 1]) & 0x00FF_00FF_00FF_00FF;
        a[i] ^= t << 8;
        a[i + 1] ^= t;
    }
}

/// Eight pixels' addresses of a tap, at least one of them inside the input: the
/// lowest inside, each inside pixel's distance from it, and which pixels are inside.
struct Taps8 {
    a0: u64,
    /// `delta[q]`: pixel `q`'s distance from `a0` (0 for a pixel outside).
    delta: [usize; 8],
    /// Byte `q` is 0xFF where pixel `q` reads the input, 0 where it is padding.
    inside: u64,
    /// The padding pixels' bytes (the word's other bytes are 0).
    fill: u64,
}

impl Taps8 {
    /// The eight pixels' addresses (`None`: padding, whose patch byte is `padx`
    /// before the XOR), if any of them is inside the input.
    fn of(offs: &[Option<u64>], padx: u8) -> Option<Taps8> {
        let a0 = offs[..8].iter().flatten().min().copied()?;
        let mut delta = [0usize; 8];
        let (mut inside, mut fill) = (0u64, 0u64);
        for (q, o) in offs[..8].iter().enumerate() {
            match o {
                Some(a) => {
                    delta[q] = (a - a0) as usize;
                    inside |= 0xFF << (8 * q);
                }
                None => fill |= u64::from(padx) << (8 * q),
            }
        }
        Some(Taps8 {
            a0,
            delta,
            inside,
            fill,
        })
    }

    /// Bytes of one channel from `a0` up to the last one an inside pixel reads.
    fn span(&self) -> usize {
        let inside = |q: usize| self.inside >> (8 * q) & 0xFF != 0;
        (0..8)
            .filter(|&q| inside(q))
            .map(|q| self.delta[q])
            .max()
            .unwrap_or(0)
            + 1
    }

    /// The group reading `len` bytes of each channel (at least the span).
    fn reading(self, len: usize) -> Group8 {
        let read = Read8::of(&self.delta, self.inside, len);
        Group8 {
            taps: self,
            len,
            read,
        }
    }
}

/// A [`Taps8`] and how a channel's eight bytes are read.
struct Group8 {
    taps: Taps8,
    /// Bytes of one channel from `a0` the group's loads may read (at least its
    /// span, the largest `delta` plus one).
    len: usize,
    read: Read8,
}

impl Group8 {
    /// The eight bytes of the channel whose bytes start at `row[0]` (`row` holds at
    /// least [`Group8::len`] bytes), byte `q` = pixel `q`'s, or the padding's.
    #[inline(always)]
    fn word(&self, row: &[u8]) -> u64 {
        let load = |at: usize| u64::from_le_bytes(row[at..at + 8].try_into().expect("8 bytes"));
        match self.read {
            Read8::Consecutive => load(0),
            Read8::Runs { runs, count } => {
                let read = runs[..count].iter().fold(0, |w, r| {
                    let v = load(r.at);
                    let v = if r.shift >= 0 {
                        v << r.shift
                    } else {
                        v >> -r.shift
                    };
                    w | (v & r.mask)
                });
                read | self.taps.fill
            }
            Read8::Bytes => {
                let row = &row[..self.len];
                let d = &self.taps.delta;
                let w = u64::from_le_bytes([
                    row[d[0]], row[d[1]], row[d[2]], row[d[3]], row[d[4]], row[d[5]], row[d[6]],
                    row[d[7]],
                ]);
                (w & self.taps.inside) | self.taps.fill
            }
        }
    }
}

/// One word load of a [`Read8::Runs`]: the eight bytes at `at`, shifted left by
/// `shift` bits (right if negative), masked to the run's bytes.
#[derive(Clone, Copy, Default)]
struct Run {
    at: usize,
    shift: i32,
    mask: u64,
}

/// How the eight bytes of one channel of a [`Group8`] are read.
#[derive(Clone, Copy)]
enum Read8 {
    /// All eight inside, byte `q` at `delta[q] = q`: one word load.
    Consecutive,
    /// Runs of consecutive inside pixels reading consecutive bytes (a row end or
    /// padding inside the group): one word load per run, moved to the run's pixels
    /// and masked to them; `count` runs; the padding's bytes added.
    Runs { runs: [Run; 8], count: usize },
    /// Byte by byte (strided pixels); the padding's bytes added.
    Bytes,
}

impl Read8 {
    /// The cheapest way to read the inside pixels' bytes (`inside`, as in
    /// [`Group8`]) at `delta` within `len` bytes.
    fn of(delta: &[usize; 8], inside: u64, len: usize) -> Read8 {
        let is_in = |q: usize| inside >> (8 * q) & 0xFF != 0;
        if inside == u64::MAX && delta.iter().enumerate().all(|(q, &d)| d == q) {
            return Read8::Consecutive;
        }
        if len < 8 {
            return Read8::Bytes;
        }
        let mut runs = [Run::default(); 8];
        let mut count = 0;
        let mut q = 0;
        while q < 8 {
            if !is_in(q) {
                q += 1;
                continue;
            }
            let start = q;
            while q + 1 < 8 && is_in(q + 1) && delta[q + 1] == delta[q] + 1 {
                q += 1;
            }
            q += 1;
            // A window of eight bytes inside `len` holding the run's `q - start`
            // bytes: pixel `j`'s byte is at `delta[j] - at` in it, moved to `j`.
            let at = delta[start].min(len - 8);
            let shift = 8 * (start as i32 - (delta[start] - at) as i32);
            let bytes = (q - start) as u32;
            let mask = (u64::MAX >> (64 - 8 * bytes)) << (8 * start);
            runs[count] = Run { at, shift, mask };
            count += 1;
        }
        // Pixels one by one (strided) read no faster as runs than as bytes.
        match count {
            ..=4 => Read8::Runs { runs, count },
            _ => Read8::Bytes,
        }
    }
}

/// Where the patch of a block goes: `rows` of `kpad` bytes.
struct Patch<'d> {
    dst: &'d mut [u8],
    kpad: usize,
}

/// A group of eight pixels of one tap with its source bytes: channel `c` of pixel
/// `p + q` is `src[c * cp + g.taps.delta[q]]`. With `pixels` 16 it holds the next eight
/// pixels' group too, both [`Read8::Consecutive`], the second reading the next eight
/// bytes: channel `c` of pixel `p + q` is `src[c * cp + q]` for every `q < 16`.
struct Run8<'s> {
    p: usize,
    g: Group8,
    src: &'s [u8],
    pixels: usize,
}

impl Run8<'_> {
    /// Channels `cb..cb + 8` of the eight pixels from `p + 8 * half`, one word per
    /// channel (byte `q` = pixel `p + 8 * half + q`'s).
    #[inline(always)]
    fn words(&self, cb: usize, cp: usize, half: usize) -> [u64; 8] {
        let mut a = [0u64; 8];
        for (r, w) in a.iter_mut().enumerate() {
            *w = self.g.word(&self.src[(cb + r) * cp + 8 * half..]);
        }
        a
    }
}

/// Adds `run` to `runs`, or widens the last run to 16 pixels if `run` continues it
/// (both read consecutive bytes, the next eight pixels' the next eight bytes);
/// `bytes(len)` is the length of a group's source reading `len` bytes per channel.
fn push_run<'m>(
    runs: &mut Vec<Run8<'m>>,
    run: Run8<'m>,
    sram: &'m Memory,
    bytes: impl Fn(usize) -> u64,
) -> Result<(), ExecError> {
    let consecutive = |r: &Run8<'_>| matches!(r.g.read, Read8::Consecutive);
    match runs.last_mut() {
        Some(last)
            if last.pixels == 8
                && consecutive(last)
                && consecutive(&run)
                && last.p + 8 == run.p
                && last.g.taps.a0 + 8 == run.g.taps.a0 =>
        {
            // The union of the two groups' sources, both in SRAM.
            last.src = sram.slice(last.g.taps.a0, bytes(16))?;
            last.pixels = 16;
        }
        _ => runs.push(run),
    }
    Ok(())
}

/// Channels `cb .. cb + 8` of `width` (8 or 16) pixels that read consecutive bytes
/// (channel `c`'s from `src[c * cp]`), XORed with `xor`, into the patch rows of
/// `kpad` bytes from `dst[0]` (the first pixel's channel `cb`): each channel's bytes
/// one load, transposed in registers, each pixel's eight bytes one store.
#[cfg(target_arch = "x86_64")]
fn consecutive_block(
    src: &[u8],
    (cp, cb, width): (usize, usize, usize),
    dst: &mut [u8],
    kpad: usize,
    xor: u8,
) {
    use std::arch::x86_64::*;
    assert!(width == 8 || width == 16);
    assert!((cb + 7) * cp + width <= src.len());
    assert!((width - 1) * kpad + 8 <= dst.len());
    // SAFETY: SSE2 is part of every x86-64 CPU; the asserts bound the loads (`width`
    // bytes of each of the eight channels) and the stores (eight bytes at each of the
    // `width` rows).
    unsafe {
        let s = src.as_ptr().add(cb * cp);
        let r: [__m128i; 8] = std::array::from_fn(|c| {
            let at = s.add(c * cp) as *const __m128i;
            if width == 16 {
                _mm_loadu_si128(at)
            } else {
                _mm_loadl_epi64(at)
            }
        });
        let x = _mm_set1_epi8(xor as i8);
        let d = dst.as_mut_ptr();
        for half in 0..width / 8 {
            // Channels (2i, 2i + 1) of the half's eight pixels, byte-interleaved.
            let a: [__m128i; 4] = std::array::from_fn(|i| {
                if half == 0 {
                    _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1])
                } else {
                    _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1])
                }
            });
            // Pixels 0-3 and 4-7, channels 0-3 and 4-7.
            let b = [
                _mm_unpacklo_epi16(a[0], a[1]),
                _mm_unpackhi_epi16(a[0], a[1]),
                _mm_unpacklo_epi16(a[2], a[3]),
                _mm_unpackhi_epi16(a[2], a[3]),
            ];
            // Pixels (0, 1), (2, 3), (4, 5), (6, 7), eight channels each.
            let c = [
                _mm_unpacklo_epi32(b[0], b[2]),
                _mm_unpackhi_epi32(b[0], b[2]),
                _mm_unpacklo_epi32(b[1], b[3]),
                _mm_unpackhi_epi32(b[1], b[3]),
            ];
            for (i, v) in c.into_iter().enumerate() {
                let v = _mm_xor_si128(v, x);
                let q = 8 * half + 2 * i;
                _mm_storel_epi64(d.add(q * kpad) as *mut __m128i, v);
                _mm_storeh_pd(d.add((q + 1) * kpad) as *mut f64, _mm_castsi128_pd(v));
            }
        }
    }
}

impl Patch<'_> {
    /// Channels `0..icpg` of every group's pixels for the tap at term `t`, channels
    /// `cp` bytes apart: channel blocks outside, groups inside, so each block's
    /// source lines are read once while they are in the cache.
    fn transposed(&mut self, runs: &[Run8<'_>], cp: usize, icpg: usize, t: usize, xor: u8) {
        let x = u64::from_ne_bytes([xor; 8]);
        let full = icpg / 8 * 8;
        for cb in (0..full).step_by(8) {
            for run in runs {
                #[cfg(target_arch = "x86_64")]
                if matches!(run.g.read, Read8::Consecutive) {
                    let dst = &mut self.dst[run.p * self.kpad + t + cb..];
                    consecutive_block(run.src, (cp, cb, run.pixels), dst, self.kpad, xor);
                    continue;
                }
                for half in 0..run.pixels / 8 {
                    let mut a = run.words(cb, cp, half);
                    transpose8(&mut a);
                    for (q, w) in a.iter().enumerate() {
                        let at = (run.p + 8 * half + q) * self.kpad + t + cb;
                        self.dst[at..at + 8].copy_from_slice(&(w ^ x).to_le_bytes());
                    }
                }
            }
        }
        for run in runs {
            for c in full..icpg {
                for half in 0..run.pixels / 8 {
                    let w = run.g.word(&run.src[c * cp + 8 * half..]) ^ x;
                    for (q, b) in w.to_le_bytes().into_iter().enumerate() {
                        self.dst[(run.p + 8 * half + q) * self.kpad + t + c] = b;
                    }
                }
            }
        }
    }
}

/// Gathers the patch bytes of `pixels` for convolution group `group` into `dst`
/// (`pixels.len()` rows of `kpad`); `pad` is the byte of a position outside the
/// input (the input zero point's), terms past K are 0.
#[allow(clippy::too_many_arguments)]
pub fn gather_bytes(
    g: &DotGeom,
    sram: &Memory,
    pixels: std::ops::Range<u64>,
    group: u64,
    kpad: usize,
    pad: u8,
    xor: u8,
    dst: &mut [u8],
) -> Result<(), ExecError> {
    let c0 = group * g.icpg;
    let yx: Vec<(u64, u64)> = pixels.map(|p| g.pix.yx(p)).collect();
    if g.icpg < 8 {
        if let Some(input) = group_input(g, sram, c0) {
            gather_small(g, input, &yx, (kpad, pad, xor), dst);
            return Ok(());
        }
    }
    gather_groups(g, sram, &yx, c0, (kpad, pad, xor), dst)
}

/// [`gather_bytes`] through transposed groups of eight pixels where a tap's eight
/// pixels are all inside the input, pixel by pixel elsewhere (errors name the
/// first position outside SRAM).
fn gather_groups(
    g: &DotGeom,
    sram: &Memory,
    yx: &[(u64, u64)],
    c0: u64,
    (kpad, pad, xor): (usize, u8, u8),
    dst: &mut [u8],
) -> Result<(), ExecError> {
    let icpg = g.icpg as usize;
    let cp = g.input.chan_pitch;
    let n = yx.len();
    let mut offs: Vec<Option<u64>> = vec![None; n];
    let mut patch = Patch { dst, kpad };
    let mut runs = Vec::with_capacity(n / 8);
    // The source bytes of a group reading `len` bytes of each of its channels.
    let bytes = |len: usize| (icpg as u64 - 1) * cp + len as u64;
    let mut t = 0;
    for ky in 0..g.kh {
        for kx in 0..g.kw {
            for (o, &(oy, ox)) in offs.iter_mut().zip(yx) {
                *o = match (g.in_row(oy, ky), g.in_col(ox, kx)) {
                    (Some(iy), Some(ix)) => Some(g.input.at(iy, ix, c0)),
                    _ => None,
                };
            }
            runs.clear();
            let mut p = 0;
            while p < n {
                if cp > 1 && p + 8 <= n {
                    let Some(taps) = Taps8::of(&offs[p..p + 8], pad ^ xor) else {
                        // All eight in the padding.
                        patch.dst[p * kpad..(p + 8) * kpad]
                            .chunks_exact_mut(kpad)
                            .for_each(|row| row[t..t + icpg].fill(pad));
                        p += 8;
                        continue;
                    };
                    // Whole words where SRAM holds them (a word may reach past the
                    // group's last byte), else the group's bytes alone.
                    let span = taps.span();
                    let (src, len) = match sram.slice(taps.a0, bytes(span.max(8))) {
                        Ok(src) => (src, span.max(8)),
                        Err(_) => (sram.slice(taps.a0, bytes(span))?, span),
                    };
                    let g = taps.reading(len);
                    push_run(
                        &mut runs,
                        Run8 {
                            p,
                            g,
                            src,
                            pixels: 8,
                        },
                        sram,
                        bytes,
                    )?;
                    p += 8;
                    continue;
                }
                let seg = &mut patch.dst[p * kpad + t..p * kpad + t + icpg];
                match offs[p] {
                    Some(a) => fill_bytes(seg, &g.input.chans_at(sram, a, g.icpg)?, xor),
                    None => seg.fill(pad),
                }
                p += 1;
            }
            patch.transposed(&runs, cp as usize, icpg, t, xor);
            t += icpg;
        }
    }
    for row in patch.dst.chunks_exact_mut(kpad) {
        row[t..].fill(0);
    }
    Ok(())
}

/// The bytes of every pixel of the group's channels `c0..c0 + icpg`, from channel
/// `c0` of pixel (0, 0), if they are all in SRAM.
fn group_input<'m>(g: &DotGeom, sram: &'m Memory, c0: u64) -> Option<&'m [u8]> {
    let v = &g.input;
    // Checked: a hostile program's extents and pitches may not fit u64 together.
    let span = |n: u64, pitch: u64| n.checked_sub(1)?.checked_mul(pitch);
    let len = span(g.in_h, v.row_pitch)?
        .checked_add(span(g.in_w, v.pix_pitch)?)?
        .checked_add(span(g.icpg, v.chan_pitch)?)?
        .checked_add(1)?;
    sram.slice(v.at(0, 0, c0), len).ok()
}

/// [`gather_bytes`] for groups of fewer than eight channels (an image's three),
/// whose whole input is in SRAM (`input`, from [`group_input`]): pixel by pixel, the
/// input rows and columns of its taps found once, each tap's channels read straight
/// from `input`. The transposed groups need eight channels; per tap and pixel their
/// bookkeeping cost more than the few bytes it moved.
fn gather_small(
    g: &DotGeom,
    input: &[u8],
    yx: &[(u64, u64)],
    (kpad, pad, xor): (usize, u8, u8),
    dst: &mut [u8],
) {
    let v = &g.input;
    let (icpg, cp) = (g.icpg as usize, v.chan_pitch as usize);
    let mut rows: Vec<Option<u64>> = vec![None; g.kh as usize];
    let mut cols: Vec<Option<u64>> = vec![None; g.kw as usize];
    for (row, &(oy, ox)) in dst.chunks_exact_mut(kpad).zip(yx) {
        for (ky, r) in (0..).zip(rows.iter_mut()) {
            *r = g.in_row(oy, ky).map(|iy| iy * v.row_pitch);
        }
        for (kx, c) in (0..).zip(cols.iter_mut()) {
            *c = g.in_col(ox, kx).map(|ix| ix * v.pix_pitch);
        }
        let mut t = 0;
        for r in &rows {
            for c in &cols {
                let seg = &mut row[t..t + icpg];
                match (r, c) {
                    (Some(r), Some(c)) => {
                        let at = (r + c) as usize;
                        for (i, o) in seg.iter_mut().enumerate() {
                            *o = input[at + i * cp] ^ xor;
                        }
                    }
                    _ => seg.fill(pad),
                }
                t += icpg;
            }
        }
        row[t..].fill(0);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::exec::dot_geom::DotKind;
    use crate::exec::tensor::{ActView, PixRange};

    /// A one-pixel 1 x 1 convolution of a 3-channel input at address 0; the tests
    /// (here and in the weights' conversions) change what they need.
    pub(crate) fn geom() -> DotGeom {
        let none = ActView {
            addr: 0,
            row_pitch: 0,
            pix_pitch: 0,
            chan_pitch: 0,
        };
        DotGeom {
            kind: DotKind::Conv,
            in_h: 1,
            in_w: 1,
            in_c: 3,
            out_h: 1,
            out_w: 1,
            kh: 1,
            kw: 1,
            pad_top: 0,
            pad_left: 0,
            sh: 1,
            sw: 1,
            dh: 1,
            dw: 1,
            icpg: 3,
            ocpg: 1,
            pix: PixRange {
                start: 0,
                count: 1,
                width: 1,
            },
            oc_start: 0,
            oc_count: 1,
            mac_cols: 96,
            w_pitch: 0,
            input: none,
            output: none,
            pool: None,
        }
    }

    /// A random geometry: `small`, groups of fewer than eight channels and extents
    /// up to 12 (the small groups' gather); else up to 40 channels a group (whole
    /// blocks of eight and a rest) and extents up to 30, the 1 x 1 and 3 x 3 layers'
    /// own output extents half the time. Planar inputs with dense and padded rows,
    /// pixel-interleaved ones, strides, dilations, pads, DECONV, tiles starting
    /// anywhere.
    fn random_geom(next: &mut impl FnMut(u64) -> u64, case: usize, small: bool) -> DotGeom {
        let kind = [DotKind::Conv, DotKind::Deconv][usize::from(case.is_multiple_of(5))];
        let (kh, kw) = [(1, 1), (3, 3), (1 + next(7), 1 + next(7))][case % 3];
        let (sh, sw) = [(1, 1), (2, 2), (1 + next(3), 1 + next(3))][next(3) as usize];
        let (dh, dw) = if next(4) == 0 {
            (2, 1 + next(2))
        } else {
            (1, 1)
        };
        let (ext, chans) = if small { (12, 7) } else { (30, 40) };
        let (in_h, in_w) = (1 + next(ext), 1 + next(ext));
        let (icpg, groups) = (1 + next(chans), 1 + next(3));
        let in_c = icpg * groups;
        let (row_pitch, pix_pitch, chan_pitch) = match next(3) {
            // Dense planes, planes with padded rows, interleaved pixels.
            0 => (in_w, 1, in_w * in_h + next(3)),
            1 => (in_w + 1 + next(5), 1, (in_w + 6) * in_h + next(7)),
            _ => (in_w * in_c + next(3), in_c, 1),
        };
        let (out_h, out_w) = if kind == DotKind::Conv && next(2) == 0 {
            (in_h.div_ceil(sh), in_w.div_ceil(sw))
        } else {
            (1 + next(ext), 1 + next(ext))
        };
        let start = next(out_h * out_w);
        let count = 1 + next(out_h * out_w - start);
        DotGeom {
            kind,
            in_h,
            in_w,
            in_c,
            out_h,
            out_w,
            kh,
            kw,
            pad_top: next(kh) as i64,
            pad_left: next(kw) as i64,
            sh,
            sw,
            dh,
            dw,
            icpg,
            pix: PixRange {
                start,
                count,
                width: out_w,
            },
            input: ActView {
                addr: 3,
                row_pitch,
                pix_pitch,
                chan_pitch,
            },
            ..geom()
        }
    }

    /// SRAM ending at the input's last byte (its last channel's last pixel), so a
    /// read past the bytes a gather needs is an error.
    fn sram_ending_at_input(g: &DotGeom) -> Memory {
        let size = g.input.at(g.in_h - 1, g.in_w - 1, g.in_c - 1) + 1;
        Memory {
            name: "sram",
            base: 0,
            bytes: (0..size).map(|i| (i * 131 % 251) as u8).collect(),
        }
    }

    /// The gathers against the definition on random geometries ([`random_geom`]),
    /// small groups both ways (straight from the input and in groups of eight pixels).
    #[test]
    fn gathers_equal_the_definition() {
        let mut seed = 21u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        let mut sixteens = 0;
        for case in 0..700usize {
            let small = case.is_multiple_of(4);
            let g = random_geom(&mut next, case, small);
            let sram = sram_ending_at_input(&g);
            let kpad = (g.kh * g.kw * g.icpg) as usize + next(20) as usize;
            let pixels = g.pix.start..g.pix.start + g.pix.count;
            let yx: Vec<(u64, u64)> = pixels.clone().map(|p| g.pix.yx(p)).collect();
            let group = next(g.in_c / g.icpg);
            let c0 = group * g.icpg;
            let form = (kpad, next(256) as u8, [0, 0x80][next(2) as usize]);
            let want = gather_plain(&g, &sram, &yx, c0, form);
            let mut got = vec![0xDD; yx.len() * kpad];
            gather_bytes(&g, &sram, pixels, group, kpad, form.1, form.2, &mut got).unwrap();
            assert_eq!(got, want, "case {case}: {g:?}");
            let mut general = vec![0xEE; yx.len() * kpad];
            gather_groups(&g, &sram, &yx, c0, form, &mut general).unwrap();
            assert_eq!(general, want, "case {case}: {g:?}");
            if small {
                let input = group_input(&g, &sram, c0).expect("the input is in SRAM");
                let mut direct = vec![0xCC; yx.len() * kpad];
                gather_small(&g, input, &yx, form, &mut direct);
                assert_eq!(direct, want, "case {case}: {g:?}");
            }
            let dense_1x1 =
                g.input.pix_pitch == 1 && g.input.row_pitch == g.in_w && g.kh * g.kw == 1;
            sixteens += usize::from(dense_1x1 && g.sw == 1 && g.icpg >= 8 && g.pix.count >= 16);
        }
        assert!(sixteens >= 5, "{sixteens} cases with groups of sixteen");
    }

    /// An input whose extents and pitches overflow u64 together is not taken whole
    /// (the general path reads the taps it needs, here inside SRAM): no panic.
    #[test]
    fn a_huge_input_extent_falls_back_to_the_general_path() {
        let big = u64::from(u32::MAX);
        let g = DotGeom {
            in_h: big,
            in_w: big,
            input: ActView {
                addr: 0,
                row_pitch: big * big,
                pix_pitch: big * big,
                chan_pitch: 4,
            },
            ..geom()
        };
        let sram = Memory {
            name: "sram",
            base: 0,
            bytes: (0..64u8).collect(),
        };
        assert!(group_input(&g, &sram, 0).is_none());
        let mut dst = [0xEEu8; 16];
        gather_bytes(&g, &sram, 0..1, 0, 16, 0, 0, &mut dst).unwrap();
        assert_eq!(dst[..4], [0, 4, 8, 0]);
    }

    #[test]
    fn every_way_of_reading_a_group_reads_its_bytes() {
        let row: Vec<u8> = (0..64u8).map(|b| b.wrapping_mul(37) ^ 0x5a).collect();
        let cases: [[usize; 8]; 6] = [
            [0, 1, 2, 3, 4, 5, 6, 7],
            [0, 1, 2, 3, 28, 29, 30, 31],
            [0, 1, 2, 20, 21, 22, 23, 24],
            [0, 2, 4, 6, 8, 10, 12, 14],
            [0, 1, 9, 10, 18, 19, 27, 28],
            [7, 6, 5, 4, 3, 2, 1, 0],
        ];
        let padx = 0xC3;
        // Every case with every set of pixels in the padding (the first, the last,
        // both, one in the middle, all but one), each read within its span and
        // within whole words.
        let outside = [0u8, 0b1, 0b1000_0000, 0b1000_0001, 0b0001_0000, 0b1111_1110];
        for delta in cases {
            for out in outside {
                let offs: Vec<Option<u64>> = (0..8)
                    .map(|q| (out >> q & 1 == 0).then_some(100 + delta[q] as u64))
                    .collect();
                let span = Taps8::of(&offs, padx).expect("a pixel inside").span();
                let lowest = (0..8)
                    .filter(|&q| out >> q & 1 == 0)
                    .map(|q| delta[q])
                    .min();
                let base = lowest.unwrap();
                let want = u64::from_le_bytes(std::array::from_fn(|q| match offs[q] {
                    Some(_) => row[delta[q]],
                    None => padx,
                }));
                for len in [span, span.max(8), span + 9] {
                    let g = Taps8::of(&offs, padx).unwrap().reading(len);
                    assert_eq!(
                        g.word(&row[base..base + len]),
                        want,
                        "{delta:?} outside {out:#b} len {len}"
                    );
                }
            }
        }
        assert!(Taps8::of(&[None; 8], padx).is_none());
        let runs = |d: [usize; 8]| matches!(Read8::of(&d, u64::MAX, 40), Read8::Runs { .. });
        assert!(runs([0, 1, 2, 3, 28, 29, 30, 31]));
        assert!(!runs([0, 2, 4, 6, 8, 10, 12, 14]));
        // The row's end inside the group: one load each side, the first's last bytes
        // and the second's first masked off.
        let consecutive =
            |d: [usize; 8], inside: u64| matches!(Read8::of(&d, inside, 8), Read8::Consecutive);
        assert!(consecutive([0, 1, 2, 3, 4, 5, 6, 7], u64::MAX));
        assert!(!consecutive([0, 1, 2, 3, 4, 5, 6, 7], u64::MAX >> 8));
    }

    /// The patch bytes of one pixel, tap by tap, channel by channel: the plain
    /// definition the gathers are held to.
    fn gather_plain(
        g: &DotGeom,
        sram: &Memory,
        yx: &[(u64, u64)],
        c0: u64,
        form: (usize, u8, u8),
    ) -> Vec<u8> {
        let (kpad, pad, xor) = form;
        let mut dst = vec![0u8; yx.len() * kpad];
        for (row, &(oy, ox)) in dst.chunks_exact_mut(kpad).zip(yx) {
            let mut t = 0;
            for ky in 0..g.kh {
                for kx in 0..g.kw {
                    for c in 0..g.icpg {
                        row[t] = match (g.in_row(oy, ky), g.in_col(ox, kx)) {
                            (Some(iy), Some(ix)) => {
                                sram.bytes[g.input.at(iy, ix, c0 + c) as usize] ^ xor
                            }
                            _ => pad,
                        };
                        t += 1;
                    }
                }
            }
        }
        dst
    }

    #[test]
    fn transpose_moves_every_byte() {
        let mut a = [0u64; 8];
        for (r, w) in a.iter_mut().enumerate() {
            *w = u64::from_le_bytes(std::array::from_fn(|j| (r * 8 + j) as u8));
        }
        let orig = a;
        let mut swar = a;
        transpose8(&mut a);
        transpose8_swar(&mut swar);
        for (r, w) in a.iter().enumerate() {
            for (j, o) in orig.iter().enumerate() {
                assert_eq!(w.to_le_bytes()[j], o.to_le_bytes()[r]);
            }
        }
        assert_eq!(a, swar);
    }
}
