//! Execution of single instructions against the machine's memories.

pub mod depthwise;
pub mod dma;
pub mod dot;
pub mod dot_geom;
pub mod gather;
pub mod gemm;
pub mod pool;
pub mod postproc;
pub mod quad;
pub mod simd_ops;
pub mod tensor;
pub mod weights;

use crate::error::ExecError;
use crate::memory::{Dram, Memory};
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
) -> Result<ExecStats, ExecError> {
    match prep {
        Prep::Fresh => dot::execute(d, kind, hw, sram),
        Prep::Keep(slot) => {
            if slot.is_none() {
                *slot = Some(dot::DotPrep::new(d, kind, hw, sram)?);
            }
            let p = slot.as_ref().expect("filled just above");
            dot::execute_prepared(p, d, hw, sram)
        }
    }
}

/// Executes `instr` (not STOP) completely.
pub fn execute(
    instr: &Instr,
    hw: &HwConfig,
    dram: &mut Dram,
    sram: &mut Memory,
    prep: Prep<'_>,
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
        Instr::Conv(d) => dot_instr(d, DotKind::Conv, hw, sram, prep),
        Instr::Deconv(d) => dot_instr(d, DotKind::Deconv, hw, sram, prep),
        Instr::InnerProduct(d) => dot_instr(d, DotKind::InnerProduct, hw, sram, prep),
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
}
