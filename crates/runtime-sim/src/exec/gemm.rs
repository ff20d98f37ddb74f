//! The integer dot-product kernel of CONV / DECONV / INNER_PRODUCT:
//! `out[r][j] = sum_kk a[r][kk] * w(kk, c0 + j)` over i16 patch rows of length `kpad`
//! (a multiple of [`K_ALIGN`], zero-padded) and weights held as interleaved term pairs
//! ([`PairWeights`]), with i32 accumulation. The caller guarantees the exact sums fit
//! in i32 (see [`fits_i32`]); [`dot_exact`] is the i64 path otherwise.
//!
//! On x86-64 with AVX2 the kernel broadcasts a pair of patch terms of one pixel and
//! multiplies it with the term pairs of 8 channels at once (`vpmaddwd`), for blocks of
//! 6 pixels x 16 channels (12 accumulator registers), in passes of at most 384 term
//! pairs so a pass's weights and patch rows stay in the L1 cache; elsewhere a portable
//! loop does the same arithmetic.

/// Row lengths are padded to a multiple of this.
pub const K_ALIGN: usize = 16;

/// Channels one kernel block computes.
pub const COLS_BLOCK: usize = 16;

/// Rounds `k` up to a multiple of [`K_ALIGN`].
pub fn padded_len(k: usize) -> usize {
    k.div_ceil(K_ALIGN) * K_ALIGN
}

/// True if every sum of `k` products of values bounded by `max_a` and `max_b` in
/// magnitude fits in i32.
pub fn fits_i32(k: u64, max_a: u64, max_b: u64) -> bool {
    k.saturating_mul(max_a * max_b) <= i32::MAX as u64
}

/// The weights of a tile as interleaved term pairs: `data[(kk / 2) * ld + c]` holds
/// the i16 weights of channel `c` for terms `kk & !1` (low half) and `kk | 1` (high
/// half), the layout `vpmaddwd` multiplies with a broadcast pair of patch terms.
/// Terms past K and channels past the tile are 0; `ld` leaves room for a whole
/// [`COLS_BLOCK`] after every channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairWeights {
    pub data: Vec<u32>,
    pub ld: usize,
    pub kpad: usize,
}

/// Packs the weights of two consecutive terms into one pair word.
#[inline]
pub fn pack_pair(lo: i16, hi: i16) -> u32 {
    u32::from(lo as u16) | (u32::from(hi as u16) << 16)
}

impl PairWeights {
    /// Zero weights for `channels` channels and `kpad` terms.
    pub fn zeroed(channels: usize, kpad: usize) -> PairWeights {
        debug_assert!(kpad.is_multiple_of(2));
        let ld = channels.div_ceil(8) * 8 + COLS_BLOCK;
        PairWeights {
            data: vec![0; kpad / 2 * ld],
            ld,
            kpad,
        }
    }

    /// The weight of channel `c` for term `kk`.
    pub fn at(&self, kk: usize, c: usize) -> i16 {
        let pair = self.data[(kk / 2) * self.ld + c];
        (pair >> (16 * (kk % 2))) as u16 as i16
    }
}

/// Exact (i64) dot product of patch row `a` with channel `c`.
pub fn dot_exact(a: &[i16], w: &PairWeights, c: usize) -> i64 {
    a.iter()
        .enumerate()
        .map(|(kk, &x)| i64::from(x) * i64::from(w.at(kk, c)))
        .sum()
}

/// `out[r * ldo + j] = dot(a[r], w(., c0 + j))` for `r < rows`, `j < cols` (wrapping i32).
pub fn gemm(
    a: &[i16],
    rows: usize,
    w: &PairWeights,
    c0: usize,
    cols: usize,
    out: &mut [i32],
    ldo: usize,
) {
    let kpad = w.kpad;
    assert!(kpad.is_multiple_of(K_ALIGN) && a.len() >= rows * kpad);
    assert!(c0 + cols + COLS_BLOCK <= w.ld + 1 && w.data.len() >= kpad / 2 * w.ld);
    assert!(rows == 0 || cols == 0 || out.len() >= (rows - 1) * ldo + cols);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available (checked just above); the asserts above bound
            // every read (rows * kpad patch values; a whole COLS_BLOCK of pairs from
            // any channel below c0 + cols) and write (rows of cols values at ldo).
            unsafe { avx2::gemm(a, rows, w, c0, cols, out, ldo) };
            return;
        }
    }
    portable_gemm(a, rows, w, c0, cols, out, ldo);
}

fn portable_gemm(
    a: &[i16],
    rows: usize,
    w: &PairWeights,
    c0: usize,
    cols: usize,
    out: &mut [i32],
    ldo: usize,
) {
    let at = |kk: usize, c: usize| i32::from(w.at(kk, c));
    portable((a, w.kpad), rows, at, c0..c0 + cols, out, ldo);
}

/// `out[r * ldo + j] = sum_kk a[r][kk] * w(kk, c0 + j)` (wrapping i32) for `r < rows`
/// and the channels `c0 + j` of `chans`, with patch rows of `kpad` values: the plain
/// Rust definition the vector kernels (this file's and [`super::quad`]'s) are held to.
pub fn portable<A: Copy + Into<i32>>(
    (a, kpad): (&[A], usize),
    rows: usize,
    w: impl Fn(usize, usize) -> i32,
    chans: std::ops::Range<usize>,
    out: &mut [i32],
    ldo: usize,
) {
    for r in 0..rows {
        let ar = &a[r * kpad..(r + 1) * kpad];
        for (j, c) in chans.clone().enumerate() {
            out[r * ldo + j] = ar.iter().enumerate().fold(0i32, |s, (kk, &x)| {
                s.wrapping_add(x.into().wrapping_mul(w(kk, c)))
            });
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{PairWeights, COLS_BLOCK};
    use std::arch::x86_64::*;

    /// Term pairs per pass: a pass's weights (16 channels) and patch rows stay in the
    /// L1 cache while every pixel block of the tile runs over them.
    const PAIRS_PER_PASS: usize = 384;

    /// `R` pixels x 16 channels over `pairs` term pairs, added to `acc`: per term
    /// pair, the pixel's two terms are broadcast and multiplied with the 8-channel
    /// pair vectors.
    #[target_feature(enable = "avx2")]
    unsafe fn block<const R: usize>(
        mut acc: [[__m256i; 2]; R],
        a: *const i16,
        kpad: usize,
        (w, ld): (*const u32, usize),
        pairs: usize,
    ) -> [[__m256i; 2]; R] {
        for k2 in 0..pairs {
            let wp = w.add(k2 * ld);
            let w0 = _mm256_loadu_si256(wp as *const __m256i);
            let w1 = _mm256_loadu_si256(wp.add(8) as *const __m256i);
            for (r, acc) in acc.iter_mut().enumerate() {
                let pair = (a.add(r * kpad + 2 * k2) as *const i32).read_unaligned();
                let x = _mm256_set1_epi32(pair);
                acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(x, w0));
                acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(x, w1));
            }
        }
        acc
    }

    /// The `R` rows at `out[at..]`: loaded (`first` false) or zero.
    #[target_feature(enable = "avx2")]
    unsafe fn load<const R: usize>(
        out: &[i32],
        (at, ldo, n): (usize, usize, usize),
        first: bool,
    ) -> [[__m256i; 2]; R] {
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        if !first {
            let mut buf = [0i32; COLS_BLOCK];
            for (r, v) in acc.iter_mut().enumerate() {
                let row = &out[at + r * ldo..at + r * ldo + n];
                // A whole block straight from `out`, a partial one through `buf`.
                let src = if n == COLS_BLOCK {
                    row
                } else {
                    buf[..n].copy_from_slice(row);
                    &buf[..]
                };
                v[0] = _mm256_loadu_si256(src.as_ptr() as *const __m256i);
                v[1] = _mm256_loadu_si256(src.as_ptr().add(8) as *const __m256i);
            }
        }
        acc
    }

    #[target_feature(enable = "avx2")]
    unsafe fn store<const R: usize>(
        acc: &[[__m256i; 2]; R],
        out: &mut [i32],
        (at, ldo, n): (usize, usize, usize),
    ) {
        let mut buf = [0i32; COLS_BLOCK];
        for (r, v) in acc.iter().enumerate() {
            let row = &mut out[at + r * ldo..at + r * ldo + n];
            // A whole block straight into `out`, a partial one through `buf`.
            let dst = if n == COLS_BLOCK {
                row.as_mut_ptr()
            } else {
                buf.as_mut_ptr()
            };
            _mm256_storeu_si256(dst as *mut __m256i, v[0]);
            _mm256_storeu_si256(dst.add(8) as *mut __m256i, v[1]);
            if n < COLS_BLOCK {
                row.copy_from_slice(&buf[..n]);
            }
        }
    }

    /// `R` rows from `r` of one pass (term pairs `k0..k0 + pairs`) of one channel
    /// block `cb`.
    #[target_feature(enable = "avx2")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn rows<const R: usize>(
        a: &[i16],
        r: usize,
        w: &PairWeights,
        (c, n): (usize, usize),
        (k0, pairs): (usize, usize),
        out: &mut [i32],
        (cb, ldo): (usize, usize),
    ) {
        let kpad = w.kpad;
        let at = (r * ldo + cb, ldo, n);
        let acc = load::<R>(out, at, k0 == 0);
        let wp = w.data.as_ptr().add(k0 * w.ld + c);
        let acc = block::<R>(
            acc,
            a.as_ptr().add(r * kpad + 2 * k0),
            kpad,
            (wp, w.ld),
            pairs,
        );
        store(&acc, out, at);
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn gemm(
        a: &[i16],
        rows_n: usize,
        w: &PairWeights,
        c0: usize,
        cols: usize,
        out: &mut [i32],
        ldo: usize,
    ) {
        let total = w.kpad / 2;
        for k0 in (0..total).step_by(PAIRS_PER_PASS) {
            let pass = (k0, PAIRS_PER_PASS.min(total - k0));
            for cb in (0..cols).step_by(COLS_BLOCK) {
                let ch = (c0 + cb, COLS_BLOCK.min(cols - cb));
                // Near-equal blocks of at most 6 rows (8 = 4 + 4, 25 = 5 x 5): a
                // block of one or two rows is bound by its weight loads (8 rows as
                // 6 + 1 + 1 ran at 43 GMAC/s, as 4 + 4 at 57).
                let blocks = rows_n.div_ceil(6);
                let mut r = 0;
                for b in 0..blocks {
                    let n = rows_n / blocks + usize::from(b < rows_n % blocks);
                    match n {
                        1 => rows::<1>(a, r, w, ch, pass, out, (cb, ldo)),
                        2 => rows::<2>(a, r, w, ch, pass, out, (cb, ldo)),
                        3 => rows::<3>(a, r, w, ch, pass, out, (cb, ldo)),
                        4 => rows::<4>(a, r, w, ch, pass, out, (cb, ldo)),
                        5 => rows::<5>(a, r, w, ch, pass, out, (cb, ldo)),
                        _ => rows::<6>(a, r, w, ch, pass, out, (cb, ldo)),
                    }
                    r += n;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(n: usize, seed: &mut u32) -> Vec<i16> {
        (0..n)
            .map(|_| {
                *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ((*seed >> 16) % 384) as i16 - 128
            })
            .collect()
    }

    #[test]
    fn kernels_agree_with_the_definition() {
        let mut seed = 7u32;
        for (rows, channels, k, c0, cols) in [
            (7, 40, 1040, 3, 37),
            (4, 16, 32, 0, 16),
            (9, 96, 576, 0, 96),
            (1, 5, 16, 4, 1),
            // Tails of every length after the six-row blocks.
            (2, 24, 48, 0, 24),
            (8, 33, 64, 1, 30),
            (11, 20, 800, 2, 17),
            (5, 16, 16, 0, 16),
        ] {
            let kpad = padded_len(k);
            let a = random(rows * kpad, &mut seed);
            let mut w = PairWeights::zeroed(channels, kpad);
            let vals = random(kpad * channels, &mut seed);
            for k2 in 0..kpad / 2 {
                for c in 0..channels {
                    let (lo, hi) = (
                        vals[2 * k2 * channels + c],
                        vals[(2 * k2 + 1) * channels + c],
                    );
                    w.data[k2 * w.ld + c] = pack_pair(lo, hi);
                    assert_eq!((w.at(2 * k2, c), w.at(2 * k2 + 1, c)), (lo, hi));
                }
            }
            let mut want = vec![0i32; rows * cols];
            for r in 0..rows {
                for j in 0..cols {
                    want[r * cols + j] = dot_exact(&a[r * kpad..(r + 1) * kpad], &w, c0 + j)
                        .try_into()
                        .expect("small values");
                }
            }
            let mut got = vec![0i32; rows * cols];
            gemm(&a, rows, &w, c0, cols, &mut got, cols);
            assert_eq!(got, want, "{rows}x{cols} k={k}");
            let mut port = vec![0i32; rows * cols];
            portable_gemm(&a, rows, &w, c0, cols, &mut port, cols);
            assert_eq!(port, want);
        }
    }

    #[test]
    fn bound() {
        assert!(fits_i32(33_000, 255, 255));
        assert!(!fits_i32(33_100, 255, 255));
    }
}
