//! What happens to an accumulator value after the dot product: the per-channel bias
//! and channel-parameter tables, and the SIMD program (the isa crate's executor).

use crate::memory::Memory;
use nnac_isa::simd::exec::{run, uses_chan_params};
use nnac_isa::{arith, ChanParams, DotProduct, Requant, SimdInstr};

/// Per-channel bias (0 when disabled) and SIMD channel parameters of a tile.
pub struct ChannelTable {
    pub bias: Vec<i64>,
    pub chan: Vec<ChanParams>,
}

/// Reads `count` channel-parameter entries at `addr` (16 bytes each), or defaults when
/// the program does not use them.
pub fn read_chan(
    sram: &Memory,
    addr: u32,
    count: u64,
    program: &[SimdInstr],
) -> Result<Vec<ChanParams>, String> {
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
    ) -> Result<ChannelTable, String> {
        let bias = if d.bias_en {
            (0..count)
                .map(|c| sram.i32_at(u64::from(d.bias_addr) + 4 * c).map(i64::from))
                .collect::<Result<_, _>>()?
        } else {
            vec![0; count as usize]
        };
        Ok(ChannelTable {
            bias,
            chan: read_chan(sram, d.chan_addr, count, program)?,
        })
    }
}

/// The SIMD stage of one instruction.
///
/// Programs that are a single `FUSED_RELU r0, r0` (the common case) skip the lane
/// interpreter and apply the requantization directly with the shared arithmetic of
/// `nnac_isa::arith`; a test checks this path against `nnac_isa::simd::exec::run`
/// bit for bit. Every other program runs on the shared executor.
pub struct Post<'a> {
    program: &'a [SimdInstr],
    fused: Option<&'a Requant>,
    out_signed: bool,
}

/// FUSED_RELU of docs/ISA.md section 7 on `acc`, then the output saturation.
#[inline]
pub fn requant_byte(r: &Requant, acc: i32, chan: &ChanParams, out_signed: bool) -> u8 {
    let (m, s) = if r.per_channel {
        (chan.0[0], chan.0[1].clamp(0, 63) as u32)
    } else {
        (r.multiplier, r.shift)
    };
    // |acc * m| <= 2^62, so for s <= 62 the rounding shift is exact in i64, and so
    // is adding the zero point. After the act_min/act_max clamp the value is within
    // i16, so arith::sat_i32 is the identity; the last clamp is arith::saturate8.
    let scaled: i64 = if s == 0 {
        i64::from(acc) * i64::from(m)
    } else if s <= 62 {
        (i64::from(acc) * i64::from(m) + (1i64 << (s - 1))) >> s
    } else {
        arith::scale(i64::from(acc), m, s) as i64
    };
    let y = (scaled + i64::from(r.zero_point))
        .max(i64::from(r.act_min))
        .min(i64::from(r.act_max));
    if out_signed {
        y.clamp(-128, 127) as i8 as u8
    } else {
        y.clamp(0, 255) as u8
    }
}

impl<'a> Post<'a> {
    pub fn new(program: &'a [SimdInstr], out_signed: bool) -> Post<'a> {
        let fused = match program {
            [SimdInstr::FusedRelu(r)] if r.src == 0 && r.dst == 0 => Some(r),
            _ => None,
        };
        Post {
            program,
            fused,
            out_signed,
        }
    }

    /// The output byte for accumulator value `acc` of a channel with parameters `chan`.
    #[inline]
    pub fn apply(&self, acc: i32, chan: &ChanParams) -> u8 {
        match self.fused {
            Some(r) => requant_byte(r, acc, chan, self.out_signed),
            None => run(self.program, acc, chan, self.out_signed),
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
            let post = Post::new(&prog, signed);
            assert!(post.fused.is_some());
            assert_eq!(
                post.apply(acc, &chan),
                run(&prog, acc, &chan, signed),
                "{r:?} {chan:?} {acc}"
            );
        }
    }
}
