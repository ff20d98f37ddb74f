//! The int8 x int8 dot-product kernel on byte patches, for CPUs with AVX-512 VNNI.
//!
//! `vpdpbusd` multiplies four unsigned bytes by four signed bytes and adds the four
//! products into an i32 lane (wrapping, never saturating): 64 multiply-accumulates
//! per instruction, four times the i16 kernel of [`super::gemm`]. Its first operand
//! is unsigned, so a signed (int8) patch value `x` is stored biased, as the byte
//! `x + 128` (`x ^ 0x80`), and the bias is taken back out per channel:
//! `sum x*w = sum (x+128)*w - 128 * sum w` ([`QuadWeights::colsum`]). All of it is
//! arithmetic modulo 2^32; the caller only uses this kernel when every exact sum fits
//! in i32 ([`super::gemm::fits_i32`]), so the wrapped result is the exact one.
//!
//! The weights (signed int8 only) are held as quads: `data[(kk / 4) * ld + c]` packs
//! the weights of channel `c` for terms `4*(kk/4) .. 4*(kk/4) + 3` (low byte first),
//! the layout `vpdpbusd` multiplies with a broadcast quad of patch bytes. Terms past K
//! and channels past the tile are 0; `ld` leaves room for 15 channels past the last
//! (a block of `n` channels reads `16 * ceil(n / 16)` lanes). [`gemm_portable`] is the same arithmetic in plain Rust (the
//! definition the tests hold the VNNI kernel to).

use super::dot_geom::DotGeom;
use super::lines::LineWords;
use super::weights::{sram_term, weight_runs, PAR_MIN_WEIGHTS};
use rayon::prelude::*;

/// Channels one kernel block computes (three 16-lane registers).
pub const COLS_BLOCK: usize = 48;

/// Patch rows are padded to a multiple of this many terms.
pub const K_ALIGN: usize = 4;

/// Rounds `k` up to a multiple of [`K_ALIGN`].
pub fn padded_len(k: usize) -> usize {
    k.div_ceil(K_ALIGN) * K_ALIGN
}

/// True if this CPU runs the VNNI kernel.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A patch byte: the code itself (uint8 input) or the code biased by 128 (int8).
#[inline]
pub fn patch_byte(code: u8, signed: bool) -> u8 {
    if signed {
        code ^ 0x80
    } else {
        code
    }
}

/// The signed int8 weights of a tile as quads of terms (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuadWeights {
    /// Rows of `ld` words (a multiple of 16: each row starts a cache line).
    pub data: LineWords<u32>,
    pub ld: usize,
    pub kpad: usize,
    /// `128 * sum_kk w(kk, c)` per tile channel: the bias a signed patch takes out.
    pub colsum: Vec<i32>,
}

impl QuadWeights {
    /// Zero weights for `channels` channels and `kpad` terms.
    pub fn zeroed(channels: usize, kpad: usize) -> QuadWeights {
        debug_assert!(kpad.is_multiple_of(K_ALIGN));
        let ld = (channels + 15).div_ceil(16) * 16;
        QuadWeights {
            data: LineWords::zeroed(kpad / 4 * ld),
            ld,
            kpad,
            colsum: vec![0; channels],
        }
    }

    /// The weight of channel `c` for term `kk`.
    pub fn at(&self, kk: usize, c: usize) -> i8 {
        (self.data[(kk / 4) * self.ld + c] >> (8 * (kk % 4))) as u8 as i8
    }
}

/// The tile's signed weights as quads in the patch term order
/// `kk = (ky * kernel_w + kx) * icpg + ic` (the SRAM layout of docs/ISA.md section 4,
/// as read by [`super::weights::pair_weights`]). The rows are independent: a large
/// tile's (a program's first frame converts every instruction's weights, on the
/// engine's thread) are packed on every thread, each job summing its own rows.
pub fn quad_weights(g: &DotGeom, bytes: &[u8], kpad: usize) -> QuadWeights {
    let k = g.k_terms() as usize;
    let channels = g.oc_count as usize;
    let mut w = QuadWeights::zeroed(channels, kpad);
    let runs = weight_runs(g);
    let sram_term = sram_term(g);
    let zeros = vec![0u8; channels];
    let pack = pack_quads_fn();
    // Quad row `k4`'s words, its terms' signed sums added to `sums`.
    let fill = |mut sums: Vec<i32>, (k4, row): (usize, &mut [u32])| {
        for run in &runs {
            // The run's weights of term kk (zero past K).
            let term = |kk: usize| match kk < k {
                true => {
                    let t = run.off + sram_term(kk) * run.cols;
                    &bytes[t..t + run.n]
                }
                false => &zeros[..run.n],
            };
            let q = [
                term(4 * k4),
                term(4 * k4 + 1),
                term(4 * k4 + 2),
                term(4 * k4 + 3),
            ];
            let cols = run.c0..run.c0 + run.n;
            pack(&mut row[cols.clone()], &mut sums[cols], q);
        }
        sums
    };
    let (ld, rows) = (w.ld, kpad / 4);
    let sums = if k as u64 * g.oc_count >= PAR_MIN_WEIGHTS {
        let add = |mut a: Vec<i32>, b: Vec<i32>| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        };
        w.data
            .par_chunks_mut(ld)
            .take(rows)
            .enumerate()
            .fold(|| vec![0i32; channels], fill)
            .reduce(|| vec![0i32; channels], add)
    } else {
        w.data
            .chunks_mut(ld)
            .take(rows)
            .enumerate()
            .fold(vec![0i32; channels], fill)
    };
    w.colsum = sums.iter().map(|&s| s * 128).collect();
    w
}

/// A packer of one row of quads ([`pack_quads`]), compiled for AVX2 where the CPU
/// has it.
type PackQuads = fn(&mut [u32], &mut [i32], [&[u8]; 4]);

fn pack_quads_fn() -> PackQuads {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return |row, sums, q| {
                // SAFETY: AVX2 is available (checked when this packer was chosen); the
                // body is safe Rust.
                unsafe { pack_quads_avx2(row, sums, q) }
            };
        }
    }
    pack_quads
}

/// [`pack_quads`] compiled for AVX2 (its loops run 8 channels wide).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pack_quads_avx2(row: &mut [u32], sums: &mut [i32], q: [&[u8]; 4]) {
    pack_quads(row, sums, q)
}

/// `row[j]` = the four terms' bytes `q[0][j] .. q[3][j]` as one little-endian word,
/// and `sums[j]` += their signed sum: two plain loops over equal-length slices, which
/// the compiler vectorises (a zipped loop doing both did not).
#[inline(always)]
fn pack_quads(row: &mut [u32], sums: &mut [i32], q: [&[u8]; 4]) {
    let n = row.len();
    let (b0, b1, b2, b3) = (&q[0][..n], &q[1][..n], &q[2][..n], &q[3][..n]);
    let sums = &mut sums[..n];
    for j in 0..n {
        row[j] = u32::from(b0[j])
            | u32::from(b1[j]) << 8
            | u32::from(b2[j]) << 16
            | u32::from(b3[j]) << 24;
    }
    for j in 0..n {
        sums[j] += i32::from(b0[j] as i8)
            + i32::from(b1[j] as i8)
            + i32::from(b2[j] as i8)
            + i32::from(b3[j] as i8);
    }
}

/// `out[r * ldo + j] = dot(a[r], w(., c0 + j))` for `r < rows`, `j < cols`: the raw
/// `vpdpbusd` sums of the byte patches (unbiased by the caller for a signed patch).
pub fn gemm(
    a: &[u8],
    rows: usize,
    w: &QuadWeights,
    c0: usize,
    cols: usize,
    out: &mut [i32],
    ldo: usize,
) {
    let kpad = w.kpad;
    assert!(kpad.is_multiple_of(K_ALIGN) && a.len() >= rows * kpad);
    // The last column block reads whole 16-lane vectors: up to c0 + ceil16(cols).
    assert!(c0 + cols.div_ceil(16) * 16 <= w.ld && w.data.len() >= kpad / 4 * w.ld);
    assert!(rows == 0 || cols == 0 || out.len() >= (rows - 1) * ldo + cols);
    #[cfg(target_arch = "x86_64")]
    {
        if available() {
            // SAFETY: AVX-512 F/BW/VNNI are available (checked just above); the asserts
            // above bound every read (rows * kpad patch bytes; the quads of a column
            // block, 16 * ceil(n / 16) lanes from c0 + cb, end at most at
            // c0 + ceil16(cols), inside `ld`) and write (rows of cols values at ldo).
            unsafe { avx512::gemm(a, rows, w, c0, cols, out, ldo) };
            return;
        }
    }
    gemm_portable(a, rows, w, c0, cols, out, ldo);
}

/// [`gemm`] in plain Rust ([`super::gemm::portable`]).
pub fn gemm_portable(
    a: &[u8],
    rows: usize,
    w: &QuadWeights,
    c0: usize,
    cols: usize,
    out: &mut [i32],
    ldo: usize,
) {
    let at = |kk: usize, c: usize| i32::from(w.at(kk, c));
    super::gemm::portable((a, w.kpad), rows, at, c0..c0 + cols, out, ldo);
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{QuadWeights, COLS_BLOCK};
    use std::arch::x86_64::*;

    /// Quad rows ahead whose weights [`block`] asks for while it multiplies a row:
    /// a layer's first pixel block reads weights no block has read yet, and waiting
    /// on each line from L3 or memory in turn cost about a fifth of the kernel's speed
    /// (measured on cold weights, 48 pixels x 96 channels, K = 576: 340 -> 420 to 440
    /// GMAC/s per thread at 16 rows ahead).
    const AHEAD: usize = 16;

    /// `R` pixels x `16 * W` channels: per term quad, the pixel's four bytes are
    /// broadcast and multiplied with the 16-channel quad vectors.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn block<const R: usize, const W: usize>(
        a: *const u8,
        kpad: usize,
        w: *const u32,
        ld: usize,
    ) -> [[__m512i; W]; R] {
        let mut acc = [[_mm512_setzero_si512(); W]; R];
        for k4 in 0..kpad / 4 {
            let wp = w.add(k4 * ld);
            // A hint, never dereferenced: past the last row it asks for nothing useful
            // and cannot fault.
            let ahead = wp.wrapping_add(AHEAD * ld);
            for i in 0..W {
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(16 * i) as *const i8);
            }
            let wv: [__m512i; W] =
                std::array::from_fn(|i| _mm512_loadu_si512(wp.add(16 * i) as *const __m512i));
            for (r, acc) in acc.iter_mut().enumerate() {
                let quad = (a.add(r * kpad + 4 * k4) as *const i32).read_unaligned();
                let x = _mm512_set1_epi32(quad);
                for (acc, &wv) in acc.iter_mut().zip(&wv) {
                    *acc = _mm512_dpbusd_epi32(*acc, x, wv);
                }
            }
        }
        acc
    }

    /// Row `r`'s `n <= 16 * W` sums to `out[at + r * ldo..][..n]`, each register
    /// stored in place under a mask (through a buffer and a copy, a short dot product
    /// ran at 350 GMAC/s per thread for K = 64, 480 without).
    #[target_feature(enable = "avx512f")]
    unsafe fn store<const R: usize, const W: usize>(
        acc: &[[__m512i; W]; R],
        out: &mut [i32],
        at: usize,
        ldo: usize,
        n: usize,
    ) {
        for (r, v) in acc.iter().enumerate() {
            // Register `i` holds the row's values 16 i .. 16 i + 15: those below `n`
            // are stored (a masked-out lane is not written and cannot fault).
            let dst = &mut out[at + r * ldo..at + r * ldo + n];
            for (i, &vi) in v.iter().enumerate() {
                let lanes = n.saturating_sub(16 * i).min(16);
                let mask: u16 = if lanes == 16 { !0 } else { (1 << lanes) - 1 };
                let to = dst.as_mut_ptr().wrapping_add(16 * i);
                _mm512_mask_storeu_epi32(to, mask, vi);
            }
        }
    }

    /// One column block of `n <= 16 * W` channels over all rows.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn columns<const W: usize>(
        a: &[u8],
        rows: usize,
        kpad: usize,
        wp: *const u32,
        ld: usize,
        out: &mut [i32],
        (cb, n): (usize, usize),
        ldo: usize,
    ) {
        let mut r = 0;
        while r + 8 <= rows {
            let acc = block::<8, W>(a.as_ptr().add(r * kpad), kpad, wp, ld);
            store(&acc, out, r * ldo + cb, ldo, n);
            r += 8;
        }
        while r + 2 <= rows {
            let acc = block::<2, W>(a.as_ptr().add(r * kpad), kpad, wp, ld);
            store(&acc, out, r * ldo + cb, ldo, n);
            r += 2;
        }
        while r < rows {
            let acc = block::<1, W>(a.as_ptr().add(r * kpad), kpad, wp, ld);
            store(&acc, out, r * ldo + cb, ldo, n);
            r += 1;
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn gemm(
        a: &[u8],
        rows: usize,
        w: &QuadWeights,
        c0: usize,
        cols: usize,
        out: &mut [i32],
        ldo: usize,
    ) {
        let kpad = w.kpad;
        for cb in (0..cols).step_by(COLS_BLOCK) {
            let wp = w.data.as_ptr().add(c0 + cb);
            let n = COLS_BLOCK.min(cols - cb);
            // As few 16-channel registers as the block needs (a narrow group).
            match n.div_ceil(16) {
                1 => columns::<1>(a, rows, kpad, wp, w.ld, out, (cb, n), ldo),
                2 => columns::<2>(a, rows, kpad, wp, w.ld, out, (cb, n), ldo),
                _ => columns::<3>(a, rows, kpad, wp, w.ld, out, (cb, n), ldo),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(n: usize, seed: &mut u32) -> Vec<u8> {
        (0..n)
            .map(|_| {
                *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (*seed >> 16) as u8
            })
            .collect()
    }

    #[test]
    fn kernels_agree_with_the_definition() {
        let mut seed = 11u32;
        for (rows, channels, k, c0, cols) in [
            (7, 40, 1040, 3, 37),
            (9, 96, 576, 0, 96),
            (17, 96, 27, 48, 48),
            (1, 5, 16, 4, 1),
            (3, 100, 9, 50, 50),
            (9, 97, 20, 96, 1),
            (10, 97, 20, 1, 96),
        ] {
            let kpad = padded_len(k);
            let mut a = random(rows * kpad, &mut seed);
            for r in 0..rows {
                a[r * kpad + k..(r + 1) * kpad].fill(0);
            }
            let mut w = QuadWeights::zeroed(channels, kpad);
            let vals = random(k * channels, &mut seed);
            for kk in 0..k {
                for c in 0..channels {
                    w.data[(kk / 4) * w.ld + c] |=
                        u32::from(vals[kk * channels + c]) << (8 * (kk % 4));
                    assert_eq!(w.at(kk, c), vals[kk * channels + c] as i8);
                }
            }
            let mut want = vec![0i32; rows * cols];
            for r in 0..rows {
                for j in 0..cols {
                    want[r * cols + j] = (0..k)
                        .map(|kk| i32::from(a[r * kpad + kk]) * i32::from(w.at(kk, c0 + j)))
                        .sum();
                }
            }
            let mut got = vec![0i32; rows * cols];
            gemm(&a, rows, &w, c0, cols, &mut got, cols);
            assert_eq!(got, want, "{rows}x{cols} k={k}");
            let mut port = vec![0i32; rows * cols];
            gemm_portable(&a, rows, &w, c0, cols, &mut port, cols);
            assert_eq!(port, want);
        }
    }

    #[test]
    fn converted_weights_are_the_sram_layout_in_patch_order() {
        // (kh, kw, icpg, oc_start, oc_count, mac_cols, w_pitch): one weight group
        // and two, a w_pitch, K not a multiple of 4; the last two of 2^15 weights or
        // more (converted in parallel).
        for (kh, kw, icpg, oc_start, oc_count, cols, w_pitch) in [
            (1, 1, 5, 0, 7, 96, 0),
            (3, 3, 3, 50, 20, 32, 0),
            (1, 3, 6, 3, 10, 96, 13),
            (3, 3, 64, 0, 96, 96, 0),
            (3, 3, 57, 40, 96, 96, 0),
        ] {
            let g = DotGeom {
                kh,
                kw,
                icpg,
                ocpg: oc_start + oc_count,
                oc_start,
                oc_count,
                mac_cols: cols,
                w_pitch,
                ..crate::exec::gather::tests::geom()
            };
            let (k, taps) = (g.k_terms(), kh * kw);
            // docs/ISA.md section 4: vector t = ic * taps + tap of the channel's group,
            // or `w_pitch` bytes apart; patch term kk = tap * icpg + ic.
            let at = |kk: u64, c: u64| {
                let t = (kk % icpg) * taps + kk / icpg;
                if w_pitch != 0 {
                    return (t * w_pitch + c) as usize;
                }
                let (oc, q0) = (oc_start + c, oc_start / cols);
                ((oc / cols - q0) * k * cols + t * cols + oc % cols) as usize
            };
            let len = (0..k)
                .flat_map(|kk| (0..oc_count).map(move |c| (kk, c)))
                .map(|(kk, c)| at(kk, c) + 1)
                .max()
                .unwrap();
            let bytes = random(len, &mut 7);
            let kpad = padded_len(k as usize);
            let w = quad_weights(&g, &bytes, kpad);
            for c in 0..w.ld {
                let mut sum = 0i32;
                for kk in 0..kpad {
                    let want = match (kk < k as usize, (c as u64) < oc_count) {
                        (true, true) => bytes[at(kk as u64, c as u64)] as i8,
                        _ => 0,
                    };
                    assert_eq!(w.at(kk, c), want, "term {kk} channel {c}");
                    sum += i32::from(want);
                }
                if c < oc_count as usize {
                    assert_eq!(w.colsum[c], 128 * sum, "channel {c}");
                }
            }
            assert_eq!(w.colsum.len(), oc_count as usize);
        }
    }

    #[test]
    fn the_bias_of_a_signed_patch_comes_back_out() {
        // sum (x + 128) * w - 128 * sum w == sum x * w for int8 x.
        let xs: [i8; 4] = [-128, 127, 0, -5];
        let ws: [i8; 4] = [-128, -128, 7, 127];
        let exact: i32 = xs
            .iter()
            .zip(&ws)
            .map(|(&x, &w)| i32::from(x) * i32::from(w))
            .sum();
        let biased: i32 = xs
            .iter()
            .zip(&ws)
            .map(|(&x, &w)| i32::from(patch_byte(x as u8, true)) * i32::from(w))
            .sum();
        let colsum: i32 = ws.iter().map(|&w| i32::from(w)).sum::<i32>() * 128;
        assert_eq!(biased - colsum, exact);
    }
}
