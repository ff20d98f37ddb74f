//! The fused pooling unit: max or average over 2x2 / 3x3 windows of the SIMD output
//! (8-bit codes), in the shadow of the producing dot-product instruction.

use super::tensor::PixRange;
use crate::error::ExecError;
use nnac_isa::arith::code_value;
use nnac_isa::{DotProduct, PoolKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolGeom {
    pub kind: PoolKind,
    pub win: u64,
    pub stride: u64,
    pub pad_top: u64,
    pub pad_left: u64,
    /// Pre-pool (convolution output) extent.
    pub in_h: u64,
    pub in_w: u64,
    /// Pooled extent.
    pub out_h: u64,
    pub out_w: u64,
    pub count_pad: bool,
    pub out_zero: i32,
    pub signed: bool,
}

/// One pooled pixel and the pre-pool window feeding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub py: u64,
    pub px: u64,
    /// Pre-pool rows `[y0, y1)` and columns `[x0, x1)` inside the tensor.
    pub y0: u64,
    pub y1: u64,
    pub x0: u64,
    pub x1: u64,
}

impl PoolGeom {
    pub fn new(kind: PoolKind, d: &DotProduct) -> Result<PoolGeom, ExecError> {
        let u = u64::from;
        if !(d.pool_win == 2 || d.pool_win == 3) || !(d.pool_stride == 1 || d.pool_stride == 2) {
            return Err(ExecError::PoolShape {
                win: d.pool_win,
                stride: d.pool_stride,
            });
        }
        let win = u(d.pool_win);
        let pads = [
            d.pool_pad_top,
            d.pool_pad_left,
            d.pool_pad_bottom,
            d.pool_pad_right,
        ];
        if pads.iter().any(|&p| u(p) >= win) {
            return Err(ExecError::PoolPads { pads, win });
        }
        let eh = u(d.out_h) + u(d.pool_pad_top) + u(d.pool_pad_bottom);
        let ew = u(d.out_w) + u(d.pool_pad_left) + u(d.pool_pad_right);
        if eh < win || ew < win {
            return Err(ExecError::PoolWindow {
                win,
                padded_h: eh,
                padded_w: ew,
            });
        }
        let s = u(d.pool_stride);
        Ok(PoolGeom {
            kind,
            win,
            stride: s,
            pad_top: u(d.pool_pad_top),
            pad_left: u(d.pool_pad_left),
            in_h: u(d.out_h),
            in_w: u(d.out_w),
            out_h: (eh - win) / s + 1,
            out_w: (ew - win) / s + 1,
            count_pad: d.pool_count_pad,
            out_zero: i32::from(d.out_zero),
            signed: d.out_signed,
        })
    }

    fn window(&self, py: u64, px: u64) -> Window {
        let y = (py * self.stride) as i64 - self.pad_top as i64;
        let x = (px * self.stride) as i64 - self.pad_left as i64;
        let clip = |v: i64, n: u64| v.clamp(0, n as i64) as u64;
        Window {
            py,
            px,
            y0: clip(y, self.in_h),
            y1: clip(y + self.win as i64, self.in_h),
            x0: clip(x, self.in_w),
            x1: clip(x + self.win as i64, self.in_w),
        }
    }

    /// The pooled pixels a tile produces: those whose whole window lies in the tile's
    /// pre-pool pixel range.
    pub fn windows_in(&self, tile: &PixRange) -> Vec<Window> {
        let mut out = Vec::new();
        if tile.count == 0 {
            return out;
        }
        let (r0, r1) = tile.rows();
        for py in 0..self.out_h {
            // A window with a row outside the tile's rows is not inside it.
            let rows = self.window(py, 0);
            if rows.y0 < r0 || rows.y1 > r1 + 1 {
                continue;
            }
            for px in 0..self.out_w {
                let w = self.window(py, px);
                if w.y0 >= w.y1 || w.x0 >= w.x1 {
                    continue;
                }
                let first = w.y0 * self.in_w + w.x0;
                let last = (w.y1 - 1) * self.in_w + (w.x1 - 1);
                if first >= tile.start && last < tile.end() {
                    out.push(w);
                }
            }
        }
        out
    }

    /// Pools every channel of one window: `out[c]` from byte `c` of the pre-pool
    /// pixels' rows, `row(y, x)` (at least `out.len()` bytes each).
    pub fn reduce<'a>(&self, w: &Window, row: impl Fn(u64, u64) -> &'a [u8], out: &mut [u8]) {
        let n = out.len();
        let pixels = (w.y0..w.y1).flat_map(|y| (w.x0..w.x1).map(move |x| (y, x)));
        match self.kind {
            PoolKind::Max => {
                // Signed codes compare as unsigned bytes with the sign bit flipped.
                let flip = if self.signed { 0x80 } else { 0 };
                out.fill(0);
                let mut first = true;
                for (y, x) in pixels {
                    let r = &row(y, x)[..n];
                    for (o, &b) in out.iter_mut().zip(r) {
                        *o = if first { b ^ flip } else { (*o).max(b ^ flip) };
                    }
                    first = false;
                }
                if !first {
                    out.iter_mut().for_each(|o| *o ^= flip);
                }
            }
            _ => {
                let mut sums = vec![0i32; n];
                for (y, x) in pixels {
                    let r = &row(y, x)[..n];
                    for (s, &b) in sums.iter_mut().zip(r) {
                        *s += code_value(b, self.signed);
                    }
                }
                let valid = (w.y1 - w.y0) * (w.x1 - w.x0);
                let full = self.win * self.win;
                let (pad, count) = if self.count_pad {
                    ((full - valid) as i64 * i64::from(self.out_zero), full)
                } else {
                    (0, valid)
                };
                for (o, &s) in out.iter_mut().zip(&sums) {
                    let avg = div_round_half_away(i64::from(s) + pad, count as i64);
                    *o = nnac_isa::arith::saturate8(avg, self.signed);
                }
            }
        }
    }
}

/// `n / d` rounded to nearest, ties away from zero (`d` > 0).
pub fn div_round_half_away(n: i64, d: i64) -> i64 {
    let q = (2 * n.abs() + d) / (2 * d);
    if n < 0 {
        -q
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(kind: PoolKind, (win, stride): (u64, u64), pads: (u64, u64), signed: bool) -> PoolGeom {
        let (in_h, in_w) = (7, 9);
        PoolGeom {
            kind,
            win,
            stride,
            pad_top: pads.0,
            pad_left: pads.1,
            in_h,
            in_w,
            out_h: (in_h + 2 * pads.0 - win) / stride + 1,
            out_w: (in_w + 2 * pads.1 - win) / stride + 1,
            count_pad: pads.0 == 1,
            out_zero: -3,
            signed,
        }
    }

    /// Every window and channel against the definition: the largest code (by value)
    /// or the average of the window's codes (padding counted as the output zero point
    /// with `count_pad`), rounded half away from zero and saturated.
    #[test]
    fn channel_rows_pool_as_each_channel_alone() {
        let n = 37;
        let code = |y: u64, x: u64, c: usize| ((y * 61 + x * 17) as usize * 29 + c * 83) as u8;
        let rows: Vec<Vec<u8>> = (0..7 * 9)
            .map(|p| (0..n).map(|c| code(p / 9, p % 9, c)).collect())
            .collect();
        for kind in [PoolKind::Max, PoolKind::Avg] {
            for (win, stride, pads) in [(3, 2, (1, 1)), (2, 2, (0, 0)), (3, 1, (2, 0))] {
                for signed in [false, true] {
                    let g = geom(kind, (win, stride), pads, signed);
                    for py in 0..g.out_h {
                        for px in 0..g.out_w {
                            let w = g.window(py, px);
                            let mut got = vec![0u8; n];
                            g.reduce(&w, |y, x| &rows[(y * 9 + x) as usize], &mut got);
                            for (c, &got) in got.iter().enumerate() {
                                let vals: Vec<i64> = (w.y0..w.y1)
                                    .flat_map(|y| (w.x0..w.x1).map(move |x| (y, x)))
                                    .map(|(y, x)| i64::from(code_value(code(y, x, c), signed)))
                                    .collect();
                                let want = match kind {
                                    PoolKind::Max => *vals.iter().max().unwrap(),
                                    _ => {
                                        let full = (win * win) as i64;
                                        let (sum, count) = if g.count_pad {
                                            let pad = (full - vals.len() as i64) * -3;
                                            (vals.iter().sum::<i64>() + pad, full)
                                        } else {
                                            (vals.iter().sum(), vals.len() as i64)
                                        };
                                        let q = (2 * sum.abs() + count) / (2 * count);
                                        (if sum < 0 { -q } else { q }).clamp(
                                            if signed { -128 } else { 0 },
                                            if signed { 127 } else { 255 },
                                        )
                                    }
                                };
                                assert_eq!(
                                    i64::from(code_value(got, signed)),
                                    want,
                                    "{kind:?} {w:?} c{c}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The windows wholly inside a tile, for tiles starting and ending anywhere.
    #[test]
    fn windows_in_a_tile_are_those_wholly_inside() {
        for (win, stride, pads) in [(3, 2, (1, 1)), (2, 2, (0, 0)), (3, 1, (2, 0))] {
            let g = geom(PoolKind::Max, (win, stride), pads, false);
            for start in 0..63 {
                for count in 0..=63 - start {
                    let tile = PixRange {
                        start,
                        count,
                        width: 9,
                    };
                    let mut want = Vec::new();
                    for py in 0..g.out_h {
                        for px in 0..g.out_w {
                            let w = g.window(py, px);
                            let first = w.y0 * 9 + w.x0;
                            let last = (w.y1 - 1) * 9 + (w.x1 - 1);
                            if w.y0 < w.y1 && w.x0 < w.x1 && first >= start && last < start + count
                            {
                                want.push(w);
                            }
                        }
                    }
                    assert_eq!(g.windows_in(&tile), want, "{start}+{count}");
                }
            }
        }
    }

    #[test]
    fn rounding_of_averages() {
        assert_eq!(div_round_half_away(5, 2), 3);
        assert_eq!(div_round_half_away(-5, 2), -3);
        assert_eq!(div_round_half_away(4, 3), 1);
        assert_eq!(div_round_half_away(-5, 3), -2);
        assert_eq!(div_round_half_away(0, 9), 0);
    }
}
