//! A pooled dot-product layer next to a DRAM transfer, tiled in bands of pooled rows.
//!
//! A pooled layer is normally one pixel tile: the pooling unit writes a pooled pixel
//! only from an instruction whose tile holds its whole window (docs/ISA.md 5, CONV), so
//! one tile of every output pixel pools everything. But a single instruction cannot
//! start before its whole input is in SRAM, and its output cannot leave before it
//! ends: the first convolution waits for the whole image, and a pooled layer feeding
//! a host op keeps the operand's DMA (`bands.rs`) waiting until it is done.
//!
//! When the layer reads or writes a tensor of at least [`MIN_DMA_BYTES`] across DRAM,
//! it is cut instead into bands of pooled rows, each band one pixel tile (with every
//! channel group) of the pre-pool rows its windows cover: rows
//! `p0*s - pad_top .. (p1-1)*s - pad_top + win` for pooled rows `p0..p1`, clipped to
//! the output. Neighbouring bands overlap by `win - s` pre-pool rows, which both
//! compute (the same values: the tiles read the same input): the price of the bands.
//! [`count`] keeps that recomputation, with the partly filled last pass of every
//! band, within [`MAX_RECOMPUTE_PERCENT`] of the layer's passes.
//! Every pooled row lies in one band with its whole window, so every pooled pixel is
//! written; a pooled row whose window also fits in a neighbour's range is written
//! twice with the same code. Bands whose tiles would break the address sequencer's
//! slice rule (`seq_rule.rs`) are not used: the layer stays one tile.

use crate::base::job::{tiles, DotOpcode, Tile};
use crate::place::split::pooled_rows_span;
use crate::schedule::seq_tiles::range_fits;
use nnac_isa::{DotProduct, PoolKind};

/// The least bytes of a DRAM transfer next to a pooled layer for it to be cut in
/// bands: below, the DMA takes little more than its latency and bands gain nothing.
pub(crate) const MIN_DMA_BYTES: u64 = 16 * 1024;
/// Most bands a pooled layer is cut into.
const MAX_BANDS: u32 = 8;
/// Most passes the bands add, in percent of the one tile's.
const MAX_RECOMPUTE_PERCENT: u32 = 4;

/// How many bands of pooled rows to cut the pooled template `t` into: the most, up
/// to [`MAX_BANDS`], whose passes of `mac_rows` pixels (the overlapping rows and the
/// partly filled last pass of every band included) stay within
/// [`MAX_RECOMPUTE_PERCENT`] of the one tile's.
pub(crate) fn count(t: &DotProduct, mac_rows: u32) -> u32 {
    let passes = |ranges: &[(u32, u32)]| -> u64 {
        ranges
            .iter()
            .map(|&(_, c)| u64::from(c.div_ceil(mac_rows.max(1))))
            .sum()
    };
    let one = passes(&[(0, t.out_h * t.out_w)]);
    (2..=MAX_BANDS)
        .rev()
        .find(|&n| {
            band_ranges(t, n).is_some_and(|r| {
                r.len() as u32 == n
                    && passes(&r) * 100 <= one * u64::from(100 + MAX_RECOMPUTE_PERCENT)
            })
        })
        .unwrap_or(1)
}

/// The tiles of the pooled template `t` in `n` bands of pooled rows (band-major,
/// channel groups of `mac_cols` inner), or one tile of all pixels when `n` is 1 or a
/// band would break the slice rule.
pub(crate) fn tiles_in_bands(
    t: &DotProduct,
    opcode: DotOpcode,
    n: u32,
    mac_rows: u32,
    mac_cols: u32,
) -> Vec<Tile> {
    let pixels = t.out_h * t.out_w;
    let whole = || tiles(pixels, t.out_c, pixels, mac_cols);
    let ranges = match band_ranges(t, n) {
        Some(r) if r.len() > 1 => r,
        _ => return whole(),
    };
    if !ranges
        .iter()
        .all(|&(s, c)| range_fits(t, opcode, s, c, mac_rows))
    {
        return whole();
    }
    ranges
        .into_iter()
        .flat_map(|(pix_start, pix_count)| {
            tiles(pix_count, t.out_c, pix_count, mac_cols)
                .into_iter()
                .map(move |tile| Tile {
                    pix_start: pix_start + tile.pix_start,
                    ..tile
                })
        })
        .collect()
}

/// The pixel ranges `(pix_start, pix_count)` of `n` bands of pooled rows.
fn band_ranges(t: &DotProduct, n: u32) -> Option<Vec<(u32, u32)>> {
    let (ph, _) = t.stored_hw()?;
    if t.pool == PoolKind::None || n <= 1 {
        return None;
    }
    let rows = ph.div_ceil(n);
    let mut out = Vec::new();
    let mut p0 = 0;
    while p0 < ph {
        let p1 = (p0 + rows).min(ph);
        let (c0, c1) = pooled_rows_span(t, p0, p1);
        let (c0, c1) = (c0.max(0), c1.min(i64::from(t.out_h)));
        if c1 <= c0 {
            return None;
        }
        let (c0, c1) = (c0 as u32, c1 as u32);
        out.push((c0 * t.out_w, (c1 - c0) * t.out_w));
        p0 = p1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ResNet-50's first layer: 7x7/2 conv to 112x112, 3x3/2 max pool pad 1 to 56x56.
    fn conv1() -> DotProduct {
        DotProduct {
            in_c: 3,
            in_h: 224,
            in_w: 224,
            out_c: 64,
            out_h: 112,
            out_w: 112,
            kernel_h: 7,
            kernel_w: 7,
            stride_h: 2,
            stride_w: 2,
            pad_top: 3,
            pad_left: 3,
            pad_bottom: 2,
            pad_right: 2,
            dil_h: 1,
            dil_w: 1,
            groups: 1,
            pool: PoolKind::Max,
            pool_win: 3,
            pool_stride: 2,
            pool_pad_top: 1,
            pool_pad_left: 1,
            pool_pad_bottom: 0,
            pool_pad_right: 0,
            ..DotProduct::default()
        }
    }

    #[test]
    fn bands_cover_every_pooled_row_with_its_window() {
        let t = conv1();
        // One tile: ceil(112 * 112 / 96) = 131 passes; the most bands within 4% more.
        let n = count(&t, 96);
        let r = band_ranges(&t, n).unwrap();
        assert_eq!(r.len() as u32, n);
        let passes: u32 = r.iter().map(|&(_, c)| c.div_ceil(96)).sum();
        assert!(
            n > 1 && passes * 100 <= 131 * 104,
            "{n} bands, {passes} passes"
        );
        assert!(band_ranges(&t, n + 1).is_none_or(|r| {
            r.iter().map(|&(_, c)| c.div_ceil(96)).sum::<u32>() * 100 > 131 * 104
        }));
        let (ph, _) = t.stored_hw().unwrap();
        for py in 0..ph as i64 {
            let lo = (py * 2 - 1).max(0) as u32 * 112;
            let hi = ((py * 2 + 2).min(112)) as u32 * 112;
            assert!(
                r.iter().any(|&(s, c)| s <= lo && hi <= s + c),
                "pooled row {py} has no band holding its window"
            );
        }
        // Consecutive bands overlap by win - stride = 1 row, no more.
        for w in r.windows(2) {
            assert_eq!(w[0].0 + w[0].1 - w[1].0, 112);
        }
        assert_eq!(r.last().map(|&(s, c)| s + c), Some(112 * 112));
    }

    #[test]
    fn few_rows_or_no_pool_stay_one_band() {
        let mut t = conv1();
        t.out_h = 3;
        t.out_w = 3;
        t.pool_pad_top = 0;
        assert_eq!(t.stored_hw().map(|(h, _)| h), Some(1));
        assert_eq!(count(&t, 96), 1);
        let mut t = conv1();
        t.pool = PoolKind::None;
        assert_eq!(count(&t, 96), 1);
    }
}
