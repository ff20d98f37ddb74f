//! CONV, DECONV and INNER_PRODUCT: int8/uint8 x int8/uint8 products accumulated over
//! the tile, bias, accumulator wrap, the SIMD program on every value, optional fused
//! pooling, store.
//!
//! Implementation: the tile's pixels are processed in blocks (in parallel, at most
//! `mac_rows` each, small enough that every thread gets one). For each block and each
//! convolution group the input patch of every pixel is gathered once into a contiguous
//! i16 row (padding and DECONV holes read the input zero point), the weights of the
//! tile are converted once into interleaved i16 term pairs in the same term order, and
//! an i16 x i16 -> i32 dot-product kernel does the arithmetic.

use super::dot_geom::{DotGeom, DotKind};
use super::gemm::{dot_exact, fits_i32, gemm, padded_len, PairWeights};
use super::postproc::{ChannelTable, Post};
use super::tensor::Strided;
use super::weights::pair_weights;
use super::ExecStats;
use crate::memory::Memory;
use nnac_isa::{DotProduct, HwConfig};
use rayon::prelude::*;

/// Largest magnitude of an 8-bit code of the given signedness.
fn max_code(signed: bool) -> u64 {
    if signed {
        128
    } else {
        255
    }
}

/// Converts code bytes to their values (int8 or uint8) as i16.
#[inline]
pub fn widen(dst: &mut [i16], src: &[u8], signed: bool) {
    if signed {
        for (o, &b) in dst.iter_mut().zip(src) {
            *o = i16::from(b as i8);
        }
    } else {
        for (o, &b) in dst.iter_mut().zip(src) {
            *o = i16::from(b);
        }
    }
}

/// [`widen`] of strided bytes (channels `chan_pitch` apart).
#[inline]
fn widen_strided(dst: &mut [i16], src: &Strided<'_>, signed: bool) {
    if signed {
        for (i, o) in dst.iter_mut().enumerate() {
            *o = i16::from(src.get(i) as i8);
        }
    } else {
        for (i, o) in dst.iter_mut().enumerate() {
            *o = i16::from(src.get(i));
        }
    }
}

/// Gathers the patch rows of `pixels` for convolution group `group` into `dst`
/// (`pixels.len()` rows of `kpad`), in term order (ky, kx, ic).
fn gather_patch(
    g: &DotGeom,
    d: &DotProduct,
    sram: &Memory,
    pixels: std::ops::Range<u64>,
    group: u64,
    kpad: usize,
    dst: &mut [i16],
) -> Result<(), String> {
    let icpg = g.icpg as usize;
    let zero = d.in_zero;
    let c0 = group * g.icpg;
    for (row, p) in dst.chunks_exact_mut(kpad).zip(pixels) {
        let (oy, ox) = g.pix.yx(p);
        let mut t = 0;
        for ky in 0..g.kh {
            let iy = g.in_row(oy, ky);
            for kx in 0..g.kw {
                let seg = &mut row[t..t + icpg];
                match (iy, g.in_col(ox, kx)) {
                    (Some(iy), Some(ix)) => {
                        let src = g.input.chans(sram, (iy, ix), c0, g.icpg)?;
                        match src.contiguous() {
                            Some(b) => widen(seg, b, d.in_signed),
                            None => widen_strided(seg, &src, d.in_signed),
                        }
                    }
                    _ => seg.fill(zero),
                }
                t += icpg;
            }
        }
        row[t..].fill(0);
    }
    Ok(())
}

/// Output channels (relative to oc_start) of the tile that belong to `group`.
fn group_channels(g: &DotGeom, group: u64) -> std::ops::Range<usize> {
    let lo = (group * g.ocpg).max(g.oc_start) - g.oc_start;
    let hi = ((group + 1) * g.ocpg).min(g.oc_start + g.oc_count) - g.oc_start;
    lo as usize..hi as usize
}

/// Exact (i64) dot products of one block: `acc[p * oc_count + c]`.
#[allow(clippy::too_many_arguments)]
fn block_dots(
    g: &DotGeom,
    d: &DotProduct,
    sram: &Memory,
    wt: &PairWeights,
    pixels: std::ops::Range<u64>,
    exact_i32: bool,
    acc: &mut [i64],
) -> Result<(), String> {
    let kpad = wt.kpad;
    let n = (pixels.end - pixels.start) as usize;
    let oc_count = g.oc_count as usize;
    let mut patch = vec![0i16; n * kpad];
    let mut dots = vec![0i32; n * oc_count];
    let (gfirst, glast) = (
        g.group_of(g.oc_start),
        g.group_of(g.oc_start + g.oc_count - 1),
    );
    for group in gfirst..=glast {
        gather_patch(g, d, sram, pixels.clone(), group, kpad, &mut patch)?;
        let cs = group_channels(g, group);
        if exact_i32 {
            gemm(
                &patch,
                n,
                wt,
                cs.start,
                cs.len(),
                &mut dots[cs.start..],
                oc_count,
            );
            for p in 0..n {
                for c in cs.clone() {
                    acc[p * oc_count + c] = i64::from(dots[p * oc_count + c]);
                }
            }
        } else {
            for p in 0..n {
                let a = &patch[p * kpad..(p + 1) * kpad];
                for c in cs.clone() {
                    acc[p * oc_count + c] = dot_exact(a, wt, c);
                }
            }
        }
    }
    Ok(())
}

/// Pixels per parallel task: the tile split evenly over the threads (so a one-slice
/// tile still uses every thread), at most `mac_rows`, a multiple of 4 (the kernel's
/// pixel block) when larger than 4.
fn pixels_per_task(count: u64, mac_rows: u64) -> u64 {
    let threads = rayon::current_num_threads().max(1) as u64;
    count
        .div_ceil(threads)
        .div_ceil(4)
        .max(1)
        .saturating_mul(4)
        .min(mac_rows.max(1))
}

/// Runs one dot-product instruction against SRAM.
pub fn execute(
    d: &DotProduct,
    kind: DotKind,
    hw: &HwConfig,
    sram: &mut Memory,
) -> Result<ExecStats, String> {
    let g = DotGeom::new(d, kind, hw)?;
    let k = g.k_terms() as usize;
    let kpad = padded_len(k);
    let w_bytes = sram.slice(u64::from(d.w_addr), g.weight_bytes())?;
    let wt = pair_weights(&g, w_bytes, d.w_signed, kpad);
    let table = ChannelTable::read(sram, d, g.oc_count, &d.simd)?;
    let post = Post::new(&d.simd, d.out_signed, &table.chan);
    let exact_i32 = fits_i32(k as u64, max_code(d.in_signed), max_code(d.w_signed));
    let oc_count = g.oc_count as usize;
    let block = pixels_per_task(g.pix.count, u64::from(hw.mac_rows));
    let starts: Vec<u64> = (g.pix.start..g.pix.end()).step_by(block as usize).collect();
    let sram_ro: &Memory = sram;
    let results: Vec<(Vec<u8>, ExecStats)> = starts
        .par_iter()
        .map(|&s| {
            let pixels = s..(s + block).min(g.pix.end());
            let n = (pixels.end - pixels.start) as usize;
            let mut acc = vec![0i64; n * oc_count];
            block_dots(&g, d, sram_ro, &wt, pixels.clone(), exact_i32, &mut acc)?;
            let mut out = vec![0u8; n * oc_count];
            let mut st = ExecStats::default();
            let mut wrapped = vec![0i32; oc_count];
            for (p, (orow, arow)) in out
                .chunks_exact_mut(oc_count)
                .zip(acc.chunks_exact(oc_count))
                .enumerate()
            {
                if super::wrap_row(arow, &table.bias, hw.acc_bits, &mut wrapped) {
                    for (c, (&a, &b)) in arow.iter().zip(&table.bias).enumerate() {
                        if super::wrap(a + b, hw.acc_bits).1 {
                            st.note_overflow(pixels.start + p as u64, g.oc_start + c as u64);
                        }
                    }
                }
                post.apply_row(&wrapped, 0, orow);
            }
            Ok((out, st))
        })
        .collect::<Result<_, String>>()?;
    let mut stats = ExecStats {
        macs: g.pix.count * g.oc_count * k as u64,
        ..ExecStats::default()
    };
    let mut prepool = Vec::with_capacity((g.pix.count as usize) * oc_count);
    for (out, st) in results {
        prepool.extend_from_slice(&out);
        stats.merge(&st);
    }
    store(&g, &prepool, sram)?;
    Ok(stats)
}

/// Writes the tile's SIMD output (`prepool[p][c]`, p relative to pix_start) to SRAM,
/// through the pooling unit if enabled.
fn store(g: &DotGeom, prepool: &[u8], sram: &mut Memory) -> Result<(), String> {
    let oc = g.oc_count as usize;
    match &g.pool {
        None => {
            for (i, row) in prepool.chunks_exact(oc).enumerate() {
                let yx = g.pix.yx(g.pix.start + i as u64);
                g.output.store(sram, yx, g.oc_start, row)?;
            }
        }
        Some(pg) => {
            let mut buf = vec![0u8; oc];
            for w in pg.windows_in(&g.pix) {
                for (c, b) in buf.iter_mut().enumerate() {
                    *b = pg.reduce(&w, |y, x| {
                        prepool[((y * g.out_w + x - g.pix.start) as usize) * oc + c]
                    });
                }
                g.output.store(sram, (w.py, w.px), g.oc_start, &buf)?;
            }
        }
    }
    Ok(())
}
