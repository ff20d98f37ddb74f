//! Tiles that keep the address sequencer's slice rule (docs/ISA.md 4.1).
//!
//! With the planar layout a slice of 8 output pixels inside one output row reads
//! input bytes at most `7 * stride` apart. A slice that crosses from output row `oy`
//! to `oy + 1` (only when `out_w` is not a multiple of 8) also jumps `stride` input
//! rows back to column 0: about `stride * (row_pitch - out_w + 7)` bytes, which breaks
//! the rule for wide rows at stride 2 and above. [`retile`] re-tiles every unpooled
//! dot-product job that has such a slice into tiles of whole output rows (rows wider
//! than a tile in chunks of the tile width), so no slice crosses a row; jobs that keep
//! the rule keep their tiles. Pooled jobs are one tile (every pooling window must lie
//! inside it), or bands of whole pooled rows (`pool_bands.rs`, which checks the rule
//! for each band with [`range_fits`]), and are left as they are: an unsplit pooled layer whose tile would break
//! the rule runs its pooling apart (`pool_apart.rs`, decided with [`whole_fits`]); a
//! split one is reported by the rule check after emission.

use crate::base::job::{DotOpcode, Job, JobKind, Tile};
use crate::schedule::seq_rule::widest_slice;
use nnac_isa::checks::DotKind;
use nnac_isa::{DotProduct, PoolKind};

/// Whether every slice of `tile` of the job template `t` is one load.
fn tile_fits(t: &DotProduct, kind: DotKind, tile: &Tile, mac_rows: u32) -> bool {
    let d = DotProduct {
        pix_start: tile.pix_start,
        pix_count: tile.pix_count,
        ..t.clone()
    };
    widest_slice(&d, kind, mac_rows).is_none_or(|w| w.fits())
}

/// The ISA kind of a dot-product opcode.
fn isa_kind(opcode: DotOpcode) -> DotKind {
    match opcode {
        DotOpcode::Conv => DotKind::Conv,
        DotOpcode::Deconv => DotKind::Deconv,
        DotOpcode::Inner => DotKind::InnerProduct,
    }
}

/// Whether the pixels `pix_start..+pix_count` of `t` as one tile keep the rule.
pub(crate) fn range_fits(
    t: &DotProduct,
    opcode: DotOpcode,
    pix_start: u32,
    pix_count: u32,
    mac_rows: u32,
) -> bool {
    let tile = Tile {
        pix_start,
        pix_count,
        c_start: 0,
        c_count: 1,
    };
    tile_fits(t, isa_kind(opcode), &tile, mac_rows)
}

/// Whether the template `t` as one tile of its whole output keeps the rule.
pub(crate) fn whole_fits(t: &DotProduct, opcode: DotOpcode, mac_rows: u32) -> bool {
    range_fits(t, opcode, 0, t.out_h * t.out_w, mac_rows)
}

/// Tiles of every output row of an `out_h x out_w` output in chunks of at most `tp`
/// pixels, each with every channel range of `chans` (pixel-major, like
/// [`crate::base::job::tiles`]).
fn row_tiles(out_h: u32, out_w: u32, tp: u32, chans: &[(u32, u32)]) -> Vec<Tile> {
    let mut out = Vec::new();
    for y in 0..out_h {
        let mut x = 0;
        while x < out_w {
            let n = tp.min(out_w - x);
            out.extend(chans.iter().map(|&(c_start, c_count)| Tile {
                pix_start: y * out_w + x,
                pix_count: n,
                c_start,
                c_count,
            }));
            x += n;
        }
    }
    out
}

/// Re-tiles the dot-product jobs whose slices cross output rows and break the rule
/// (see the module doc). Returns `(job index, tiles added)` per retiled job.
pub(crate) fn retile(jobs: &mut [Job], mac_rows: u32) -> Vec<(usize, isize)> {
    let mut changed = Vec::new();
    for (j, job) in jobs.iter_mut().enumerate() {
        let JobKind::Dot {
            opcode, t, tiles, ..
        } = &mut job.kind
        else {
            continue;
        };
        if t.pool != PoolKind::None || t.out_w == 0 {
            continue;
        }
        let kind = isa_kind(*opcode);
        // Tiles of one pixel range share their slices: check each range once.
        let mut ranges: Vec<(u32, u32)> =
            tiles.iter().map(|t| (t.pix_start, t.pix_count)).collect();
        ranges.dedup();
        let breaks = ranges.iter().any(|&(pix_start, pix_count)| {
            let tile = Tile {
                pix_start,
                pix_count,
                c_start: 0,
                c_count: 1,
            };
            !tile_fits(t, kind, &tile, mac_rows)
        });
        if !breaks {
            continue;
        }
        let mut chans: Vec<(u32, u32)> = Vec::new();
        for tile in tiles.iter() {
            if !chans.contains(&(tile.c_start, tile.c_count)) {
                chans.push((tile.c_start, tile.c_count));
            }
        }
        let tp = tiles.iter().map(|t| t.pix_count).max().unwrap_or(1);
        let new = row_tiles(t.out_h, t.out_w, tp, &chans);
        changed.push((j, new.len() as isize - tiles.len() as isize));
        *tiles = new;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_tiles_never_cross_rows_and_cover_once() {
        let v = row_tiles(2, 150, 96, &[(0, 96), (96, 4)]);
        let spans: Vec<(u32, u32, u32)> = v
            .iter()
            .map(|t| (t.pix_start, t.pix_count, t.c_start))
            .collect();
        assert_eq!(
            spans,
            vec![
                (0, 96, 0),
                (0, 96, 96),
                (96, 54, 0),
                (96, 54, 96),
                (150, 96, 0),
                (150, 96, 96),
                (246, 54, 0),
                (246, 54, 96)
            ]
        );
    }
}
