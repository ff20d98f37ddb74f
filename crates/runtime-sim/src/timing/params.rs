//! The machine parameters the timing model uses, all derived from [`HwConfig`]
//! (docs/PERFORMANCE.md, "Model").

use nnac_isa::HwConfig;

/// Elements per slice of an activation packet (the address sequencer's unit).
pub const SLICE_ELEMS: u64 = 8;

/// DRAM access latency paid once by every DMA instruction, in nanoseconds (LPDDR4
/// row access plus the NNA's path to the memory controller; converted to cycles at
/// the configured clock).
pub const DMA_LATENCY_NS: u64 = 100;

/// Timing parameters of one NNA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimingParams {
    /// MAC array rows (output pixels per slice, SIMD lanes).
    pub rows: u64,
    /// MAC array columns (output channels per slice).
    pub cols: u64,
    /// Bytes one activation load may span: the widest read port.
    pub load_window: u64,
    /// Activation loads the wide read port serves per cycle: one packet's worth
    /// (`ceil(rows / 8)` slices), so a packet obeying the 256-byte rule costs one cycle.
    pub loads_per_cycle: u64,
    /// Width of the port that streams weight vectors (the second read port; the only
    /// port when there is one).
    pub weight_port: u64,
    /// Whether weights have a port of their own (at least two read ports).
    pub separate_weight_port: bool,
    /// Width of the SRAM write path, bytes per cycle.
    pub write_port: u64,
    /// Accumulator rows the SIMD unit takes per cycle of its program (`HwConfig`'s
    /// `simd_rows_per_cycle`: 1 on the FSD chip).
    pub simd_rows: u64,
    /// Clock in Hz.
    pub clock_hz: u64,
    /// DRAM bandwidth of this NNA, bytes per second.
    pub dram_bytes_per_s: u64,
    /// Latency every DMA instruction pays, in cycles.
    pub dma_latency: u64,
    /// What-if: time every activation packet as if it obeyed the 256-byte rule (at
    /// most one packet's worth of loads), e.g. to see a program with the
    /// channel-blocked layout of docs/ISA.md 4.1. Off by default.
    pub assume_packet_rule: bool,
}

impl TimingParams {
    pub fn new(hw: &HwConfig) -> TimingParams {
        let ports: Vec<u64> = hw.sram_read_ports.iter().map(|&p| u64::from(p)).collect();
        let widest = ports.iter().copied().max().unwrap_or(1).max(1);
        let second = sorted_desc(&ports).get(1).copied();
        let rows = u64::from(hw.mac_rows);
        TimingParams {
            rows,
            cols: u64::from(hw.mac_cols),
            load_window: widest,
            loads_per_cycle: rows.div_ceil(SLICE_ELEMS).max(1),
            weight_port: second.unwrap_or(widest).max(1),
            separate_weight_port: second.is_some(),
            write_port: u64::from(hw.sram_write_port).max(1),
            simd_rows: u64::from(hw.simd_rows_per_cycle).max(1),
            clock_hz: hw.clock_hz.max(1),
            dram_bytes_per_s: hw.dram_bytes_per_s().max(1),
            dma_latency: (DMA_LATENCY_NS * hw.clock_hz).div_ceil(1_000_000_000),
            assume_packet_rule: false,
        }
    }

    /// Cycles to move `bytes` at the DRAM bandwidth (rounded up).
    pub fn dram_cycles(&self, bytes: u64) -> u64 {
        let c = (u128::from(bytes) * u128::from(self.clock_hz))
            .div_ceil(u128::from(self.dram_bytes_per_s));
        u64::try_from(c).unwrap_or(u64::MAX)
    }

    /// Cycles to unload `rows` accumulator rows of `pixels` values each through a SIMD
    /// program of `row` cycles per row: `simd_rows` rows at a time, each group taking
    /// its program's cycles or the write path's for its bytes, whichever is more.
    pub fn unload_cycles(&self, rows: u64, pixels: u64, row: u64) -> u64 {
        let k = self.simd_rows.min(rows).max(1);
        rows.div_ceil(k) * row.max(self.write_cycles(pixels * k))
    }

    /// Cycles to write `bytes` through the write path (rounded up, at least 1).
    pub fn write_cycles(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.write_port).max(1)
    }

    /// Cycles the wide port needs for `loads` activation loads (at least 1: every
    /// term takes a cycle even when all its elements are padding).
    pub fn load_cycles(&self, loads: u64) -> u64 {
        loads.div_ceil(self.loads_per_cycle).max(1)
    }

    /// Cycles one weight vector (`cols` bytes) takes on its port.
    pub fn weight_cycles(&self) -> u64 {
        self.cols.div_ceil(self.weight_port).max(1)
    }

    /// Cycles of one dot-product term whose activation packet needs `loads` loads.
    pub fn term_cycles(&self, loads: u64) -> u64 {
        let loads = if self.assume_packet_rule {
            loads.min(self.loads_per_cycle)
        } else {
            loads
        };
        if self.separate_weight_port {
            self.load_cycles(loads).max(self.weight_cycles())
        } else {
            loads.div_ceil(self.loads_per_cycle) + self.weight_cycles()
        }
    }

    /// Seconds of `cycles` at the configured clock.
    pub fn seconds(&self, cycles: u64) -> f64 {
        cycles as f64 / self.clock_hz as f64
    }
}

fn sorted_desc(v: &[u64]) -> Vec<u64> {
    let mut s = v.to_vec();
    s.sort_unstable_by(|a, b| b.cmp(a));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsd_parameters() {
        let p = TimingParams::new(&HwConfig::fsd());
        assert_eq!((p.rows, p.cols), (96, 96));
        assert_eq!(p.load_window, 256);
        assert_eq!(p.loads_per_cycle, 12);
        assert_eq!(p.weight_port, 128);
        assert!(p.separate_weight_port);
        // 100 ns at 2 GHz.
        assert_eq!(p.dma_latency, 200);
        // 34 GB/s at 2 GHz = 17 bytes per cycle.
        assert_eq!(p.dram_cycles(17), 1);
        assert_eq!(p.dram_cycles(18), 2);
        assert_eq!(p.dram_cycles(17_000), 1000);
        assert_eq!(p.term_cycles(1), 1);
        assert_eq!(p.term_cycles(12), 1);
        assert_eq!(p.term_cycles(13), 2);
        assert_eq!(p.term_cycles(0), 1);
        assert_eq!(p.write_cycles(96), 1);
        assert_eq!(p.write_cycles(129), 2);
        let ideal = TimingParams {
            assume_packet_rule: true,
            ..p
        };
        assert_eq!(ideal.term_cycles(48), 1);
    }

    #[test]
    fn one_read_port_shares_weights_and_activations() {
        let hw = HwConfig {
            sram_read_ports: vec![64],
            ..HwConfig::fsd()
        };
        let p = TimingParams::new(&hw);
        assert!(!p.separate_weight_port);
        assert_eq!(p.load_window, 64);
        // 96 weight bytes over a 64-byte port: 2 cycles, plus one cycle of loads.
        assert_eq!(p.term_cycles(12), 3);
    }

    #[test]
    fn unloads_take_simd_rows_per_cycle_rows_at_a_time() {
        let fsd = TimingParams::new(&HwConfig::fsd());
        // 96 rows of 96 pixels through a 9-cycle SiLU: 864 cycles, one row at a time.
        assert_eq!(fsd.unload_cycles(96, 96, 9), 864);
        // A one-instruction program is held by the write path when the rows are wide.
        assert_eq!(fsd.unload_cycles(3, 96, 1), 3);
        let two = TimingParams::new(&HwConfig {
            simd_rows_per_cycle: 2,
            ..HwConfig::fsd()
        });
        assert_eq!(two.unload_cycles(96, 96, 9), 432);
        assert_eq!(two.unload_cycles(3, 96, 9), 18);
        // Two rows of 96 bytes need two cycles of the 128-byte write path.
        assert_eq!(two.unload_cycles(96, 96, 1), 96);
        assert_eq!(two.unload_cycles(1, 96, 1), 1);
    }
}
