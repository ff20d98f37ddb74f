//! FUSED_RELU over a row of consecutive channels, eight channels at a time in i32
//! lanes (AVX2): the dot products' epilogue, `y = ((acc * mult + round) >> shift) +
//! zero_point`, clamped to `[act_min, act_max]` and saturated to 8 bits, with each
//! channel's own constants ([`super::postproc::Post`] tabulates them).
//!
//! The product and the shift need 64-bit lanes: `vpmuldq` multiplies the even
//! (then the odd) i32 lanes into four 64-bit products; the arithmetic shift, which
//! AVX2 has only for 32-bit lanes, is a logical per-lane shift (`vpsrlvq`) of the
//! value biased by 2^62 (`acc * mult + round + 2^62` lies in `[0, 2^64)` for any i32
//! `acc` and `mult` and `0 <= round <= 2^61`, so as an unsigned lane it is exact),
//! less `2^(62 - shift)` afterwards. Where every channel's `y` fits in i32 over the
//! whole i32 range of `acc` ([`Octets::new`]; `y` is monotone in `acc`, so the two
//! ends decide), the clamps and the saturation run in i32 lanes on the low halves,
//! eight values at once; elsewhere the 64-bit row loop of `postproc` runs.

/// The constants of one group of eight consecutive channels, the 64-bit ones in the
/// order the lanes take them: the even channels (0, 2, 4, 6), then the odd ones.
#[derive(Debug, Clone, Copy)]
struct Octet {
    mult: [i32; 8],
    /// `round + 2^62`.
    biased_round: [i64; 8],
    shift: [u64; 8],
    /// `zero_point - 2^(62 - shift)`.
    after: [i64; 8],
}

/// `[act_min, act_max, low, high]`: FUSED_RELU's clamps and the 8-bit saturation's, in
/// the order they apply.
pub fn clamps((act_min, act_max): (i16, i16), out_signed: bool) -> [i32; 4] {
    let (lo, hi) = if out_signed { (-128, 127) } else { (0, 255) };
    [i32::from(act_min), i32::from(act_max), lo, hi]
}

/// FUSED_RELU's per-channel constants as groups of eight channels (the last group
/// padded with copies of channel 0's, whose results are not stored), and its clamps.
#[derive(Debug, Clone)]
pub struct Octets {
    groups: Vec<Octet>,
    /// `[act_min, act_max, low, high]`: the clamps in the order FUSED_RELU and the
    /// 8-bit saturation apply them.
    clamps: [i32; 4],
}

impl Octets {
    /// The groups of channels with `mult`, `round` (`2^(shift - 1)`, 0 for shift 0)
    /// and `shift <= 62`, if every channel's `y` fits in i32 for every i32 `acc`.
    pub fn new(
        (mult, round, shift): (&[i32], &[i64], &[u32]),
        zero_point: i32,
        (act_min, act_max): (i16, i16),
        out_signed: bool,
    ) -> Option<Octets> {
        let n = mult.len();
        if n == 0 || round.len() != n || shift.len() != n {
            return None;
        }
        let fits = (0..n).all(|c| {
            let s = shift[c];
            let y = |acc: i32| {
                ((i128::from(acc) * i128::from(mult[c]) + i128::from(round[c])) >> s)
                    + i128::from(zero_point)
            };
            s <= 62
                && (0..=1i64 << 61).contains(&round[c])
                && [y(i32::MIN), y(i32::MAX)]
                    .iter()
                    .all(|&v| i32::try_from(v).is_ok())
        });
        if !fits {
            return None;
        }
        let groups = (0..n.div_ceil(8))
            .map(|g| {
                // Channel `g * 8 + j`, channel 0 past the last.
                let ch = |j: usize| if g * 8 + j < n { g * 8 + j } else { 0 };
                let lane = |k: usize| ch([0, 2, 4, 6, 1, 3, 5, 7][k]);
                Octet {
                    mult: std::array::from_fn(|j| mult[ch(j)]),
                    biased_round: std::array::from_fn(|k| round[lane(k)] + (1 << 62)),
                    shift: std::array::from_fn(|k| u64::from(shift[lane(k)])),
                    after: std::array::from_fn(|k| {
                        i64::from(zero_point) - (1i64 << (62 - shift[lane(k)]))
                    }),
                }
            })
            .collect();
        Some(Octets {
            groups,
            clamps: clamps((act_min, act_max), out_signed),
        })
    }

    /// `out[i]`: channel `c0 + i`'s output byte of `acc[i]`, for the whole groups
    /// of eight from `c0` (a multiple of 8) within `acc`, `out` and the channels;
    /// returns how many values it did (the caller does the rest).
    pub fn row(&self, acc: &[i32], c0: usize, out: &mut [u8]) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            if c0.is_multiple_of(8) && std::arch::is_x86_feature_detected!("avx2") {
                let n = acc.len().min(out.len()) / 8 * 8;
                let groups = &self.groups[(c0 / 8).min(self.groups.len())..];
                let n = n.min(groups.len() * 8);
                // SAFETY: AVX2 is available (checked just above); the kernel reads
                // `acc[..n]` and writes `out[..n]`, both at least `n` long, with a
                // group of constants for every eight of them.
                unsafe { avx2::row(self, groups, &acc[..n], &mut out[..n]) };
                return n;
            }
        }
        let _ = (acc, c0, out);
        0
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use super::{Octet, Octets};
    use std::arch::x86_64::*;

    /// [`super::clamps`] in registers.
    #[target_feature(enable = "avx2")]
    pub unsafe fn clamp_lanes(clamps: [i32; 4]) -> [__m256i; 4] {
        clamps.map(|v| _mm256_set1_epi32(v))
    }

    /// Clamps the eight i32 lanes of `v` (`clamps` from [`clamp_lanes`], in order)
    /// and stores their low bytes, in order, at `out`.
    ///
    /// Safety: AVX2; `out` valid for 8 bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn clamp_store8(mut v: __m256i, clamps: &[__m256i; 4], out: *mut u8) {
        v = _mm256_max_epi32(v, clamps[0]);
        v = _mm256_min_epi32(v, clamps[1]);
        v = _mm256_max_epi32(v, clamps[2]);
        v = _mm256_min_epi32(v, clamps[3]);
        // The low byte of each i32 lane to the low four bytes of each 128-bit half,
        // then both halves' four bytes together.
        let low_bytes = _mm256_setr_epi8(
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, //
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        );
        let halves = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
        let packed = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, low_bytes), halves);
        _mm_storel_epi64(out as *mut __m128i, _mm256_castsi256_si128(packed));
    }

    /// Safety: AVX2; `acc` and `out` of equal length, a multiple of 8, with a group
    /// of `groups` for every eight values.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn row(o: &Octets, groups: &[Octet], acc: &[i32], out: &mut [u8]) {
        debug_assert!(acc.len() == out.len() && acc.len() <= groups.len() * 8);
        let clamps = clamp_lanes(o.clamps);
        let ld64 =
            |v: &[i64; 8], h: usize| _mm256_loadu_si256(v.as_ptr().add(4 * h) as *const __m256i);
        for (i, g) in groups.iter().take(acc.len() / 8).enumerate() {
            let a = _mm256_loadu_si256(acc.as_ptr().add(8 * i) as *const __m256i);
            let m = _mm256_loadu_si256(g.mult.as_ptr() as *const __m256i);
            // Even lanes (h = 0), then odd ones (h = 1): their 64-bit scaled values.
            let scaled = |h: usize, a: __m256i, m: __m256i| {
                let x = _mm256_add_epi64(_mm256_mul_epi32(a, m), ld64(&g.biased_round, h));
                let s = _mm256_loadu_si256(g.shift.as_ptr().add(4 * h) as *const __m256i);
                _mm256_add_epi64(_mm256_srlv_epi64(x, s), ld64(&g.after, h))
            };
            let even = scaled(0, a, m);
            let odd = scaled(1, _mm256_srli_epi64::<32>(a), _mm256_srli_epi64::<32>(m));
            // Every value fits in i32 (`Octets::new`): the low halves, in order.
            let v = _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd));
            clamp_store8(v, &clamps, out.as_mut_ptr().add(8 * i));
        }
    }
}
