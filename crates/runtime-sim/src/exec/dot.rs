//! CONV, DECONV and INNER_PRODUCT: int8/uint8 x int8/uint8 products accumulated over
//! the tile, bias, accumulator wrap, the SIMD program on every value, optional fused
//! pooling, store.
//!
//! Implementation: the tile's pixels are processed in blocks (in parallel, at most
//! `mac_rows` each, small enough that every thread gets one). For each block and each
//! convolution group the input patch of every pixel is gathered once into a contiguous
//! row of code bytes ([`super::gather`]; padding and DECONV holes read the input zero
//! point) and widened to i16 values in one pass, the weights of the tile are converted
//! once into interleaved i16 term pairs in the same term order, and an i16 x i16 ->
//! i32 dot-product kernel does the arithmetic. On CPUs with AVX-512
//! VNNI, signed weights whose exact sums fit in i32 take the byte path instead: patch
//! bytes (biased to unsigned for int8 inputs) and weights as quads of terms
//! ([`super::quad`]), 64 products per instruction.
//!
//! Everything that depends only on the instruction and its parameters in SRAM (the
//! geometry, the converted weights, the bias and channel tables) is a [`DotPrep`],
//! which a session keeps across frames for instructions whose parameters no body
//! instruction writes (`sim.rs`).

use super::depthwise;
use super::dot_geom::{DotGeom, DotKind};
use super::gather::gather_bytes;
use super::gemm::{dot_exact, fits_i32, gemm, padded_len, PairWeights, Weights};
use super::patch_cache::{BlockPatch, GatherKey, PatchCache, PatchForm};
use super::postproc::{ChannelTable, Post, PostConsts};
use super::quad::{self, QuadWeights};
use super::weight_cache::{WeightCache, WeightKey};
use super::weights::{pair_weights, CodeLayout};
use super::ExecStats;
use crate::error::ExecError;
use crate::memory::Memory;
use nnac_isa::{DotProduct, HwConfig};
use rayon::prelude::*;
use std::sync::Arc;

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

/// Output channels (relative to oc_start) of the tile that belong to `group`.
fn group_channels(g: &DotGeom, group: u64) -> std::ops::Range<usize> {
    let lo = (group * g.ocpg).max(g.oc_start) - g.oc_start;
    let hi = ((group + 1) * g.ocpg).min(g.oc_start + g.oc_count) - g.oc_start;
    lo as usize..hi as usize
}

/// The tile's weights in the form its kernel multiplies.
#[derive(Debug, Clone)]
pub enum TileWeights {
    /// Byte patches on the VNNI kernel (signed weights, exact sums within i32).
    Quad(QuadWeights),
    /// i16 patches on the pair kernel reading the codes where they lie in SRAM (exact
    /// sums within i32; an instruction executed once).
    Codes(CodeLayout),
    /// i16 patches on the pair kernel (exact sums within i32; an instruction kept
    /// across frames).
    Pair(PairWeights),
    /// Depthwise convolutions (their own loop), or i16 patches whose exact sums need
    /// i64.
    Exact(PairWeights),
}

/// Everything a dot-product instruction needs besides its input activations: the
/// checked geometry, the weights converted for the kernel, bias and channel tables.
/// It depends only on the instruction and on the SRAM bytes of its parameters.
pub struct DotPrep {
    pub geom: DotGeom,
    /// Shared with the other instructions that read the same weights
    /// ([`WeightCache`]).
    pub weights: Arc<TileWeights>,
    pub table: ChannelTable,
    /// The SIMD program's constants for the table's channels.
    pub post: PostConsts,
}

/// The tile's weights (`bytes`, the instruction's weight range in SRAM) in the form
/// the kernel that multiplies them takes; the pair kernel's converted only if the
/// instruction is `kept` across frames (converting once is then cheaper than reading
/// the codes in place every frame; for one execution it costs more, and memory).
fn convert_weights(g: &DotGeom, d: &DotProduct, bytes: &[u8], kept: bool) -> TileWeights {
    let k = g.k_terms() as usize;
    let exact_i32 = fits_i32(k as u64, max_code(d.in_signed), max_code(d.w_signed));
    // The byte kernel computes at least 16 channels of a group at a time: narrow
    // groups (depthwise convolutions) stay on the pair kernel's 16-channel blocks
    // and per-pixel gather.
    if exact_i32 && d.w_signed && g.ocpg >= 8 && quad::available() {
        TileWeights::Quad(quad::quad_weights(g, bytes, quad::padded_len(k)))
    } else if !exact_i32 || depthwise::is_depthwise(g) {
        TileWeights::Exact(pair_weights(g, bytes, d.w_signed, padded_len(k)))
    } else if kept {
        TileWeights::Pair(pair_weights(g, bytes, d.w_signed, padded_len(k)))
    } else {
        TileWeights::Codes(CodeLayout::of(g, d.w_signed, padded_len(k)))
    }
}

impl DotPrep {
    /// Checks the instruction and reads its parameters from SRAM; the conversion of its
    /// weights (for a prep `kept` across frames, or for one execution) is taken from
    /// `weights` if another instruction made it from the same bytes (and nothing has
    /// written them since, which the caller reports), and is left there.
    pub fn new(
        d: &DotProduct,
        kind: DotKind,
        hw: &HwConfig,
        sram: &Memory,
        (weights, kept): (&mut WeightCache, bool),
    ) -> Result<DotPrep, ExecError> {
        let g = DotGeom::new(d, kind, hw)?;
        let w_len = nnac_isa::hazard::geometry::weight_bytes(d, hw.mac_cols);
        let w_addr = u64::from(d.w_addr);
        let key = WeightKey::of(&g, d.w_addr, (d.in_signed, d.w_signed), kept);
        let range = (w_addr, w_addr.saturating_add(w_len));
        let weights = weights.get_or_convert(key, range, || -> Result<_, ExecError> {
            Ok(convert_weights(&g, d, sram.slice(w_addr, w_len)?, kept))
        })?;
        let table = ChannelTable::read(sram, d, d.param_entries().into(), &d.simd)?;
        let post = Post::consts(&d.simd, d.out_signed, &table.chan);
        Ok(DotPrep {
            geom: g,
            weights,
            table,
            post,
        })
    }
}

/// SRAM byte ranges `[lo, hi)` a [`DotPrep`] of `d` reads: weights (with a `w_pitch`,
/// the span from the first vector to the last), bias, channel table (`mac_cols` as in
/// the hardware configuration).
pub fn param_ranges(d: &DotProduct, mac_cols: u32) -> Vec<(u64, u64)> {
    let at = |addr: u32, len: u64| (u64::from(addr), u64::from(addr) + len);
    if d.oc_count == 0 {
        return Vec::new();
    }
    let w = nnac_isa::hazard::geometry::weight_bytes(d, mac_cols);
    let entries = u64::from(d.param_entries());
    let mut v = vec![at(d.w_addr, w)];
    if d.bias_en {
        v.push(at(d.bias_addr, 4 * entries));
    }
    if nnac_isa::simd::exec::uses_chan_params(&d.simd) {
        v.push(at(d.chan_addr, nnac_isa::ChanParams::SIZE as u64 * entries));
    }
    v
}

/// Per-thread scratch buffers of the block computation (reused across blocks and
/// instructions, so the hot path allocates nothing).
#[derive(Default)]
struct Scratch {
    bytes: Vec<u8>,
    words: Vec<i16>,
    dots: Vec<i32>,
    acc: Vec<i64>,
    wrapped: Vec<i32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Resizes `v` to `n` elements (contents unspecified) and returns it.
fn sized<T: Copy + Default>(v: &mut Vec<T>, n: usize) -> &mut [T] {
    if v.len() < n {
        v.resize(n, T::default());
    }
    &mut v[..n]
}

/// A block's exact accumulator values, `[pixel][channel]`, as its kernel left them.
enum Sums<'s> {
    /// The i32 kernels' sums (exact within i32, [`fits_i32`]): the exact value of
    /// entry `i` of channel `c` is `dots[i].wrapping_sub(unbias[c])` (no unbias: 0).
    Narrow {
        dots: &'s [i32],
        unbias: Option<&'s [i32]>,
    },
    /// Exact i64 values (the i64 path, depthwise convolutions).
    Wide(&'s [i64]),
}

/// A block's patch in the [`PatchCache`]: gathered already (`hit`), or to be
/// gathered into the slot.
struct CachedPatch<'c> {
    slot: &'c mut BlockPatch,
    hit: bool,
}

/// The i16 patch of `pixels` for `group` with rows of `kpad` terms: the cache
/// slot's if it holds it (`hit`), else the codes through the byte gather
/// (transposed groups of eight pixels) widened to their values in one contiguous
/// pass, into the slot or the scratch words.
fn word_patch<'s>(
    g: &DotGeom,
    d: &DotProduct,
    sram: &Memory,
    (pixels, group, kpad): (std::ops::Range<u64>, u64, usize),
    cached: Option<&'s mut CachedPatch<'_>>,
    (bytes, words): (&mut Vec<u8>, &'s mut Vec<i16>),
) -> Result<&'s [i16], ExecError> {
    let n = (pixels.end - pixels.start) as usize;
    let words = match cached {
        Some(c) if c.hit => return Ok(&c.slot.words[..n * kpad]),
        Some(c) => &mut c.slot.words,
        None => words,
    };
    let codes = sized(bytes, n * kpad);
    gather_bytes(g, sram, pixels, group, kpad, d.in_zero as u8, 0, codes)?;
    let patch = sized(words, n * kpad);
    widen(patch, codes, d.in_signed);
    Ok(patch)
}

/// The exact dot products of one block (`pixels`, every tile channel). With `cached`
/// (a tile of one group, see [`patch_key`]) the block's patch is the slot's, or is
/// gathered into it.
fn block_dots<'s>(
    p: &'s DotPrep,
    d: &DotProduct,
    sram: &Memory,
    pixels: std::ops::Range<u64>,
    s: &'s mut Scratch,
    mut cached: Option<CachedPatch<'_>>,
) -> Result<Sums<'s>, ExecError> {
    let g = &p.geom;
    let n = (pixels.end - pixels.start) as usize;
    let oc_count = g.oc_count as usize;
    let (gfirst, glast) = (
        g.group_of(g.oc_start),
        g.group_of(g.oc_start + g.oc_count - 1),
    );
    let signed = d.in_signed;
    match &*p.weights {
        TileWeights::Exact(wt) if depthwise::is_depthwise(g) => {
            let acc = sized(&mut s.acc, n * oc_count);
            acc.fill(0);
            depthwise::block(g, d, sram, wt, pixels, acc)?;
            Ok(Sums::Wide(acc))
        }
        TileWeights::Quad(wt) => {
            let dots = sized(&mut s.dots, n * oc_count);
            for group in gfirst..=glast {
                let cs = group_channels(g, group);
                let pad = quad::patch_byte(d.in_zero as u8, signed);
                let xor = quad::patch_byte(0, signed);
                let patch: &[u8] = match cached.as_mut() {
                    Some(c) if c.hit => &c.slot.bytes[..n * wt.kpad],
                    c => {
                        let bytes = match c {
                            Some(c) => &mut c.slot.bytes,
                            None => &mut s.bytes,
                        };
                        let patch = sized(bytes, n * wt.kpad);
                        gather_bytes(g, sram, pixels.clone(), group, wt.kpad, pad, xor, patch)?;
                        patch
                    }
                };
                quad::gemm(
                    patch,
                    n,
                    wt,
                    cs.start,
                    cs.len(),
                    &mut dots[cs.start..],
                    oc_count,
                );
            }
            // What each channel's sum takes back out (a biased int8 patch).
            let unbias = signed.then_some(&wt.colsum[..]);
            Ok(Sums::Narrow { dots, unbias })
        }
        TileWeights::Codes(l) => {
            let w = Weights::Codes(l, sram.slice(u64::from(d.w_addr), l.span as u64)?);
            pair_sums(p, d, sram, (pixels, s, cached), Ok(w))
        }
        TileWeights::Pair(wt) => pair_sums(p, d, sram, (pixels, s, cached), Ok(Weights::Pairs(wt))),
        TileWeights::Exact(wt) => pair_sums(p, d, sram, (pixels, s, cached), Err(wt)),
    }
}

/// The exact dot products of one block on i16 patches: by the pair kernel (`Ok`,
/// sums within i32) or the exact i64 loop on converted weights (`Err`).
fn pair_sums<'s>(
    p: &DotPrep,
    d: &DotProduct,
    sram: &Memory,
    (pixels, s, mut cached): (
        std::ops::Range<u64>,
        &'s mut Scratch,
        Option<CachedPatch<'_>>,
    ),
    kernel: Result<Weights<'_>, &PairWeights>,
) -> Result<Sums<'s>, ExecError> {
    let g = &p.geom;
    let n = (pixels.end - pixels.start) as usize;
    let oc_count = g.oc_count as usize;
    let kpad = match kernel {
        Ok(w) => w.kpad(),
        Err(wt) => wt.kpad,
    };
    let wide = if kernel.is_err() { n * oc_count } else { 0 };
    let dots = sized(&mut s.dots, n * oc_count - wide);
    let acc = sized(&mut s.acc, wide);
    let groups = g.group_of(g.oc_start)..=g.group_of(g.oc_start + g.oc_count - 1);
    for group in groups {
        let cs = group_channels(g, group);
        let at = (pixels.clone(), group, kpad);
        let scratch = (&mut s.bytes, &mut s.words);
        let patch = word_patch(g, d, sram, at, cached.as_mut(), scratch)?;
        match kernel {
            Ok(w) => gemm(
                patch,
                n,
                w,
                cs.start,
                cs.len(),
                &mut dots[cs.start..],
                oc_count,
            ),
            Err(wt) => {
                for q in 0..n {
                    let a = &patch[q * kpad..(q + 1) * kpad];
                    for c in cs.clone() {
                        acc[q * oc_count + c] = dot_exact(a, wt, c);
                    }
                }
            }
        }
    }
    Ok(match kernel {
        Ok(_) => Sums::Narrow { dots, unbias: None },
        Err(_) => Sums::Wide(acc),
    })
}

/// The key of the tile's patch gather if it goes through the [`PatchCache`]: tiles of
/// one convolution group on the gathering kernels (depthwise convolutions read their
/// input directly).
fn patch_key(p: &DotPrep, d: &DotProduct) -> Option<GatherKey> {
    let g = &p.geom;
    let group = g.group_of(g.oc_start);
    if group != g.group_of(g.oc_start + g.oc_count - 1) {
        return None;
    }
    let signed = d.in_signed;
    let words = |kpad: usize| {
        let form = PatchForm::Words { signed };
        Some(GatherKey::of(g, group, kpad, d.in_zero as u8, 0, form))
    };
    match &*p.weights {
        TileWeights::Exact(_) if depthwise::is_depthwise(g) => None,
        TileWeights::Quad(wt) => Some(GatherKey::of(
            g,
            group,
            wt.kpad,
            quad::patch_byte(d.in_zero as u8, signed),
            quad::patch_byte(0, signed),
            PatchForm::Bytes,
        )),
        TileWeights::Codes(l) => words(l.kpad()),
        TileWeights::Pair(wt) | TileWeights::Exact(wt) => words(wt.kpad),
    }
}

/// Multiply-accumulates below which an instruction's blocks run on one thread.
const PAR_MIN_MACS: u64 = 1 << 17;

/// The tile's pixels (`start .. start + count`) as blocks for the threads: a number
/// of blocks that is a multiple of the thread count, each at most about `mac_rows`
/// pixels, of near-equal sizes with inner boundaries on multiples of 8 pixels (the
/// gather's and the VNNI kernel's pixel groups). A 49-pixel tile on two threads is
/// 24 + 25 pixels, not 32 + 17.
fn pixel_blocks(start: u64, count: u64, mac_rows: u64) -> Vec<std::ops::Range<u64>> {
    let threads = rayon::current_num_threads().max(1) as u64;
    let blocks = count.div_ceil(mac_rows.max(1)).div_ceil(threads).max(1) * threads;
    let edge = |i: u64| {
        if i >= blocks {
            count
        } else {
            (i * count / blocks) / 8 * 8
        }
    };
    (0..blocks)
        .map(|i| start + edge(i)..start + edge(i + 1))
        .filter(|r| !r.is_empty())
        .collect()
}

/// Runs one dot-product instruction against SRAM.
pub fn execute(
    d: &DotProduct,
    kind: DotKind,
    hw: &HwConfig,
    sram: &mut Memory,
    caches: Caches<'_>,
) -> Result<ExecStats, ExecError> {
    let prep = DotPrep::new(d, kind, hw, sram, (caches.weights, false))?;
    execute_prepared(&prep, d, hw, sram, caches.patches)
}

/// What an engine keeps from one dot-product instruction for the next ones.
pub struct Caches<'c> {
    pub patches: &'c mut PatchCache,
    pub weights: &'c mut WeightCache,
}

/// Runs one dot-product instruction whose [`DotPrep`] is at hand (made from this
/// instruction and the SRAM's current parameter bytes). Its input patches are taken
/// from `patches` if the previous gather through it read the same pixels (and
/// nothing has written them since, which the caller reports), and are left there for
/// the next instruction.
pub fn execute_prepared(
    prep: &DotPrep,
    d: &DotProduct,
    hw: &HwConfig,
    sram: &mut Memory,
    patches: &mut PatchCache,
) -> Result<ExecStats, ExecError> {
    let g = &prep.geom;
    let table = &prep.table;
    let post = Post::with_consts(&d.simd, d.out_signed, &table.chan, &prep.post);
    let oc_count = g.oc_count as usize;
    let sram_ro: &Memory = sram;
    // Each block writes its pixels' SIMD outputs into its own part of `prepool`.
    let run_block = |(pixels, out, cached): (
        std::ops::Range<u64>,
        &mut [u8],
        Option<CachedPatch<'_>>,
    )|
     -> Result<ExecStats, ExecError> {
        SCRATCH.with(|s| {
            let s = &mut *s.borrow_mut();
            let mut wrapped = std::mem::take(&mut s.wrapped);
            wrapped.resize(oc_count, 0);
            let sums = block_dots(prep, d, sram_ro, pixels.clone(), s, cached)?;
            let mut st = ExecStats::default();
            for (p, orow) in out.chunks_exact_mut(oc_count).enumerate() {
                let row = p * oc_count..(p + 1) * oc_count;
                // With `params_by_pixel` every channel of the row takes the pixel's entry.
                let (pixel_table, pixel_post);
                let (table, post) = if d.params_by_pixel {
                    let i = (pixels.start - g.pix.start) as usize + p;
                    pixel_table = table.splat(i, oc_count);
                    pixel_post = Post::new(&d.simd, d.out_signed, &pixel_table.chan);
                    (&pixel_table, &pixel_post)
                } else {
                    (table, &post)
                };
                let wrapped_any = match &sums {
                    Sums::Narrow { dots, unbias } => {
                        let u = unbias.map(|u| &u[..oc_count]);
                        super::wrap_dots_row(
                            &dots[row.clone()],
                            u,
                            &table.bias32,
                            hw.acc_bits,
                            &mut wrapped,
                        )
                    }
                    Sums::Wide(acc) => {
                        super::wrap_row(&acc[row.clone()], &table.bias, hw.acc_bits, &mut wrapped)
                    }
                };
                if wrapped_any {
                    for c in 0..oc_count {
                        let exact = match &sums {
                            Sums::Narrow { dots, unbias } => {
                                let back = unbias.map_or(0, |u| u[c]);
                                i64::from(dots[row.start + c].wrapping_sub(back))
                            }
                            Sums::Wide(acc) => acc[row.start + c],
                        };
                        if super::wrap(exact + table.bias[c], hw.acc_bits).1 {
                            st.note_overflow(pixels.start + p as u64, g.oc_start + c as u64);
                        }
                    }
                }
                post.apply_row(&wrapped, 0, orow);
            }
            s.wrapped = wrapped;
            Ok(st)
        })
    };
    let macs = g.pix.count * g.oc_count * g.k_terms();
    let mut prepool = vec![0u8; (g.pix.count as usize) * oc_count];
    let blocks = pixel_blocks(g.pix.start, g.pix.count, u64::from(hw.mac_rows));
    // The cache's slots, one per block, if the tile's patches go through it; a hit
    // needs every slot to hold its block's pixels.
    let key = patch_key(prep, d);
    let (mut slots, mut hit) = (Vec::new(), false);
    if let Some(key) = &key {
        let (s, h) = patches.slots(key, blocks.len());
        hit = h && s.iter().zip(&blocks).all(|(slot, r)| slot.pixels == *r);
        slots = s.iter_mut().map(Some).collect();
    }
    slots.resize_with(blocks.len(), || None);
    let mut parts = Vec::new();
    let mut rest = &mut prepool[..];
    for (r, slot) in blocks.into_iter().zip(slots) {
        let (part, tail) = rest.split_at_mut((r.end - r.start) as usize * oc_count);
        let cached = slot.map(|slot| {
            slot.pixels = r.clone();
            CachedPatch { slot, hit }
        });
        parts.push((r, part, cached));
        rest = tail;
    }
    // A small instruction runs its blocks on this thread: waking the pool would cost
    // more than the work. The blocks and their order are the same either way.
    let parts: Vec<ExecStats> = if macs < PAR_MIN_MACS {
        parts
            .into_iter()
            .map(run_block)
            .collect::<Result<_, ExecError>>()?
    } else {
        parts
            .into_par_iter()
            .map(run_block)
            .collect::<Result<_, ExecError>>()?
    };
    let mut stats = ExecStats {
        macs,
        ..ExecStats::default()
    };
    for st in &parts {
        stats.merge(st);
    }
    if let (Some(key), false) = (key, hit) {
        patches.keep(key);
    }
    store(g, &prepool, sram)?;
    Ok(stats)
}

/// Writes the tile's SIMD output (`prepool[p][c]`, p relative to pix_start) to SRAM,
/// through the pooling unit if enabled.
fn store(g: &DotGeom, prepool: &[u8], sram: &mut Memory) -> Result<(), ExecError> {
    let oc = g.oc_count as usize;
    match &g.pool {
        None => {
            g.output
                .store_tile(sram, &g.pix, g.oc_start, oc as u64, prepool)?;
        }
        Some(pg) => {
            let mut buf = vec![0u8; oc];
            // Pre-pool pixel (y, x)'s channels.
            let row = |y: u64, x: u64| {
                let p = (y * g.out_w + x - g.pix.start) as usize;
                &prepool[p * oc..(p + 1) * oc]
            };
            for w in pg.windows_in(&g.pix) {
                pg.reduce(&w, row, &mut buf);
                g.output.store(sram, (w.py, w.px), g.oc_start, &buf)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::pixel_blocks;

    #[test]
    fn pixel_blocks_cover_the_tile_in_near_equal_parts() {
        let threads = rayon::current_num_threads().max(1) as u64;
        for (start, count, mac_rows) in [
            (0, 49, 96),
            (96, 96, 96),
            (0, 4, 96),
            (7, 3248, 96),
            (0, 0, 96),
            (5, 784, 96),
            (0, 200, 64),
        ] {
            let b = pixel_blocks(start, count, mac_rows);
            // Contiguous, non-empty, covering start .. start + count.
            let mut at = start;
            for r in &b {
                assert_eq!(r.start, at, "{count}: {b:?}");
                assert!(r.end > r.start);
                at = r.end;
            }
            assert_eq!(at, start + count);
            // Inner boundaries on multiples of 8 pixels from the tile's start.
            for r in b.iter().skip(1) {
                assert_eq!((r.start - start) % 8, 0, "{b:?}");
            }
            let sizes: Vec<u64> = b.iter().map(|r| r.end - r.start).collect();
            if count >= 8 * threads {
                assert_eq!(b.len() as u64 % threads, 0, "{count}: {sizes:?}");
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= 8 && *hi <= mac_rows + 8, "{count}: {sizes:?}");
            }
        }
        if threads == 2 {
            assert_eq!(pixel_blocks(0, 49, 96), vec![0..24, 24..49]);
        }
    }
}
