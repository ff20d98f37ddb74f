//! Execution of single instructions against the machine's memories.

pub mod combine;
pub mod depthwise;
pub mod dma;
pub mod dot;
pub mod dot_geom;
pub mod eltwise_plane;
pub mod gather;
pub mod gemm;
pub mod lines;
pub mod patch_cache;
pub mod pool;
pub mod postproc;
pub mod quad;
pub mod requant8;
pub mod simd_ops;
pub mod tensor;
pub mod weight_cache;
pub mod weights;

use crate::error::ExecError;
use crate::memory::{Dram, Memory};
pub use dot::Caches;
use dot_geom::DotKind;
use nnac_isa::{HwConfig, Instr};

/// What one instruction did, for the run statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecStats {
    /// Multiply-accumulates performed (dot-product instructions).
    pub macs: u64,
    /// Bytes moved by DMA.
    pub dma_bytes: u64,
    /// Accumulator values whose exact value did not fit the accumulator (wrapped).
    pub overflows: u64,
    /// First overflowing (flattened pixel, channel).
    pub first_overflow: Option<(u64, u64)>,
}

impl ExecStats {
    pub fn note_overflow(&mut self, pixel: u64, channel: u64) {
        self.overflows += 1;
        self.first_overflow.get_or_insert((pixel, channel));
    }

    pub fn merge(&mut self, o: &ExecStats) {
        self.macs += o.macs;
        self.dma_bytes += o.dma_bytes;
        self.overflows += o.overflows;
        if self.first_overflow.is_none() {
            self.first_overflow = o.first_overflow;
        }
    }
}

/// `arith::wrap_acc` with the in-range case (almost every value) decided inline.
#[inline]
pub fn wrap(exact: i64, acc_bits: u32) -> (i32, bool) {
    let half = 1i64 << (acc_bits - 1);
    if exact >= -half && exact < half {
        (exact as i32, false)
    } else {
        nnac_isa::arith::wrap_acc(exact, acc_bits)
    }
}

/// `out[i] = wrap(exact[i] + bias[i])` for a row (a loop the compiler vectorises);
/// returns whether any value wrapped (then the caller locates them with [`wrap`]).
pub fn wrap_row(exact: &[i64], bias: &[i64], acc_bits: u32, out: &mut [i32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available (checked just above); the body is safe Rust.
            return unsafe { wrap_row_avx2(exact, bias, acc_bits, out) };
        }
    }
    wrap_row_plain(exact, bias, acc_bits, out)
}

#[inline(always)]
fn wrap_row_plain(exact: &[i64], bias: &[i64], acc_bits: u32, out: &mut [i32]) -> bool {
    let half = 1i64 << (acc_bits - 1);
    let mask = (1i64 << acc_bits) - 1;
    let mut any = false;
    for (o, (&e, &b)) in out.iter_mut().zip(exact.iter().zip(bias)) {
        let v = e + b;
        let w = ((v + half) & mask) - half;
        any |= w != v;
        *o = w as i32;
    }
    any
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn wrap_row_avx2(exact: &[i64], bias: &[i64], acc_bits: u32, out: &mut [i32]) -> bool {
    wrap_row_plain(exact, bias, acc_bits, out)
}

/// `out[i] = wrap(exact[i] + bias[i])` for a row of the i32 kernels' sums, where
/// `exact[i] = dots[i].wrapping_sub(unbias[i])` (unbias 0 when `None`) is exact in
/// i32: [`wrap_row`] in 32-bit lanes (`acc_bits` <= 32, so the wrapped value is the
/// low `acc_bits` bits of the i32 sum, sign-extended, and a value wraps exactly when
/// the i32 addition overflows or those bits differ from the sum). Returns whether
/// any value wrapped (the caller then locates them with [`wrap`]).
pub fn wrap_dots_row(
    dots: &[i32],
    unbias: Option<&[i32]>,
    bias: &[i32],
    acc_bits: u32,
    out: &mut [i32],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available (checked just above); the body is safe Rust.
            return unsafe { wrap_dots_row_avx2(dots, unbias, bias, acc_bits, out) };
        }
    }
    wrap_dots_row_plain(dots, unbias, bias, acc_bits, out)
}

#[inline(always)]
fn wrap_dots_row_plain(
    dots: &[i32],
    unbias: Option<&[i32]>,
    bias: &[i32],
    acc_bits: u32,
    out: &mut [i32],
) -> bool {
    let half = 1u32 << (acc_bits - 1);
    let mask = u32::MAX >> (32 - acc_bits);
    // Nonzero once a value wrapped: the sign bit of the i32 addition's overflow
    // (`x`, `b` and the sum `s` not all of one sign where they must be), or a
    // difference between the sum and its wrapped value. Bit operations only, so the
    // loop vectorises.
    let mut bad = 0i32;
    let mut one = |x: i32, b: i32| -> i32 {
        let s = x.wrapping_add(b);
        let w = ((s as u32).wrapping_add(half) & mask).wrapping_sub(half) as i32;
        bad |= ((x ^ s) & (b ^ s) & i32::MIN) | (w ^ s);
        w
    };
    match unbias {
        Some(u) => {
            for (o, ((&d, &u), &b)) in out.iter_mut().zip(dots.iter().zip(u).zip(bias)) {
                *o = one(d.wrapping_sub(u), b);
            }
        }
        None => {
            for (o, (&d, &b)) in out.iter_mut().zip(dots.iter().zip(bias)) {
                *o = one(d, b);
            }
        }
    }
    bad != 0
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn wrap_dots_row_avx2(
    dots: &[i32],
    unbias: Option<&[i32]>,
    bias: &[i32],
    acc_bits: u32,
    out: &mut [i32],
) -> bool {
    wrap_dots_row_plain(dots, unbias, bias, acc_bits, out)
}

/// Where a dot-product instruction's [`dot::DotPrep`] is kept between executions.
pub enum Prep<'c> {
    /// Prepare it for this execution only.
    Fresh,
    /// Use the one in the slot, or prepare it and keep it there. The caller empties
    /// the slot whenever the instruction's parameter bytes in SRAM may have changed.
    Keep(&'c mut Option<dot::DotPrep>),
}

fn dot_instr(
    d: &nnac_isa::DotProduct,
    kind: DotKind,
    hw: &HwConfig,
    sram: &mut Memory,
    prep: Prep<'_>,
    caches: Caches<'_>,
) -> Result<ExecStats, ExecError> {
    match prep {
        Prep::Fresh => dot::execute(d, kind, hw, sram, caches),
        Prep::Keep(slot) => {
            if slot.is_none() {
                *slot = Some(dot::DotPrep::new(
                    d,
                    kind,
                    hw,
                    sram,
                    (caches.weights, true),
                )?);
            }
            let p = slot.as_ref().expect("filled just above");
            dot::execute_prepared(p, d, hw, sram, caches.patches)
        }
    }
}

/// Executes `instr` (not STOP) completely. `caches`: where dot products keep their
/// gathered input patches and converted weights for the next instructions (see
/// [`patch_cache`], [`weight_cache`]; the caller reports every instruction's SRAM
/// writes to them).
pub fn execute(
    instr: &Instr,
    hw: &HwConfig,
    dram: &mut Dram,
    sram: &mut Memory,
    prep: Prep<'_>,
    caches: Caches<'_>,
) -> Result<ExecStats, ExecError> {
    match instr {
        Instr::DmaRead(d) => Ok(ExecStats {
            dma_bytes: dma::execute(d, dma::Dir::Read, dram, sram)?,
            ..ExecStats::default()
        }),
        Instr::DmaWrite(d) => Ok(ExecStats {
            dma_bytes: dma::execute(d, dma::Dir::Write, dram, sram)?,
            ..ExecStats::default()
        }),
        Instr::Conv(d) => dot_instr(d, DotKind::Conv, hw, sram, prep, caches),
        Instr::Deconv(d) => dot_instr(d, DotKind::Deconv, hw, sram, prep, caches),
        Instr::InnerProduct(d) => dot_instr(d, DotKind::InnerProduct, hw, sram, prep, caches),
        Instr::Scale(s) => simd_ops::execute_scale(s, hw, sram),
        Instr::Eltwise(e) => simd_ops::execute_eltwise(e, hw, sram),
        Instr::Stop(_) => Ok(ExecStats::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_wrap_equals_value_wrap() {
        let exact = [
            0i64,
            (1 << 29) - 1,
            1 << 29,
            -(1 << 29),
            -(1 << 29) - 1,
            5 << 31,
            -7,
        ];
        let bias = [0i64, 0, 0, 0, 0, 3, 1 << 30];
        let mut out = [0i32; 7];
        assert!(wrap_row(&exact, &bias, 30, &mut out));
        for i in 0..7 {
            assert_eq!(out[i], wrap(exact[i] + bias[i], 30).0, "{i}");
        }
        assert!(!wrap_row(&exact[..2], &bias[..2], 30, &mut out[..2]));
    }

    #[test]
    fn narrow_row_wrap_equals_value_wrap() {
        // Sums and biases at the i32 and accumulator boundaries, every width.
        let edges = [
            0i32,
            1,
            -1,
            (1 << 29) - 1,
            1 << 29,
            -(1 << 29),
            -(1 << 29) - 1,
            (1 << 15) - 1,
            1 << 15,
            -(1 << 15) - 1,
            i32::MAX,
            i32::MIN,
            i32::MAX - 2,
            i32::MIN + 3,
        ];
        let n = edges.len();
        for acc_bits in [16, 24, 30, 31, 32] {
            for shift in 0..n {
                let dots: Vec<i32> = edges.to_vec();
                let bias: Vec<i32> = (0..n).map(|i| edges[(i + shift) % n]).collect();
                // A biased patch's column sums: dots - unbias is the exact value.
                let unbias: Vec<i32> = (0..n).map(|i| edges[(i * 5 + shift) % n] >> 2).collect();
                for ub in [None, Some(&unbias[..])] {
                    let mut out = vec![0i32; n];
                    let any = wrap_dots_row(&dots, ub, &bias, acc_bits, &mut out);
                    let mut want_any = false;
                    for i in 0..n {
                        let x = dots[i].wrapping_sub(ub.map_or(0, |u| u[i]));
                        let (w, wrapped) = wrap(i64::from(x) + i64::from(bias[i]), acc_bits);
                        assert_eq!(out[i], w, "acc_bits {acc_bits}, {x} + {}", bias[i]);
                        want_any |= wrapped;
                    }
                    assert_eq!(any, want_any, "acc_bits {acc_bits}, shift {shift}");
                }
            }
        }
        let mut out = [0i32; 2];
        assert!(!wrap_dots_row(
            &[5, -(1 << 29)],
            None,
            &[-3, 0],
            30,
            &mut out
        ));
        assert_eq!(out, [2, -(1 << 29)]);
    }
}
