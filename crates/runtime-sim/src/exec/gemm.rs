//! The integer dot-product kernel: `out[r][c] = sum_k a[r][k] * b[c][k]` over i16
//! rows whose length `kpad` is a multiple of [`K_ALIGN`] (zero-padded), with i32
//! accumulation. The caller guarantees the exact sums fit in i32 (see
//! [`fits_i32`]). On x86-64 with AVX2 the inner loop uses `vpmaddwd`; elsewhere a
//! portable loop the compiler vectorizes.

/// Row lengths are padded to a multiple of this.
pub const K_ALIGN: usize = 16;

/// Rounds `k` up to a multiple of [`K_ALIGN`].
pub fn padded_len(k: usize) -> usize {
    k.div_ceil(K_ALIGN) * K_ALIGN
}

/// True if every sum of `k` products of values bounded by `max_a` and `max_b` in
/// magnitude fits in i32.
pub fn fits_i32(k: u64, max_a: u64, max_b: u64) -> bool {
    k.saturating_mul(max_a * max_b) <= i32::MAX as u64
}

/// `out[r * ldo + c] = dot(a[r], b[c])` for `r < rows`, `c < cols`.
pub fn gemm(
    a: &[i16],
    rows: usize,
    b: &[i16],
    cols: usize,
    kpad: usize,
    out: &mut [i32],
    ldo: usize,
) {
    debug_assert!(kpad.is_multiple_of(K_ALIGN) && a.len() >= rows * kpad && b.len() >= cols * kpad);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available (checked just above); slices are bounds-checked
            // by the caller's layout (rows*kpad, cols*kpad) and the kernels only read
            // `kpad` elements from each row start.
            unsafe { avx2::gemm(a, rows, b, cols, kpad, out, ldo) };
            return;
        }
    }
    portable_gemm(a, rows, b, cols, kpad, out, ldo);
}

fn portable_dot(a: &[i16], b: &[i16]) -> i32 {
    let mut acc = [0i32; K_ALIGN];
    for (ca, cb) in a.chunks_exact(K_ALIGN).zip(b.chunks_exact(K_ALIGN)) {
        for l in 0..K_ALIGN {
            acc[l] = acc[l].wrapping_add(i32::from(ca[l]) * i32::from(cb[l]));
        }
    }
    acc.iter().fold(0i32, |s, &v| s.wrapping_add(v))
}

fn portable_gemm(
    a: &[i16],
    rows: usize,
    b: &[i16],
    cols: usize,
    kpad: usize,
    out: &mut [i32],
    ldo: usize,
) {
    for r in 0..rows {
        let ar = &a[r * kpad..(r + 1) * kpad];
        for c in 0..cols {
            out[r * ldo + c] = portable_dot(ar, &b[c * kpad..(c + 1) * kpad]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    unsafe fn hsum(v: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
        _mm_cvtsi128_si32(s)
    }

    #[target_feature(enable = "avx2")]
    unsafe fn load(p: *const i16) -> __m256i {
        _mm256_loadu_si256(p as *const __m256i)
    }

    /// Two rows of `a` against four rows of `b`.
    #[target_feature(enable = "avx2")]
    unsafe fn kernel_2x4(a: [*const i16; 2], b: [*const i16; 4], kpad: usize) -> [[i32; 4]; 2] {
        let mut acc = [[_mm256_setzero_si256(); 4]; 2];
        let mut k = 0;
        while k < kpad {
            let x0 = load(a[0].add(k));
            let x1 = load(a[1].add(k));
            for j in 0..4 {
                let w = load(b[j].add(k));
                acc[0][j] = _mm256_add_epi32(acc[0][j], _mm256_madd_epi16(x0, w));
                acc[1][j] = _mm256_add_epi32(acc[1][j], _mm256_madd_epi16(x1, w));
            }
            k += 16;
        }
        let mut out = [[0i32; 4]; 2];
        for i in 0..2 {
            for j in 0..4 {
                out[i][j] = hsum(acc[i][j]);
            }
        }
        out
    }

    #[target_feature(enable = "avx2")]
    unsafe fn kernel_1x1(a: *const i16, b: *const i16, kpad: usize) -> i32 {
        let mut acc = _mm256_setzero_si256();
        let mut k = 0;
        while k < kpad {
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(load(a.add(k)), load(b.add(k))));
            k += 16;
        }
        hsum(acc)
    }

    /// Terms per cache block: a block of patch rows and four weight rows stay in L1/L2.
    const KB: usize = 512;

    #[target_feature(enable = "avx2")]
    pub unsafe fn gemm(
        a: &[i16],
        rows: usize,
        b: &[i16],
        cols: usize,
        kpad: usize,
        out: &mut [i32],
        ldo: usize,
    ) {
        let (ap, bp) = (a.as_ptr(), b.as_ptr());
        let (r2, c4) = (rows / 2 * 2, cols / 4 * 4);
        for r in 0..rows {
            out[r * ldo..r * ldo + cols].fill(0);
        }
        for k0 in (0..kpad).step_by(KB) {
            let kn = KB.min(kpad - k0);
            for c in (0..c4).step_by(4) {
                let bs = [
                    bp.add(c * kpad + k0),
                    bp.add((c + 1) * kpad + k0),
                    bp.add((c + 2) * kpad + k0),
                    bp.add((c + 3) * kpad + k0),
                ];
                for r in (0..r2).step_by(2) {
                    let v =
                        kernel_2x4([ap.add(r * kpad + k0), ap.add((r + 1) * kpad + k0)], bs, kn);
                    for (i, row) in v.iter().enumerate() {
                        let o = &mut out[(r + i) * ldo + c..(r + i) * ldo + c + 4];
                        for (x, y) in o.iter_mut().zip(row) {
                            *x = x.wrapping_add(*y);
                        }
                    }
                }
            }
            for r in 0..rows {
                let cs = if r < r2 { c4 } else { 0 };
                for c in cs..cols {
                    let v = kernel_1x1(ap.add(r * kpad + k0), bp.add(c * kpad + k0), kn);
                    out[r * ldo + c] = out[r * ldo + c].wrapping_add(v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_agree_with_the_definition() {
        let kpad = 1040; // more than two cache blocks
        let (rows, cols) = (5, 7);
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((seed >> 16) % 384) as i16 - 128
        };
        let a: Vec<i16> = (0..rows * kpad).map(|_| next()).collect();
        let b: Vec<i16> = (0..cols * kpad).map(|_| next()).collect();
        let mut want = vec![0i32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                want[r * cols + c] = (0..kpad)
                    .map(|k| i32::from(a[r * kpad + k]) * i32::from(b[c * kpad + k]))
                    .sum();
            }
        }
        let mut got = vec![0i32; rows * cols];
        gemm(&a, rows, &b, cols, kpad, &mut got, cols);
        assert_eq!(got, want);
        let mut port = vec![0i32; rows * cols];
        portable_gemm(&a, rows, &b, cols, kpad, &mut port, cols);
        assert_eq!(port, want);
    }

    #[test]
    fn bound() {
        assert!(fits_i32(33_000, 255, 255));
        assert!(!fits_i32(33_100, 255, 255));
    }
}
