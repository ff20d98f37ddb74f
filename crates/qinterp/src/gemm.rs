//! Exact integer dot products of 8-bit codes (the accumulator arithmetic of
//! CONVOLUTION, DECONVOLUTION and INNER-PRODUCT before the 30-bit wrap).
//!
//! Codes are held as i16 (every int8 / uint8 code and zero point fits, checked by
//! [`to_i16`]), so one product is at most 255 * 255 < 2^16 in magnitude and a sum of
//! [`CHUNK`] = 2^15 products stays below 2^31: each chunk is summed exactly in i32
//! and the chunk sums in i64. The result is the exact sum, as if every product were
//! added in i64 (ISA.md: the exact sum is what gets wrapped and what decides an
//! overflow). i32 chunk sums let the loops vectorise: the plain code is compiled
//! twice, once with AVX2 enabled, and the AVX2 copy is used when the CPU has it.
//! Convolutions take [`BLOCK_ROWS`] rows at a time against each row of the other
//! operand ([`dot_rows_block`]; with AVX2 written with `vpmaddwd`), so that operand is
//! streamed from memory once per block instead of once per row.

/// Largest code magnitude the i16 kernels accept.
pub const MAX_CODE: i32 = 255;

/// Products per exactly-summed i32 chunk: `CHUNK * MAX_CODE^2 < 2^31`.
const CHUNK: usize = 1 << 15;
const _: () = assert!((CHUNK as i64) * (MAX_CODE as i64) * (MAX_CODE as i64) < 1 << 31);

/// Converts codes to i16, or returns the first code whose magnitude exceeds
/// [`MAX_CODE`] (not an 8-bit code).
pub fn to_i16(codes: &[i32]) -> Result<Vec<i16>, i32> {
    codes
        .iter()
        .map(|&c| {
            if (-MAX_CODE..=MAX_CODE).contains(&c) {
                Ok(c as i16)
            } else {
                Err(c)
            }
        })
        .collect()
}

/// `sum_i a[i] * b[i]`, exact.
#[inline(always)]
fn dot_exact(a: &[i16], b: &[i16]) -> i64 {
    debug_assert_eq!(a.len(), b.len());
    a.chunks(CHUNK)
        .zip(b.chunks(CHUNK))
        .map(|(ca, cb)| {
            let s: i32 = ca
                .iter()
                .zip(cb)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum();
            i64::from(s)
        })
        .sum()
}

/// `out[j] = dot(x, w[j * k .. (j + 1) * k])` for every row `j` of `w`.
#[inline(always)]
fn dot_rows_plain(x: &[i16], w: &[i16], out: &mut [i64]) {
    let k = x.len();
    for (o, row) in out.iter_mut().zip(w.chunks_exact(k.max(1))) {
        *o = dot_exact(x, row);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_rows_avx2(x: &[i16], w: &[i16], out: &mut [i64]) {
    dot_rows_plain(x, w, out)
}

/// `out[j] = sum_i x[i] * w[j * k + i]` (exact) for `j < out.len()`, with `k = x.len()`:
/// one row (an input patch, or a weight row) against every row of a matrix.
pub fn dot_rows(x: &[i16], w: &[i16], out: &mut [i64]) {
    assert!(w.len() >= out.len() * x.len(), "weight rows too short");
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above); the function body is
            // safe Rust.
            unsafe { dot_rows_avx2(x, w, out) };
            return;
        }
    }
    dot_rows_plain(x, w, out)
}

/// Rows of `x` handled together by [`dot_rows_block`]: each row of `w` is read once
/// for all of them.
pub const BLOCK_ROWS: usize = 4;

/// `out[r * n + j] = dot(x row r, w row j)` (exact) for the `BLOCK_ROWS` rows of `x`
/// (each of length `k`) and every row `j < n` of `w`.
#[inline(always)]
fn dot_block_plain(x: &[i16], k: usize, w: &[i16], out: &mut [i64]) {
    let n = out.len() / BLOCK_ROWS;
    let (x0, rest) = x.split_at(k);
    let (x1, rest) = rest.split_at(k);
    let (x2, x3) = rest.split_at(k);
    for (j, wr) in w.chunks_exact(k.max(1)).take(n).enumerate() {
        let mut acc = [0i64; BLOCK_ROWS];
        for start in (0..k).step_by(CHUNK) {
            let end = (start + CHUNK).min(k);
            let (mut s0, mut s1, mut s2, mut s3) = (0i32, 0i32, 0i32, 0i32);
            let rows = x0[start..end]
                .iter()
                .zip(&x1[start..end])
                .zip(&x2[start..end])
                .zip(&x3[start..end]);
            for ((((&a, &b), &c), &d), &wv) in rows.zip(&wr[start..end]) {
                let wv = i32::from(wv);
                s0 += i32::from(a) * wv;
                s1 += i32::from(b) * wv;
                s2 += i32::from(c) * wv;
                s3 += i32::from(d) * wv;
            }
            for (a, s) in acc.iter_mut().zip([s0, s1, s2, s3]) {
                *a += i64::from(s);
            }
        }
        for (r, a) in acc.into_iter().enumerate() {
            out[r * n + j] = a;
        }
    }
}

/// [`dot_block_plain`] with `vpmaddwd`: 16 products per row per step, summed in
/// pairs into eight i32 lanes. Every lane and partial sum is a sum of some of a
/// chunk's products, so it is bounded like the chunk's sum (below 2^31): exact.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_block_avx2(x: &[i16], k: usize, w: &[i16], out: &mut [i64]) {
    use std::arch::x86_64::*;
    /// The sum of the eight i32 lanes.
    #[target_feature(enable = "avx2")]
    fn lanes_sum(v: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        _mm_cvtsi128_si32(s)
    }
    /// 16 codes from `v[i..i + 16]` (bounds-checked).
    #[target_feature(enable = "avx2")]
    fn load16(v: &[i16], i: usize) -> __m256i {
        let s: &[i16; 16] = v[i..i + 16].try_into().expect("16 codes");
        // SAFETY: `s` is 16 readable i16 (32 bytes); loadu has no alignment needs.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }
    let n = out.len() / BLOCK_ROWS;
    let xr: [&[i16]; BLOCK_ROWS] = std::array::from_fn(|r| &x[r * k..(r + 1) * k]);
    for (j, wr) in w.chunks_exact(k.max(1)).take(n).enumerate() {
        let mut acc = [0i64; BLOCK_ROWS];
        for start in (0..k).step_by(CHUNK) {
            let end = (start + CHUNK).min(k);
            let vec_end = start + (end - start) / 16 * 16;
            let mut v = [_mm256_setzero_si256(); BLOCK_ROWS];
            for i in (start..vec_end).step_by(16) {
                let wv = load16(wr, i);
                for (vr, xrow) in v.iter_mut().zip(&xr) {
                    *vr = _mm256_add_epi32(*vr, _mm256_madd_epi16(load16(xrow, i), wv));
                }
            }
            for ((a, vr), xrow) in acc.iter_mut().zip(v).zip(&xr) {
                let tail: i32 = xrow[vec_end..end]
                    .iter()
                    .zip(&wr[vec_end..end])
                    .map(|(&p, &q)| i32::from(p) * i32::from(q))
                    .sum();
                *a += i64::from(lanes_sum(vr)) + i64::from(tail);
            }
        }
        for (r, a) in acc.into_iter().enumerate() {
            out[r * n + j] = a;
        }
    }
}

/// `out[r * n + j] = sum_i x[r * k + i] * w[j * k + i]` (exact), `n = out.len() / rows`,
/// for `rows` rows of `x` of length `k`: several rows (input patches, or weight rows)
/// against every row of a matrix, [`BLOCK_ROWS`] rows at a time so that each row of
/// `w` is read from memory once per block rather than once per row.
pub fn dot_rows_block(x: &[i16], rows: usize, w: &[i16], out: &mut [i64]) {
    let k = x.len().checked_div(rows).unwrap_or(0);
    let n = out.len().checked_div(rows).unwrap_or(0);
    assert!(x.len() == rows * k && out.len() == rows * n, "ragged rows");
    assert!(w.len() >= n * k, "weight rows too short");
    let mut r = 0;
    while r + BLOCK_ROWS <= rows && k > 0 {
        let xb = &x[r * k..(r + BLOCK_ROWS) * k];
        let ob = &mut out[r * n..(r + BLOCK_ROWS) * n];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above); the function body
                // is safe Rust.
                unsafe { dot_block_avx2(xb, k, w, ob) };
                r += BLOCK_ROWS;
                continue;
            }
        }
        dot_block_plain(xb, k, w, ob);
        r += BLOCK_ROWS;
    }
    for r in r..rows {
        dot_rows(&x[r * k..(r + 1) * k], w, &mut out[r * n..(r + 1) * n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_i64_products_across_chunks() {
        let k = 2 * CHUNK + 123;
        let mut s = 12345u32;
        let mut next = || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((s >> 16) % 511) as i32 - 255
        };
        let x: Vec<i32> = (0..k).map(|_| next()).collect();
        let w: Vec<i32> = (0..3 * k).map(|_| next()).collect();
        let want: Vec<i64> = w
            .chunks(k)
            .map(|r| {
                x.iter()
                    .zip(r)
                    .map(|(&a, &b)| i64::from(a) * i64::from(b))
                    .sum()
            })
            .collect();
        let mut got = vec![0i64; 3];
        dot_rows(&to_i16(&x).unwrap(), &to_i16(&w).unwrap(), &mut got);
        assert_eq!(got, want);
        let mut plain = vec![0i64; 3];
        dot_rows_plain(&to_i16(&x).unwrap(), &to_i16(&w).unwrap(), &mut plain);
        assert_eq!(plain, want);
    }

    #[test]
    fn blocks_of_rows_equal_one_row_at_a_time() {
        let mut s = 777u32;
        let mut next = || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((s >> 16) % 511) as i16 - 255
        };
        // k beyond one chunk, and row counts with and without a remainder block.
        for (rows, k, n) in [(9, CHUNK + 37, 3), (4, 5, 6), (3, 7, 2), (0, 3, 0)] {
            let x: Vec<i16> = (0..rows * k).map(|_| next()).collect();
            let w: Vec<i16> = (0..n * k).map(|_| next()).collect();
            let mut got = vec![0i64; rows * n];
            dot_rows_block(&x, rows, &w, &mut got);
            let mut want = vec![0i64; rows * n];
            for r in 0..rows {
                dot_rows(&x[r * k..(r + 1) * k], &w, &mut want[r * n..(r + 1) * n]);
            }
            assert_eq!(got, want, "{rows}x{k} . {n}x{k}");
        }
    }

    #[test]
    fn worst_case_sums_are_exact() {
        // Every product at the largest magnitude: the sum exceeds i32 but is exact.
        let k = 3 * CHUNK;
        let x = vec![-255i16; k];
        let w = vec![255i16; k];
        let mut got = [0i64];
        dot_rows(&x, &w, &mut got);
        assert_eq!(got[0], -(k as i64) * 255 * 255);
        let rows = vec![-255i16; BLOCK_ROWS * k];
        let mut block = [0i64; BLOCK_ROWS];
        dot_rows_block(&rows, BLOCK_ROWS, &w, &mut block);
        assert_eq!(block, [-(k as i64) * 255 * 255; BLOCK_ROWS]);
    }

    #[test]
    fn rejects_wide_codes() {
        assert_eq!(to_i16(&[1, -255, 255]), Ok(vec![1, -255, 255]));
        assert_eq!(to_i16(&[0, 256]), Err(256));
        assert_eq!(to_i16(&[-300]), Err(-300));
    }
}
