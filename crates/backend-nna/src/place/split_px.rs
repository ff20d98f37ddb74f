//! Splitting a pixel-wise layer (ELTWISE, SCALE without pooling, channel shuffle) whose inputs,
//! output and channel table do not fit its SRAM budget: bands of rows (no halo),
//! each band a step of its own; spilled inputs are filled and a spilled output is
//! written back band by band, resident ones are read / written in place.

use crate::base::job::{BufId, JobKind, Loc};
use crate::base::spill_state::{SplitLayer, Src};
use crate::base::walk::{LayerTiles, Walk};
use crate::error::Refusal;
use crate::place::spill;
use nnac_ir::{NnaOp, NodeId, Op};

/// Rows per band: the most that fit `budget` double-buffered, else single-buffered,
/// else one row; and whether the bands double-buffer.
fn band_rows(h: u32, row_stream: u64, fixed: u64, budget: u64) -> (u32, bool) {
    let fit = |k: u64| -> Option<u32> {
        let room = budget.checked_sub(fixed)?;
        let rows = room / (k * row_stream).max(1);
        (rows >= 1).then(|| rows.min(u64::from(h)) as u32)
    };
    match (fit(2), fit(1)) {
        (Some(r), _) => (r, true),
        (None, Some(r)) => (r, false),
        (None, None) => (1, false),
    }
}

/// Activation bytes of `id`'s inputs and output, the same per row (all streamed)
/// and the bytes of its channel table: `(whole, per_row, table)`; `None` for
/// other ops. (A channel shuffle has no table.)
fn px_sizes(walk: &Walk<'_>, id: NodeId) -> Option<(u64, u64, u64)> {
    let table = match &walk.g.node(id).op {
        Op::Nna(NnaOp::Eltwise(_)) => true,
        Op::Nna(NnaOp::Scale(s)) if s.pool.is_none() => true,
        Op::Nna(NnaOp::ChannelShuffle { .. }) => false,
        _ => return None,
    };
    let node = walk.g.node(id);
    let out = crate::base::act::Act::of(&node.name, &node.outputs[0]).ok()?;
    let mut whole = out.bytes();
    let mut per_row = out.row_bytes();
    for v in walk.g.node_inputs(id) {
        let a = walk
            .vals
            .get(&v.node)
            .map(|p| p.act.clone())
            .or_else(|| walk.out.sp.homes.get(&v.node).map(|h| h.act.clone()))?;
        whole += a.bytes();
        per_row += a.row_bytes();
    }
    Some((
        whole,
        per_row,
        if table { 16 * u64::from(out.c) } else { 0 },
    ))
}

/// Decides whether pixel-wise `id` runs in bands (before its inputs are brought
/// in); records its smallest working set.
pub(crate) fn px_decide(walk: &mut Walk<'_>, id: NodeId) -> bool {
    let Some((whole, per_row, table)) = px_sizes(walk, id) else {
        return false;
    };
    walk.out.sp.min_ws.insert(id, per_row + table);
    whole + table > walk.out.sp.plan.budget_of(id, walk.hw.sram_bytes)
}

/// Pushes the banded jobs of a pixel-wise layer: `inputs` and `out` (resident or
/// spilled, `h` rows of `w` pixels, `c` channels), its channel table (if any) and
/// `job(rows, inputs, out)` building one band's jobs (operands as location and
/// channel pitch: a resident tensor keeps its own, a band buffer has
/// `rows * row_pitch`).
pub(crate) fn px_split(
    walk: &mut Walk<'_>,
    id: NodeId,
    inputs: &[Src],
    out: Src,
    table: Option<BufId>,
    job: impl Fn(u32, &[BandOperand], BandOperand) -> Vec<JobKind>,
) -> Result<(), Refusal> {
    let name = walk.g.node(id).name.clone();
    let o = out.act().clone();
    let broadcast = |a: &crate::base::act::Act| a.broadcast_over(&o);
    let streamed = |s: &Src| matches!(s, Src::Dram(_)) && !broadcast(s.act());
    let row_stream: u64 = inputs
        .iter()
        .chain(std::iter::once(&out))
        .filter(|s| streamed(s))
        .map(|s| s.act().row_bytes())
        .sum();
    let fixed: u64 = inputs
        .iter()
        .chain(std::iter::once(&out))
        .filter(|s| !streamed(s))
        .map(|s| s.act().bytes())
        .sum::<u64>()
        + table.map_or(0, |_| 16 * u64::from(o.c));
    let budget = walk.out.sp.plan.budget_of(id, walk.hw.sram_bytes);
    let (rows, double) = band_rows(o.h, row_stream, fixed, budget);
    let overlap = double && spill::prefetch_ok(walk, Some(id));
    let mut total = 0;
    let mut y0 = 0u32;
    while y0 < o.h {
        if y0 > 0 {
            walk.step += 1;
            walk.mark_step();
        }
        let n = rows.min(o.h - y0);
        let mut locs = Vec::with_capacity(inputs.len());
        for s in inputs {
            let loc = match s {
                // Broadcast over the pixels (ELTWISE's b): every band reads it whole.
                Src::Sram(p) if broadcast(&p.act) => BandOperand {
                    loc: p.loc(),
                    chan_pitch: p.act.chan_pitch,
                },
                Src::Dram(h) if broadcast(&h.act) => {
                    let b = band_buf(walk, &name, h.act.bytes(), overlap);
                    spill::move_rows(walk, &name, true, h, 0, Loc::start(b), h.act.h);
                    BandOperand {
                        loc: Loc::start(b),
                        chan_pitch: h.act.band_chan_pitch(h.act.h),
                    }
                }
                Src::Sram(p) => BandOperand {
                    loc: Loc::new(p.buf, p.off + u64::from(y0) * u64::from(p.act.row_pitch)),
                    chan_pitch: p.act.chan_pitch,
                },
                Src::Dram(h) => {
                    let b = band_buf(walk, &name, u64::from(n) * h.act.row_bytes(), overlap);
                    spill::move_rows(walk, &name, true, h, y0, Loc::start(b), n);
                    BandOperand {
                        loc: Loc::start(b),
                        chan_pitch: h.act.band_chan_pitch(n),
                    }
                }
            };
            locs.push(loc);
        }
        let out_loc = match &out {
            Src::Sram(p) => BandOperand {
                loc: Loc::new(p.buf, p.off + u64::from(y0) * u64::from(p.act.row_pitch)),
                chan_pitch: p.act.chan_pitch,
            },
            Src::Dram(_) => {
                let size = u64::from(n) * o.row_bytes();
                BandOperand {
                    loc: Loc::start(band_buf(walk, &name, size, overlap)),
                    chan_pitch: o.band_chan_pitch(n),
                }
            }
        };
        for kind in job(n, &locs, out_loc) {
            total += kind.instr_count();
            walk.out.jobs.push(crate::base::job::Job {
                node: name.clone(),
                kind,
            });
        }
        for l in locs.iter().chain(std::iter::once(&out_loc)) {
            let b = &mut walk.out.bufs[l.loc.buf];
            b.last = b.last.max(walk.step);
        }
        if let Src::Dram(h) = &out {
            spill::move_rows(walk, &name, false, h, y0, out_loc.loc, n);
        }
        y0 += n;
    }
    for s in inputs.iter().chain(std::iter::once(&out)) {
        if let Src::Sram(p) = s {
            let b = &mut walk.out.bufs[p.buf];
            b.last = b.last.max(walk.step);
        }
    }
    if let Some(table) = table {
        let t = &mut walk.out.bufs[table];
        t.last = t.last.max(walk.step);
    }
    if let Src::Dram(h) = out {
        walk.out.sp.homes.insert(id, h);
    }
    let mnemonic = match &walk.g.node(id).op {
        Op::Nna(NnaOp::Eltwise(_)) => "ELTWISE",
        _ => "SCALE",
    };
    walk.out.layers.push(LayerTiles {
        layer: name.clone(),
        mnemonic: mnemonic.into(),
        tiles: total,
    });
    walk.out.sp.splits.push(SplitLayer {
        layer: name,
        bands: o.h.div_ceil(rows) as usize,
        groups: 1,
    });
    Ok(())
}

/// The output of a pixel-wise layer: as [`crate::place::spill::split_output`] when it runs in
/// bands, else a resident buffer (spilled whole after the layer if planned).
pub(crate) fn px_output(walk: &mut Walk<'_>, id: NodeId) -> Result<Src, Refusal> {
    if walk.out.sp.px_split {
        spill::split_output(walk, id)
    } else {
        Ok(Src::Sram(walk.define(id).map_err(Refusal::from)?))
    }
}

fn band_buf(walk: &mut Walk<'_>, name: &str, size: u64, overlap: bool) -> BufId {
    let b = walk.new_buf(name, size);
    if overlap {
        walk.out.bufs[b].first = walk.step.saturating_sub(1);
    }
    b
}

/// One operand of a band of a pixel-wise layer: where it is and its channel pitch
/// (a resident tensor keeps its own, a band buffer has `rows * row_pitch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BandOperand {
    pub(crate) loc: Loc,
    pub(crate) chan_pitch: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_rows_prefer_double_buffering() {
        assert_eq!(band_rows(10, 100, 1000, 3000), (10, true));
        assert_eq!(band_rows(100, 100, 1000, 3000), (10, true));
        assert_eq!(band_rows(100, 100, 1000, 1150), (1, false));
        assert_eq!(band_rows(100, 100, 1000, 1050), (1, false));
    }
}
