//! SCALE and ELTWISE: pure SIMD-unit instructions over a (pixels x channels) tile of
//! pitched activation tensors (any layout). Every output value is computed from the inputs first, then the tile
//! is stored (so an output may alias an input with the same layout).

use super::combine::{combine_codes, Rescale, RescaleTable};
use super::dot_geom::check_layout;
use super::eltwise_plane::{PlaneKernel, PlaneOp};
use super::postproc::{read_chan, Post};
use super::tensor::{ActView, PixRange};
use super::ExecStats;
use crate::error::ExecError;
use crate::memory::{Memory, ReadBytes};
use nnac_isa::arith::{code_value, eltwise_combine};
use nnac_isa::{Eltwise, HwConfig, Scale};
use rayon::prelude::*;

/// The (pixels x channels) tile of a SCALE or ELTWISE instruction.
#[derive(Debug, Clone, Copy)]
pub struct Tile {
    pub pix: PixRange,
    pub c0: u64,
    pub cn: u64,
}

impl Tile {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        h: u32,
        w: u32,
        c: u32,
        pix_start: u32,
        pix_count: u32,
        c_start: u32,
        c_count: u32,
    ) -> Result<Tile, ExecError> {
        let u = u64::from;
        let npix = u(h) * u(w);
        if u(pix_start) + u(pix_count) > npix {
            return Err(ExecError::Pixels {
                start: u(pix_start),
                end: u(pix_start) + u(pix_count),
                limit_name: "h*w",
                limit: npix,
            });
        }
        if u(c_start) + u(c_count) > u(c) {
            return Err(ExecError::Channels {
                start: u(c_start),
                end: u(c_start) + u(c_count),
                limit_name: "c",
                limit: u(c),
            });
        }
        Ok(Tile {
            pix: PixRange {
                start: u(pix_start),
                count: u(pix_count),
                width: u(w),
            },
            c0: u(c_start),
            cn: u(c_count),
        })
    }
}

/// Output values below which a SCALE / ELTWISE tile runs on one thread.
const PAR_MIN_VALUES: u64 = 1 << 14;

/// Output values below which an ELTWISE tile run plane by plane ([`eltwise_planes`])
/// stays on one thread: a plane's values cost more than the pixel path's, and the
/// engine runs on a pool thread, so starting the other costs little.
const PAR_MIN_PLANE_VALUES: u64 = 1 << 12;

/// Computes every output row of the tile in parallel blocks of pixels:
/// `f(y, x, out_row, stats)` fills the `c_count` bytes of pixel (y, x).
fn par_tile<F>(tile: &Tile, f: F) -> Result<(Vec<u8>, ExecStats), ExecError>
where
    F: Fn(u64, u64, &mut [u8], &mut ExecStats) -> Result<(), ExecError> + Sync,
{
    // Blocks of at most 256 pixels, at least one per thread for tiles that allow it.
    let threads = rayon::current_num_threads().max(1) as u64;
    let block: u64 = tile.pix.count.div_ceil(threads).clamp(16, 256);
    let cn = tile.cn as usize;
    let starts: Vec<u64> = (tile.pix.start..tile.pix.end())
        .step_by(block as usize)
        .collect();
    let run_block = |&s: &u64| {
        let e = (s + block).min(tile.pix.end());
        let mut out = vec![0u8; (e - s) as usize * cn];
        let mut st = ExecStats::default();
        for (p, row) in (s..e).zip(out.chunks_exact_mut(cn)) {
            let (y, x) = tile.pix.yx(p);
            f(y, x, row, &mut st)?;
        }
        Ok((out, st))
    };
    // A small tile runs on this thread (the same blocks, in the same order).
    let parts = if tile.pix.count * tile.cn < PAR_MIN_VALUES {
        starts
            .iter()
            .map(run_block)
            .collect::<Result<Vec<_>, ExecError>>()?
    } else {
        starts
            .par_iter()
            .map(run_block)
            .collect::<Result<Vec<_>, ExecError>>()?
    };
    let mut all = Vec::with_capacity((tile.pix.count * tile.cn) as usize);
    let mut stats = ExecStats::default();
    for (o, st) in parts {
        all.extend_from_slice(&o);
        stats.merge(&st);
    }
    Ok((all, stats))
}

fn store(tile: &Tile, out: &ActView, bytes: &[u8], sram: &mut Memory) -> Result<(), ExecError> {
    out.store_tile(sram, &tile.pix, tile.c0, tile.cn, bytes)
}

pub fn scale_tile(s: &Scale) -> Result<Tile, ExecError> {
    let [i, o] = s.act_layouts();
    check_layout("input", i)?;
    check_layout("output", o)?;
    Tile::new(
        s.h,
        s.w,
        s.c,
        s.pix_start,
        s.pix_count,
        s.c_start,
        s.c_count,
    )
}

pub fn eltwise_tile(e: &Eltwise) -> Result<Tile, ExecError> {
    let [a, b, o] = e.act_layouts();
    a.check_read("A")?;
    b.check_read("B")?;
    check_layout("output", o)?;
    Tile::new(
        e.h,
        e.w,
        e.c,
        e.pix_start,
        e.pix_count,
        e.c_start,
        e.c_count,
    )
}

/// SCALE: `acc = code - in_zero`, then the SIMD program with the channel's parameters.
pub fn execute_scale(s: &Scale, hw: &HwConfig, sram: &mut Memory) -> Result<ExecStats, ExecError> {
    let tile = scale_tile(s)?;
    let input = ActView::new(s.in_addr, s.in_row_pitch, s.in_pix_pitch, s.in_chan_pitch);
    let chan = read_chan(sram, s.chan_addr, tile.cn, &s.simd)?;
    let post = Post::new(&s.simd, s.out_signed, &chan);
    let sram_ro: &Memory = sram;
    let (out, st) = par_tile(&tile, |y, x, row, st| {
        let src = input.chans(sram_ro, (y, x), tile.c0, tile.cn)?;
        for (c, (o, &b)) in row.iter_mut().zip(src.iter()).enumerate() {
            let exact = i64::from(code_value(b, s.in_signed) - i32::from(s.in_zero));
            let (v, overflow) = super::wrap(exact, hw.acc_bits);
            if overflow {
                st.note_overflow(y * tile.pix.width + x, tile.c0 + c as u64);
            }
            *o = post.apply(v, c);
        }
        Ok(())
    })?;
    store(
        &tile,
        &ActView::new(
            s.out_addr,
            s.out_row_pitch,
            s.out_pix_pitch,
            s.out_chan_pitch,
        ),
        &out,
        sram,
    )?;
    Ok(st)
}

/// No bias: the wrap of an ELTWISE value is of the value itself.
const ZERO_BIAS: [i64; 64] = [0; 64];

/// ELTWISE: both inputs rescaled, combined exactly, wrapped to the accumulator width,
/// then the SIMD program with the channel's parameters.
pub fn execute_eltwise(
    e: &Eltwise,
    hw: &HwConfig,
    sram: &mut Memory,
) -> Result<ExecStats, ExecError> {
    let tile = eltwise_tile(e)?;
    let a = ActView::new(e.a_addr, e.a_row_pitch, e.a_pix_pitch, e.a_chan_pitch);
    let b = ActView::new(e.b_addr, e.b_row_pitch, e.b_pix_pitch, e.b_chan_pitch);
    let chan = read_chan(sram, e.chan_addr, tile.cn, &e.simd)?;
    let post = Post::new(&e.simd, e.out_signed, &chan);
    // The rescaled value depends only on the code byte: tabulate it once.
    let [ra, rb] = Rescale::of(e);
    let (ta, tb) = (ra.recent_table(), rb.recent_table());
    let out_view = ActView::new(
        e.out_addr,
        e.out_row_pitch,
        e.out_pix_pitch,
        e.out_chan_pitch,
    );
    if planes_fit(&tile, [&a, &b, &out_view], sram) {
        return eltwise_planes(
            (e.op, (ra, rb)),
            hw,
            &tile,
            [&a, &b, &out_view],
            (&ta, &tb),
            &post,
            sram,
        );
    }
    let sram_ro: &Memory = sram;
    let (out, st) = par_tile(&tile, |y, x, row, st| {
        let ra = a.chans(sram_ro, (y, x), tile.c0, tile.cn)?;
        let rb = b.chans(sram_ro, (y, x), tile.c0, tile.cn)?;
        let (mut ia, mut ib) = (ra.iter(), rb.iter());
        // Channel chunks on the stack: exact values, wrapped values, SIMD program.
        const CHUNK: usize = 64;
        let (mut exact, mut acc) = ([0i64; CHUNK], [0i32; CHUNK]);
        for (i, out) in row.chunks_mut(CHUNK).enumerate() {
            let c0 = i * CHUNK;
            let n = out.len();
            for (v, (&va, &vb)) in exact[..n].iter_mut().zip(ia.by_ref().zip(ib.by_ref())) {
                *v = eltwise_combine(e.op, ta[usize::from(va)], tb[usize::from(vb)]);
            }
            if super::wrap_row(&exact[..n], &ZERO_BIAS[..n], hw.acc_bits, &mut acc[..n]) {
                for (c, &v) in exact[..n].iter().enumerate() {
                    if super::wrap(v, hw.acc_bits).1 {
                        st.note_overflow(y * tile.pix.width + x, tile.c0 + (c0 + c) as u64);
                    }
                }
            }
            post.apply_row(&acc[..n], c0, out);
        }
        Ok(())
    })?;
    store(&tile, &out_view, &out, sram)?;
    Ok(st)
}

/// True if the tile can run plane by plane ([`eltwise_planes`]): in every view the
/// tile's pixels of a channel are consecutive bytes (`pix_pitch` 1, rows of `w`
/// pixels back to back, the planar layout), the output's channel runs do not overlap
/// (so the order of the stores does not matter) and every byte the tile reads or
/// writes is in SRAM (so no error can arise part way; otherwise the pixel-by-pixel
/// path runs and reports it as always).
fn planes_fit(tile: &Tile, views: [&ActView; 3], sram: &Memory) -> bool {
    let (n, cn) = (tile.pix.count, tile.cn);
    let (y0, x0) = tile.pix.yx(tile.pix.start);
    let out = views[2];
    n > 0
        && cn > 0
        && (cn == 1 || out.chan_pitch >= n)
        && views.iter().all(|v| {
            v.pix_pitch == 1
                && v.row_pitch == tile.pix.width
                && sram
                    .slice(v.at(y0, x0, tile.c0), (cn - 1) * v.chan_pitch + n)
                    .is_ok()
        })
}

/// How many channels ahead [`eltwise_planes`] asks for the input planes.
const PREFETCH_AHEAD: usize = 4;

/// ELTWISE plane by plane (see [`planes_fit`]): for each channel, the run of the
/// tile's pixels of A and B, rescaled through the tables `ta` / `tb`, combined,
/// wrapped and passed through the SIMD program with that channel's parameters (in one
/// pass by [`PlaneKernel`] where its conditions hold, else in three). The
/// values, the overflow count and the first overflow (the least (pixel, channel), the
/// first the pixel-by-pixel order meets) are those of the pixel-by-pixel path. Where
/// no byte of A or B lies in the output's hull, the planes are computed straight into
/// SRAM; otherwise (an output may alias an input) all values are computed before any
/// is stored.
fn eltwise_planes(
    (op, rescales): (nnac_isa::EltOp, (Rescale, Rescale)),
    hw: &HwConfig,
    tile: &Tile,
    [a, b, out]: [&ActView; 3],
    (ta, tb): (&RescaleTable, &RescaleTable),
    post: &Post,
    sram: &mut Memory,
) -> Result<ExecStats, ExecError> {
    let (n, cn) = (tile.pix.count, tile.cn);
    let (y0, x0) = tile.pix.yx(tile.pix.start);
    // Each view's hull: from the tile's first byte to its last channel's last.
    let hull = |v: &ActView| (v.at(y0, x0, tile.c0), (cn - 1) * v.chan_pitch + n);
    let (lo, len) = hull(out);
    let apart = [a, b].iter().all(|v| {
        let (at, l) = hull(v);
        at + l <= lo || lo + len <= at
    });
    let planes = Planes {
        op,
        plane_op: PlaneOp::of(op, (ta, tb), rescales, hw.acc_bits),
        acc_bits: hw.acc_bits,
        tile,
        inputs: [a, b],
        tables: (ta, tb),
        post,
    };
    let (overflows, first_overflow) = if apart {
        let (around, hull) = sram.split_around(lo, len)?;
        let step = (out.chan_pitch as usize).max(n as usize);
        let runs = hull.chunks_mut(step).map(|run| &mut run[..n as usize]);
        planes.run(&around, runs.collect())?
    } else {
        let mut all = vec![0u8; (n * cn) as usize];
        let counts = planes.run(&*sram, all.chunks_exact_mut(n as usize).collect())?;
        for (c, plane) in all.chunks_exact(n as usize).enumerate() {
            let dst = sram.slice_mut(out.at(y0, x0, tile.c0 + c as u64), n)?;
            dst.copy_from_slice(plane);
        }
        counts
    };
    Ok(ExecStats {
        overflows,
        first_overflow,
        ..ExecStats::default()
    })
}

/// What every plane of an ELTWISE tile run plane by plane ([`eltwise_planes`])
/// shares.
struct Planes<'e> {
    op: nnac_isa::EltOp,
    /// Where no combination can wrap: channels with a lone FUSED_RELU run fused.
    plane_op: Option<PlaneOp>,
    acc_bits: u32,
    tile: &'e Tile,
    inputs: [&'e ActView; 2],
    tables: (&'e RescaleTable, &'e RescaleTable),
    post: &'e Post<'e>,
}

impl Planes<'_> {
    /// Computes every channel's plane into `outs` (one run of the tile's pixels per
    /// channel) from the inputs in `mem`; returns the overflow count and the least
    /// overflowing (pixel, channel).
    fn run<M: ReadBytes>(
        &self,
        mem: &M,
        mut outs: Vec<&mut [u8]>,
    ) -> Result<(u64, Option<(u64, u64)>), ExecError> {
        let (n, cn) = (self.tile.pix.count, self.tile.cn as usize);
        assert_eq!(outs.len(), cn, "one output run per channel");
        // One part of the channels per thread for a large enough tile (the same values
        // either way).
        let parts = if n * cn as u64 >= PAR_MIN_PLANE_VALUES {
            rayon::current_num_threads().clamp(1, cn)
        } else {
            1
        };
        let per = cn.div_ceil(parts);
        let counts: Vec<(u64, Option<(u64, u64)>)> = outs
            .par_chunks_mut(per)
            .enumerate()
            .map(|(i, outs)| -> Result<_, ExecError> {
                let mut total = (0u64, None::<(u64, u64)>);
                for (j, plane) in outs.iter_mut().enumerate() {
                    let (k, f) = self.plane(mem, i * per + j, plane)?;
                    total.0 += k;
                    total.1 = min_site(total.1, f);
                }
                Ok(total)
            })
            .collect::<Result<_, ExecError>>()?;
        Ok(counts
            .into_iter()
            .fold((0, None), |(k, f), (k2, f2)| (k + k2, min_site(f, f2))))
    }

    /// Channel `c`'s plane into `out`: its overflow count and least overflowing
    /// (pixel, channel).
    fn plane<M: ReadBytes>(
        &self,
        mem: &M,
        c: usize,
        out: &mut [u8],
    ) -> Result<(u64, Option<(u64, u64)>), ExecError> {
        const CHUNK: usize = 64;
        let tile = self.tile;
        let (n, cn) = (tile.pix.count, tile.cn as usize);
        let (y0, x0) = tile.pix.yx(tile.pix.start);
        let [a, b] = self.inputs;
        let ch = tile.c0 + c as u64;
        let pa = mem.read(a.at(y0, x0, ch), n)?;
        let pb = mem.read(b.at(y0, x0, ch), n)?;
        // The planes a few channels on, which are far apart in SRAM: their cache
        // misses overlap this plane's work instead of each stalling its own.
        if c + PREFETCH_AHEAD < cn {
            let ahead = ch + PREFETCH_AHEAD as u64;
            mem.prefetch(a.at(y0, x0, ahead), n);
            mem.prefetch(b.at(y0, x0, ahead), n);
        }
        let fused = self
            .plane_op
            .as_ref()
            .and_then(|p| PlaneKernel::new(p, self.post.chan_requant(c)?));
        if let Some(kernel) = fused {
            kernel.run(self.tables, pa, pb, out);
            return Ok((0, None));
        }
        let (mut exact, mut acc) = ([0i64; CHUNK], [0i32; CHUNK]);
        let (mut overflows, mut first) = (0u64, None::<(u64, u64)>);
        let runs = pa
            .chunks(CHUNK)
            .zip(pb.chunks(CHUNK))
            .zip(out.chunks_mut(CHUNK));
        for (j, ((ra, rb), o)) in runs.enumerate() {
            let m = o.len();
            combine_codes(self.op, self.tables, ra, rb, &mut exact[..m]);
            if super::wrap_row(&exact[..m], &ZERO_BIAS[..m], self.acc_bits, &mut acc[..m]) {
                for (i, &v) in exact[..m].iter().enumerate() {
                    if super::wrap(v, self.acc_bits).1 {
                        overflows += 1;
                        let at = (tile.pix.start + (j * CHUNK + i) as u64, ch);
                        first = min_site(first, Some(at));
                    }
                }
            }
            self.post.apply_chan(&acc[..m], c, o);
        }
        Ok((overflows, first))
    }
}

/// The lesser of two optional (pixel, channel) sites.
fn min_site(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}
