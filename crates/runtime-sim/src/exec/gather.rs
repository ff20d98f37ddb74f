//! The patch gather of the byte kernel ([`super::quad`]): for every output pixel of a
//! block and every kernel tap, the input channels of one convolution group, as patch
//! bytes (`code ^ xor`: biased for int8 inputs), in term order (ky, kx, ic).
//!
//! A planar input (channels a plane apart) makes each pixel's channels a strided
//! byte gather. Where eight consecutive pixels of the block all read inside the input
//! for a tap (every 1x1 convolution, the interior of larger kernels, at any stride,
//! across rows), eight channels x eight pixels are loaded as eight words (one load
//! each where the eight bytes are consecutive, stride 1 along a row), transposed in
//! registers and stored as eight words; channels past the last multiple of eight (the
//! three of an image) are copied byte by byte for the eight pixels. Positions in the
//! padding are gathered pixel by pixel. A group of fewer than eight channels whose
//! whole input is in SRAM (an image's three) is gathered pixel by pixel, tap by tap,
//! straight from that input ([`gather_small`]).

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

/// Eight pixels' addresses of a tap, all inside the input: the lowest, each
/// pixel's distance from it, and how a channel's eight bytes are read.
struct Group8 {
    a0: u64,
    delta: [usize; 8],
    /// Bytes of one channel from `a0` the group reads (at least 8).
    len: usize,
    read: Read8,
}

/// How the eight bytes of one channel of a [`Group8`] are read.
#[derive(Clone, Copy)]
enum Read8 {
    /// Byte `q` at `delta[q] = q`: one word load.
    Consecutive,
    /// Runs of consecutive pixels reading consecutive bytes (a row end inside the
    /// group): for each run one word load at `base` (byte `q` of the word is pixel
    /// `q`'s when `q` is in the run) masked to the run's bytes; `count` runs.
    Runs {
        runs: [(usize, u64); 8],
        count: usize,
    },
    /// Byte by byte (strided pixels).
    Bytes,
}

impl Group8 {
    /// The group if all eight addresses are inside the input.
    fn of(offs: &[Option<u64>]) -> Option<Group8> {
        let mut a = [0u64; 8];
        for (d, o) in a.iter_mut().zip(offs) {
            *d = (*o)?;
        }
        let a0 = *a.iter().min()?;
        let delta: [usize; 8] = std::array::from_fn(|q| (a[q] - a0) as usize);
        let len = delta.iter().max().copied().unwrap_or(0).max(7) + 1;
        Some(Group8 {
            a0,
            delta,
            len,
            read: Read8::of(&delta, len),
        })
    }

    /// The eight bytes of the channel whose bytes start at `row[0]` (`row` holds at
    /// least [`Group8::len`] bytes), byte `q` = pixel `q`'s.
    #[inline(always)]
    fn word(&self, row: &[u8]) -> u64 {
        let load = |at: usize| u64::from_le_bytes(row[at..at + 8].try_into().expect("8 bytes"));
        match self.read {
            Read8::Consecutive => load(0),
            Read8::Runs { runs, count } => runs[..count]
                .iter()
                .fold(0, |w, &(base, mask)| w | (load(base) & mask)),
            Read8::Bytes => {
                let row = &row[..self.len];
                let d = &self.delta;
                u64::from_le_bytes([
                    row[d[0]], row[d[1]], row[d[2]], row[d[3]], row[d[4]], row[d[5]], row[d[6]],
                    row[d[7]],
                ])
            }
        }
    }
}

impl Read8 {
    /// The cheapest way to read `delta`'s bytes within `len` bytes.
    fn of(delta: &[usize; 8], len: usize) -> Read8 {
        if delta.iter().enumerate().all(|(q, &d)| d == q) {
            return Read8::Consecutive;
        }
        let mut runs = [(0usize, 0u64); 8];
        let mut count = 0;
        let mut q = 0;
        while q < 8 {
            let start = q;
            while q + 1 < 8 && delta[q + 1] == delta[q] + 1 {
                q += 1;
            }
            q += 1;
            // The word at `base` has pixel `start`'s byte at position `start`.
            let Some(base) = delta[start].checked_sub(start).filter(|b| b + 8 <= len) else {
                return Read8::Bytes;
            };
            let bytes = (q - start) as u32;
            let mask = (u64::MAX >> (64 - 8 * bytes)) << (8 * start);
            runs[count] = (base, mask);
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
/// `p + q` is `src[c * cp + g.delta[q]]`.
struct Run8<'s> {
    p: usize,
    g: Group8,
    src: &'s [u8],
}

impl Run8<'_> {
    /// Channels `cb..cb + 8` of the eight pixels, one word per channel (byte `q` =
    /// pixel `p + q`).
    #[inline(always)]
    fn words(&self, cb: usize, cp: usize) -> [u64; 8] {
        let mut a = [0u64; 8];
        for (r, w) in a.iter_mut().enumerate() {
            *w = self.g.word(&self.src[(cb + r) * cp..]);
        }
        a
    }
}

impl Patch<'_> {
    /// Channels `0..icpg` of every group's eight pixels for the tap at term `t`,
    /// channels `cp` bytes apart: channel blocks outside, groups inside, so each
    /// block's source lines are read once while they are in the cache.
    fn transposed(&mut self, runs: &[Run8<'_>], cp: usize, icpg: usize, t: usize, xor: u8) {
        let x = u64::from_ne_bytes([xor; 8]);
        let full = icpg / 8 * 8;
        for cb in (0..full).step_by(8) {
            for run in runs {
                let mut a = run.words(cb, cp);
                transpose8(&mut a);
                for (q, w) in a.iter().enumerate() {
                    let at = (run.p + q) * self.kpad + t + cb;
                    self.dst[at..at + 8].copy_from_slice(&(w ^ x).to_le_bytes());
                }
            }
        }
        for run in runs {
            for c in full..icpg {
                for q in 0..8 {
                    self.dst[(run.p + q) * self.kpad + t + c] =
                        run.src[c * cp + run.g.delta[q]] ^ xor;
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
                if let Some(g8) = (cp > 1 && p + 8 <= n)
                    .then(|| Group8::of(&offs[p..p + 8]))
                    .flatten()
                {
                    let src = sram.slice(g8.a0, (icpg as u64 - 1) * cp + g8.len as u64)?;
                    runs.push(Run8 { p, g: g8, src });
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
mod tests {
    use super::*;
    use crate::exec::dot_geom::DotKind;
    use crate::exec::tensor::{ActView, PixRange};

    /// A one-pixel 1 x 1 convolution of a 3-channel input at address 0; the tests
    /// change what they need.
    fn geom() -> DotGeom {
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

    /// Both gathers of a small group give the same patch bytes: strides, dilations,
    /// pads, pitches (planar and pixel-interleaved), groups, DECONV's gather form.
    #[test]
    fn small_groups_gather_as_the_general_path() {
        let mut seed = 9u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        for case in 0..300 {
            let kind = [DotKind::Conv, DotKind::Deconv][case % 2];
            let (kh, kw) = (1 + next(7), 1 + next(7));
            let (sh, sw, dh, dw) = (1 + next(3), 1 + next(3), 1 + next(2), 1 + next(2));
            let (in_h, in_w) = (1 + next(12), 1 + next(12));
            let (icpg, groups) = (1 + next(7), 1 + next(3));
            let in_c = icpg * groups;
            let planar = next(2) == 0;
            let (row_pitch, pix_pitch, chan_pitch) = if planar {
                (in_w + next(3), 1, (in_w + 3) * in_h + next(5))
            } else {
                (in_w * in_c + next(3), in_c, 1)
            };
            let (out_h, out_w) = (1 + next(9), 1 + next(9));
            let start = next(out_h * out_w);
            let count = 1 + next(out_h * out_w - start);
            let g = DotGeom {
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
                    addr: 5,
                    row_pitch,
                    pix_pitch,
                    chan_pitch,
                },
                ..geom()
            };
            let size = 5 + in_h * row_pitch + in_w * pix_pitch + in_c * chan_pitch;
            let sram = Memory {
                name: "sram",
                base: 0,
                bytes: (0..size).map(|i| (i * 131 % 251) as u8).collect(),
            };
            let kpad = (kh * kw * icpg) as usize + next(20) as usize;
            let yx: Vec<(u64, u64)> = (start..start + count).map(|p| g.pix.yx(p)).collect();
            let group = next(groups);
            let c0 = group * icpg;
            let (pad, xor) = (next(256) as u8, [0, 0x80][next(2) as usize]);
            let mut small = vec![0xEE; yx.len() * kpad];
            let input = group_input(&g, &sram, c0).expect("the input is in SRAM");
            gather_small(&g, input, &yx, (kpad, pad, xor), &mut small);
            let mut general = vec![0xDD; yx.len() * kpad];
            gather_groups(&g, &sram, &yx, c0, (kpad, pad, xor), &mut general).unwrap();
            assert_eq!(small, general, "case {case}: {g:?}");
        }
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
        for delta in cases {
            let offs: Vec<Option<u64>> = delta.iter().map(|&d| Some(100 + d as u64)).collect();
            let g = Group8::of(&offs).expect("all inside");
            let want = u64::from_le_bytes(std::array::from_fn(|q| row[delta[q]]));
            assert_eq!(g.word(&row[..g.len]), want, "{delta:?}");
        }
        let runs = |d: [usize; 8]| matches!(Read8::of(&d, 40), Read8::Runs { .. });
        assert!(runs([0, 1, 2, 3, 28, 29, 30, 31]));
        assert!(!runs([0, 2, 4, 6, 8, 10, 12, 14]));
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
