//! The analytical cost model: a roofline per layer from its shape and the hardware
//! (docs/TUNE.md, "Analytical model"). It uses the timing model's own machine rules
//! (`TimingParams`: cycles per dot-product term for a packet's loads, weight-port
//! cycles, write-path cycles, DRAM cycles), so the two tiers share one definition of
//! the hardware; what it leaves out is the program: the schedule, the flags, the
//! SRAM placement (spills are estimated from sizes alone).
//!
//! Per dot-product layer, for every group of `rows` output pixels and every pass of
//! at most `cols` channels (one per conv group inside a column group, as the address
//! sequencer slices it): MAC cycles `terms x term_cycles(loads)` and unload cycles
//! `channels x max(simd_len, write_cycles(pixels))`, overlapped by the accumulator's
//! shift register (a pass costs the larger of the two). The layer's time is the
//! larger of that and its DRAM time (parameters streamed when they are not resident,
//! input and output spilled when the layer does not fit the SRAM).

use crate::space::Knobs;
use crate::workload::{LayerShape, Workload};
use nnac_isa::HwConfig;
use nnac_runtime_sim::timing::params::{TimingParams, SLICE_ELEMS};
use serde::{Deserialize, Serialize};

/// How a matrix-product layer is laid on the array (`mapping.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Orientation {
    /// Output pixels on the rows, output channels on the columns (the compiler's).
    PixelsOnRows,
    /// Output channels on the rows, pixels on the columns (as `gap.rs` runs a global
    /// pool: the other operand streams as weights).
    ChannelsOnRows,
}

/// The compute cost of one layer on one configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Compute {
    /// Cycles of the layer's passes (MAC and unload overlapped).
    pub cycles: u64,
    /// Cycles the MAC array is busy.
    pub mac_cycles: u64,
    /// Fewest MAC-array cycles the slicing allows (shape bound denominator).
    pub slice_cycles: u64,
    /// SRAM bytes read into the array (data + weight vectors) and written.
    pub sram_read: u64,
    pub sram_written: u64,
}

/// The estimate for one model on one design.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub cycles: u64,
    pub seconds: f64,
    pub macs: u64,
    pub mac_cycles: u64,
    pub slice_cycles: u64,
    pub sram_read: u64,
    pub sram_written: u64,
    pub dram_bytes: u64,
}

/// The hardware facts the model needs, derived once per design.
#[derive(Debug, Clone)]
pub struct Machine {
    pub prm: TimingParams,
    pub sram_bytes: u64,
}

impl Machine {
    pub fn new(hw: &HwConfig) -> Machine {
        Machine {
            prm: TimingParams::new(hw),
            sram_bytes: hw.sram_bytes,
        }
    }
}

/// Activation loads of a packet of `n` output pixels at one kernel tap: one per
/// slice of 8, one more for every slice that crosses an output row whose input rows
/// lie farther apart than the load window (the 256-byte rule, docs/ISA.md 4.1).
fn packet_loads(s: &LayerShape, m: &Machine, n: u64) -> u64 {
    let slices = n.div_ceil(SLICE_ELEMS);
    let row_jump =
        (s.stride_h * s.in_w + SLICE_ELEMS * s.stride_w).saturating_sub(s.out_w * s.stride_w);
    let within = (SLICE_ELEMS - 1) * s.stride_w;
    if within >= m.prm.load_window {
        return n;
    }
    let crossing = if s.out_w.is_multiple_of(SLICE_ELEMS) || row_jump < m.prm.load_window {
        0
    } else {
        n.div_ceil(s.out_w).min(slices)
    };
    slices + crossing
}

/// Passes of one pixel group: `(count, channels)` pairs over the column groups.
fn channel_passes(out_c: u64, groups: u64, cols: u64, mut each: impl FnMut(u64)) {
    let ocpg = (out_c / groups.max(1)).max(1);
    let mut q = 0;
    while q * cols < out_c {
        let (lo, hi) = (q * cols, ((q + 1) * cols).min(out_c));
        if ocpg >= cols && lo % ocpg + (hi - lo) <= ocpg {
            each(hi - lo);
        } else {
            let mut g = lo / ocpg;
            while g * ocpg < hi {
                each(((g + 1) * ocpg).min(hi) - (g * ocpg).max(lo));
                g += 1;
            }
        }
        q += 1;
    }
}

/// Compute cost of a dot-product layer laid `pix` pixels on the rows and `chans`
/// channels on the columns.
fn dot_compute(s: &LayerShape, m: &Machine, o: Orientation) -> Compute {
    let prm = &m.prm;
    let (pix, chans, groups) = match o {
        Orientation::PixelsOnRows => (s.pixels(), s.out_c, s.groups),
        Orientation::ChannelsOnRows => (s.out_c, s.pixels(), 1),
    };
    let mut c = Compute::default();
    let full = pix / prm.rows;
    let rem = pix % prm.rows;
    for (n, count) in [(prm.rows, full), (rem, 1)] {
        if n == 0 || count == 0 {
            continue;
        }
        let term = match o {
            Orientation::PixelsOnRows => prm.term_cycles(packet_loads(s, m, n)),
            // Channels-on-rows streams the weights as packets (contiguous) and the
            // activations as weight vectors.
            Orientation::ChannelsOnRows => prm.term_cycles(n.div_ceil(SLICE_ELEMS)),
        };
        let mac = s.terms * term;
        let (mut cyc, mut macc, mut passes, mut ch_sum) = (0, 0, 0, 0);
        let mut pass = |ch: u64, k: u64| {
            cyc += mac.max(prm.unload_cycles(ch, n, s.simd_len)) * k;
            macc += mac * k;
            passes += k;
            ch_sum += ch * k;
        };
        if groups <= 1 {
            // One pass per column group: the closed form of `channel_passes`.
            pass(prm.cols, chans / prm.cols);
            if chans % prm.cols > 0 {
                pass(chans % prm.cols, 1);
            }
        } else {
            channel_passes(chans, groups, prm.cols, |ch| pass(ch, 1));
        }
        c.cycles += cyc * count;
        c.mac_cycles += macc * count;
        c.sram_read += s.terms * (n * passes + ch_sum) * count;
        c.sram_written += n * ch_sum * count;
    }
    c.slice_cycles = pix.div_ceil(prm.rows) * chans.div_ceil(prm.cols) * s.terms;
    // The last pass's unload drains after the array is done.
    c.cycles += s.simd_len.max(1) * chans.min(prm.cols);
    c
}

/// Compute cost of a SIMD-only layer (SCALE, ELTWISE, copies): the elements in rows
/// of `rows` values, each row the longest of its SIMD program, its operands' reads
/// and its write (the timing model's `simd_cost` without the gather of strided
/// inputs).
fn simd_compute(s: &LayerShape, m: &Machine) -> Compute {
    let prm = &m.prm;
    let rows = (s.pixels() * s.out_c).div_ceil(prm.rows);
    let reads = if s.operands > 1 && prm.separate_weight_port {
        prm.rows
            .div_ceil(prm.load_window)
            .max(prm.rows.div_ceil(prm.weight_port))
    } else {
        (s.operands * prm.rows).div_ceil(prm.load_window)
    };
    let row = s.simd_len.max(1).max(reads).max(prm.write_cycles(prm.rows));
    Compute {
        cycles: rows * row,
        mac_cycles: 0,
        slice_cycles: 0,
        sram_read: s.in_bytes,
        sram_written: s.out_bytes,
    }
}

/// The compute cost of one layer in one orientation.
pub fn layer_compute(s: &LayerShape, m: &Machine, o: Orientation) -> Compute {
    if s.dot {
        dot_compute(s, m, o)
    } else {
        simd_compute(s, m)
    }
}

/// The orientation the mapping knob picks for a layer: channels on the rows when the
/// layer is a matrix product and that takes fewer array slots and cycles.
pub fn best_orientation(s: &LayerShape, m: &Machine, mapping: bool) -> (Orientation, Compute) {
    if s.is_channel_pool() {
        return (
            Orientation::ChannelsOnRows,
            layer_compute(s, m, Orientation::ChannelsOnRows),
        );
    }
    let normal = layer_compute(s, m, Orientation::PixelsOnRows);
    if !mapping || !s.is_matmul() {
        return (Orientation::PixelsOnRows, normal);
    }
    let turned = layer_compute(s, m, Orientation::ChannelsOnRows);
    // Turned only where it fills the array better (fewer MAC-array slots), not for
    // the few cycles the model's unload terms may differ by: on a square array the
    // slots are the same either way and the exact model found such turns slower.
    if turned.slice_cycles < normal.slice_cycles && turned.cycles < normal.cycles {
        (Orientation::ChannelsOnRows, turned)
    } else {
        (Orientation::PixelsOnRows, normal)
    }
}

/// Parameter bytes streamed from DRAM every frame: none when they all stay resident
/// with the largest layer's activations; else what does not fit beside them (all of
/// them with `resident_weights = off`).
pub fn streamed_param_bytes(w: &Workload, m: &Machine, knobs: Knobs) -> u64 {
    if !knobs.resident_weights {
        return w.param_bytes;
    }
    let room = m.sram_bytes.saturating_sub(w.peak_act_bytes);
    w.param_bytes.saturating_sub(room)
}

/// The estimate for one model: every distinct layer shape once, times its count.
pub fn estimate(w: &Workload, m: &Machine, knobs: Knobs) -> Estimate {
    let prm = &m.prm;
    let streamed = streamed_param_bytes(w, m, knobs);
    let mut e = Estimate::default();
    for u in &w.unique {
        let s = &u.shape;
        let (_, c) = best_orientation(s, m, knobs.mapping);
        let mut dram = 0;
        if w.param_bytes > 0 && streamed > 0 {
            dram += (u128::from(s.param_bytes) * u128::from(streamed) / u128::from(w.param_bytes))
                as u64;
        }
        if s.in_bytes + s.out_bytes + s.param_bytes > m.sram_bytes {
            dram += s.in_bytes + s.out_bytes;
        }
        let cycles = c.cycles.max(prm.dram_cycles(dram));
        e.cycles += cycles * u.count;
        e.mac_cycles += c.mac_cycles * u.count;
        e.slice_cycles += c.slice_cycles * u.count;
        e.sram_read += c.sram_read * u.count;
        e.sram_written += c.sram_written * u.count;
        e.dram_bytes += dram * u.count;
        e.macs += s.macs() * u.count;
    }
    // The frame's input and output cross DRAM once, each DMA paying its latency.
    e.cycles += prm.dram_cycles(w.io_bytes) + 2 * prm.dma_latency;
    e.dram_bytes += w.io_bytes;
    e.seconds = prm.seconds(e.cycles);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(p: u64, oc: u64, terms: u64) -> LayerShape {
        LayerShape {
            dot: true,
            out_h: 1,
            out_w: p,
            out_c: oc,
            groups: 1,
            terms,
            taps: 1,
            stride_w: 1,
            stride_h: 1,
            in_w: p,
            simd_len: 1,
            operands: 1,
            in_bytes: p * terms,
            out_bytes: p * oc,
            param_bytes: oc * terms,
            matmul: true,
        }
    }

    #[test]
    fn full_slices_run_at_one_term_per_cycle() {
        let m = Machine::new(&HwConfig::fsd());
        let c = layer_compute(&conv(192, 192, 256), &m, Orientation::PixelsOnRows);
        assert_eq!(c.mac_cycles, 4 * 256);
        assert_eq!(c.slice_cycles, 4 * 256);
        // Four passes of 256 cycles each, then the last 96-row unload.
        assert_eq!(c.cycles, 4 * 256 + 96);
    }

    #[test]
    fn wider_columns_pay_the_weight_port() {
        // 192 weight bytes per term over a 128-byte port: 2 cycles per term.
        let hw = HwConfig {
            mac_cols: 192,
            ..HwConfig::fsd()
        };
        let m = Machine::new(&hw);
        let c = layer_compute(&conv(96, 192, 100), &m, Orientation::PixelsOnRows);
        assert_eq!(c.mac_cycles, 200);
    }

    #[test]
    fn channels_on_rows_helps_few_pixels_on_tall_arrays() {
        let hw = HwConfig {
            mac_rows: 192,
            simd_width: 192,
            ..HwConfig::fsd()
        };
        let m = Machine::new(&hw);
        let s = conv(49, 2048, 512);
        let (o, c) = best_orientation(&s, &m, true);
        assert_eq!(o, Orientation::ChannelsOnRows);
        let n = layer_compute(&s, &m, Orientation::PixelsOnRows);
        assert!(c.cycles * 3 < n.cycles * 2, "{c:?} vs {n:?}");
        assert_eq!(best_orientation(&s, &m, false).0, Orientation::PixelsOnRows);
        // On the square array the slots are the same either way: no turn.
        let square = Machine::new(&HwConfig::fsd());
        assert_eq!(
            best_orientation(&s, &square, true).0,
            Orientation::PixelsOnRows
        );
    }

    #[test]
    fn depthwise_passes_one_per_group() {
        let m = Machine::new(&HwConfig::fsd());
        let mut n = 0;
        channel_passes(192, 192, 96, |c| {
            assert_eq!(c, 1);
            n += 1
        });
        assert_eq!(n, 192);
        let mut v = Vec::new();
        channel_passes(200, 1, 96, |c| v.push(c));
        assert_eq!(v, vec![96, 96, 8]);
        let _ = m;
    }
}
