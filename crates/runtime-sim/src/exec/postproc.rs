//! What happens to an accumulator value after the dot product: the per-channel bias
//! and channel-parameter tables, and the SIMD program (the isa crate's executor).

use super::requant8::Octets;
use crate::error::ExecError;
use crate::memory::Memory;
use nnac_isa::simd::exec::{run, uses_chan_params};
use nnac_isa::{arith, ChanParams, DotProduct, Requant, SimdInstr};
use std::borrow::Cow;

/// Per-channel bias (0 when disabled) and SIMD channel parameters of a tile.
pub struct ChannelTable {
    pub bias: Vec<i64>,
    /// `bias` as the i32 values SRAM holds (the narrow accumulator path).
    pub bias32: Vec<i32>,
    pub chan: Vec<ChanParams>,
}

/// Reads `count` channel-parameter entries at `addr` (16 bytes each), or defaults when
/// the program does not use them.
pub fn read_chan(
    sram: &Memory,
    addr: u32,
    count: u64,
    program: &[SimdInstr],
) -> Result<Vec<ChanParams>, ExecError> {
    if !uses_chan_params(program) {
        return Ok(vec![ChanParams::default(); count as usize]);
    }
    let bytes = sram.slice(u64::from(addr), count * ChanParams::SIZE as u64)?;
    Ok(bytes
        .chunks_exact(ChanParams::SIZE)
        .map(|b| ChanParams::from_bytes(b).expect("chunks are 16 bytes"))
        .collect())
}

impl ChannelTable {
    pub fn read(
        sram: &Memory,
        d: &DotProduct,
        count: u64,
        program: &[SimdInstr],
    ) -> Result<ChannelTable, ExecError> {
        let bias32: Vec<i32> = if d.bias_en {
            (0..count)
                .map(|c| sram.i32_at(u64::from(d.bias_addr) + 4 * c))
                .collect::<Result<_, _>>()?
        } else {
            vec![0; count as usize]
        };
        Ok(ChannelTable {
            bias: bias32.iter().map(|&b| i64::from(b)).collect(),
            bias32,
            chan: read_chan(sram, d.chan_addr, count, program)?,
        })
    }

    /// Entry `i` repeated for `n` channels: the row of output pixel `i` of a tile
    /// whose parameters are per pixel (`params_by_pixel`).
    pub fn splat(&self, i: usize, n: usize) -> ChannelTable {
        ChannelTable {
            bias: vec![self.bias[i]; n],
            bias32: vec![self.bias32[i]; n],
            chan: vec![self.chan[i]; n],
        }
    }
}

/// The SIMD stage of one instruction, for the channels of its tile.
///
/// Programs that are a single `FUSED_RELU r0, r0` (the common case) skip the lane
/// interpreter and apply the requantization directly with the shared arithmetic of
/// `nnac_isa::arith` (a test checks this path against `nnac_isa::simd::exec::run` bit
/// for bit); when every channel's shift is at most 62 the per-channel multiplier,
/// rounding term and shift are tabulated once ([`Lanes`]) and whole rows run through
/// one branch-free loop. Every other program runs on the shared executor.
pub struct Post<'a> {
    program: &'a [SimdInstr],
    chan: &'a [ChanParams],
    fused: Option<&'a Requant>,
    lanes: Option<Cow<'a, Lanes>>,
    out_signed: bool,
}

/// A [`Post`]'s tabulated constants ([`Post::consts`]), made once for the
/// executions of one instruction ([`Post::with_consts`]).
#[derive(Debug, Clone)]
pub struct PostConsts(Option<Lanes>);

/// Per-channel constants of a FUSED_RELU epilogue whose shifts are all <= 62:
/// `y = ((acc * mult + round) >> shift) + zero_point`, exact in i64 because
/// `|acc * mult| <= 2^62` and `round < 2^62`.
#[derive(Debug, Clone)]
struct Lanes {
    /// i32, so the product with an i32 accumulator is one signed 32 x 32 -> 64-bit
    /// multiply per lane (`vpmuldq` on AVX2) rather than a 64 x 64 one.
    mult: Vec<i32>,
    round: Vec<i64>,
    shift: Vec<u32>,
    /// The same constants in groups of eight channels, where every channel's result
    /// fits in i32 and the CPU has AVX2 (not AVX-512, whose 64-bit row loop is used).
    octets: Option<Octets>,
}

/// FUSED_RELU of docs/ISA.md section 7 on `acc`, then the output saturation.
#[inline]
pub fn requant_byte(r: &Requant, acc: i32, chan: &ChanParams, out_signed: bool) -> u8 {
    let (m, s) = mult_shift(r, chan);
    // |acc * m| <= 2^62, so for s <= 62 the rounding shift is exact in i64, and so
    // is adding the zero point. After the act_min/act_max clamp the value is within
    // i16, so arith::sat_i32 is the identity; the last clamp is arith::saturate8.
    let scaled: i64 = if s <= 62 {
        (i64::from(acc) * i64::from(m) + round_term(s)) >> s
    } else {
        arith::scale(i64::from(acc), m, s) as i64
    };
    finish(r, scaled, out_signed)
}

/// The multiplier and shift FUSED_RELU uses for a channel.
fn mult_shift(r: &Requant, chan: &ChanParams) -> (i32, u32) {
    if r.per_channel {
        (chan.0[0], chan.0[1].clamp(0, 63) as u32)
    } else {
        (r.multiplier, r.shift)
    }
}

/// `2^(s-1)` (0 for `s` = 0): the rounding term of `rshift_round`.
fn round_term(s: u32) -> i64 {
    if s == 0 {
        0
    } else {
        1i64 << (s - 1)
    }
}

/// Zero point, the act_min / act_max clamp and the 8-bit output saturation.
#[inline]
fn finish(r: &Requant, scaled: i64, out_signed: bool) -> u8 {
    let (lo, hi) = if out_signed { (-128, 127) } else { (0, 255) };
    // In [lo, hi] the byte is the value's low 8 bits (two's complement for int8).
    (scaled + i64::from(r.zero_point))
        .max(i64::from(r.act_min))
        .min(i64::from(r.act_max))
        .max(lo)
        .min(hi) as u8
}

/// `x >> s` (arithmetic, `s` < 64) through a logical shift of the sign-folded value:
/// for negative x, `x >> s == !(!x >>> s)`. AVX2 shifts 64-bit lanes by per-lane
/// amounts only logically, so this form lets the row loop vectorise.
#[inline]
fn ashr(x: i64, s: u32) -> i64 {
    let sign = x >> 63;
    (((x ^ sign) as u64) >> s) as i64 ^ sign
}

/// The FUSED_RELU row loop over tabulated lanes.
#[inline(always)]
fn lanes_row(r: &Requant, l: &Lanes, acc: &[i32], c0: usize, out: &mut [u8], signed: bool) {
    let n = acc.len();
    let lanes = l.mult[c0..c0 + n]
        .iter()
        .zip(&l.round[c0..c0 + n])
        .zip(&l.shift[c0..c0 + n]);
    for ((o, &a), ((&m, &rd), &s)) in out.iter_mut().zip(acc).zip(lanes) {
        *o = finish(r, ashr(i64::from(a) * i64::from(m) + rd, s), signed);
    }
}

/// [`lanes_row`] compiled for AVX2 (64-bit lane multiplies and shifts).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lanes_row_avx2(
    r: &Requant,
    l: &Lanes,
    acc: &[i32],
    c0: usize,
    out: &mut [u8],
    signed: bool,
) {
    lanes_row(r, l, acc, c0, out, signed)
}

/// [`lanes_row`] compiled for AVX-512 (`vpmullq`, `vpsravq`: eight 64-bit lanes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl")]
unsafe fn lanes_row_avx512(
    r: &Requant,
    l: &Lanes,
    acc: &[i32],
    c0: usize,
    out: &mut [u8],
    signed: bool,
) {
    lanes_row(r, l, acc, c0, out, signed)
}

/// One channel's FUSED_RELU epilogue as constants (its shift is at most 62):
/// [`ChanRequant::byte`] is [`requant_byte`] for that channel.
#[derive(Debug, Clone, Copy)]
pub struct ChanRequant<'a> {
    pub r: &'a Requant,
    pub mult: i32,
    /// `2^(shift-1)` (0 for shift 0).
    pub round: i64,
    pub shift: u32,
    pub signed: bool,
}

impl ChanRequant<'_> {
    /// The output byte of accumulator value `acc`.
    #[inline(always)]
    pub fn byte(&self, acc: i32) -> u8 {
        let scaled = ashr(
            i64::from(acc) * i64::from(self.mult) + self.round,
            self.shift,
        );
        finish(self.r, scaled, self.signed)
    }
}

/// The FUSED_RELU loop over a row of values of one channel.
#[inline(always)]
fn chan_row(k: &ChanRequant, acc: &[i32], out: &mut [u8]) {
    for (o, &a) in out.iter_mut().zip(acc) {
        *o = k.byte(a);
    }
}

/// [`chan_row`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn chan_row_avx2(k: &ChanRequant, acc: &[i32], out: &mut [u8]) {
    chan_row(k, acc, out)
}

/// [`chan_row`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl")]
unsafe fn chan_row_avx512(k: &ChanRequant, acc: &[i32], out: &mut [u8]) {
    chan_row(k, acc, out)
}

/// The program's FUSED_RELU if it is a lone `FUSED_RELU r0, r0`.
fn fused_relu(program: &[SimdInstr]) -> Option<&Requant> {
    match program {
        [SimdInstr::FusedRelu(r)] if r.src == 0 && r.dst == 0 => Some(r),
        _ => None,
    }
}

/// True if [`Post::apply_row`] would run [`Octets`] on this CPU: AVX2 without
/// AVX-512.
fn octets_wanted() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        !has_avx512() && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// True if this CPU runs [`lanes_row_avx512`].
#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512dq") && has!("avx512bw") && has!("avx512vl")
}

impl<'a> Post<'a> {
    /// `chan[c]` holds the parameters of tile channel `c`.
    pub fn new(program: &'a [SimdInstr], out_signed: bool, chan: &'a [ChanParams]) -> Post<'a> {
        let PostConsts(lanes) = Post::consts(program, out_signed, chan);
        Post {
            lanes: lanes.map(Cow::Owned),
            ..Post::bare(program, out_signed, chan)
        }
    }

    /// [`Post::new`] with constants [`Post::consts`] made from the same arguments.
    pub fn with_consts(
        program: &'a [SimdInstr],
        out_signed: bool,
        chan: &'a [ChanParams],
        consts: &'a PostConsts,
    ) -> Post<'a> {
        debug_assert_eq!(
            consts.0.as_ref().map(|l| l.mult.len()),
            consts.0.as_ref().map(|_| chan.len())
        );
        Post {
            lanes: consts.0.as_ref().map(Cow::Borrowed),
            ..Post::bare(program, out_signed, chan)
        }
    }

    /// The program's tabulated constants for the channels `chan`: a lone FUSED_RELU
    /// whose shifts are all at most 62 gets them.
    pub fn consts(program: &[SimdInstr], out_signed: bool, chan: &[ChanParams]) -> PostConsts {
        let lanes = fused_relu(program).and_then(|r| {
            let ms: Vec<(i32, u32)> = chan.iter().map(|c| mult_shift(r, c)).collect();
            if !ms.iter().all(|&(_, s)| s <= 62) {
                return None;
            }
            let mult: Vec<i32> = ms.iter().map(|&(m, _)| m).collect();
            let round: Vec<i64> = ms.iter().map(|&(_, s)| round_term(s)).collect();
            let shift: Vec<u32> = ms.iter().map(|&(_, s)| s).collect();
            let octets = octets_wanted().then(|| {
                let clamps = (r.act_min, r.act_max);
                let zp = i32::from(r.zero_point);
                Octets::new((&mult, &round, &shift), zp, clamps, out_signed)
            });
            Some(Lanes {
                mult,
                round,
                shift,
                octets: octets.flatten(),
            })
        });
        PostConsts(lanes)
    }

    /// The post stage without tabulated constants.
    fn bare(program: &'a [SimdInstr], out_signed: bool, chan: &'a [ChanParams]) -> Post<'a> {
        Post {
            program,
            chan,
            fused: fused_relu(program),
            lanes: None,
            out_signed,
        }
    }

    /// The output byte for accumulator value `acc` of tile channel `c`.
    #[inline]
    pub fn apply(&self, acc: i32, c: usize) -> u8 {
        match self.fused {
            Some(r) => requant_byte(r, acc, &self.chan[c], self.out_signed),
            None => run(self.program, acc, &self.chan[c], self.out_signed),
        }
    }

    /// `out[i] = apply(acc[i], c0 + i)` for a row of consecutive channels.
    pub fn apply_row(&self, acc: &[i32], c0: usize, out: &mut [u8]) {
        match (self.fused, &self.lanes) {
            (Some(r), Some(l)) => {
                #[cfg(target_arch = "x86_64")]
                {
                    if has_avx512() {
                        // SAFETY: AVX-512 F/DQ/BW/VL are available (checked just
                        // above); the function body is safe Rust.
                        unsafe { lanes_row_avx512(r, l, acc, c0, out, self.out_signed) };
                        return;
                    }
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // Whole groups of eight channels in i32 lanes, the rest in
                        // 64-bit ones.
                        let done = l.octets.as_ref().map_or(0, |o| o.row(acc, c0, out));
                        let (acc, out) = (&acc[done..], &mut out[done..]);
                        // SAFETY: AVX2 is available (checked just above); the function
                        // body is safe Rust.
                        unsafe { lanes_row_avx2(r, l, acc, c0 + done, out, self.out_signed) };
                        return;
                    }
                }
                lanes_row(r, l, acc, c0, out, self.out_signed)
            }
            _ => {
                for (i, (o, &a)) in out.iter_mut().zip(acc).enumerate() {
                    *o = self.apply(a, c0 + i);
                }
            }
        }
    }

    /// Tile channel `c`'s epilogue as constants, if the program is a lone FUSED_RELU
    /// and every channel's shift is at most 62.
    pub fn chan_requant(&self, c: usize) -> Option<ChanRequant<'a>> {
        match (self.fused, &self.lanes) {
            (Some(r), Some(l)) => Some(ChanRequant {
                r,
                mult: l.mult[c],
                round: l.round[c],
                shift: l.shift[c],
                signed: self.out_signed,
            }),
            _ => None,
        }
    }

    /// `out[i] = apply(acc[i], c)` for a row of values of one channel `c`.
    pub fn apply_chan(&self, acc: &[i32], c: usize, out: &mut [u8]) {
        match self.chan_requant(c) {
            Some(k) => {
                #[cfg(target_arch = "x86_64")]
                {
                    if has_avx512() {
                        // SAFETY: AVX-512 F/DQ/BW/VL are available (checked just
                        // above); the function body is safe Rust.
                        unsafe { chan_row_avx512(&k, acc, out) };
                        return;
                    }
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: AVX2 is available (checked just above); the function
                        // body is safe Rust.
                        unsafe { chan_row_avx2(&k, acc, out) };
                        return;
                    }
                }
                chan_row(&k, acc, out)
            }
            None => {
                for (o, &a) in out.iter_mut().zip(acc) {
                    *o = self.apply(a, c);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0 >> 16
        }
        fn i32(&mut self) -> i32 {
            // Biased to the extremes and small values.
            match self.next() % 4 {
                0 => {
                    [i32::MIN, i32::MAX, 0, -1, 1, 1 << 29, -(1 << 29)][(self.next() % 7) as usize]
                }
                1 => (self.next() % 512) as i32 - 256,
                _ => self.next() as i32,
            }
        }
    }

    /// FUSED_RELU r0, r0 with per-channel multipliers and shifts.
    fn per_channel_relu((act_min, act_max): (i16, i16), zero_point: i16) -> Requant {
        Requant {
            dst: 0,
            src: 0,
            per_channel: true,
            shift: 0,
            act_min,
            act_max,
            zero_point,
            multiplier: 0,
        }
    }

    #[test]
    fn arithmetic_shift_through_a_logical_one() {
        for x in [
            0i64,
            1,
            -1,
            5,
            -5,
            i64::MAX,
            i64::MIN,
            1 << 40,
            -(1 << 40) - 3,
        ] {
            for s in [0, 1, 2, 31, 62, 63] {
                assert_eq!(ashr(x, s), x >> s, "{x} >> {s}");
            }
        }
    }

    #[test]
    fn row_path_matches_per_value_path() {
        let mut rng = Rng(7);
        let chans: Vec<ChanParams> = (0..40)
            .map(|_| ChanParams([rng.i32(), (rng.next() % 63) as i32, 0, 0]))
            .collect();
        let r = per_channel_relu((-100, 120), 3);
        let prog = [SimdInstr::FusedRelu(r)];
        for signed in [true, false] {
            let post = Post::new(&prog, signed, &chans);
            assert!(post.lanes.is_some());
            let acc: Vec<i32> = (0..37).map(|_| rng.i32() >> 2).collect();
            let mut row = vec![0u8; acc.len()];
            post.apply_row(&acc, 3, &mut row);
            for (i, &a) in acc.iter().enumerate() {
                assert_eq!(row[i], run(&prog, a, &chans[3 + i], signed));
            }
            // One channel's values along a plane.
            post.apply_chan(&acc, 5, &mut row);
            for (i, &a) in acc.iter().enumerate() {
                assert_eq!(row[i], run(&prog, a, &chans[5], signed));
            }
        }
    }

    #[test]
    fn octet_rows_match_the_shared_executor() {
        // Per-channel multipliers and shifts whose results fit in i32 for every i32
        // accumulator (shift >= 32, or multipliers below 2^8 with shifts above 8), so the eight-channel
        // kernel runs where the CPU has it; rows from several first channels, of
        // lengths with and without a partial group, accumulators at the extremes and
        // at rounding boundaries.
        let mut rng = Rng(3);
        for case in 0..300 {
            let n = 1 + (rng.next() % 41) as usize;
            let chans: Vec<ChanParams> = (0..n)
                .map(|_| {
                    let (m, s) = match rng.next() % 3 {
                        0 => (rng.i32(), 32 + (rng.next() % 31) as i32),
                        1 => ([i32::MIN, i32::MAX, -1, 1][(rng.next() % 4) as usize], 62),
                        _ => ((rng.next() % 512) as i32 - 256, 9 + (rng.next() % 8) as i32),
                    };
                    ChanParams([m, s, 0, 0])
                })
                .collect();
            let r = per_channel_relu((rng.i32() as i16, rng.i32() as i16), rng.i32() as i16);
            let prog = [SimdInstr::FusedRelu(r.clone())];
            for signed in [true, false] {
                let post = Post::new(&prog, signed, &chans);
                let lanes = post.lanes.as_ref().expect("shifts <= 62");
                assert_eq!(lanes.octets.is_some(), octets_wanted(), "case {case}");
                for c0 in [0, 8, 16].into_iter().filter(|&c| c < n) {
                    let acc: Vec<i32> = (c0..n)
                        .map(|c| match rng.next() % 3 {
                            // Just below, at and above a multiple of 2^shift.
                            0 => ((rng.i32() >> chans[c].0[1]) << chans[c].0[1])
                                .wrapping_add((rng.next() % 3) as i32 - 1),
                            _ => rng.i32(),
                        })
                        .collect();
                    let mut row = vec![0u8; acc.len()];
                    post.apply_row(&acc, c0, &mut row);
                    for (i, &a) in acc.iter().enumerate() {
                        let want = run(&prog, a, &chans[c0 + i], signed);
                        assert_eq!(
                            row[i],
                            want,
                            "case {case} {r:?} {:?} acc {a}",
                            chans[c0 + i]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn octets_refuse_results_past_i32() {
        // A multiplier of 2^30: with a shift of 29 y reaches 2^32 at the ends of i32,
        // with 30 it stays within [-2^31, 2^31 - 1].
        let past = Octets::new((&[1 << 30], &[1 << 28], &[29]), 0, (-128, 127), true);
        assert!(past.is_none());
        let within = Octets::new((&[1 << 30], &[1 << 29], &[30]), 0, (-128, 127), true);
        assert!(within.is_some());
        // The zero point can push an end past i32 too.
        let edge = Octets::new(
            (&[i32::MAX], &[1 << 31], &[32]),
            i32::MAX,
            (-128, 127),
            true,
        );
        assert!(edge.is_none());
    }

    #[test]
    fn fused_relu_fast_path_matches_the_shared_executor() {
        let mut rng = Rng(42);
        for _ in 0..200_000 {
            let r = Requant {
                dst: 0,
                src: 0,
                per_channel: rng.next().is_multiple_of(2),
                shift: (rng.next() % 64) as u32,
                act_min: rng.i32() as i16,
                act_max: rng.i32() as i16,
                zero_point: rng.i32() as i16,
                multiplier: rng.i32(),
            };
            let chan = ChanParams([rng.i32(), rng.i32() % 70, rng.i32(), rng.i32()]);
            let acc = rng.i32();
            let signed = rng.next().is_multiple_of(2);
            let prog = [SimdInstr::FusedRelu(r.clone())];
            let chans = [chan];
            let post = Post::new(&prog, signed, &chans);
            assert!(post.fused.is_some());
            let want = run(&prog, acc, &chan, signed);
            assert_eq!(post.apply(acc, 0), want, "{r:?} {chan:?} {acc}");
            let mut row = [0u8];
            post.apply_row(&[acc], 0, &mut row);
            assert_eq!(row[0], want, "row path: {r:?} {chan:?} {acc}");
        }
    }
}
