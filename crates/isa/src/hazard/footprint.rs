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
    /// Smallest range holding every byte of the block (`None` if it has none): the
    /// hull of the ranges [`Grid::emit`] appends, in O(1).
    fn hull(&self) -> Option<(u64, u64)> {
        let g = *self;
        if g.rows == 0 || g.pixels == 0 || g.len == 0 {
            return None;
        }
        let row_extent = (g.pixels - 1) * g.pix_pitch + g.len;
        Some((g.base, g.base + (g.rows - 1) * g.row_pitch + row_extent))
    }

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

/// Where the byte ranges of one side of an access (the reads or the writes) go: a
/// list for an interval set ([`footprint`]), only their hull ([`sram_hulls`]), or
/// nowhere ([`sram_writes`] skips the reads). The geometry below is written once,
/// generic over the sink, so the three always describe the same bytes.
trait Sink {
    /// The bytes `[lo, hi)` (nothing if empty).
    fn range(&mut self, r: (u64, u64));
    /// Every byte of a strided block.
    fn grid(&mut self, g: &Grid);
}

impl Sink for Vec<(u64, u64)> {
    fn range(&mut self, r: (u64, u64)) {
        self.push(r);
    }
    fn grid(&mut self, g: &Grid) {
        g.emit(self);
    }
}

/// The smallest range holding every byte given (empty ranges hold none): the hull
/// of the interval set made of the same ranges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Hull(Option<(u64, u64)>);

impl Sink for Hull {
    fn range(&mut self, (lo, hi): (u64, u64)) {
        if lo < hi {
            self.0 = Some(self.0.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    }
    fn grid(&mut self, g: &Grid) {
        if let Some(r) = g.hull() {
            self.range(r);
        }
    }
}

/// Drops everything.
struct Skip;

impl Sink for Skip {
    fn range(&mut self, _: (u64, u64)) {}
    fn grid(&mut self, _: &Grid) {}
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
    fn rect(&self, r: Rect, c0: u64, channels: u64, out: &mut impl Sink) {
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
            return out.grid(&grid(c0, len));
        }
        let ranges_per_chan = if pp == 1 {
            r.rows
        } else {
            r.rows * (r.x1 - r.x0)
        };
        if channels.saturating_mul(ranges_per_chan) <= MAX_RANGES as u64 {
            (c0..c0 + channels).for_each(|c| out.grid(&grid(c, 1)));
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
            (c0..c0 + channels).for_each(|c| out.range(hull(c)));
        } else {
            out.range((hull(c0).0, hull(c0 + channels - 1).1.max(hull(c0).1)));
        }
    }

    /// Channels `c0 .. c0+channels` of the flattened pixel tile `start .. start+count`.
    fn tile(&self, t: &PixelTile, out: &mut impl Sink) {
        for r in tile_rects(t.start.into(), t.count.into(), t.w.into()) {
            self.rect(r, t.c0.into(), t.channels.into(), out);
        }
    }
}

/// The pixels `start .. start+count` of a `w`-wide tensor (flattened), channels
/// `c0 .. c0+channels`: the tile of a SCALE, ELTWISE or unpooled dot product.
struct PixelTile {
    w: u32,
    start: u32,
    count: u32,
    c0: u32,
    channels: u32,
}

fn range(addr: u32, len: u64) -> (u64, u64) {
    (u64::from(addr), u64::from(addr) + len)
}

fn chan_table(addr: u32, entries: u32, simd: &[SimdInstr]) -> Option<(u64, u64)> {
    uses_chan_params(simd).then(|| range(addr, ChanParams::SIZE as u64 * u64::from(entries)))
}

/// The rows of a DMA move in one memory: `rows` rows of `row_len` bytes, `stride`
/// apart from `base`.
fn dma_rows(d: &Dma, base: u64, stride: u64) -> Grid {
    Grid {
        base,
        rows: d.rows.into(),
        row_pitch: stride,
        pixels: 1,
        pix_pitch: 0,
        len: d.row_len.into(),
    }
}

fn dma_sram(d: &Dma) -> Grid {
    dma_rows(d, d.sram_addr.into(), d.sram_stride.into())
}

fn dot(
    d: &DotProduct,
    kind: DotKind,
    hw: &HwConfig,
    reads: &mut impl Sink,
    writes: &mut impl Sink,
) {
    if let Some(inp) = dot_input(d, kind) {
        let t = Act::new(d.in_addr, d.in_row_pitch, d.in_pix_pitch, d.in_chan_pitch);
        t.rect(inp.rect, inp.c0, inp.channels, reads);
    }
    if d.w_pitch == 0 {
        reads.range(range(d.w_addr, weight_bytes(d, hw.mac_cols)));
    } else {
        // K vectors of the tile's `oc_count` channels, `w_pitch` bytes apart.
        reads.grid(&Grid {
            base: d.w_addr.into(),
            rows: d.k_terms(),
            row_pitch: d.w_pitch.into(),
            pixels: 1,
            pix_pitch: 0,
            len: d.oc_count.into(),
        });
    }
    let entries = d.param_entries();
    if d.bias_en {
        reads.range(range(d.bias_addr, 4 * u64::from(entries)));
    }
    if let Some(r) = chan_table(d.chan_addr, entries, &d.simd) {
        reads.range(r);
    }
    let out = Act::new(
        d.out_addr,
        d.out_row_pitch,
        d.out_pix_pitch,
        d.out_chan_pitch,
    );
    if d.pool == PoolKind::None {
        let t = PixelTile {
            w: d.out_w,
            start: d.pix_start,
            count: d.pix_count,
            c0: d.oc_start,
            channels: d.oc_count,
        };
        out.tile(&t, writes);
    } else {
        for r in pooled_runs(d) {
            out.rect(r, d.oc_start.into(), d.oc_count.into(), writes);
        }
    }
}

/// A SCALE or ELTWISE tile: reads `t` of every input and the channel table (if its
/// SIMD program uses one), writes `t` of `out`.
fn simd_tile(
    t: &PixelTile,
    inputs: &[Act],
    chan: Option<(u64, u64)>,
    out: Act,
    reads: &mut impl Sink,
    writes: &mut impl Sink,
) {
    for a in inputs {
        a.tile(t, reads);
    }
    if let Some(r) = chan {
        reads.range(r);
    }
    out.tile(t, writes);
}

fn scale(s: &Scale, reads: &mut impl Sink, writes: &mut impl Sink) {
    let t = PixelTile {
        w: s.w,
        start: s.pix_start,
        count: s.pix_count,
        c0: s.c_start,
        channels: s.c_count,
    };
    simd_tile(
        &t,
        &[Act::new(
            s.in_addr,
            s.in_row_pitch,
            s.in_pix_pitch,
            s.in_chan_pitch,
        )],
        chan_table(s.chan_addr, s.c_count, &s.simd),
        Act::new(
            s.out_addr,
            s.out_row_pitch,
            s.out_pix_pitch,
            s.out_chan_pitch,
        ),
        reads,
        writes,
    );
}

fn eltwise(e: &Eltwise, reads: &mut impl Sink, writes: &mut impl Sink) {
    let t = PixelTile {
        w: e.w,
        start: e.pix_start,
        count: e.pix_count,
        c0: e.c_start,
        channels: e.c_count,
    };
    simd_tile(
        &t,
        &[
            Act::new(e.a_addr, e.a_row_pitch, e.a_pix_pitch, e.a_chan_pitch),
            Act::new(e.b_addr, e.b_row_pitch, e.b_pix_pitch, e.b_chan_pitch),
        ],
        chan_table(e.chan_addr, e.c_count, &e.simd),
        Act::new(
            e.out_addr,
            e.out_row_pitch,
            e.out_pix_pitch,
            e.out_chan_pitch,
        ),
        reads,
        writes,
    );
}

/// The SRAM ranges `ins` reads and writes, into `reads` and `writes`.
fn sram_accesses(ins: &Instr, hw: &HwConfig, reads: &mut impl Sink, writes: &mut impl Sink) {
    match ins {
        Instr::DmaRead(d) => writes.grid(&dma_sram(d)),
        Instr::DmaWrite(d) => reads.grid(&dma_sram(d)),
        Instr::Conv(d) => dot(d, DotKind::Conv, hw, reads, writes),
        Instr::Deconv(d) => dot(d, DotKind::Deconv, hw, reads, writes),
        Instr::InnerProduct(d) => dot(d, DotKind::InnerProduct, hw, reads, writes),
        Instr::Scale(s) => scale(s, reads, writes),
        Instr::Eltwise(e) => eltwise(e, reads, writes),
        Instr::Stop(_) => {}
    }
}

/// The footprint of `ins`. Compute instructions must pass their
/// [`crate::checks`] rules first (the geometry below relies on them).
pub fn footprint(ins: &Instr, hw: &HwConfig) -> Footprint {
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    sram_accesses(ins, hw, &mut reads, &mut writes);
    let dram = |d: &Dma| {
        let mut v = Vec::new();
        dma_rows(d, d.dram_addr, d.dram_stride).emit(&mut v);
        Intervals::from_ranges(v)
    };
    let (dram_reads, dram_writes) = match ins {
        Instr::DmaRead(d) => (dram(d), Intervals::default()),
        Instr::DmaWrite(d) => (Intervals::default(), dram(d)),
        _ => Default::default(),
    };
    Footprint {
        sram_reads: Intervals::from_ranges(reads),
        sram_writes: Intervals::from_ranges(writes),
        dram_reads,
        dram_writes,
    }
}

/// The hulls of the SRAM bytes an instruction reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SramHulls {
    pub reads: Option<(u64, u64)>,
    pub writes: Option<(u64, u64)>,
}

/// `footprint(ins, hw).sram_reads.hull()` and `.sram_writes.hull()`, without
/// building the interval sets: O(1) per strided block instead of a range per row.
/// The same preconditions as [`footprint`].
pub fn sram_hulls(ins: &Instr, hw: &HwConfig) -> SramHulls {
    let (mut reads, mut writes) = (Hull::default(), Hull::default());
    sram_accesses(ins, hw, &mut reads, &mut writes);
    SramHulls {
        reads: reads.0,
        writes: writes.0,
    }
}

/// `footprint(ins, hw).sram_writes` alone (the reads are not computed). The same
/// preconditions as [`footprint`].
pub fn sram_writes(ins: &Instr, hw: &HwConfig) -> Intervals {
    let mut writes = Vec::new();
    sram_accesses(ins, hw, &mut Skip, &mut writes);
    Intervals::from_ranges(writes)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64, enough for shapes.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn hull_sink_is_the_hull_of_the_interval_set() {
        // Tensors of every shape class `Act::rect` distinguishes: adjacent channels,
        // one grid per channel (rows that follow each other, gaps, single pixels),
        // a hull per channel and one hull for all channels (past MAX_RANGES).
        let mut s = 7;
        for _ in 0..3000 {
            let mut pick = |n: u64| next(&mut s) % n;
            let act = Act::new(
                pick(1 << 16) as u32,
                [0, 1, 8, 96, 4096][pick(5) as usize] + pick(3) as u32,
                [0, 1, 3, 96][pick(4) as usize],
                [0, 1, 2, 64, 9216][pick(5) as usize],
            );
            let x0 = pick(40);
            let r = Rect {
                y0: pick(20),
                rows: pick(120),
                x0,
                x1: x0 + pick(60),
            };
            let (c0, channels) = (pick(10), [0, 1, 2, 3, 96, 700, 20_000][pick(7) as usize]);
            let mut list = Vec::new();
            act.rect(r, c0, channels, &mut list);
            let mut hull = Hull::default();
            act.rect(r, c0, channels, &mut hull);
            assert_eq!(
                Intervals::from_ranges(list).hull(),
                hull.0,
                "{act:?} {r:?} c0 {c0} channels {channels}"
            );
        }
    }
}
