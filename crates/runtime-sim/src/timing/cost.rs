//! The cost of every instruction kind, computed from the instruction alone.

use super::dot_cost::{dot_cost, DotCost};
use super::params::TimingParams;
use super::simd_cost::{eltwise_cost, scale_cost, SimdCost};
use nnac_isa::checks::DotKind;
use nnac_isa::{Dma, Instr};

/// A DMA transfer: the DRAM latency, then its bytes at the DRAM bandwidth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DmaCost {
    pub cycles: u64,
    pub dram_read: u64,
    pub dram_written: u64,
}

/// What one instruction costs, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstrCost {
    Dma(DmaCost),
    Dot(Box<DotCost>),
    Simd(SimdCost),
    Stop,
}

impl InstrCost {
    pub fn macs(&self) -> u64 {
        match self {
            InstrCost::Dot(d) => d.macs,
            _ => 0,
        }
    }
    /// Activation slices that break the 256-byte rule.
    pub fn broken_slices(&self) -> u64 {
        match self {
            InstrCost::Dot(d) => d.broken_slices,
            _ => 0,
        }
    }
}

fn dma_cost(d: &Dma, read: bool, prm: &TimingParams) -> DmaCost {
    let bytes = u64::from(d.rows) * u64::from(d.row_len);
    DmaCost {
        cycles: prm.dma_latency + prm.dram_cycles(bytes),
        dram_read: if read { bytes } else { 0 },
        dram_written: if read { 0 } else { bytes },
    }
}

/// The cost of `instr` (which passed `checks::check_instr`).
pub fn instr_cost(instr: &Instr, prm: &TimingParams) -> InstrCost {
    match instr {
        Instr::DmaRead(d) => InstrCost::Dma(dma_cost(d, true, prm)),
        Instr::DmaWrite(d) => InstrCost::Dma(dma_cost(d, false, prm)),
        Instr::Conv(d) => InstrCost::Dot(Box::new(dot_cost(d, DotKind::Conv, prm))),
        Instr::Deconv(d) => InstrCost::Dot(Box::new(dot_cost(d, DotKind::Deconv, prm))),
        Instr::InnerProduct(d) => InstrCost::Dot(Box::new(dot_cost(d, DotKind::InnerProduct, prm))),
        Instr::Scale(s) => InstrCost::Simd(scale_cost(s, prm)),
        Instr::Eltwise(e) => InstrCost::Simd(eltwise_cost(e, prm)),
        Instr::Stop(_) => InstrCost::Stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::HwConfig;

    #[test]
    fn dma_pays_latency_then_bandwidth() {
        let prm = TimingParams::new(&HwConfig::fsd());
        let d = Dma {
            rows: 10,
            row_len: 1700,
            ..Dma::default()
        };
        // 17,000 bytes at 17 bytes/cycle = 1000 cycles, plus 200 cycles of latency.
        let c = instr_cost(&Instr::DmaRead(d.clone()), &prm);
        assert_eq!(
            c,
            InstrCost::Dma(DmaCost {
                cycles: 1200,
                dram_read: 17_000,
                dram_written: 0
            })
        );
        let c = instr_cost(&Instr::DmaWrite(d), &prm);
        assert!(matches!(
            c,
            InstrCost::Dma(DmaCost {
                dram_written: 17_000,
                ..
            })
        ));
    }

    #[test]
    fn dram_share_changes_dma_time() {
        let hw = HwConfig {
            dram_share_percent: 100,
            ..HwConfig::fsd()
        };
        let prm = TimingParams::new(&hw);
        let d = Dma {
            rows: 1,
            row_len: 34_000,
            ..Dma::default()
        };
        // 68 GB/s at 2 GHz = 34 bytes/cycle.
        assert!(matches!(
            instr_cost(&Instr::DmaRead(d), &prm),
            InstrCost::Dma(DmaCost { cycles: 1200, .. })
        ));
    }
}
