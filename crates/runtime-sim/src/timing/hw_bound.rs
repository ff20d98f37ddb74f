//! The hardware bound: the fewest cycles any program of this ISA could take for a
//! layer's work on this configuration (docs/PERFORMANCE.md 3.1).
//!
//! The shape bound (`shape.rs`) counts only the 96x96 slicing of a layer's output.
//! The hardware bound counts every unit the work must pass through, each at the rate
//! the ISA and `HwConfig` allow:
//!
//! - **MAC array**: a pass holds at most `rows` output pixels and the channels of one
//!   conv group within `cols` columns (the columns share one activation vector), and
//!   takes at least one cycle per term. A shape of `P` pixels, `C` channels in conv
//!   groups of `cg` channels and `T` terms needs at least
//!   `ceil(P / rows) * ceil(C / min(cols, cg)) * T` cycles: a depthwise layer one pass
//!   per channel.
//! - **Unload path**: every output value leaves the accumulators as part of a row of at
//!   most `rows` pixels of one channel, one row per cycle at best, and one cycle per
//!   instruction of its SIMD program (the epilogue computes the layer's activation;
//!   the fewest instructions the program carries); the write path takes at most
//!   `sram_write_port` bytes per cycle: `max(ceil(P / rows) * C * max(1, simd_len),
//!   ceil(P * C / write_port))` cycles of the SIMD unit.
//! - **SIMD-only work** (SCALE, ELTWISE): `rows x max(1, simd_len)` cycles of the SIMD
//!   unit, during which the compute queue, in order, issues nothing else.
//! - **DRAM**: the bytes of the network's inputs and outputs the layer moves (nothing
//!   else has to cross DRAM when the weights are resident) at the DRAM bandwidth.
//!
//! A layer alone takes at least its busiest unit's work. A frame takes at least the
//! busiest unit's work summed over all layers (units run concurrently, so one layer's
//! unloads may hide under another's passes): the program's hardware bound. Only the
//! frame's bound holds for every program; a layer whose unloads overlap its
//! neighbours' passes may be charged fewer cycles than its own bound.

use super::cost::{DmaCost, InstrCost};
use super::dot_cost::DotShape;
use super::params::TimingParams;
use nnac_isa::{Instr, IoDesc};

/// The least work one layer (or a whole frame) puts on each unit, in cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitWork {
    /// MAC-array cycles: one per term of every pass the slicing needs.
    pub mac: u64,
    /// SIMD cycles unloading the dot products' accumulators.
    pub unload: u64,
    /// SIMD cycles of SCALE / ELTWISE programs (the compute queue waits for them).
    pub simd_only: u64,
    /// DMA cycles of the network's inputs and outputs.
    pub dram: u64,
}

impl UnitWork {
    /// The fewest cycles: the busiest of the compute queue (passes and SIMD-only
    /// work), the SIMD unit (unloads and SIMD-only work) and the DMA queue.
    pub fn cycles(&self) -> u64 {
        (self.mac + self.simd_only)
            .max(self.unload + self.simd_only)
            .max(self.dram)
    }

    pub fn add(&mut self, o: &UnitWork) {
        self.mac += o.mac;
        self.unload += o.unload;
        self.simd_only += o.simd_only;
        self.dram += o.dram;
    }

    /// The unit that sets [`UnitWork::cycles`]: `"MAC"`, `"SIMD"` or `"DMA"`.
    pub fn limit(&self) -> &'static str {
        let c = self.cycles();
        if self.mac + self.simd_only == c {
            "MAC"
        } else if self.unload + self.simd_only == c {
            "SIMD"
        } else {
            "DMA"
        }
    }
}

/// Fewest MAC-array passes for `pix` pixels and `chans` channels of `shape`.
fn min_passes(shape: &DotShape, pix: u64, chans: u64, prm: &TimingParams) -> u64 {
    let per_group = (shape.out_c / shape.groups.max(1)).max(1);
    pix.div_ceil(prm.rows) * chans.div_ceil(prm.cols.min(per_group).max(1))
}

/// The least MAC and unload work of `pix` x `chans` outputs of `shape` whose
/// instructions' SIMD programs are at least `simd_row` instructions long.
pub fn dot_work(
    shape: &DotShape,
    pix: u64,
    chans: u64,
    simd_row: u64,
    prm: &TimingParams,
) -> UnitWork {
    let rows = pix.div_ceil(prm.rows) * chans;
    UnitWork {
        mac: min_passes(shape, pix, chans, prm) * shape.terms,
        unload: (rows * simd_row.max(1)).max((pix * chans).div_ceil(prm.write_port)),
        ..UnitWork::default()
    }
}

/// DRAM ranges `[start, end)` of the network's inputs and outputs.
pub fn io_ranges(io: &[IoDesc]) -> Vec<(u64, u64)> {
    io.iter()
        .map(|d| {
            let bytes = crate::io::numel(d) * d.dtype.size();
            (d.dram_addr, d.dram_addr.saturating_add(bytes))
        })
        .collect()
}

/// The least DRAM work of one instruction: its bytes if it moves a network input or
/// output (its DRAM rows inside one of `io`), else none.
pub fn dma_work(ins: &Instr, cost: &InstrCost, io: &[(u64, u64)], prm: &TimingParams) -> u64 {
    let (
        Instr::DmaRead(d) | Instr::DmaWrite(d),
        InstrCost::Dma(DmaCost {
            dram_read,
            dram_written,
            ..
        }),
    ) = (ins, cost)
    else {
        return 0;
    };
    let rows = u64::from(d.rows);
    let end = rows
        .saturating_sub(1)
        .saturating_mul(d.dram_stride)
        .saturating_add(d.dram_addr)
        .saturating_add(u64::from(d.row_len));
    let inside = io.iter().any(|&(lo, hi)| d.dram_addr >= lo && end <= hi);
    if inside && rows > 0 {
        prm.dram_cycles(dram_read + dram_written)
    } else {
        0
    }
}

/// The fraction of the MAC array `macs` could use in `cycles`: the hardware bound as
/// a utilization (`None` without MACs or cycles), at most 1.
pub fn as_utilization(macs: u64, cycles: u64, prm: &TimingParams) -> Option<f64> {
    (macs > 0 && cycles > 0)
        .then(|| (macs as f64 / (cycles as f64 * (prm.rows * prm.cols) as f64)).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::HwConfig;

    fn shape(out_c: u64, groups: u64, terms: u64) -> DotShape {
        DotShape {
            kind: 0,
            out_h: 112,
            out_w: 112,
            out_c,
            terms,
            groups,
        }
    }

    #[test]
    fn a_depthwise_layer_runs_one_pass_per_channel() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // 32 channels of 112 x 112, 3x3 depthwise: 131 pixel groups x 32 passes x 9.
        let w = dot_work(&shape(32, 32, 9), 112 * 112, 32, 1, &prm);
        assert_eq!(w.mac, 131 * 32 * 9);
        assert_eq!(w.unload, 131 * 32);
        assert_eq!(w.cycles(), w.mac);
        assert_eq!(w.limit(), "MAC");
    }

    #[test]
    fn a_pointwise_layer_with_few_terms_is_bound_by_its_unloads() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // 16 -> 96 channels 1x1: 16 terms per pass, 96 rows to unload.
        let w = dot_work(&shape(96, 1, 16), 112 * 112, 96, 1, &prm);
        assert_eq!(w.mac, 131 * 16);
        assert_eq!(w.unload, 131 * 96);
        assert_eq!(w.limit(), "SIMD");
        // A 9-instruction SiLU epilogue: nine cycles per row.
        assert_eq!(
            dot_work(&shape(96, 1, 16), 112 * 112, 96, 9, &prm).unload,
            131 * 96 * 9
        );
    }

    #[test]
    fn simd_only_work_occupies_both_queues() {
        let w = UnitWork {
            mac: 10,
            unload: 5,
            simd_only: 7,
            dram: 0,
        };
        assert_eq!(w.cycles(), 17);
        let d = UnitWork { dram: 30, ..w };
        assert_eq!((d.cycles(), d.limit()), (30, "DMA"));
    }
}
