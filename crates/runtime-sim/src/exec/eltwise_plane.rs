//! ELTWISE's fused plane kernel: one channel's run of pixels, from the two inputs'
//! code bytes to the output bytes in one pass, sixteen values at a time (AVX-512 F)
//! or eight (AVX2; a run's last values one by one), for the common case: ADD or MAX,
//! a lone FUSED_RELU epilogue, and rescaled inputs no two of which combine past the
//! accumulator. It computes what the general plane path
//! (rescale tables, combine, wrap, [`super::postproc::Post::apply_chan`]) computes;
//! where its conditions do not hold ([`PlaneOp::of`], [`PlaneKernel::new`] return
//! `None`) that path runs.
//!
//! Each step is a scaling `floor((v * mult + round) / 2^shift)` of a value within
//! 2^30 in magnitude, computed in 64-bit lanes (`vpmuldq`) with the arithmetic shift
//! taken as a logical one of the value plus 2^62 (`|v * mult + round| <= 2^62`, so the
//! sum is not negative) less `2^(62 - shift)` ([`Scaling`]): the inputs' rescales
//! (`v = code - zero`, whose results the tables' bounds show to be within 2^30, so
//! `sat_i32` leaves them), then their sum or maximum in i32 lanes (no wrap, as the
//! bounds show), then the epilogue's scaling (`v = acc`), the zero point, FUSED_RELU's
//! clamps and the 8-bit saturation in i32 lanes, since `y + zero_point`, monotone in
//! `acc`, lies in i32 at both ends of the accumulator's range. The inputs are
//! computed, not looked up in the tables: AVX2's gathers cost more than the
//! arithmetic.

use super::combine::{Rescale, RescaleTable};
use super::postproc::ChanRequant;
use nnac_isa::arith::eltwise_combine;
use nnac_isa::EltOp;

/// Magnitude bound of a value the kernel scales: `|v| <= 2^30`, so `|v * mult| <= 2^61`.
const LIMIT: i64 = 1 << 30;

/// `floor((v * mult + round) / 2^shift) + add` as the kernel computes it, for
/// `|v| <= 2^30` and `shift <= 62`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scaling {
    mult: i32,
    /// `round + 2^62`: the value to shift, made non-negative.
    biased_round: i64,
    shift: u32,
    /// `add - 2^(62 - shift)`: the bias taken back out, and what is added.
    after: i64,
}

impl Scaling {
    fn new(mult: i32, round: i64, shift: u32, add: i64) -> Option<Scaling> {
        (shift <= 62 && (0..=1 << 61).contains(&round)).then(|| Scaling {
            mult,
            biased_round: round + (1 << 62),
            shift,
            after: add - (1i64 << (62 - shift)),
        })
    }
}

/// An input's rescale on the kernel: its codes' values less `zero`, scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InputScaling {
    signed: bool,
    zero: i32,
    scaling: Scaling,
}

/// What every channel of an ELTWISE instruction shares on the kernel: the combine,
/// the inputs' rescales, and the range of the accumulator values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaneOp {
    op: EltOp,
    inputs: [InputScaling; 2],
    lo: i32,
    hi: i32,
}

impl PlaneOp {
    /// `None` for MUL, for inputs whose rescaled values (the tables `ta`, `tb` made
    /// from `ra`, `rb`) exceed 2^30 in magnitude or combine to values that may wrap at
    /// `acc_bits`, for shifts past 62, and on CPUs without AVX2.
    pub fn of(
        op: EltOp,
        (ta, tb): (&RescaleTable, &RescaleTable),
        (ra, rb): (Rescale, Rescale),
        acc_bits: u32,
    ) -> Option<PlaneOp> {
        if !available() {
            return None;
        }
        let (lo, hi) = acc_range(op, (ta, tb), acc_bits)?;
        // `code - zero` within the limit for every code byte (the field's range keeps
        // it within 400); the rounding term of `arith::scale`.
        let input = |r: Rescale| {
            let codes: [i64; 2] = if r.signed { [-128, 127] } else { [0, 255] };
            let zero = i64::from(r.zero);
            if !codes.iter().all(|&c| (c - zero).abs() <= LIMIT) {
                return None;
            }
            let round = if r.shift == 0 {
                0
            } else {
                1i64 << (r.shift - 1).min(62)
            };
            Some(InputScaling {
                signed: r.signed,
                zero: r.zero,
                scaling: Scaling::new(r.mult, round, r.shift, 0)?,
            })
        };
        Some(PlaneOp {
            op,
            inputs: [input(ra)?, input(rb)?],
            lo,
            hi,
        })
    }
}

/// The range of `op`'s combinations of the entries of `ta` and `tb`, if every entry
/// and every combination is within [`LIMIT`] in magnitude and no combination wraps
/// at `acc_bits` (lies outside `[-2^(acc_bits-1), 2^(acc_bits-1))`).
fn acc_range(
    op: EltOp,
    (ta, tb): (&RescaleTable, &RescaleTable),
    acc_bits: u32,
) -> Option<(i32, i32)> {
    let bounds = |t: &RescaleTable| {
        let (lo, hi) = t
            .iter()
            .fold((i32::MAX, i32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        (i64::from(lo), i64::from(hi))
    };
    let ((a_lo, a_hi), (b_lo, b_hi)) = (bounds(ta), bounds(tb));
    let (lo, hi) = match op {
        EltOp::Add => (a_lo + b_lo, a_hi + b_hi),
        EltOp::Max => (a_lo.max(b_lo), a_hi.max(b_hi)),
        EltOp::Mul => return None,
    };
    let half = 1i64 << (acc_bits.clamp(1, 62) - 1);
    let small = |v: i64| v.abs() <= LIMIT;
    let fits = |v: i64| v >= -half && v < half && small(v);
    let ok = [a_lo, a_hi, b_lo, b_hi].into_iter().all(small) && fits(lo) && fits(hi);
    ok.then_some((lo as i32, hi as i32))
}

/// The kernel for one channel: the instruction's [`PlaneOp`] and the channel's
/// epilogue.
#[derive(Debug, Clone, Copy)]
pub struct PlaneKernel<'a> {
    op: &'a PlaneOp,
    k: ChanRequant<'a>,
    scaling: Scaling,
}

impl<'a> PlaneKernel<'a> {
    /// The kernel of a channel with epilogue `k`, if `y + zero_point` fits in i32
    /// over the whole accumulator range.
    pub fn new(op: &'a PlaneOp, k: ChanRequant<'a>) -> Option<PlaneKernel<'a>> {
        // y is monotone in acc (acc * mult is; a floor division by 2^shift keeps
        // order): its extremes are at the range's ends.
        let zp = i64::from(k.r.zero_point);
        let scaling = Scaling::new(k.mult, k.round, k.shift, zp)?;
        let y = |acc: i32| ((i64::from(acc) * i64::from(k.mult) + k.round) >> k.shift) + zp;
        let in_i32 = |v: i64| i32::try_from(v).is_ok();
        (in_i32(y(op.lo)) && in_i32(y(op.hi))).then_some(PlaneKernel { op, k, scaling })
    }

    /// `out[i]`: the output byte of the codes `a[i]`, `b[i]` (whose rescales the
    /// tables `ta`, `tb` the kernel's [`PlaneOp`] was made from hold), for
    /// `i < out.len()`.
    pub fn run(
        &self,
        (ta, tb): (&RescaleTable, &RescaleTable),
        a: &[u8],
        b: &[u8],
        out: &mut [u8],
    ) {
        self.run_on((ta, tb), a, b, out, Width::widest());
    }

    /// [`PlaneKernel::run`] on vectors of at most `width` values (then eight, then
    /// one by one): the same bytes at every width.
    fn run_on(
        &self,
        (ta, tb): (&RescaleTable, &RescaleTable),
        a: &[u8],
        b: &[u8],
        out: &mut [u8],
        width: Width,
    ) {
        assert!(a.len() >= out.len() && b.len() >= out.len());
        #[cfg(target_arch = "x86_64")]
        let done = self.vectors(a, b, out, width);
        #[cfg(not(target_arch = "x86_64"))]
        let done = {
            let _ = width;
            0
        };
        for ((o, &x), &y) in out[done..].iter_mut().zip(&a[done..]).zip(&b[done..]) {
            // In the accumulator's range: the i32 is the exact, unwrapped value.
            let acc = eltwise_combine(self.op.op, ta[usize::from(x)], tb[usize::from(y)]);
            *o = self.k.byte(acc as i32);
        }
    }

    /// The values [`PlaneKernel::run_on`] computes in vectors (`a` and `b` at least
    /// as long as `out`): how many, from the first. Each width only where it has a
    /// whole vector to do (its set-up costs as much as a vector's work).
    #[cfg(target_arch = "x86_64")]
    fn vectors(&self, a: &[u8], b: &[u8], out: &mut [u8], width: Width) -> usize {
        let mut done = 0;
        if width == Width::Sixteen && out.len() >= 16 {
            // SAFETY: `Width::Sixteen` is only chosen where AVX-512 F is available
            // (`Width::widest`); `a` and `b` are at least as long as `out`.
            done = unsafe { avx512::run(self, a, b, out) };
        }
        if width != Width::One && out.len() - done >= 8 {
            // SAFETY: a kernel exists only where AVX2 does (`PlaneOp::of`); the reads
            // stay inside `a[done..]` and `b[done..]`, as long as `out[done..]`.
            done += unsafe { avx2::run(self, &a[done..], &b[done..], &mut out[done..]) };
        }
        done
    }
}

/// How many values the kernel computes at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Width {
    /// AVX-512: sixteen (then eight, then one by one).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Sixteen,
    /// AVX2: eight.
    Eight,
    /// One by one (the scalar loop alone; the tests hold every width to the
    /// definition).
    One,
}

impl Width {
    /// The widest this CPU runs (a kernel exists only where AVX2 does).
    fn widest() -> Width {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Width::Sixteen;
            }
        }
        Width::Eight
    }
}

/// True if this CPU runs the kernel.
fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{PlaneKernel, Scaling};
    use crate::exec::requant8::avx2::{clamp_lanes, clamp_store8};
    use crate::exec::requant8::clamps;
    use nnac_isa::EltOp;
    use std::arch::x86_64::*;

    /// A [`Scaling`]'s constants in registers.
    #[derive(Clone, Copy)]
    struct Lanes {
        mult: __m256i,
        biased_round: __m256i,
        shift: __m128i,
        after: __m256i,
    }

    impl Lanes {
        #[target_feature(enable = "avx2")]
        unsafe fn of(s: &Scaling) -> Lanes {
            Lanes {
                mult: _mm256_set1_epi64x(i64::from(s.mult)),
                biased_round: _mm256_set1_epi64x(s.biased_round),
                shift: _mm_cvtsi32_si128(s.shift as i32),
                after: _mm256_set1_epi64x(s.after),
            }
        }

        /// The scaling of the eight i32 lanes of `v`, whose results fit in i32.
        #[target_feature(enable = "avx2")]
        unsafe fn apply(&self, v: __m256i) -> __m256i {
            // The even lanes, then the odd ones, in 64-bit lanes.
            let scale = |v: __m256i| {
                let x = _mm256_add_epi64(_mm256_mul_epi32(v, self.mult), self.biased_round);
                _mm256_add_epi64(_mm256_srl_epi64(x, self.shift), self.after)
            };
            let (even, odd) = (scale(v), scale(_mm256_srli_epi64::<32>(v)));
            _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd))
        }
    }

    /// The code bytes `codes[at..at + 8]`' values less `zero`, in i32 lanes.
    #[target_feature(enable = "avx2")]
    unsafe fn values(codes: &[u8], at: usize, signed: bool, zero: __m256i) -> __m256i {
        let bytes = _mm_loadl_epi64(codes.as_ptr().add(at) as *const __m128i);
        let v = if signed {
            _mm256_cvtepi8_epi32(bytes)
        } else {
            _mm256_cvtepu8_epi32(bytes)
        };
        _mm256_sub_epi32(v, zero)
    }

    /// The kernel over the whole groups of eight values; returns how many it did.
    #[target_feature(enable = "avx2")]
    pub unsafe fn run(p: &PlaneKernel, a: &[u8], b: &[u8], out: &mut [u8]) -> usize {
        let full = out.len() / 8 * 8;
        let r = p.k.r;
        let [ia, ib] = p.op.inputs;
        let (la, lb) = (Lanes::of(&ia.scaling), Lanes::of(&ib.scaling));
        let ly = Lanes::of(&p.scaling);
        let (za, zb) = (_mm256_set1_epi32(ia.zero), _mm256_set1_epi32(ib.zero));
        let clamps = clamp_lanes(clamps((r.act_min, r.act_max), p.k.signed));
        for i in (0..full).step_by(8) {
            let va = la.apply(values(a, i, ia.signed, za));
            let vb = lb.apply(values(b, i, ib.signed, zb));
            // ADD or MAX: `PlaneOp::of` refuses MUL.
            let acc = match p.op.op {
                EltOp::Max => _mm256_max_epi32(va, vb),
                _ => _mm256_add_epi32(va, vb),
            };
            // FUSED_RELU's clamps, then the saturation.
            clamp_store8(ly.apply(acc), &clamps, out.as_mut_ptr().add(i));
        }
        full
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{PlaneKernel, Scaling};
    use crate::exec::requant8::clamps;
    use nnac_isa::EltOp;
    use std::arch::x86_64::*;

    /// A [`Scaling`]'s constants in registers.
    #[derive(Clone, Copy)]
    struct Lanes {
        mult: __m512i,
        biased_round: __m512i,
        shift: __m128i,
        after: __m512i,
    }

    impl Lanes {
        #[target_feature(enable = "avx512f")]
        unsafe fn of(s: &Scaling) -> Lanes {
            Lanes {
                mult: _mm512_set1_epi64(i64::from(s.mult)),
                biased_round: _mm512_set1_epi64(s.biased_round),
                shift: _mm_cvtsi32_si128(s.shift as i32),
                after: _mm512_set1_epi64(s.after),
            }
        }

        /// The scaling of the sixteen i32 lanes of `v`, whose results fit in i32.
        #[target_feature(enable = "avx512f")]
        unsafe fn apply(&self, v: __m512i) -> __m512i {
            // The even lanes, then the odd ones, in 64-bit lanes.
            let scale = |v: __m512i| {
                let x = _mm512_add_epi64(_mm512_mul_epi32(v, self.mult), self.biased_round);
                _mm512_add_epi64(_mm512_srl_epi64(x, self.shift), self.after)
            };
            let (even, odd) = (scale(v), scale(_mm512_srli_epi64::<32>(v)));
            _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64::<32>(odd))
        }
    }

    /// The code bytes `codes[at..at + 16]`' values less `zero`, in i32 lanes.
    #[target_feature(enable = "avx512f")]
    unsafe fn values(codes: &[u8], at: usize, signed: bool, zero: __m512i) -> __m512i {
        let bytes = _mm_loadu_si128(codes.as_ptr().add(at) as *const __m128i);
        let v = if signed {
            _mm512_cvtepi8_epi32(bytes)
        } else {
            _mm512_cvtepu8_epi32(bytes)
        };
        _mm512_sub_epi32(v, zero)
    }

    /// The kernel over the whole groups of sixteen values; returns how many it did.
    ///
    /// Safety: AVX-512 F; `a` and `b` at least as long as `out`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn run(p: &PlaneKernel, a: &[u8], b: &[u8], out: &mut [u8]) -> usize {
        let full = out.len() / 16 * 16;
        let r = p.k.r;
        let [ia, ib] = p.op.inputs;
        let (la, lb) = (Lanes::of(&ia.scaling), Lanes::of(&ib.scaling));
        let ly = Lanes::of(&p.scaling);
        let (za, zb) = (_mm512_set1_epi32(ia.zero), _mm512_set1_epi32(ib.zero));
        let [act_min, act_max, lo, hi] =
            clamps((r.act_min, r.act_max), p.k.signed).map(|v| _mm512_set1_epi32(v));
        for i in (0..full).step_by(16) {
            let va = la.apply(values(a, i, ia.signed, za));
            let vb = lb.apply(values(b, i, ib.signed, zb));
            // ADD or MAX: `PlaneOp::of` refuses MUL.
            let acc = match p.op.op {
                EltOp::Max => _mm512_max_epi32(va, vb),
                _ => _mm512_add_epi32(va, vb),
            };
            // FUSED_RELU's clamps, then the saturation; the low byte of each lane
            // (within the 8-bit range by then) is the output byte.
            let mut y = ly.apply(acc);
            y = _mm512_min_epi32(_mm512_max_epi32(y, act_min), act_max);
            y = _mm512_min_epi32(_mm512_max_epi32(y, lo), hi);
            _mm_storeu_si128(
                out.as_mut_ptr().add(i) as *mut __m128i,
                _mm512_cvtepi32_epi8(y),
            );
        }
        full
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::postproc::Post;
    use crate::rng::SplitMix64;
    use nnac_isa::arith::wrap_acc;
    use nnac_isa::simd::exec::run;
    use nnac_isa::{ChanParams, Requant, SimdInstr};

    fn pick<T: Copy>(rng: &mut SplitMix64, xs: &[T]) -> T {
        xs[rng.below(xs.len())]
    }

    fn tables(ra: Rescale, rb: Rescale) -> (RescaleTable, RescaleTable) {
        (ra.table(), rb.table())
    }

    fn random_rescale(rng: &mut SplitMix64) -> Rescale {
        Rescale {
            signed: rng.below(2) == 0,
            zero: pick(rng, &[0, -1, -128, 127, 255, 3]),
            mult: pick(rng, &[i32::MIN, i32::MAX, 1 << 30, 1_743_204_789, -5, 1, 0]),
            // 10: i32::MAX * 383 >> 10 is just within 2^30; below that, often past it.
            shift: pick(rng, &[0, 1, 8, 9, 10, 11, 12, 20, 31, 40, 62, 63]),
        }
    }

    #[test]
    fn equals_the_definition_on_every_code_pair() {
        if !available() {
            return; // the general path is the only one
        }
        let mut rng = SplitMix64::new(11);
        // Every pair of code bytes, and a tail of five.
        let n = 65_536 + 5;
        let a: Vec<u8> = (0..n).map(|i| i as u8).collect();
        let b: Vec<u8> = (0..n).map(|i| (i >> 8) as u8 ^ (i >> 16) as u8).collect();
        let mut kernels = 0;
        for case in 0..2000 {
            let op = pick(&mut rng, &[EltOp::Add, EltOp::Max]);
            let acc_bits = pick(&mut rng, &[30, 30, 24, 31, 32]);
            let (ra, rb) = (random_rescale(&mut rng), random_rescale(&mut rng));
            let (ta, tb) = tables(ra, rb);
            let Some(plane) = PlaneOp::of(op, (&ta, &tb), (ra, rb), acc_bits) else {
                continue; // the general path runs
            };
            let r = Requant {
                dst: 0,
                src: 0,
                per_channel: true,
                shift: 0,
                act_min: pick(&mut rng, &[i16::MIN, -128, -100, 0, 5]),
                act_max: pick(&mut rng, &[i16::MAX, 127, 255, 100, -3]),
                zero_point: pick(&mut rng, &[0, -128, 3, 127, -7, 300]),
                multiplier: 0,
            };
            let mult = pick(
                &mut rng,
                &[i32::MIN, i32::MAX, 1 << 30, 1_518_500_250, -5, 1, 0],
            );
            let shift = pick(&mut rng, &[0, 1, 20, 31, 36, 45, 62]);
            let chans = [ChanParams([mult, shift, 0, 0])];
            let prog = [SimdInstr::FusedRelu(r.clone())];
            let signed = rng.below(2) == 0;
            let post = Post::new(&prog, signed, &chans);
            let Some(kernel) = PlaneKernel::new(&plane, post.chan_requant(0).unwrap()) else {
                continue; // y outside i32: the general path runs
            };
            kernels += 1;
            let want: Vec<u8> = (0..n)
                .map(|i| {
                    let exact = eltwise_combine(op, ta[usize::from(a[i])], tb[usize::from(b[i])]);
                    let (acc, wrapped) = wrap_acc(exact, acc_bits);
                    assert!(!wrapped);
                    run(&prog, acc, &chans[0], signed)
                })
                .collect();
            // Every width this CPU has (AVX-512's sixteen, AVX2's eight, one by one),
            // starting at every offset modulo sixteen.
            let mut widths = vec![Width::widest(), Width::Eight, Width::One];
            widths.dedup();
            for width in widths {
                let from = case % 16;
                let mut got = vec![0u8; n - from];
                kernel.run_on((&ta, &tb), &a[from..], &b[from..], &mut got, width);
                for (i, (&g, &w)) in got.iter().zip(&want[from..]).enumerate() {
                    assert_eq!(
                        g,
                        w,
                        "case {case}: {op:?} {ra:?} {rb:?} {r:?} {mult} >> {shift}, \
                         {width:?} at {}",
                        from + i
                    );
                }
            }
        }
        assert!(kernels > 150, "{kernels} kernels");
    }

    #[test]
    fn refuses_what_it_cannot_compute() {
        if !available() {
            return;
        }
        let big = [1 << 28; 256];
        let small = [0; 256];
        // 2^28 + 2^28 = 2^29 wraps 30 bits; 2^29 - 1 + 1 too; MAX of them does not.
        assert!(acc_range(EltOp::Add, (&big, &big), 30).is_none());
        assert!(acc_range(EltOp::Add, (&[(1 << 29) - 1; 256], &[1; 256]), 30).is_none());
        assert!(acc_range(EltOp::Add, (&[(1 << 29) - 1; 256], &small), 30).is_some());
        assert_eq!(
            acc_range(EltOp::Max, (&big, &small), 30),
            Some((1 << 28, 1 << 28))
        );
        assert!(acc_range(EltOp::Mul, (&small, &small), 30).is_none());
        // Past 2^30 in magnitude with a wider accumulator, in a sum or in an entry.
        assert!(acc_range(EltOp::Add, (&[1 << 30; 256], &[1; 256]), 32).is_none());
        assert!(acc_range(EltOp::Max, (&[-(1 << 30) - 1; 256], &[1; 256]), 32).is_none());
        assert!(acc_range(EltOp::Add, (&[-(1 << 30); 256], &small), 32).is_some());
        // A shift of 63 (the field's largest); MUL.
        let r = Rescale {
            signed: true,
            zero: 0,
            mult: 1 << 30,
            shift: 20,
        };
        let (ta, tb) = tables(r, r);
        let plane = PlaneOp::of(EltOp::Add, (&ta, &tb), (r, r), 30);
        assert!(plane.is_some());
        assert!(PlaneOp::of(EltOp::Mul, (&ta, &tb), (r, r), 30).is_none());
        let r63 = Rescale { shift: 63, ..r };
        let (t63, tb) = tables(r63, r);
        assert!(PlaneOp::of(EltOp::Add, (&t63, &tb), (r63, r), 30).is_none());
        // y = acc * (2^31 - 1) at shift 0 does not fit in i32; at shift 31 it does.
        let q = Requant {
            dst: 0,
            src: 0,
            per_channel: true,
            shift: 0,
            act_min: -128,
            act_max: 127,
            zero_point: 0,
            multiplier: 0,
        };
        let prog = [SimdInstr::FusedRelu(q)];
        let plane = plane.unwrap();
        for (mult, shift, fits) in [(i32::MAX, 0, false), (i32::MAX, 31, true), (1, 0, true)] {
            let chans = [ChanParams([mult, shift, 0, 0])];
            let post = Post::new(&prog, true, &chans);
            let k = PlaneKernel::new(&plane, post.chan_requant(0).unwrap());
            assert_eq!(k.is_some(), fits, "{mult} >> {shift}");
        }
    }
}
