//! Splitting a dot-product layer whose working set (input + weights + output +
//! bias and channel tables) does not fit its SRAM budget.
//!
//! The stored (pooled) output rows are cut into **bands**; a band reads the input
//! rows its kernel windows (and pooling windows) cover, the halo included, with the
//! band's own top/bottom padding, so every band is an ordinary CONV over a smaller
//! tensor ([`conv_band`]). The output channels are cut into **chunks** of whole
//! `mac_cols` weight groups whose weights are loaded one chunk at a time. The loop
//! order is band-outer, chunk-inner (the hardware's pixel-then-channel order);
//! weights are reloaded per band only when there is more than one chunk.
//!
//! An input that is spilled to DRAM is filled band by band (halo rows twice); a
//! resident input is read in place. A spilled output is written back band by band.
//! Each (band, chunk) is a step of its own; its streamed buffers are live from the
//! previous step (double buffering) when twice the streamed bytes fit, else only in
//! their own step. [`choose`] picks the band height and chunk size with the least
//! DRAM traffic that fits the budget.

use crate::base::act::Act;
use crate::base::job::{tiles, BufId, DotOpcode, Job, JobKind, Loc};
use crate::base::params::DotParams;
use crate::base::params::{chan_table, i32_bytes};
use crate::base::spill_state::{SplitLayer, Src};
use crate::base::walk::{LayerTiles, Walk};
use crate::error::Refusal;
use crate::place::spill;
use nnac_ir::NodeId;
use nnac_isa::{DotProduct, PoolKind};

/// One band of a split layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Band {
    /// Stored (pooled) output rows `s0..s1`.
    pub s0: u32,
    pub s1: u32,
    /// Input rows read: `i0..i1`.
    pub i0: u32,
    pub i1: u32,
    /// The band's instruction template (rows relative to the band).
    pub t: DotProduct,
}

/// The pre-pool output rows `c0..c1` the pooling windows of stored (pooled) rows
/// `s0..s1` of the pooled template `t` cover, unclipped: `c0` may be negative and
/// `c1` beyond `out_h` where the windows reach into the pooling padding.
pub(crate) fn pooled_rows_span(t: &DotProduct, s0: u32, s1: u32) -> (i64, i64) {
    let (ps, ppt, win) = (
        i64::from(t.pool_stride),
        i64::from(t.pool_pad_top),
        i64::from(t.pool_win),
    );
    (
        i64::from(s0) * ps - ppt,
        (i64::from(s1) - 1) * ps - ppt + win,
    )
}

/// The band of stored rows `s0..s1` of a CONV template `t` (pooled or not).
pub(crate) fn conv_band(t: &DotProduct, s0: u32, s1: u32) -> Result<Band, Refusal> {
    let mut b = t.clone();
    let (c0, c1) = if t.pool == PoolKind::None {
        (i64::from(s0), i64::from(s1))
    } else {
        let (c0, c1) = pooled_rows_span(t, s0, s1);
        let (c0c, c1c) = (c0.max(0), c1.min(i64::from(t.out_h)));
        b.pool_pad_top = (c0c - c0) as u32;
        b.pool_pad_bottom = (c1 - c1c) as u32;
        (c0c, c1c)
    };
    if c1 <= c0 {
        return Err(Refusal::BandWithoutRows { s0, s1 });
    }
    b.out_h = (c1 - c0) as u32;
    let (s, pt) = (i64::from(t.stride_h), i64::from(t.pad_top));
    let reach = i64::from(t.dil_h) * (i64::from(t.kernel_h) - 1);
    let (i0, i1) = (c0 * s - pt, (c1 - 1) * s - pt + reach + 1);
    let (i0c, i1c) = (i0.max(0), i1.min(i64::from(t.in_h)));
    if i1c <= i0c {
        return Err(Refusal::BandOnlyPadding { s0, s1 });
    }
    b.in_h = (i1c - i0c) as u32;
    b.pad_top = (i0c - i0) as u32;
    b.pad_bottom = (i1 - i1c) as u32;
    Ok(Band {
        s0,
        s1,
        i0: i0c as u32,
        i1: i1c as u32,
        t: b,
    })
}

/// Bands of at most `rows` stored rows; a layer that is not a CONV is one band.
pub(crate) fn bands(t: &DotProduct, opcode: DotOpcode, rows: u32) -> Result<Vec<Band>, Refusal> {
    let sh = t.stored_hw().ok_or(Refusal::EmptyGeometry)?.0;
    if opcode != DotOpcode::Conv || rows >= sh {
        return Ok(vec![Band {
            s0: 0,
            s1: sh,
            i0: 0,
            i1: t.in_h,
            t: t.clone(),
        }]);
    }
    (0..sh)
        .step_by(rows.max(1) as usize)
        .map(|s0| conv_band(t, s0, (s0 + rows).min(sh)))
        .collect()
}

/// What the working set of a split layer is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sizes {
    /// Bytes of one input row over all channels if the input is spilled (filled band
    /// by band), else 0.
    pub in_row: u64,
    /// Bytes of one stored output row over all channels if the output is spilled
    /// (written band by band), else 0.
    pub out_row: u64,
    /// Bytes live for the whole layer: resident input/output, bias and channel tables.
    pub fixed: u64,
    /// Bytes of one weight group (`K * mac_cols`).
    pub block: u64,
    /// Weight groups.
    pub groups: u32,
}

/// A split: stored rows per band, weight groups per chunk, double buffering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    pub bands: Vec<Band>,
    pub per_chunk: u32,
    pub overlap: bool,
}

/// Streamed bytes per step, bytes live for the whole layer and DRAM traffic of
/// `bands` x chunks of `q` groups.
fn cost(bands: &[Band], q: u32, s: &Sizes) -> (u64, u64, u64) {
    let in_band = bands
        .iter()
        .map(|b| u64::from(b.i1 - b.i0) * s.in_row)
        .max()
        .unwrap_or(0);
    let fill: u64 = bands
        .iter()
        .map(|b| u64::from(b.i1 - b.i0) * s.in_row)
        .sum();
    let out_band = bands
        .iter()
        .map(|b| u64::from(b.s1 - b.s0) * s.out_row)
        .max()
        .unwrap_or(0);
    let weights = u64::from(s.groups) * s.block;
    let (w_fixed, w_stream, w_traffic) = if q >= s.groups {
        (weights, 0, weights)
    } else {
        (0, u64::from(q) * s.block, weights * bands.len() as u64)
    };
    (
        in_band + out_band + w_stream,
        s.fixed + w_fixed,
        fill + w_traffic,
    )
}

/// The split with the least DRAM traffic whose working set fits `budget`
/// (double-buffered if possible); `None` if even one row and one group do not fit.
pub(crate) fn choose(
    t: &DotProduct,
    opcode: DotOpcode,
    s: &Sizes,
    budget: u64,
) -> Result<Option<Choice>, Refusal> {
    let sh = t.stored_hw().ok_or(Refusal::EmptyGeometry)?.0;
    let mut heights: Vec<u32> = (1..=sh).map(|n| sh.div_ceil(n)).collect();
    heights.dedup();
    if opcode != DotOpcode::Conv {
        heights = vec![sh];
    }
    let mut best: Option<((bool, u64, usize), Choice)> = None;
    for rows in heights {
        let Ok(bs) = bands(t, opcode, rows) else {
            continue;
        };
        for q in 1..=s.groups {
            let (stream, fixed, traffic) = cost(&bs, q, s);
            if fixed + stream > budget {
                continue;
            }
            let double = fixed + 2 * stream <= budget;
            let steps = bs.len() * s.groups.div_ceil(q) as usize;
            let key = (!double, traffic, steps);
            if best.as_ref().is_none_or(|(k, _)| key < *k) {
                let c = Choice {
                    bands: bs.clone(),
                    per_chunk: q,
                    overlap: double,
                };
                best = Some((key, c));
            }
        }
    }
    Ok(best.map(|(_, c)| c))
}

/// [`choose`], except that with a `chunk` cap (`Plan::weight_chunk`) a layer whose
/// input and output stay in SRAM keeps its weights within twice the cap (or two
/// weight groups, if larger), where such a split fits `budget`: chunks of at most
/// the cap, double-buffered, or all of them loaded at once if they fit that (fewer
/// steps; limiting every chunk to the cap instead measured ZFNet-512 3% slower).
/// One band: with input and output in SRAM more bands only reload the weights.
pub(crate) fn choose_chunked(
    t: &DotProduct,
    opcode: DotOpcode,
    s: &Sizes,
    budget: u64,
    chunk: Option<u64>,
) -> Result<Option<Choice>, Refusal> {
    let resident = s.in_row == 0 && s.out_row == 0;
    if let Some(c) = chunk.filter(|_| resident) {
        let capped = budget.min(s.fixed + 2 * c.max(s.block));
        if let Some(choice) = choose(t, opcode, s, capped)? {
            return Ok(Some(choice));
        }
    }
    choose(t, opcode, s, budget)
}

/// The smallest working set of a layer: every activation spilled, one row band, one
/// weight group, no double buffering.
pub(crate) fn min_working_set(
    t: &DotProduct,
    opcode: DotOpcode,
    s: &Sizes,
) -> Result<u64, Refusal> {
    let bs = bands(t, opcode, 1)?;
    let (stream, fixed, _) = cost(&bs, 1, s);
    Ok(stream + fixed)
}

/// A dot-product layer's parameters and template, ready to be split.
pub(crate) struct SplitDot {
    pub id: NodeId,
    pub opcode: DotOpcode,
    pub t: DotProduct,
    pub weights: Vec<u8>,
    pub bias: Vec<i32>,
    pub entries: Vec<[i32; 4]>,
    pub block: u32,
    pub pooled: bool,
}

/// A buffer of the current split step, live from the previous step if `overlap`.
fn split_buf(walk: &mut Walk<'_>, name: &str, size: u64, overlap: bool) -> BufId {
    let b = walk.new_buf(name, size);
    if overlap {
        walk.out.bufs[b].first = walk.step.saturating_sub(1);
    }
    b
}

fn touch(walk: &mut Walk<'_>, buf: BufId) {
    let b = &mut walk.out.bufs[buf];
    b.last = b.last.max(walk.step);
}

/// Lowers `d` in bands and chunks (see the module doc). `x` is its input, `out`
/// its output (resident or spilled); `choice` from [`choose`].
pub(crate) fn dot_split(
    walk: &mut Walk<'_>,
    d: SplitDot,
    x: Src,
    out: Src,
    choice: Choice,
    mnemonic: &str,
) -> Result<(), Refusal> {
    let name = walk.g.node(d.id).name.clone();
    let cols = walk.hw.mac_cols;
    let groups = d.t.out_c.div_ceil(cols);
    let q = choice.per_chunk.min(groups);
    let overlap = choice.overlap && spill::prefetch_ok(walk, Some(d.id));
    walk.out.sp.overlap = overlap;
    let bb = walk.param(&name, &i32_bytes(&d.bias));
    let cb = walk.param(&name, &chan_table(&d.entries));
    let whole = (q >= groups).then(|| walk.param(&name, &d.weights));
    // Offsets of a band in a resident tensor are rows of `row_pitch`; a band
    // buffer holds `rows * row_bytes()` with channel pitch `rows * row_pitch`.
    let (xa, oa) = (x.act().clone(), out.act().clone());
    let (in_row, out_row) = (u64::from(xa.row_pitch), u64::from(oa.row_pitch));
    let mut total = 0usize;
    for (bi, band) in choice.bands.iter().enumerate() {
        if bi > 0 {
            next_step(walk);
        }
        let mut bt = band.t.clone();
        let in_loc: Loc = match &x {
            Src::Sram(p) => Loc::new(p.buf, p.off + u64::from(band.i0) * in_row),
            Src::Dram(h) => {
                let rows = band.i1 - band.i0;
                let b = split_buf(walk, &name, u64::from(rows) * xa.row_bytes(), overlap);
                spill::move_rows(walk, &name, true, h, band.i0, Loc::start(b), rows);
                bt.in_chan_pitch = xa.band_chan_pitch(rows);
                Loc::start(b)
            }
        };
        let out_loc: Loc = match &out {
            Src::Sram(p) => Loc::new(p.buf, p.off + u64::from(band.s0) * out_row),
            Src::Dram(_) => {
                let rows = band.s1 - band.s0;
                bt.out_chan_pitch = oa.band_chan_pitch(rows);
                let size = u64::from(rows) * oa.row_bytes();
                Loc::start(split_buf(walk, &name, size, overlap))
            }
        };
        for q0 in (0..groups).step_by(q as usize) {
            if q0 > 0 {
                next_step(walk);
            }
            let q1 = (q0 + q).min(groups);
            let w_loc = match whole {
                Some(wb) => Loc::start(wb),
                None => {
                    let block = d.block as usize;
                    let bytes = &d.weights[q0 as usize * block..q1 as usize * block];
                    Loc::start(walk.param(&name, bytes))
                }
            };
            let (c0, c1) = (q0 * cols, (q1 * cols).min(d.t.out_c));
            let pix = band.t.out_h * band.t.out_w;
            let tp = if d.pooled { pix } else { walk.tile_pixels };
            let mut tl = tiles(pix, c1 - c0, tp, cols);
            for tile in &mut tl {
                tile.c_start += c0;
            }
            total += tl.len();
            walk.out.jobs.push(Job {
                node: name.clone(),
                kind: JobKind::Dot {
                    opcode: d.opcode,
                    t: bt.clone(),
                    bufs: [in_loc, w_loc, out_loc, Loc::start(bb), Loc::start(cb)],
                    block: d.block,
                    w_group0: if whole.is_some() { 0 } else { q0 },
                    tiles: tl,
                },
            });
            touch(walk, in_loc.buf);
            touch(walk, out_loc.buf);
        }
        if let Src::Dram(h) = &out {
            spill::move_rows(walk, &name, false, h, band.s0, out_loc, band.s1 - band.s0);
        }
    }
    for b in [Some(bb), Some(cb), whole].into_iter().flatten() {
        touch(walk, b);
    }
    if let Src::Sram(p) = &x {
        touch(walk, p.buf);
    }
    if let Src::Sram(p) = &out {
        touch(walk, p.buf);
    }
    if let Src::Dram(h) = out {
        walk.out.sp.homes.insert(d.id, h);
    }
    walk.out.layers.push(LayerTiles {
        layer: name.clone(),
        mnemonic: mnemonic.into(),
        tiles: total,
    });
    walk.out.sp.splits.push(SplitLayer {
        layer: name,
        bands: choice.bands.len(),
        groups: groups.div_ceil(q) as usize,
    });
    Ok(())
}

/// `None` if the layer runs whole (its working set fits its budget), else what
/// its split working set is made of. Records the layer's smallest working set.
pub(crate) fn split_sizes(
    walk: &mut Walk<'_>,
    id: NodeId,
    t: &DotProduct,
    opcode: DotOpcode,
    x: &Src,
    p: &DotParams,
) -> Result<Option<Sizes>, Refusal> {
    let node = walk.g.node(id);
    let out = Act::of(&node.name, &node.outputs[0]).map_err(Refusal::from)?;
    let tables = 4 * p.bias.len() as u64 + 16 * p.entries.len() as u64;
    let (block, groups) = (u64::from(p.block), t.out_c.div_ceil(walk.hw.mac_cols));
    let xa = x.act();
    let all_spilled = Sizes {
        in_row: xa.row_bytes(),
        out_row: out.row_bytes(),
        fixed: tables,
        block,
        groups,
    };
    let min = min_working_set(t, opcode, &all_spilled)?;
    walk.out.sp.min_ws.insert(id, min);
    let whole = xa.bytes() + out.bytes() + p.weights.len() as u64 + tables;
    let plan = &walk.out.sp.plan;
    if whole <= plan.budget_of(id, walk.hw.sram_bytes)
        && !plan.chunks_weights(p.weights.len() as u64, u64::from(p.block))
    {
        return Ok(None);
    }
    let x_spilled = matches!(x, Src::Dram(_));
    let out_spilled = walk.out.sp.plan.spilled.contains(&id);
    let resident = |spilled: bool, bytes: u64| if spilled { 0 } else { bytes };
    Ok(Some(Sizes {
        in_row: all_spilled.in_row * u64::from(x_spilled),
        out_row: all_spilled.out_row * u64::from(out_spilled),
        fixed: tables + resident(x_spilled, xa.bytes()) + resident(out_spilled, out.bytes()),
        block,
        groups,
    }))
}

/// Starts the next step of a split layer.
fn next_step(walk: &mut Walk<'_>) {
    walk.step += 1;
    walk.mark_step();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv3(in_h: u32, pad: u32, stride: u32) -> DotProduct {
        let mut t = DotProduct {
            in_h,
            in_w: 8,
            in_c: 4,
            out_c: 4,
            kernel_h: 3,
            kernel_w: 3,
            stride_h: stride,
            stride_w: stride,
            dil_h: 1,
            dil_w: 1,
            groups: 1,
            pad_top: pad,
            pad_bottom: pad,
            pad_left: pad,
            pad_right: pad,
            ..DotProduct::default()
        };
        let (h, w) = t.expected_out_hw(nnac_isa::checks::DotKind::Conv).unwrap();
        (t.out_h, t.out_w) = (h, w);
        t
    }

    #[test]
    fn bands_have_halo_and_their_own_padding() {
        let t = conv3(10, 1, 1);
        let bs = bands(&t, DotOpcode::Conv, 4).unwrap();
        assert_eq!(bs.len(), 3);
        // Band 0: rows 0..4 read input 0..5 with the top pad.
        assert_eq!(
            (bs[0].i0, bs[0].i1, bs[0].t.pad_top, bs[0].t.pad_bottom),
            (0, 5, 1, 0)
        );
        // Band 1: rows 4..8 read input 3..9, no padding.
        assert_eq!(
            (bs[1].i0, bs[1].i1, bs[1].t.pad_top, bs[1].t.pad_bottom),
            (3, 9, 0, 0)
        );
        // Band 2: rows 8..10 read input 7..10 with the bottom pad.
        assert_eq!(
            (bs[2].i0, bs[2].i1, bs[2].t.pad_top, bs[2].t.pad_bottom),
            (7, 10, 0, 1)
        );
        for b in &bs {
            let kind = nnac_isa::checks::DotKind::Conv;
            assert_eq!(b.t.expected_out_hw(kind).unwrap().0, b.s1 - b.s0);
        }
    }

    #[test]
    fn pooled_bands_cover_their_windows() {
        let mut t = conv3(12, 1, 1);
        (t.pool, t.pool_win, t.pool_stride) = (PoolKind::Max, 3, 2);
        (
            t.pool_pad_top,
            t.pool_pad_bottom,
            t.pool_pad_left,
            t.pool_pad_right,
        ) = (1, 1, 1, 1);
        let sh = t.stored_hw().unwrap().0;
        let bs = bands(&t, DotOpcode::Conv, 2).unwrap();
        assert_eq!(bs.iter().map(|b| b.s1 - b.s0).sum::<u32>(), sh);
        for b in &bs {
            assert_eq!(b.t.stored_hw().unwrap().0, b.s1 - b.s0);
        }
        assert_eq!(bs[0].t.pool_pad_top, 1);
        assert_eq!(bs[1].t.pool_pad_top, 0);
    }

    #[test]
    fn choose_prefers_least_traffic_and_refuses_too_small() {
        let t = conv3(32, 1, 1);
        let s = Sizes {
            in_row: 64,
            out_row: 64,
            fixed: 1000,
            block: 36 * 96,
            groups: 1,
        };
        let whole = choose(&t, DotOpcode::Conv, &s, 1 << 20).unwrap().unwrap();
        assert_eq!((whole.bands.len(), whole.overlap), (1, true));
        let small = choose(&t, DotOpcode::Conv, &s, 6000).unwrap().unwrap();
        assert!(small.bands.len() > 1);
        assert!(choose(&t, DotOpcode::Conv, &s, 3000).unwrap().is_none());
        let min = min_working_set(&t, DotOpcode::Conv, &s).unwrap();
        assert_eq!(min, 3 * 64 + 64 + 1000 + 36 * 96);
    }

    #[test]
    fn chunked_weights_stream_in_chunks_of_the_cap_in_one_band() {
        // Input and output resident, 10 weight groups of 3456 bytes: the whole
        // layer fits, so `choose` loads the weights whole; with a cap of 8000 bytes
        // two groups per chunk, double-buffered; a cap below one group, one group.
        let t = conv3(32, 1, 1);
        let s = Sizes {
            in_row: 0,
            out_row: 0,
            fixed: 1000,
            block: 36 * 96,
            groups: 10,
        };
        let big = 1 << 20;
        let whole = choose_chunked(&t, DotOpcode::Conv, &s, big, None)
            .unwrap()
            .unwrap();
        assert_eq!((whole.bands.len(), whole.per_chunk), (1, 10));
        let c = choose_chunked(&t, DotOpcode::Conv, &s, big, Some(8000))
            .unwrap()
            .unwrap();
        assert_eq!((c.bands.len(), c.per_chunk, c.overlap), (1, 2, true));
        let c = choose_chunked(&t, DotOpcode::Conv, &s, big, Some(100))
            .unwrap()
            .unwrap();
        assert_eq!((c.bands.len(), c.per_chunk, c.overlap), (1, 1, true));
        // A spilled input keeps the split `choose` makes for the budget.
        let spilled = Sizes { in_row: 64, ..s };
        assert_eq!(
            choose_chunked(&t, DotOpcode::Conv, &spilled, big, Some(100)).unwrap(),
            choose(&t, DotOpcode::Conv, &spilled, big).unwrap()
        );
    }
}
