//! The bytes each instruction reads and writes, from its fields alone.
//!
//! Exact for DMA (every row), for the output of every compute instruction (the tile's
//! pixels, or the pooled pixels it writes; one strided grid per channel when channels are not
//! adjacent bytes), for weights, bias, channel tables and the
//! inputs of SCALE and ELTWISE. The input of CONV / DECONV / INNER_PRODUCT is the
//! bounding box of the tile's kernel windows, clipped to the tensor, over the channels
//! of the groups the tile's output channels belong to (a superset of the bytes read).
//! Very large sets are coarsened ([`super::intervals::MAX_RANGES`]), also a superset.

use super::geometry::{dot_input, pooled_runs, tile_rects, weight_bytes, Rect};
use super::intervals::{Intervals, MAX_RANGES};
use crate::checks::DotKind;
use crate::hw::HwConfig;
use crate::instr::Instr;
use crate::layouts::{Dma, DotProduct, Eltwise, PoolKind, Scale};
use crate::simd::exec::uses_chan_params;
use crate::simd::{ChanParams, SimdInstr};

/// Which memory an access touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Space {
    Sram,
    Dram,
}

impl Space {
    pub fn name(self) -> &'static str {
        match self {
            Space::Sram => "SRAM",
            Space::Dram => "DRAM",
        }
    }
}

/// The bytes one instruction reads and writes, per memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footprint {
    pub sram_reads: Intervals,
    pub sram_writes: Intervals,
    pub dram_reads: Intervals,
    pub dram_writes: Intervals,
}

impl Footprint {
    pub fn reads(&self, space: Space) -> &Intervals {
        match space {
            Space::Sram => &self.sram_reads,
            Space::Dram => &self.dram_reads,
        }
    }
    pub fn writes(&self, space: Space) -> &Intervals {
        match space {
            Space::Sram => &self.sram_writes,
            Space::Dram => &self.dram_writes,
        }
    }
}

/// A 2-D strided block: bytes `base + a*row_pitch + b*pix_pitch + [0, len)` for
/// `a < rows`, `b < pixels`.
#[derive(Debug, Clone, Copy)]
struct Grid {
    base: u64,
    rows: u64,
    row_pitch: u64,
    pixels: u64,
    pix_pitch: u64,
    len: u64,
}

impl Grid {
    /// Appends the block's byte ranges; rows of contiguous pixels become one range,
    /// and a block with too many ranges is emitted as per-row hulls (or one hull).
    fn emit(&self, out: &mut Vec<(u64, u64)>) {
        let g = *self;
        if g.rows == 0 || g.pixels == 0 || g.len == 0 {
            return;
        }
        let row_extent = (g.pixels - 1) * g.pix_pitch + g.len;
        let contiguous = g.pixels == 1 || g.pix_pitch == g.len;
        let per_row = if contiguous { 1 } else { g.pixels };
        if contiguous && g.row_pitch == row_extent {
            // Rows that follow each other without a gap: one range (the same bytes
            // as the rows' ranges, which the interval set would merge anyway).
            out.push((g.base, g.base + g.rows * g.row_pitch));
        } else if g.rows.saturating_mul(per_row) <= MAX_RANGES as u64 {
            for a in 0..g.rows {
                let row = g.base + a * g.row_pitch;
                if contiguous {
                    out.push((row, row + row_extent));
                } else {
                    out.extend((0..g.pixels).map(|b| {
                        let p = row + b * g.pix_pitch;
                        (p, p + g.len)
                    }));
                }
            }
        } else if g.rows <= MAX_RANGES as u64 {
            out.extend((0..g.rows).map(|a| {
                let row = g.base + a * g.row_pitch;
                (row, row + row_extent)
            }));
        } else {
            out.push((g.base, g.base + (g.rows - 1) * g.row_pitch + row_extent));
        }
    }
}

/// An activation tensor: `addr + y*row_pitch + x*pix_pitch + c*chan_pitch`.
#[derive(Debug, Clone, Copy)]
struct Act {
    addr: u32,
    row_pitch: u32,
    pix_pitch: u32,
    chan_pitch: u32,
}

impl Act {
    fn new(addr: u32, row_pitch: u32, pix_pitch: u32, chan_pitch: u32) -> Act {
        Act {
            addr,
            row_pitch,
            pix_pitch,
            chan_pitch,
        }
    }

    /// Channels `c0 .. c0+channels` of the pixels of `r`. Channels that are not
    /// adjacent bytes (`chan_pitch != 1`) are one grid each; past [`MAX_RANGES`]
    /// ranges a channel becomes its hull, past that the channels become one hull.
    fn rect(&self, r: Rect, c0: u64, channels: u64, out: &mut Vec<(u64, u64)>) {
        let (rp, pp, cp) = (
            u64::from(self.row_pitch),
            u64::from(self.pix_pitch),
            u64::from(self.chan_pitch),
        );
        let grid = |c: u64, len: u64| Grid {
            base: u64::from(self.addr) + r.y0 * rp + r.x0 * pp + c * cp,
            rows: r.rows,
            row_pitch: rp,
            pixels: r.x1 - r.x0,
            pix_pitch: pp,
            len,
        };
        if cp == 1 || channels <= 1 {
            let len = if cp == 1 { channels } else { channels.min(1) };
            return grid(c0, len).emit(out);
        }
        let ranges_per_chan = if pp == 1 {
            r.rows
        } else {
            r.rows * (r.x1 - r.x0)
        };
        if channels.saturating_mul(ranges_per_chan) <= MAX_RANGES as u64 {
            (c0..c0 + channels).for_each(|c| grid(c, 1).emit(out));
            return;
        }
        let hull = |c: u64| {
            let g = grid(c, 1);
            (g.base, g.base + (g.rows - 1) * rp + (g.pixels - 1) * pp + 1)
        };
        if r.rows == 0 || r.x1 <= r.x0 {
            return;
        }
        if channels <= MAX_RANGES as u64 {
            out.extend((c0..c0 + channels).map(hull));
        } else {
            out.push((hull(c0).0, hull(c0 + channels - 1).1.max(hull(c0).1)));
        }
    }

    /// Channels `c0 .. c0+channels` of the flattened pixel tile `start .. start+count`.
    fn tile(&self, w: u32, start: u32, count: u32, c0: u32, channels: u32) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for r in tile_rects(start.into(), count.into(), w.into()) {
            self.rect(r, c0.into(), channels.into(), &mut out);
        }
        out
    }
}

fn range(addr: u32, len: u64) -> (u64, u64) {
    (u64::from(addr), u64::from(addr) + len)
}

fn chan_table(addr: u32, entries: u32, simd: &[SimdInstr]) -> Option<(u64, u64)> {
    uses_chan_params(simd).then(|| range(addr, ChanParams::SIZE as u64 * u64::from(entries)))
}

fn dma(d: &Dma, to_sram: bool) -> Footprint {
    let grid = |base: u64, stride: u64| {
        let mut v = Vec::new();
        Grid {
            base,
            rows: d.rows.into(),
            row_pitch: stride,
            pixels: 1,
            pix_pitch: 0,
            len: d.row_len.into(),
        }
        .emit(&mut v);
        Intervals::from_ranges(v)
    };
    let sram = grid(d.sram_addr.into(), d.sram_stride.into());
    let dram = grid(d.dram_addr, d.dram_stride);
    if to_sram {
        Footprint {
            sram_writes: sram,
            dram_reads: dram,
            ..Footprint::default()
        }
    } else {
        Footprint {
            sram_reads: sram,
            dram_writes: dram,
            ..Footprint::default()
        }
    }
}

fn dot(d: &DotProduct, kind: DotKind, hw: &HwConfig) -> Footprint {
    let mut reads = Vec::new();
    if let Some(inp) = dot_input(d, kind) {
        let t = Act::new(d.in_addr, d.in_row_pitch, d.in_pix_pitch, d.in_chan_pitch);
        t.rect(inp.rect, inp.c0, inp.channels, &mut reads);
    }
    if d.w_pitch == 0 {
        reads.push(range(d.w_addr, weight_bytes(d, hw.mac_cols)));
    } else {
        // K vectors of the tile's `oc_count` channels, `w_pitch` bytes apart.
        Grid {
            base: d.w_addr.into(),
            rows: d.k_terms(),
            row_pitch: d.w_pitch.into(),
            pixels: 1,
            pix_pitch: 0,
            len: d.oc_count.into(),
        }
        .emit(&mut reads);
    }
    let entries = d.param_entries();
    if d.bias_en {
        reads.push(range(d.bias_addr, 4 * u64::from(entries)));
    }
    reads.extend(chan_table(d.chan_addr, entries, &d.simd));
    let out = Act::new(
        d.out_addr,
        d.out_row_pitch,
        d.out_pix_pitch,
        d.out_chan_pitch,
    );
    let writes = if d.pool == PoolKind::None {
        out.tile(d.out_w, d.pix_start, d.pix_count, d.oc_start, d.oc_count)
    } else {
        let mut v = Vec::new();
        for r in pooled_runs(d) {
            out.rect(r, d.oc_start.into(), d.oc_count.into(), &mut v);
        }
        v
    };
    sram(reads, writes)
}

fn sram(reads: Vec<(u64, u64)>, writes: Vec<(u64, u64)>) -> Footprint {
    Footprint {
        sram_reads: Intervals::from_ranges(reads),
        sram_writes: Intervals::from_ranges(writes),
        ..Footprint::default()
    }
}

fn scale(s: &Scale) -> Footprint {
    let t = |addr, rp, pp, cp| {
        Act::new(addr, rp, pp, cp).tile(s.w, s.pix_start, s.pix_count, s.c_start, s.c_count)
    };
    let mut reads = t(s.in_addr, s.in_row_pitch, s.in_pix_pitch, s.in_chan_pitch);
    reads.extend(chan_table(s.chan_addr, s.c_count, &s.simd));
    let writes = t(
        s.out_addr,
        s.out_row_pitch,
        s.out_pix_pitch,
        s.out_chan_pitch,
    );
    sram(reads, writes)
}

fn eltwise(e: &Eltwise) -> Footprint {
    let t = |addr, rp, pp, cp| {
        Act::new(addr, rp, pp, cp).tile(e.w, e.pix_start, e.pix_count, e.c_start, e.c_count)
    };
    let mut reads = t(e.a_addr, e.a_row_pitch, e.a_pix_pitch, e.a_chan_pitch);
    reads.extend(t(e.b_addr, e.b_row_pitch, e.b_pix_pitch, e.b_chan_pitch));
    reads.extend(chan_table(e.chan_addr, e.c_count, &e.simd));
    let writes = t(
        e.out_addr,
        e.out_row_pitch,
        e.out_pix_pitch,
        e.out_chan_pitch,
    );
    sram(reads, writes)
}

/// The footprint of `ins`. Compute instructions must pass their
/// [`crate::checks`] rules first (the geometry below relies on them).
pub fn footprint(ins: &Instr, hw: &HwConfig) -> Footprint {
    match ins {
        Instr::DmaRead(d) => dma(d, true),
        Instr::DmaWrite(d) => dma(d, false),
        Instr::Conv(d) => dot(d, DotKind::Conv, hw),
        Instr::Deconv(d) => dot(d, DotKind::Deconv, hw),
        Instr::InnerProduct(d) => dot(d, DotKind::InnerProduct, hw),
        Instr::Scale(s) => scale(s),
        Instr::Eltwise(e) => eltwise(e),
        Instr::Stop(_) => Footprint::default(),
    }
}

/// The semantic rules of docs/ISA.md section 5 (without the flag-count rule, which
/// the hazard check reports as a finding of its own).
pub fn check_geometry(ins: &Instr) -> Result<(), crate::error::CheckError> {
    match ins {
        Instr::Conv(d) => d.check(DotKind::Conv),
        Instr::Deconv(d) => d.check(DotKind::Deconv),
        Instr::InnerProduct(d) => d.check(DotKind::InnerProduct),
        Instr::Scale(s) => s.check(),
        Instr::Eltwise(e) => e.check(),
        Instr::DmaRead(_) | Instr::DmaWrite(_) | Instr::Stop(_) => Ok(()),
    }
}
