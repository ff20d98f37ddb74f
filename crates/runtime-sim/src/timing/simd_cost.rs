//! Cost of SCALE and ELTWISE: pure SIMD work. They feed no activation packets
//! (docs/ISA.md 4.1): the tile streams through the SIMD unit in memory order,
//! `rows` (96) elements per row, one row per `max(1, simd_len)` cycles. A row reads
//! at most `rows` bytes per operand (ELTWISE's two operands on the two read ports in
//! parallel; a B broadcast over the pixels counts as no operand) and writes `rows`
//! bytes; a port narrower than that slows the row.

use super::dot_cost::simd_row_cycles;
use super::params::TimingParams;
use nnac_isa::{Eltwise, Scale};

/// Cycles of a SCALE or ELTWISE instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimdCost {
    /// Rows processed.
    pub rows: u64,
    /// Cycles of SIMD program execution (`rows x max(1, simd_len)`).
    pub work: u64,
    /// Extra cycles the read ports or the write path need beyond that.
    pub port_stall: u64,
}

impl SimdCost {
    pub fn cycles(&self) -> u64 {
        self.work + self.port_stall
    }
}

/// Cycles per row the ports need to read `operands` operands of `bytes` each.
fn read_cycles(prm: &TimingParams, operands: u64, bytes: u64) -> u64 {
    let wide = prm.load_window;
    match (operands, prm.separate_weight_port) {
        (1, _) => bytes.div_ceil(wide),
        (_, true) => bytes.div_ceil(wide).max(bytes.div_ceil(prm.weight_port)),
        _ => (operands * bytes).div_ceil(wide),
    }
}

fn cost(elements: u64, operands: u64, simd_len: usize, prm: &TimingParams) -> SimdCost {
    let row = simd_row_cycles(simd_len);
    let rows = elements.div_ceil(prm.rows);
    let per_row = row
        .max(read_cycles(prm, operands, prm.rows))
        .max(prm.write_cycles(prm.rows));
    SimdCost {
        rows,
        work: rows * row,
        port_stall: rows * (per_row - row),
    }
}

pub fn scale_cost(s: &Scale, prm: &TimingParams) -> SimdCost {
    let elements = u64::from(s.pix_count) * u64::from(s.c_count);
    cost(elements, 1, s.simd.len(), prm)
}

pub fn eltwise_cost(e: &Eltwise, prm: &TimingParams) -> SimdCost {
    let elements = u64::from(e.pix_count) * u64::from(e.c_count);
    // A B broadcast over the pixels (row and pixel pitch 0) is one byte per row of a
    // channel's pixels, held with the row: only A streams through the read ports.
    let broadcast = e.b_row_pitch == 0 && e.b_pix_pitch == 0 && e.h * e.w > 1;
    cost(elements, if broadcast { 1 } else { 2 }, e.simd.len(), prm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::{HwConfig, SimdInstr};

    fn scale(c: u32, pix: u32, simd_len: usize) -> Scale {
        Scale {
            h: 1,
            w: pix,
            c,
            pix_count: pix,
            c_count: c,
            simd: vec![SimdInstr::from_mnemonic("MOV").unwrap(); simd_len],
            ..Scale::default()
        }
    }

    #[test]
    fn one_row_of_96_elements_per_cycle() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // 96 pixels x 64 channels = 64 rows.
        let c = scale_cost(&scale(64, 96, 1), &prm);
        assert_eq!(
            c,
            SimdCost {
                rows: 64,
                work: 64,
                port_stall: 0
            }
        );
        // 10 pixels x 10 channels = 100 elements = 2 rows.
        assert_eq!(scale_cost(&scale(10, 10, 0), &prm).rows, 2);
    }

    #[test]
    fn longer_programs_take_proportionally_longer() {
        let prm = TimingParams::new(&HwConfig::fsd());
        let c = scale_cost(&scale(16, 96, 5), &prm);
        assert_eq!((c.rows, c.work, c.port_stall), (16, 80, 0));
    }

    #[test]
    fn eltwise_reads_its_operands_on_both_ports() {
        let e = Eltwise {
            pix_count: 96,
            c_count: 8,
            simd: vec![SimdInstr::from_mnemonic("MOV").unwrap()],
            ..Eltwise::default()
        };
        let prm = TimingParams::new(&HwConfig::fsd());
        assert_eq!(
            eltwise_cost(&e, &prm),
            SimdCost {
                rows: 8,
                work: 8,
                port_stall: 0
            }
        );
        // One 128-byte port: 2 x 96 bytes per row take 2 cycles.
        let one = TimingParams::new(&HwConfig {
            sram_read_ports: vec![128],
            ..HwConfig::fsd()
        });
        assert_eq!(
            eltwise_cost(&e, &one),
            SimdCost {
                rows: 8,
                work: 8,
                port_stall: 8
            }
        );
        // A 64-byte write path: 2 cycles per row.
        let narrow = TimingParams::new(&HwConfig {
            sram_write_port: 64,
            ..HwConfig::fsd()
        });
        assert_eq!(eltwise_cost(&e, &narrow).port_stall, 8);
    }
}
