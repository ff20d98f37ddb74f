//! The SRAM bytes each instruction reads and writes, computed once per program (and
//! checked to lie inside SRAM), for run-time hazard detection.

use crate::exec::dma::{self, Dir};
use crate::exec::dot_geom::{DotGeom, DotKind};
use crate::exec::simd_ops::{eltwise_tile, scale_tile};
use crate::exec::tensor::Hwc;
use crate::ranges::RangeSet;
use nnac_isa::simd::exec::uses_chan_params;
use nnac_isa::{ChanParams, DotProduct, HwConfig, Instr};

/// SRAM reads and writes of one instruction.
#[derive(Debug, Clone, Default)]
pub struct Footprint {
    pub reads: RangeSet,
    pub writes: RangeSet,
}

fn contiguous(addr: u32, len: u64) -> (u64, u64) {
    (u64::from(addr), u64::from(addr) + len)
}

fn dot_footprint(d: &DotProduct, kind: DotKind, hw: &HwConfig) -> Result<Footprint, String> {
    let g = DotGeom::new(d, kind, hw)?;
    let mut reads = Vec::new();
    let (y0, y1) = g.in_rows();
    if y0 < y1 {
        let (c0, c1) = g.in_channels();
        reads.extend(g.input.row_ranges(y0, y1, g.in_w, c0, c1 - c0));
    }
    reads.push(contiguous(d.w_addr, g.weight_bytes()));
    if d.bias_en {
        reads.push(contiguous(d.bias_addr, 4 * g.oc_count));
    }
    if uses_chan_params(&d.simd) {
        reads.push(contiguous(
            d.chan_addr,
            ChanParams::SIZE as u64 * g.oc_count,
        ));
    }
    let writes = match &g.pool {
        None => g
            .output
            .pixel_ranges(g.out_w, g.pix.start, g.pix.count, g.oc_start, g.oc_count),
        Some(p) => p
            .windows_in(&g.pix)
            .iter()
            .map(|w| {
                let a = g.output.at(w.py, w.px, g.oc_start);
                (a, a + g.oc_count)
            })
            .collect(),
    };
    Ok(Footprint {
        reads: RangeSet::from_ranges(reads),
        writes: RangeSet::from_ranges(writes),
    })
}

fn chan_reads(addr: u32, n: u64, simd: &[nnac_isa::SimdInstr]) -> Vec<(u64, u64)> {
    if uses_chan_params(simd) {
        vec![contiguous(addr, ChanParams::SIZE as u64 * n)]
    } else {
        Vec::new()
    }
}

/// The footprint of `instr`, or an error if the instruction is malformed.
pub fn footprint(instr: &Instr, hw: &HwConfig) -> Result<Footprint, String> {
    let fp = match instr {
        Instr::DmaRead(d) => {
            dma::check(d, Dir::Read)?;
            Footprint {
                reads: RangeSet::default(),
                writes: RangeSet::from_ranges(dma::sram_rows(d)),
            }
        }
        Instr::DmaWrite(d) => {
            dma::check(d, Dir::Write)?;
            Footprint {
                reads: RangeSet::from_ranges(dma::sram_rows(d)),
                writes: RangeSet::default(),
            }
        }
        Instr::Conv(d) => dot_footprint(d, DotKind::Conv, hw)?,
        Instr::Deconv(d) => dot_footprint(d, DotKind::Deconv, hw)?,
        Instr::InnerProduct(d) => dot_footprint(d, DotKind::InnerProduct, hw)?,
        Instr::Scale(s) => {
            let t = scale_tile(s)?;
            let mut reads = t.ranges(&Hwc::new(s.in_addr, s.in_row_pitch, s.in_pix_pitch));
            reads.extend(chan_reads(s.chan_addr, t.cn, &s.simd));
            Footprint {
                reads: RangeSet::from_ranges(reads),
                writes: RangeSet::from_ranges(t.ranges(&Hwc::new(
                    s.out_addr,
                    s.out_row_pitch,
                    s.out_pix_pitch,
                ))),
            }
        }
        Instr::Eltwise(e) => {
            let t = eltwise_tile(e)?;
            let mut reads = t.ranges(&Hwc::new(e.a_addr, e.a_row_pitch, e.a_pix_pitch));
            reads.extend(t.ranges(&Hwc::new(e.b_addr, e.b_row_pitch, e.b_pix_pitch)));
            reads.extend(chan_reads(e.chan_addr, t.cn, &e.simd));
            Footprint {
                reads: RangeSet::from_ranges(reads),
                writes: RangeSet::from_ranges(t.ranges(&Hwc::new(
                    e.out_addr,
                    e.out_row_pitch,
                    e.out_pix_pitch,
                ))),
            }
        }
        Instr::Stop(_) => Footprint::default(),
    };
    for (what, set) in [("reads", &fp.reads), ("writes", &fp.writes)] {
        if let Some((lo, hi)) = set.bounds() {
            if hi > hw.sram_bytes {
                return Err(format!(
                    "{what} SRAM up to {hi:#x} (from {lo:#x}) but SRAM is {:#x} bytes",
                    hw.sram_bytes
                ));
            }
        }
    }
    Ok(fp)
}
