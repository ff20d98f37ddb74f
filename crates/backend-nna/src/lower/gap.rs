//! Global average pool as one CONV with the channels as output pixels.
//!
//! The passes lower a global average pool to a depthwise convolution whose kernel
//! covers the whole `H x W` input (`lower_pools`). Run as such, a depthwise CONV takes
//! one pass per channel: the 96 MAC columns share one activation vector, so only one
//! column does useful work and every channel costs `H*W` cycles (ResNet-50's 7x7x2048
//! pool: 100,352 cycles).
//!
//! When every channel has the same weights, bias and epilogue entry (a pool's `1/N`
//! weights always do), the same sums come out of one CONV over the input stored
//! HWC (`chan_pitch = 1`, `pix_pitch = C`; the walk stores the producer's output so
//! when the pool is its only reader other than ELTWISE ops, `lower::graph::plan_hwc`) and
//! read differently: `in_h = H*W` rows of `in_w = C` one-channel pixels, with
//! `in_row_pitch` = the tensor's pixel pitch and `in_pix_pitch = 1`, a `H*W x 1`
//! kernel, `out_c = 1`. Output pixel `c` sums `x[r*PP + c]` over the rows `r`, i.e.
//! channel `c` over all pixels, and is written at `out_addr + c`: the `1x1xC` HWC
//! output. 96 channels per pass: `ceil(C/96) * H*W` cycles (1,078 for ResNet-50). A
//! slice of 8 output pixels reads 8 consecutive bytes, so the 256-byte rule holds
//! (read planar, channels `H*W` bytes apart, it would not). More than 255 taps (the
//! 8-bit `kernel_h`) are regrouped as `k1` rows of `k2` (`H*W = k1*k2`): rows
//! `k2*PP` bytes apart, a `k1 x k2` kernel whose columns are `dil_w = PP` bytes
//! apart (so `PP <= 255`), `in_w = (k2-1)*PP + C`: output pixel `c` still reads
//! `x[(r*k2 + j)*PP + c]` over every tap (PP-OCR's classifier: 3 x 96 and 12 x 96 maps).
//! The integer arithmetic is term for term the depthwise one, so results are
//! bit-exact with the quantized reference interpreter.

use crate::base::act::Act;
use crate::base::params::weight_blocks;
use crate::base::params::DotParams;
use crate::error::{Limit, Refusal};
use nnac_isa::checks::DotKind;
use nnac_isa::{DotProduct, PoolKind};

/// Largest value of the 8-bit `kernel_h`, `kernel_w` and `dil_w` fields.
const MAX_FIELD: u32 = 255;

/// The kernel of the channels-as-pixels CONV over `taps` pixels stored HWC with pixel
/// pitch `pp`: `(kernel_h, kernel_w)`. Up to 255 taps one column of `taps` rows (row
/// pitch `pp`); more, when `pp` fits `dil_w`, `k1` rows of `k2` taps (`taps = k1 *
/// k2`, row pitch `k2 * pp`, the columns `dil_w = pp` bytes apart), `k2` the largest
/// divisor that leaves `k1 <= 255`. `None` if neither fits the fields.
fn kernel(taps: u32, pp: u32) -> Option<(u32, u32)> {
    if taps <= MAX_FIELD {
        return Some((taps, 1));
    }
    if pp > MAX_FIELD {
        return None;
    }
    (1..=MAX_FIELD)
        .rev()
        .find(|&k2| taps.is_multiple_of(k2) && taps / k2 <= MAX_FIELD)
        .map(|k2| (taps / k2, k2))
}

/// Whether the depthwise CONV `t` over input `x` (weights `w` as `[C][H*W]`, one
/// bias and epilogue entry per channel) is a global pool whose channels are all
/// alike: the condition for the channels-as-pixels form, whatever `x`'s layout.
pub(crate) fn uniform_global(
    t: &DotProduct,
    x: &Act,
    w: &[i8],
    bias: &[i32],
    entries: &[[i32; 4]],
) -> bool {
    let taps = x.h * x.w;
    let k = taps as usize;
    t.groups == x.c
        && t.out_c == x.c
        && (t.kernel_h, t.kernel_w) == (x.h, x.w)
        && (t.pad_top, t.pad_left, t.pad_bottom, t.pad_right) == (0, 0, 0, 0)
        && (t.dil_h, t.dil_w) == (1, 1)
        && t.pool == PoolKind::None
        && t.expected_out_hw(DotKind::Conv) == Some((1, 1))
        && kernel(taps, x.c).is_some()
        && w.len() == x.c as usize * k
        && bias.len() == x.c as usize
        && entries.len() == bias.len()
        && w.chunks_exact(k).all(|row| row == &w[..k])
        && bias.iter().all(|&b| b == bias[0])
        && entries.iter().all(|e| *e == entries[0])
}

/// The channels-as-pixels form of the global-pool CONV `t` over the HWC input `x`
/// (`chan_pitch = 1`), or `None` when [`uniform_global`] does not hold or `x` is not
/// stored HWC.
pub(crate) fn channels_as_pixels(
    t: &DotProduct,
    x: &Act,
    w: &[i8],
    bias: &[i32],
    entries: &[[i32; 4]],
    cols: usize,
) -> Option<(DotProduct, DotParams)> {
    let hwc = x.chan_pitch == 1 && x.pix_pitch >= x.c;
    if !hwc || !uniform_global(t, x, w, bias, entries) {
        return None;
    }
    let taps = x.h * x.w;
    let k = taps as usize;
    let pp = x.pix_pitch;
    let (kh, kw) = kernel(taps, pp)?;
    // Regrouping the taps into rows needs pixel p of the map at `p * pp`.
    if kw > 1 && x.row_pitch != x.w * pp {
        return None;
    }
    let g = DotProduct {
        in_h: kh,
        in_w: (kw - 1) * pp + x.c,
        in_c: 1,
        in_row_pitch: kw * pp,
        in_pix_pitch: 1,
        in_chan_pitch: 1,
        out_h: 1,
        out_w: x.c,
        out_c: 1,
        kernel_h: kh,
        kernel_w: kw,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: if kw > 1 { pp } else { 1 },
        groups: 1,
        ..t.clone()
    };
    let params = DotParams {
        weights: weight_blocks(1, k, cols, |_, i| w[i]),
        bias: vec![bias[0]],
        entries: vec![entries[0]],
        block: u32::try_from(k * cols).ok()?,
    };
    Some((g, params))
}

/// The output fields of the channels-as-pixels form writing the `1x1xC` tensor `a`:
/// output pixel `c` is channel `c`, one byte apart.
pub(crate) fn out_fields(t: &mut DotProduct, a: &Act) -> Result<(), Refusal> {
    if (a.h, a.w, a.c) != (1, 1, t.out_w) {
        return Err(Refusal::GlobalPoolOutput {
            h: a.h,
            w: a.w,
            c: a.c,
            out_w: t.out_w,
        });
    }
    t.out_row_pitch = t.out_w;
    t.out_pix_pitch = 1;
    t.out_chan_pitch = 1;
    t.out_signed = a.signed;
    t.out_zero = i16::try_from(a.zero_point)
        .map_err(|_| Refusal::range("output zero point", a.zero_point, Limit::Int16))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool_layer(c: u32, h: u32, w: u32) -> (DotProduct, Act) {
        let x = Act {
            h,
            w,
            c,
            pix_pitch: c,
            row_pitch: w * c,
            chan_pitch: 1,
            signed: false,
            zero_point: 0,
            scale: 1.0,
            rank: 4,
        };
        let t = DotProduct {
            in_h: h,
            in_w: w,
            in_c: c,
            out_h: 1,
            out_w: 1,
            out_c: c,
            kernel_h: h,
            kernel_w: w,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            groups: c,
            ..DotProduct::default()
        };
        (t, x)
    }

    #[test]
    fn uniform_channels_become_pixels() {
        let (t, x) = pool_layer(5, 3, 4);
        let (w, b, e) = (vec![127i8; 5 * 12], vec![0; 5], vec![[7, 3, 0, 0]; 5]);
        let (g, p) = channels_as_pixels(&t, &x, &w, &b, &e, 96).expect("a global pool");
        assert_eq!(
            (g.in_h, g.in_w, g.in_row_pitch, g.in_pix_pitch),
            (12, 5, 5, 1)
        );
        assert_eq!((g.kernel_h, g.kernel_w, g.out_w, g.out_c), (12, 1, 5, 1));
        assert_eq!(
            (p.bias.len(), p.entries.len(), p.weights.len()),
            (1, 1, 12 * 96)
        );
    }

    #[test]
    fn differing_channels_or_geometry_stay_depthwise() {
        let (t, x) = pool_layer(5, 3, 4);
        let (w, b, e) = (vec![127i8; 5 * 12], vec![0; 5], vec![[7, 3, 0, 0]; 5]);
        let mut w2 = w.clone();
        w2[12] = 100;
        assert!(channels_as_pixels(&t, &x, &w2, &b, &e, 96).is_none());
        let mut b2 = b.clone();
        b2[4] = 1;
        assert!(channels_as_pixels(&t, &x, &w, &b2, &e, 96).is_none());
        let mut e2 = e.clone();
        e2[2][0] = 8;
        assert!(channels_as_pixels(&t, &x, &w, &b, &e2, 96).is_none());
        let padded = DotProduct {
            pad_top: 1,
            ..t.clone()
        };
        assert!(channels_as_pixels(&padded, &x, &w, &b, &e, 96).is_none());
        let planar = Act {
            pix_pitch: 1,
            row_pitch: 4,
            chan_pitch: 12,
            ..x.clone()
        };
        assert!(uniform_global(&t, &planar, &w, &b, &e));
        assert!(channels_as_pixels(&t, &planar, &w, &b, &e, 96).is_none());
        // 17 x 17 taps of 256 channels: too many taps for one column, a pixel pitch
        // beyond dil_w for rows.
        let (big, bx) = pool_layer(256, 17, 17);
        let n = 256 * 289;
        let (b, e) = (vec![0; 256], vec![[0; 4]; 256]);
        assert!(channels_as_pixels(&big, &bx, &vec![1; n], &b, &e, 96).is_none());
    }

    #[test]
    fn many_taps_are_taken_in_rows() {
        assert_eq!(kernel(255, 1000), Some((255, 1)));
        assert_eq!(kernel(256, 8), Some((2, 128)));
        assert_eq!(kernel(12 * 48, 40), Some((3, 192)));
        assert_eq!(kernel(256, 256), None);
        // A prime number of taps has no two factors under 256.
        assert_eq!(kernel(257, 8), None);
        assert_eq!(kernel(255 * 255, 8), Some((255, 255)));
        let (t, x) = pool_layer(5, 16, 16);
        let (w, b, e) = (vec![3i8; 5 * 256], vec![0; 5], vec![[7, 3, 0, 0]; 5]);
        let (g, p) = channels_as_pixels(&t, &x, &w, &b, &e, 96).expect("rows of taps");
        assert_eq!(
            (
                g.in_h,
                g.in_w,
                g.in_row_pitch,
                g.kernel_h,
                g.kernel_w,
                g.dil_w
            ),
            (2, 127 * 5 + 5, 128 * 5, 2, 128, 5)
        );
        assert_eq!((g.out_w, p.weights.len()), (5, 256 * 96));
        assert_eq!(g.expected_out_hw(DotKind::Conv), Some((1, 5)));
    }
}
