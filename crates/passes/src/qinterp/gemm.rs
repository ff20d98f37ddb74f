//! Exact integer dot products of 8-bit codes (the accumulator arithmetic of
//! CONVOLUTION, DECONVOLUTION and INNER-PRODUCT before the 30-bit wrap).
//!
//! Codes are held as i16 (every int8 / uint8 code and zero point fits, checked by
//! [`to_i16`]), so one product is at most 255 * 255 < 2^16 in magnitude and a sum of
//! [`CHUNK`] = 2^15 products stays below 2^31: each chunk is summed exactly in i32
//! and the chunk sums in i64. The result is the exact sum, as if every product were
//! added in i64 (ISA.md: the exact sum is what gets wrapped and what decides an
//! overflow). i32 chunk sums let the compiler vectorise the loop (`vpmaddwd` with
//! AVX2); the same plain code is compiled twice, once with AVX2 enabled, and the
//! AVX2 copy is used when the CPU has it.

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
    fn worst_case_sums_are_exact() {
        // Every product at the largest magnitude: the sum exceeds i32 but is exact.
        let k = 3 * CHUNK;
        let x = vec![-255i16; k];
        let w = vec![255i16; k];
        let mut got = [0i64];
        dot_rows(&x, &w, &mut got);
        assert_eq!(got[0], -(k as i64) * 255 * 255);
    }

    #[test]
    fn rejects_wide_codes() {
        assert_eq!(to_i16(&[1, -255, 255]), Ok(vec![1, -255, 255]));
        assert_eq!(to_i16(&[0, 256]), Err(256));
        assert_eq!(to_i16(&[-300]), Err(-300));
    }
}
