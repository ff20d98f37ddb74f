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
        for py in 0..self.out_h {
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

    /// Pools one channel of one window. `at(y, x)` returns the pre-pool code byte.
    pub fn reduce(&self, w: &Window, at: impl Fn(u64, u64) -> u8) -> u8 {
        let vals = (w.y0..w.y1).flat_map(|y| (w.x0..w.x1).map(move |x| (y, x)));
        let valid = (w.y1 - w.y0) * (w.x1 - w.x0);
        match self.kind {
            PoolKind::Max => vals
                .map(|(y, x)| at(y, x))
                .max_by_key(|&b| code_value(b, self.signed))
                .unwrap_or(0),
            _ => {
                let sum: i64 = vals
                    .map(|(y, x)| i64::from(code_value(at(y, x), self.signed)))
                    .sum();
                let full = self.win * self.win;
                let (sum, count) = if self.count_pad {
                    (sum + (full - valid) as i64 * i64::from(self.out_zero), full)
                } else {
                    (sum, valid)
                };
                let avg = div_round_half_away(sum, count as i64);
                nnac_isa::arith::saturate8(avg, self.signed)
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

    #[test]
    fn rounding_of_averages() {
        assert_eq!(div_round_half_away(5, 2), 3);
        assert_eq!(div_round_half_away(-5, 2), -3);
        assert_eq!(div_round_half_away(4, 3), 1);
        assert_eq!(div_round_half_away(-5, 3), -2);
        assert_eq!(div_round_half_away(0, 9), 0);
    }
}
