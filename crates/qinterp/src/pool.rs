//! The pooling unit on 8-bit codes `[C, H, W]`: max ignores padding; average sums the
//! window (padded positions read the output zero point when `count_include_pad`,
//! otherwise they are left out) and divides by the count, rounding half away from
//! zero (docs/ISA.md, fused pooling).

use nnac_ir::{PoolKind, PoolStage};

pub fn pool(p: &PoolStage, x: &[i32], c: usize, h: usize, w: usize, zp: i32) -> Vec<i32> {
    let [oh, ow] = p.out_hw(h, w).expect("checked by the verifier");
    let mut out = Vec::with_capacity(c * oh * ow);
    for ch in 0..c {
        for oy in 0..oh {
            for ox in 0..ow {
                out.push(window(p, x, ch, h, w, oy, ox, zp));
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn window(
    p: &PoolStage,
    x: &[i32],
    ch: usize,
    h: usize,
    w: usize,
    oy: usize,
    ox: usize,
    zp: i32,
) -> i32 {
    let (mut best, mut sum, mut n) = (i32::MIN, 0i64, 0i64);
    for ky in 0..p.kernel[0] {
        let iy = (oy * p.strides[0] + ky) as isize - p.pads[0] as isize;
        for kx in 0..p.kernel[1] {
            let ix = (ox * p.strides[1] + kx) as isize - p.pads[1] as isize;
            let inside = iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w;
            // Positions past the padded input (ceil-mode tails) never count.
            let in_padded = iy < (h + p.pads[2]) as isize && ix < (w + p.pads[3]) as isize;
            if inside {
                let v = x[(ch * h + iy as usize) * w + ix as usize];
                best = best.max(v);
                sum += i64::from(v);
                n += 1;
            } else if p.count_include_pad && in_padded {
                sum += i64::from(zp);
                n += 1;
            }
        }
    }
    match p.kind {
        PoolKind::Max => best,
        PoolKind::Avg => div_round(sum, n.max(1)) as i32,
    }
}

/// `sum / n` (`n` > 0) rounded to nearest, ties away from zero.
pub fn div_round(sum: i64, n: i64) -> i64 {
    let q = (2 * sum.abs() + n) / (2 * n);
    if sum < 0 {
        -q
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_division() {
        assert_eq!(div_round(5, 2), 3);
        assert_eq!(div_round(-5, 2), -3);
        assert_eq!(div_round(-3, 2), -2);
        assert_eq!(div_round(-1, 2), -1);
        assert_eq!(div_round(7, 3), 2);
        assert_eq!(div_round(-7, 3), -2);
        assert_eq!(div_round(8, 3), 3);
    }
}
