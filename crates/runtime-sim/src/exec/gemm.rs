//! The integer dot-product kernel of CONV / DECONV / INNER_PRODUCT:
//! `out[r][j] = sum_kk a[r][kk] * w(kk, c0 + j)` over i16 patch rows of length `kpad`
//! (a multiple of [`K_ALIGN`], zero-padded) and the tile's weight codes ([`Weights`]:
//! converted into interleaved term pairs, [`PairWeights`], or read where they lie in
//! SRAM, [`CodeLayout`]), with i32 accumulation. The caller guarantees the exact sums
//! fit in i32 (see [`fits_i32`]); [`dot_exact`] is the i64 path otherwise.
//!
//! On x86-64 with AVX2 the kernel widens a pass's codes of 16 channels into i16 term
//! pairs once (two terms' 16 code bytes interleaved, `vpmovsxbw` / `vpmovzxbw`), then
//! for every pixel block broadcasts a pair of patch terms of one pixel and multiplies
//! it with the term pairs of 8 channels at once (`vpmaddwd`), for blocks of 6 pixels x
//! 16 channels (12 accumulator registers), in passes of at most 384 term pairs so a
//! pass's widened weights and patch rows stay in the L1 cache; while the first pixel
//! block of a pass runs, the next block's converted rows are fetched into L2 (one
//! prefetch per term pair), so their widening does not wait on memory; elsewhere a
//! portable loop does the same arithmetic. Either form keeps one byte per weight: a frame
//! streams the weights, which bounds the tiles with few pixels (a 7 x 7 plane's 49 on
//! two threads). Converted pairs are one contiguous row per term pair (the kernel's
//! fastest form: what a session keeps across frames); codes in place cost no
//! conversion and no memory (what an instruction executed once uses, see
//! `exec/dot.rs`), at a scattered read per term.

use super::lines::LineWords;
use super::weights::CodeLayout;

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

/// The weight codes of a tile as interleaved term pairs: `data[(kk / 2) * ld + c]`
/// holds the codes of channel `c` for terms `kk & !1` (low byte) and `kk | 1` (high
/// byte); widened to i16 (as int8 if `signed`, else as uint8) a run of them is the
/// layout `vpmaddwd` multiplies with a broadcast pair of patch terms. Terms past K
/// and channels past the tile are 0; `ld` leaves room for a whole [`COLS_BLOCK`]
/// after every channel and is a multiple of 16, so a block of 16 channels from a
/// multiple of 16 (32 bytes) never spans two cache lines ([`LineWords`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairWeights {
    pub data: LineWords<u16>,
    pub ld: usize,
    pub kpad: usize,
    /// The codes are int8 (else uint8).
    pub signed: bool,
}

/// Packs the weight codes of two consecutive terms into one pair.
#[inline]
pub fn pack_pair(lo: u8, hi: u8) -> u16 {
    u16::from(lo) | (u16::from(hi) << 8)
}

impl PairWeights {
    /// Zero weights for `channels` channels and `kpad` terms.
    pub fn zeroed(channels: usize, kpad: usize, signed: bool) -> PairWeights {
        debug_assert!(kpad.is_multiple_of(2));
        let ld = channels.div_ceil(COLS_BLOCK) * COLS_BLOCK + COLS_BLOCK;
        PairWeights {
            data: LineWords::zeroed(kpad / 2 * ld),
            ld,
            kpad,
            signed,
        }
    }

    /// The weight of channel `c` for term `kk`.
    pub fn at(&self, kk: usize, c: usize) -> i16 {
        let code = (self.data[(kk / 2) * self.ld + c] >> (8 * (kk % 2))) as u8;
        nnac_isa::arith::code_value(code, self.signed) as i16
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
/// The weights of [`gemm`].
#[derive(Debug, Clone, Copy)]
pub enum Weights<'a> {
    /// Converted into interleaved term pairs.
    Pairs(&'a PairWeights),
    /// Where the codes lie, and the bytes they lie in (the instruction's weight range
    /// in SRAM, at least the layout's span long).
    Codes(&'a CodeLayout, &'a [u8]),
}

impl Weights<'_> {
    /// Patch row length (terms, padded).
    pub fn kpad(&self) -> usize {
        match self {
            Weights::Pairs(w) => w.kpad,
            Weights::Codes(l, _) => l.kpad(),
        }
    }

    fn signed(&self) -> bool {
        match self {
            Weights::Pairs(w) => w.signed,
            Weights::Codes(l, _) => l.signed,
        }
    }

    /// The value of channel `c`'s weight for term `kk`.
    fn value(&self, kk: usize, c: usize) -> i16 {
        match self {
            Weights::Pairs(w) => w.at(kk, c),
            Weights::Codes(l, bytes) => l.value(bytes, kk, c),
        }
    }

    /// Asserts that every read of channels below `end` stays in the weights.
    fn check(&self, end: usize) {
        match self {
            Weights::Pairs(w) => {
                assert!(end + COLS_BLOCK <= w.ld + 1 && w.data.len() >= w.kpad / 2 * w.ld)
            }
            Weights::Codes(l, bytes) => {
                assert!(end <= l.chan.len() && bytes.len() >= l.span)
            }
        }
    }
}

pub fn gemm(
    a: &[i16],
    rows: usize,
    w: Weights<'_>,
    c0: usize,
    cols: usize,
    out: &mut [i32],
    ldo: usize,
) {
    let kpad = w.kpad();
    assert!(kpad.is_multiple_of(K_ALIGN) && a.len() >= rows * kpad);
    w.check(c0 + cols);
    assert!(rows == 0 || cols == 0 || out.len() >= (rows - 1) * ldo + cols);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available (checked just above); the asserts above bound
            // every read (rows * kpad patch values; a whole COLS_BLOCK of pairs from
            // any channel below c0 + cols, or codes at the layout's offsets, all below
            // its span, of channels below c0 + cols) and write (rows of cols values
            // at ldo).
            unsafe {
                if w.signed() {
                    avx2::gemm::<true>(a, rows, w, c0, cols, out, ldo)
                } else {
                    avx2::gemm::<false>(a, rows, w, c0, cols, out, ldo)
                }
            };
            return;
        }
    }
    portable_gemm(a, rows, w, c0, cols, out, ldo);
}

fn portable_gemm(
    a: &[i16],
    rows: usize,
    w: Weights<'_>,
    c0: usize,
    cols: usize,
    out: &mut [i32],
    ldo: usize,
) {
    let at = |kk: usize, c: usize| i32::from(w.value(kk, c));
    portable((a, w.kpad()), rows, at, c0..c0 + cols, out, ldo);
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
    use super::{CodeLayout, PairWeights, Weights, COLS_BLOCK};
    use std::arch::x86_64::*;

    /// Term pairs per pass: a pass's widened weights (16 channels, 24 KiB) and patch
    /// rows stay in the L1 cache while every pixel block of the tile runs over them.
    const PAIRS_PER_PASS: usize = 384;

    /// Sixteen codes as i16 values (int8 if `SIGNED`, else uint8).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn widen<const SIGNED: bool>(codes: __m128i) -> __m256i {
        if SIGNED {
            _mm256_cvtepi8_epi16(codes)
        } else {
            _mm256_cvtepu8_epi16(codes)
        }
    }

    /// One pass's weights of a 16-channel block widened to i16 pairs: entry
    /// `2 * k2 + h` holds the pairs of channels `8h .. 8h + 8` for term pair `k2`.
    /// Entries from `2 * pairs` on are left as they were (uninitialised at first: a
    /// short pass, a 1 x 1 convolution's, would otherwise pay for clearing 24 KiB).
    struct Widened {
        v: [std::mem::MaybeUninit<__m256i>; 2 * PAIRS_PER_PASS],
        pairs: usize,
    }

    impl Widened {
        fn new() -> Widened {
            Widened {
                v: [std::mem::MaybeUninit::uninit(); 2 * PAIRS_PER_PASS],
                pairs: 0,
            }
        }

        /// Widens term pairs `k0 .. k0 + pairs` of the `n <= 16` channels from `c`
        /// (their codes as int8 if `SIGNED`, else uint8; channels past `n` as any
        /// value, their sums unused).
        ///
        /// Safety: AVX2; `w` as `gemm` asserts it, `c + n` within its channels, the
        /// pass within its terms.
        #[target_feature(enable = "avx2")]
        unsafe fn fill<const SIGNED: bool>(
            &mut self,
            w: Weights<'_>,
            (c, n): (usize, usize),
            (k0, pairs): (usize, usize),
        ) {
            assert!(pairs <= PAIRS_PER_PASS && n <= 16);
            match w {
                Weights::Pairs(w) => self.fill_pairs::<SIGNED>(w, c, (k0, pairs)),
                Weights::Codes(l, bytes) => {
                    self.fill_codes::<SIGNED>((l, bytes), (c, n), (k0, pairs))
                }
            }
            self.pairs = pairs;
        }

        /// [`Widened::fill`] from converted pairs: a whole block of 16 channels is
        /// read (the rows leave room for it).
        #[target_feature(enable = "avx2")]
        unsafe fn fill_pairs<const SIGNED: bool>(
            &mut self,
            w: &PairWeights,
            c: usize,
            (k0, pairs): (usize, usize),
        ) {
            let base = w.data.as_ptr().add(k0 * w.ld + c);
            for k2 in 0..pairs {
                let p = base.add(k2 * w.ld);
                for h in 0..2 {
                    let codes = _mm_loadu_si128(p.add(8 * h) as *const __m128i);
                    self.v[2 * k2 + h].write(widen::<SIGNED>(codes));
                }
            }
        }

        /// [`Widened::fill`] from codes in place: two terms' 16 code bytes
        /// interleaved.
        #[target_feature(enable = "avx2")]
        unsafe fn fill_codes<const SIGNED: bool>(
            &mut self,
            (layout, bytes): (&CodeLayout, &[u8]),
            (c, n): (usize, usize),
            (k0, pairs): (usize, usize),
        ) {
            // Sixteen channels whose codes are consecutive bytes of every term's
            // vector (one weight group) are one load per term.
            let chan = &layout.chan[c..c + n];
            let whole = n == 16 && chan[15] == chan[0] + 15;
            let row = |term: Option<usize>| -> __m128i {
                match term {
                    None => _mm_setzero_si128(),
                    // In bounds: t + chan[15] < span <= bytes.len().
                    Some(t) if whole => {
                        _mm_loadu_si128(bytes.as_ptr().add(t + chan[0]) as *const __m128i)
                    }
                    Some(t) => {
                        let mut v = [0u8; 16];
                        for (x, &o) in v.iter_mut().zip(chan) {
                            *x = bytes[t + o];
                        }
                        _mm_loadu_si128(v.as_ptr() as *const __m128i)
                    }
                }
            };
            for k2 in 0..pairs {
                let kk = 2 * (k0 + k2);
                let (lo, hi) = (row(layout.term[kk]), row(layout.term[kk + 1]));
                let halves = [_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi)];
                for (h, codes) in halves.into_iter().enumerate() {
                    self.v[2 * k2 + h].write(widen::<SIGNED>(codes));
                }
            }
        }

        /// The widened pairs of term pair `k2 < pairs` (channels 0..8, 8..16).
        #[inline(always)]
        fn pair(&self, k2: usize) -> (__m256i, __m256i) {
            assert!(k2 < self.pairs);
            // SAFETY: `fill` wrote entries `0 .. 2 * self.pairs`.
            unsafe {
                (
                    self.v[2 * k2].assume_init(),
                    self.v[2 * k2 + 1].assume_init(),
                )
            }
        }
    }

    /// `R` pixels x 16 channels over the widened term pairs of `w`, added to
    /// `acc`: per term pair, the pixel's two terms are broadcast and multiplied with
    /// the 8-channel pair vectors.
    ///
    /// With `PF`, one cache line of `ahead` is asked for per term pair (into L2):
    /// the next block's converted rows, so its widening does not wait on memory.
    #[target_feature(enable = "avx2")]
    unsafe fn block<const R: usize, const PF: bool>(
        mut acc: [[__m256i; 2]; R],
        a: *const i16,
        kpad: usize,
        (w, ahead): (&Widened, Ahead),
    ) -> [[__m256i; 2]; R] {
        for k2 in 0..w.pairs {
            if PF {
                // A hint: the address need not be valid (`wrapping_add`).
                let line = ahead.base.wrapping_add(k2 * ahead.stride);
                _mm_prefetch::<_MM_HINT_T1>(line as *const i8);
            }
            let (w0, w1) = w.pair(k2);
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

    /// `R` rows from `r` of one pass (`k0`: its first term pair) of one channel
    /// block (`n` channels from `cb`) on the pass's widened weights.
    /// (`ahead`: where the next block's rows are, if they are to be fetched.)
    #[target_feature(enable = "avx2")]
    unsafe fn rows<const R: usize>(
        (a, kpad): (&[i16], usize),
        r: usize,
        (w, k0, ahead): (&Widened, usize, Option<Ahead>),
        out: &mut [i32],
        (cb, n, ldo): (usize, usize, usize),
    ) {
        let at = (r * ldo + cb, ldo, n);
        let acc = load::<R>(out, at, k0 == 0);
        let patch = a.as_ptr().add(r * kpad + 2 * k0);
        let acc = match ahead {
            Some(ahead) => block::<R, true>(acc, patch, kpad, (w, ahead)),
            None => block::<R, false>(acc, patch, kpad, (w, Ahead::NONE)),
        };
        store(&acc, out, at);
    }

    /// The converted rows of the block after the current one: the first's address
    /// and the distance between rows (bytes).
    #[derive(Clone, Copy)]
    struct Ahead {
        base: *const u8,
        stride: usize,
    }

    impl Ahead {
        const NONE: Ahead = Ahead {
            base: std::ptr::null(),
            stride: 0,
        };

        /// The rows of channels from `c` of the pass from term pair `k0` in `w`'s
        /// converted pairs (none for codes read in place).
        fn of(w: Weights<'_>, c: usize, k0: usize) -> Option<Ahead> {
            match w {
                Weights::Pairs(p) => Some(Ahead {
                    base: p.data.as_ptr().wrapping_add(k0 * p.ld + c) as *const u8,
                    stride: 2 * p.ld,
                }),
                Weights::Codes(..) => None,
            }
        }
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn gemm<const SIGNED: bool>(
        a: &[i16],
        rows_n: usize,
        w: Weights<'_>,
        c0: usize,
        cols: usize,
        out: &mut [i32],
        ldo: usize,
    ) {
        let kpad = w.kpad();
        let total = kpad / 2;
        let patch = (a, kpad);
        let mut buf = Widened::new();
        for k0 in (0..total).step_by(PAIRS_PER_PASS) {
            let pairs = PAIRS_PER_PASS.min(total - k0);
            for cb in (0..cols).step_by(COLS_BLOCK) {
                let n = COLS_BLOCK.min(cols - cb);
                buf.fill::<SIGNED>(w, (c0 + cb, n), (k0, pairs));
                // The next block: the next channels of this pass, else the first of
                // the next pass; fetched while the first pixel block runs.
                let next = if cb + COLS_BLOCK < cols {
                    Some((cb + COLS_BLOCK, k0))
                } else {
                    (k0 + PAIRS_PER_PASS < total).then_some((0, k0 + PAIRS_PER_PASS))
                };
                let mut ahead = next.and_then(|(cb, k0)| Ahead::of(w, c0 + cb, k0));
                let chans = (cb, n, ldo);
                // Near-equal blocks of at most 6 rows (8 = 4 + 4, 25 = 5 x 5): a
                // block of one or two rows is bound by its weight loads (8 rows as
                // 6 + 1 + 1 ran at 43 GMAC/s, as 4 + 4 at 57).
                let blocks = rows_n.div_ceil(6);
                let mut r = 0;
                for b in 0..blocks {
                    let n = rows_n / blocks + usize::from(b < rows_n % blocks);
                    let pass = (&buf, k0, ahead.take());
                    match n {
                        1 => rows::<1>(patch, r, pass, out, chans),
                        2 => rows::<2>(patch, r, pass, out, chans),
                        3 => rows::<3>(patch, r, pass, out, chans),
                        4 => rows::<4>(patch, r, pass, out, chans),
                        5 => rows::<5>(patch, r, pass, out, chans),
                        _ => rows::<6>(patch, r, pass, out, chans),
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

    /// The layout of codes stored `codes[kk * channels + c]` (plain: every term's
    /// vector contiguous, in term order) with `kpad` terms.
    fn plain(channels: usize, kpad: usize, signed: bool) -> CodeLayout {
        let term = (0..kpad).map(|kk| Some(kk * channels)).collect();
        CodeLayout::new(term, (0..channels).collect(), signed)
    }

    /// The kernels against sums of products written out here: rows of patch values
    /// `a` times the values of the codes (int8 and uint8) at the layout's offsets.
    fn check(a: &[i16], rows: usize, (layout, bytes): (&CodeLayout, &[u8]), chans: (usize, usize)) {
        let (c0, cols) = chans;
        let kpad = layout.kpad();
        for signed in [true, false] {
            let layout = CodeLayout {
                signed,
                ..layout.clone()
            };
            let value = |kk: usize, c: usize| match layout.term[kk] {
                None => 0,
                Some(t) if signed => i64::from(bytes[t + layout.chan[c]] as i8),
                Some(t) => i64::from(bytes[t + layout.chan[c]]),
            };
            let mut want = vec![0i32; rows * cols];
            for r in 0..rows {
                for j in 0..cols {
                    let sum: i64 = (0..kpad)
                        .map(|kk| i64::from(a[r * kpad + kk]) * value(kk, c0 + j))
                        .sum();
                    want[r * cols + j] = sum.try_into().expect("exact sums fit i32");
                }
            }
            // The same codes converted into pairs.
            let channels = layout.chan.len();
            let mut pairs = PairWeights::zeroed(channels, kpad, signed);
            let code =
                |kk: usize, c: usize| layout.term[kk].map_or(0, |t| bytes[t + layout.chan[c]]);
            for k2 in 0..kpad / 2 {
                for c in 0..channels {
                    pairs.data[k2 * pairs.ld + c] = pack_pair(code(2 * k2, c), code(2 * k2 + 1, c));
                }
            }
            for w in [Weights::Codes(&layout, bytes), Weights::Pairs(&pairs)] {
                let mut got = vec![0i32; rows * cols];
                gemm(a, rows, w, c0, cols, &mut got, cols);
                assert_eq!(got, want, "{rows}x{cols} kpad={kpad} signed={signed} {w:?}");
                let mut port = vec![0i32; rows * cols];
                portable_gemm(a, rows, w, c0, cols, &mut port, cols);
                assert_eq!(port, want);
            }
        }
    }

    #[test]
    fn converted_pairs_hold_the_codes() {
        let codes: Vec<u8> = (0..=255).collect();
        for signed in [true, false] {
            let mut w = PairWeights::zeroed(8, 32, signed);
            for k2 in 0..16 {
                for c in 0..8 {
                    let (lo, hi) = (codes[2 * k2 * 8 + c], codes[(2 * k2 + 1) * 8 + c]);
                    w.data[k2 * w.ld + c] = pack_pair(lo, hi);
                    let v = |b: u8| {
                        if signed {
                            i16::from(b as i8)
                        } else {
                            i16::from(b)
                        }
                    };
                    assert_eq!((w.at(2 * k2, c), w.at(2 * k2 + 1, c)), (v(lo), v(hi)));
                }
            }
        }
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
            let codes: Vec<u8> = random(kpad * channels, &mut seed)
                .iter()
                .map(|&v| v as u8)
                .collect();
            let layout = plain(channels, kpad, true);
            check(&a, rows, (&layout, &codes), (c0, cols));
        }
    }

    #[test]
    fn kernels_read_codes_where_the_layout_puts_them() {
        // Terms in another order and past K, channels in two runs (a tile across
        // two weight groups: the second run's vectors elsewhere), 16-channel blocks
        // whole inside a run, across the runs' boundary, and partial.
        let mut seed = 11u32;
        let (rows, channels, k, kpad) = (7, 40, 75, 80);
        let stride = 64;
        let bytes: Vec<u8> = random(2 * k * stride + 64, &mut seed)
            .iter()
            .map(|&v| v as u8)
            .collect();
        let term: Vec<Option<usize>> = (0..kpad)
            .map(|kk| (kk < k).then(|| ((kk * 7) % k) * stride))
            .collect();
        // Channels 0..21 at offsets 3..24; 21..40 in the second block of vectors.
        let chan: Vec<usize> = (0..channels)
            .map(|c| if c < 21 { 3 + c } else { k * stride + c - 21 })
            .collect();
        let layout = CodeLayout::new(term, chan, true);
        let a = random(rows * kpad, &mut seed);
        for (c0, cols) in [
            (0, 40),
            (0, 16),
            (5, 16),
            (16, 16),
            (21, 19),
            (3, 30),
            (39, 1),
        ] {
            check(&a, rows, (&layout, &bytes), (c0, cols));
        }
    }

    #[test]
    fn kernels_are_exact_at_the_i32_bound() {
        // The largest sums `fits_i32` admits: every product 255 x 255 (uint8 codes)
        // or -128 x -128 (int8), and the most negative, 255 x -128.
        let (rows, channels, kpad) = (3, 16, 33_008);
        assert!(fits_i32(kpad as u64, 255, 255));
        for (x, code) in [(255i16, 0xffu8), (-128, 0x80), (255, 0x80)] {
            let a = vec![x; rows * kpad];
            let codes = vec![code; kpad * channels];
            let layout = plain(channels, kpad, true);
            check(&a, rows, (&layout, &codes), (0, channels));
        }
    }

    #[test]
    fn bound() {
        assert!(fits_i32(33_000, 255, 255));
        assert!(!fits_i32(33_100, 255, 255));
    }
}
