//! DMA in bands of rows around the tensors that cross DRAM whole: host-op operands
//! and graph outputs (written), host-op results and graph inputs (read).
//!
//! A planar activation (docs/ISA.md 4) is `C` planes of `H` rows; a band of rows
//! `y0..y0+n` of every channel is one DMA of `C` rows of `n*W` bytes, with the
//! channel plane `H*W` as SRAM and DRAM stride. When the tiles of the producer finish
//! the tensor band by band (tiles are pixel-major, `job::tiles`), writing it in bands
//! overlaps the write of band `i` with the compute of band `i + 1`; when the tiles of
//! the reader start on its first rows, reading in bands lets them start before the
//! whole tensor is in. The instructions touching such a buffer carry their exact
//! SRAM bytes into the flag assigner (`sync::Access::bytes`), so each band's DMA and
//! each tile are ordered only against what they really share.
//!
//! How many bands: the count (at most [`MAX_BANDS`], one band per pixel group of
//! the tiles at most) that ends the last write (the reader) soonest, when the tiles
//! run at a steady rate ([`tile_cycles`], a rough estimate of docs/PERFORMANCE.md
//! 1.3 and 1.5) and each DMA costs its bytes plus a fixed latency (1.2): more bands
//! shorten the wait but pay more latencies. Every band's DMA holds a dependency flag
//! until its tiles are done, hence the cap.

use crate::base::act::Act;
use crate::base::act::Placed;
use crate::base::job::{BufId, DotOpcode, Job, JobKind, Tile};
use crate::base::walk::ReadCand;
use nnac_isa::HwConfig;
use std::collections::BTreeMap;

/// Most bands of rows a tensor is moved in.
const MAX_BANDS: u32 = 16;
/// Latency of one DMA instruction assumed when choosing the bands (the timing
/// model's, docs/PERFORMANCE.md 1.2).
const DMA_LATENCY_S: f64 = 100e-9;

/// Reads split into bands: buffer -> (its layout, rows per band).
pub(crate) type ReadBands = BTreeMap<BufId, (Act, u32)>;

/// True for the dense planar layout (`PP = 1`, `RP = W`, `CP = H*W`) of at least
/// two rows, which a band DMA can address.
pub(crate) fn planar(a: &Act) -> bool {
    a.pix_pitch == 1 && a.row_pitch == a.w && a.chan_pitch == a.h * a.w && a.h >= 2
}

/// How many bands of rows to write `p` out in, given the jobs so far: 1 unless `p`
/// is planar and the compute job that last writes its buffer finishes it in several
/// pixel groups.
pub(crate) fn write_count(jobs: &[Job], p: &Placed, hw: &HwConfig) -> u32 {
    let a = &p.act;
    if !planar(a) {
        return 1;
    }
    let Some(job) = jobs
        .iter()
        .rev()
        .find(|j| j.kind.is_compute() && j.kind.access().writes.contains(&p.buf))
    else {
        return 1;
    };
    let tiles = job.kind.tiles();
    let mut starts: Vec<u32> = tiles.iter().map(|t| t.pix_start).collect();
    starts.dedup();
    let most = (starts.len() as u32).min(a.h).min(MAX_BANDS);
    let compute: f64 = tiles
        .iter()
        .map(|t| tile_cycles(&job.kind, t, hw.mac_rows))
        .sum();
    let (per_byte, latency) = dma_costs(hw);
    let row_bytes = f64::from(a.c) * f64::from(a.w);
    // End of the last band's DMA, the job starting at 0.
    let finish = |n: u32| {
        let rows = a.h.div_ceil(n);
        let (mut end, mut y0) = (0f64, 0);
        while y0 < a.h {
            let r = rows.min(a.h - y0);
            let ready = compute * f64::from(y0 + r) / f64::from(a.h);
            end = end.max(ready) + latency + per_byte * row_bytes * f64::from(r);
            y0 += r;
        }
        end
    };
    best(most, finish)
}

/// Chooses which reads of `cands` (buffer, layout) run in bands of rows, in the
/// final job order: those whose first compute reader starts sooner that way. A
/// reader that also needs a buffer loaded by a later DMA in the queue (its streamed
/// weights) waits for that anyway, so its input is read whole.
pub(crate) fn reads(jobs: &[Job], cands: &[ReadCand], hw: &HwConfig) -> ReadBands {
    let mut out = ReadBands::new();
    for ReadCand { buf, act: a } in cands {
        let is_read = |j: &Job| matches!(j.kind, JobKind::Read { loc, .. } if loc.buf == *buf);
        let Some(r) = jobs.iter().position(is_read) else {
            continue;
        };
        let reader = jobs[r + 1..]
            .iter()
            .position(|j| j.kind.is_compute() && j.kind.access().reads.contains(buf));
        let Some(k) = reader.map(|k| r + 1 + k) else {
            continue;
        };
        let inputs = jobs[k].kind.access().reads;
        let later_load = jobs[r + 1..k]
            .iter()
            .any(|j| matches!(j.kind, JobKind::Read { loc, .. } if inputs.contains(&loc.buf)));
        if later_load {
            continue;
        }
        let n = read_count(&jobs[k].kind, a, hw);
        if n > 1 {
            out.insert(*buf, (a.clone(), a.h.div_ceil(n)));
        }
    }
    out
}

/// How many bands to read `a` in for its first reader `kind`.
fn read_count(kind: &JobKind, a: &Act, hw: &HwConfig) -> u32 {
    // Per pixel group of the reader: its cycles and the input rows it needs.
    let mut groups: Vec<(f64, u32)> = Vec::new();
    let mut last_start = None;
    for t in kind.tiles() {
        let (c, need) = (tile_cycles(kind, t, hw.mac_rows), need_rows(kind, t, a.h));
        match groups.last_mut() {
            Some(g) if last_start == Some(t.pix_start) => {
                g.0 += c;
                g.1 = g.1.max(need);
            }
            _ => groups.push((c, need)),
        }
        last_start = Some(t.pix_start);
    }
    let most = (groups.len() as u32).min(a.h).min(MAX_BANDS);
    let (per_byte, latency) = dma_costs(hw);
    let row_bytes = f64::from(a.c) * f64::from(a.w);
    // End of the reader's last tile, the reads starting at 0.
    let finish = |n: u32| {
        let rows = a.h.div_ceil(n);
        let (mut end, mut band_end, mut done) = (0f64, 0f64, 0u32);
        for &(c, need) in &groups {
            while done < need {
                let r = rows.min(a.h - done);
                band_end += latency + per_byte * row_bytes * f64::from(r);
                done += r;
            }
            end = end.max(band_end) + c;
        }
        end
    };
    best(most, finish)
}

/// The count in `1..=most` with the least `finish` (the fewest on a tie).
fn best(most: u32, finish: impl Fn(u32) -> f64) -> u32 {
    let mut best = (finish(1), 1);
    for n in 2..=most {
        let f = finish(n);
        if f < best.0 {
            best = (f, n);
        }
    }
    best.1
}

/// Estimated cycles of one DMA instruction moving `bytes` on `hw`.
pub(crate) fn dma_cycles(hw: &HwConfig, bytes: u64) -> f64 {
    let (per_byte, latency) = dma_costs(hw);
    latency + per_byte * bytes as f64
}

/// DMA cycles per byte and per instruction (latency) on `hw`.
fn dma_costs(hw: &HwConfig) -> (f64, f64) {
    let per_byte = hw.clock_hz as f64 / hw.dram_bytes_per_s().max(1) as f64;
    (per_byte, hw.clock_hz as f64 * DMA_LATENCY_S)
}

/// How many input rows (from the top, of `h`) tile `t` of a compute job reads: a
/// convolution's kernel windows of its (pre-pool) output rows, pooled or not
/// (a pooled one in bands of pooled rows, `pool_bands.rs`), the same rows for SCALE
/// and ELTWISE, all of them for DECONV, INNER_PRODUCT and a convolution run with its
/// channels on the rows (its activation is read as weight vectors).
fn need_rows(kind: &JobKind, t: &Tile, h: u32) -> u32 {
    let last = |w: u32| (t.pix_start + t.pix_count.max(1) - 1) / w.max(1);
    match kind {
        JobKind::Dot {
            opcode: DotOpcode::Conv,
            t: d,
            ..
        } if d.w_pitch == 0 => {
            let bottom = last(d.out_w) * d.stride_h + (d.kernel_h - 1) * d.dil_h + 1;
            bottom.saturating_sub(d.pad_top).min(h)
        }
        JobKind::Scale { t: s, .. } => (last(s.w) + 1).min(h),
        JobKind::Eltwise { t: e, .. } => (last(e.w) + 1).min(h),
        _ => h,
    }
}

/// Rough MAC-array cycles of one tile of a compute job: per group of pixels, a
/// dot product's terms for every conv group the tile's channels touch (a grouped
/// convolution runs a pass per group: a depthwise one a pass per channel) or its
/// unload rows, whichever is more; SCALE and ELTWISE a row per channel.
pub(crate) fn tile_cycles(kind: &JobKind, t: &Tile, mac_rows: u32) -> f64 {
    let pixel_groups = f64::from(t.pix_count.div_ceil(mac_rows.max(1)).max(1));
    match kind {
        JobKind::Dot { t: d, .. } => {
            let terms = f64::from(d.in_c / d.groups.max(1) * d.kernel_h * d.kernel_w);
            let ocpg = (d.out_c / d.groups.max(1)).max(1);
            let last = t.c_start + t.c_count.max(1) - 1;
            let passes = f64::from(last / ocpg - t.c_start / ocpg + 1);
            pixel_groups * (passes * terms.max(1.0)).max(f64::from(t.c_count))
        }
        _ => pixel_groups * f64::from(t.c_count),
    }
}
