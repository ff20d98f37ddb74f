//! What one instruction computes and reads, for the roofline: operations and the
//! bytes it reads from SRAM through the read ports.
//!
//! - A dot product (CONV, DECONV, INNER_PRODUCT) does `2 x MACs` operations (a multiply
//!   and an add each; padded positions included, as the array computes them). Each
//!   pass of the MAC array reads, per term, one activation byte per pixel of its
//!   packet and one weight byte per output channel: `pixels x terms x channel passes`
//!   activation bytes and `pixel groups x terms x channels` weight bytes.
//! - SCALE and ELTWISE do one operation per element per SIMD instruction (at least
//!   one) and read each streamed operand once (an ELTWISE B broadcast over the pixels
//!   streams nothing, `timing::simd_cost::streams_b`).
//! - DMA and STOP compute nothing and read no SRAM for the MAC array or SIMD unit.

use nnac_isa::{Instr, PoolKind};
use nnac_runtime_sim::timing::cost::InstrCost;
use nnac_runtime_sim::timing::simd_cost::streams_b;
use nnac_runtime_sim::timing::TimingParams;

/// Operations and SRAM bytes read of one instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    pub ops: u64,
    pub sram_read: u64,
}

/// The compute an instruction does, as the roofline marks it. A layer's kind is the
/// least of its instructions' (pooled before dot product before SIMD only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// MAC-array work with the pooling unit fused.
    Pooled,
    /// MAC-array work without fused pooling.
    Dot,
    /// SCALE / ELTWISE only: the SIMD unit.
    Simd,
}

impl Kind {
    /// The name used in legends, titles and `data-kind`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Dot => "dot product",
            Kind::Pooled => "dot product + pooling",
            Kind::Simd => "SIMD only",
        }
    }
}

/// The kind of a compute instruction (`None` for DMA and STOP).
pub fn kind(instr: &Instr) -> Option<Kind> {
    match instr {
        Instr::Conv(d) | Instr::Deconv(d) | Instr::InnerProduct(d) => {
            Some(if d.pool == PoolKind::None {
                Kind::Dot
            } else {
                Kind::Pooled
            })
        }
        Instr::Scale(_) | Instr::Eltwise(_) => Some(Kind::Simd),
        _ => None,
    }
}

/// The work of `instr`, whose timing-model cost is `cost` on parameters `prm`.
pub fn work(instr: &Instr, cost: &InstrCost, prm: &TimingParams) -> Work {
    let u = u64::from;
    match (instr, cost) {
        (Instr::Conv(_) | Instr::Deconv(_) | Instr::InnerProduct(_), InstrCost::Dot(c)) => {
            let pixels = c.pix.1 - c.pix.0;
            let channels = c.chans.1 - c.chans.0;
            let terms = c.shape.terms;
            let groups = pixels.div_ceil(prm.rows).max(1);
            let chan_passes = c.passes.count() / groups;
            Work {
                ops: 2 * c.macs,
                sram_read: pixels * terms * chan_passes + groups * terms * channels,
            }
        }
        (Instr::Scale(s), _) => {
            let elements = u(s.pix_count) * u(s.c_count);
            Work {
                ops: elements * (s.simd.len() as u64).max(1),
                sram_read: elements,
            }
        }
        (Instr::Eltwise(e), _) => {
            let elements = u(e.pix_count) * u(e.c_count);
            Work {
                ops: elements * (e.simd.len() as u64).max(1),
                sram_read: elements * if streams_b(e) { 2 } else { 1 },
            }
        }
        _ => Work::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::{DotProduct, HwConfig};
    use nnac_runtime_sim::timing::cost::instr_cost;

    #[test]
    fn a_1x1_conv_reads_each_activation_once_per_channel_pass() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // 1x1 conv, 192 pixels, 64 -> 200 channels: 2 pixel groups, 3 channel passes.
        let d = DotProduct {
            in_h: 1,
            in_w: 192,
            in_c: 64,
            out_h: 1,
            out_w: 192,
            out_c: 200,
            in_pix_pitch: 1,
            in_row_pitch: 192,
            in_chan_pitch: 192,
            out_pix_pitch: 1,
            out_row_pitch: 192,
            out_chan_pitch: 192,
            pix_count: 192,
            oc_count: 200,
            kernel_h: 1,
            kernel_w: 1,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            groups: 1,
            ..DotProduct::default()
        };
        let i = Instr::Conv(d);
        let w = work(&i, &instr_cost(&i, &prm), &prm);
        assert_eq!(w.ops, 2 * 192 * 200 * 64);
        assert_eq!(w.sram_read, 192 * 64 * 3 + 2 * 64 * 200);
        assert_eq!(kind(&i), Some(Kind::Dot));
    }
}
