//! Tile geometry of compute instructions (docs/ISA.md section 5): which pixels of
//! which tensors a tile touches, as rectangles of rows and columns.

use crate::checks::DotKind;
use crate::layouts::{DotProduct, PoolKind};

/// Rows `y0 .. y0+rows`, columns `x0 .. x1` of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub y0: u64,
    pub rows: u64,
    pub x0: u64,
    pub x1: u64,
}

/// The flattened pixel range `start .. start+count` of a `w`-wide grid as at most three
/// rectangles (partial first row, full rows, partial last row).
pub fn tile_rects(start: u64, count: u64, w: u64) -> Vec<Rect> {
    let end = start + count;
    let mut p = start;
    let mut out = Vec::with_capacity(3);
    if w == 0 {
        return out;
    }
    if !p.is_multiple_of(w) && p < end {
        let y = p / w;
        let x1 = w.min(end - y * w);
        out.push(Rect {
            y0: y,
            rows: 1,
            x0: p % w,
            x1,
        });
        p = y * w + x1;
    }
    let full = end.saturating_sub(p) / w;
    if full > 0 {
        out.push(Rect {
            y0: p / w,
            rows: full,
            x0: 0,
            x1: w,
        });
        p += full * w;
    }
    if p < end {
        out.push(Rect {
            y0: p / w,
            rows: 1,
            x0: 0,
            x1: end - p,
        });
    }
    out
}

/// Inclusive output rows and columns a tile's pixels lie in (columns: the whole width
/// unless the tile is inside one row).
fn tile_box(start: u64, count: u64, w: u64) -> ((i64, i64), (i64, i64)) {
    let last = start + count - 1;
    let (oy0, oy1) = (start / w, last / w);
    let cols = if oy0 == oy1 {
        (start % w, last % w)
    } else {
        (0, w - 1)
    };
    ((oy0 as i64, oy1 as i64), (cols.0 as i64, cols.1 as i64))
}

/// Input rows (or columns) read for outputs `lo..=hi` along one axis, clipped to
/// `0..len`; `None` if no input position is read.
fn input_span(
    kind: DotKind,
    (lo, hi): (i64, i64),
    stride: u32,
    pad: u32,
    dil: u32,
    k: u32,
    len: u32,
) -> Option<(u64, u64)> {
    let (s, pad, reach) = (
        i64::from(stride),
        i64::from(pad),
        i64::from(dil) * (i64::from(k) - 1),
    );
    let (a, b) = if kind == DotKind::Deconv {
        // Tap (o, k) reads input (o + pad - k*dil) / stride when that is exact.
        let t0 = (lo + pad - reach).max(0);
        let t1 = hi + pad;
        ((t0 + s - 1) / s, t1.div_euclid(s))
    } else {
        (lo * s - pad, hi * s - pad + reach)
    };
    let (a, b) = (a.max(0), b.min(i64::from(len) - 1));
    (a <= b).then_some((a as u64, b as u64 + 1))
}

/// The input window of a dot-product tile: rows and columns (over-approximated by the
/// bounding box of the kernel windows of the tile's pixels) and the channel range of
/// the groups its output channels belong to.
pub struct DotInput {
    pub rect: Rect,
    pub c0: u64,
    pub channels: u64,
}

pub fn dot_input(d: &DotProduct, kind: DotKind) -> Option<DotInput> {
    let (rows, cols) = tile_box(d.pix_start.into(), d.pix_count.into(), d.out_w.into());
    let (y0, y1) = input_span(
        kind, rows, d.stride_h, d.pad_top, d.dil_h, d.kernel_h, d.in_h,
    )?;
    let (x0, x1) = input_span(
        kind, cols, d.stride_w, d.pad_left, d.dil_w, d.kernel_w, d.in_w,
    )?;
    let icpg = u64::from(d.in_c / d.groups);
    let ocpg = u64::from(d.out_c / d.groups);
    let g0 = u64::from(d.oc_start) / ocpg;
    let g1 = (u64::from(d.oc_start) + u64::from(d.oc_count) - 1) / ocpg;
    Some(DotInput {
        rect: Rect {
            y0,
            rows: y1 - y0,
            x0,
            x1,
        },
        c0: g0 * icpg,
        channels: (g1 - g0 + 1) * icpg,
    })
}

/// Bytes from `w_addr` to the end of the last weight a tile reads: the weight blocks
/// of all output-channel groups it spans, or with a `w_pitch` its `K` vectors of
/// `oc_count` bytes.
pub fn weight_bytes(d: &DotProduct, mac_cols: u32) -> u64 {
    let k = d.k_terms();
    if d.w_pitch != 0 {
        return (k.max(1) - 1) * u64::from(d.w_pitch) + u64::from(d.oc_count);
    }
    let cols = u64::from(mac_cols.max(1));
    let q0 = u64::from(d.oc_start) / cols;
    let q1 = (u64::from(d.oc_start) + u64::from(d.oc_count) - 1) / cols;
    (q1 - q0 + 1) * k * cols
}

/// The pooled pixels a tile writes, exactly: one row segment `(py, px0..px1)` per run.
/// Pooled pixel (py, px) is written iff every in-range position of its window lies in
/// the tile's pixel range; the in-range window is a rectangle, so it suffices that its
/// first and last positions (in raster order) do.
pub fn pooled_runs(d: &DotProduct) -> Vec<Rect> {
    let mut out = Vec::new();
    let Some((ph, pw)) = d.stored_hw() else {
        return out;
    };
    if d.pool == PoolKind::None || d.pool_stride == 0 {
        return out;
    }
    let (w, h) = (i64::from(d.out_w), i64::from(d.out_h));
    let (p0, p1) = (
        i64::from(d.pix_start),
        i64::from(d.pix_start) + i64::from(d.pix_count),
    );
    let (s, win) = (i64::from(d.pool_stride), i64::from(d.pool_win));
    let window = |p: i64, pad: u32, len: i64| {
        let a = p * s - i64::from(pad);
        (a.max(0), (a + win - 1).min(len - 1))
    };
    let (oy0, oy1) = (p0 / w, (p1 - 1) / w);
    let py_lo = (oy0 + i64::from(d.pool_pad_top) - win + 1).max(0) / s;
    let py_hi = ((oy1 + i64::from(d.pool_pad_top)) / s).min(i64::from(ph) - 1);
    for py in py_lo..=py_hi {
        let (ry0, ry1) = window(py, d.pool_pad_top, h);
        let mut run: Option<(i64, i64)> = None;
        for px in 0..i64::from(pw) {
            let (rx0, rx1) = window(px, d.pool_pad_left, w);
            if ry0 * w + rx0 >= p0 && ry1 * w + rx1 < p1 {
                run = Some(run.map_or((px, px + 1), |(a, _)| (a, px + 1)));
            } else if let Some((a, b)) = run.take() {
                out.push(row_rect(py, a, b));
            }
        }
        if let Some((a, b)) = run {
            out.push(row_rect(py, a, b));
        }
    }
    out
}

fn row_rect(y: i64, x0: i64, x1: i64) -> Rect {
    Rect {
        y0: y as u64,
        rows: 1,
        x0: x0 as u64,
        x1: x1 as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_rects_split_partial_rows() {
        let r = tile_rects(3, 20, 8);
        assert_eq!(
            r,
            vec![
                Rect {
                    y0: 0,
                    rows: 1,
                    x0: 3,
                    x1: 8
                },
                Rect {
                    y0: 1,
                    rows: 1,
                    x0: 0,
                    x1: 8
                },
                Rect {
                    y0: 2,
                    rows: 1,
                    x0: 0,
                    x1: 7
                },
            ]
        );
        assert_eq!(
            tile_rects(0, 16, 8),
            vec![Rect {
                y0: 0,
                rows: 2,
                x0: 0,
                x1: 8
            }]
        );
        assert_eq!(
            tile_rects(2, 3, 8),
            vec![Rect {
                y0: 0,
                rows: 1,
                x0: 2,
                x1: 5
            }]
        );
    }

    #[test]
    fn conv_input_rows_include_the_kernel_extent() {
        // 3x3 conv, pad 1, 8x8: output row 2 (pixels 16..24) reads input rows 1..=3.
        let (rows, cols) = tile_box(16, 8, 8);
        assert_eq!(input_span(DotKind::Conv, rows, 1, 1, 1, 3, 8), Some((1, 4)));
        assert_eq!(input_span(DotKind::Conv, cols, 1, 1, 1, 3, 8), Some((0, 8)));
        // Deconv stride 2, kernel 2: output rows 4..=5 come from input row 2 only.
        assert_eq!(
            input_span(DotKind::Deconv, (4, 5), 2, 0, 1, 2, 4),
            Some((2, 3))
        );
    }
}
