//! Channels on the rows: a 1x1, stride-1 convolution run with its output channels on
//! the MAC array's rows and its pixels on the columns (the mapping knob of `nnac
//! tune`, `BackendOptions::channels_on_rows`).
//!
//! The compiler's orientation puts `mac_rows` output pixels on the rows and
//! `mac_cols` output channels on the columns. A late 1x1 layer of 7 x 7 = 49 pixels
//! fills 49 of 192 rows of a 192 x 96 array; turned, its 2048 channels fill all the
//! rows and its 49 pixels 49 of the 96 columns. A 1x1 convolution is a matrix
//! product `Y[oc][p] = sum_ic W[oc][ic] * X[ic][p]`, so the same instruction computes
//! it turned when the operands trade places:
//!
//! - the *input* (address-sequenced, one element per row per cycle) is the weight
//!   matrix stored `[ic][oc]`: "pixel" `oc` of "channel" `ic` at `ic*Cout + oc`
//!   (`in_h = 1`, `in_w = Cout`, pixel pitch 1: a slice of 8 rows reads 8
//!   consecutive bytes);
//! - the *weights* (one contiguous vector per term) are the activation, planar:
//!   pixel `p` of channel `ic` at `x + ic*CP + p`, so term `ic`'s vector is the
//!   plane's bytes from the tile's first pixel: `w_pitch = CP`, and `w_addr` moves
//!   with the tile's first pixel (`schedule/emit.rs`);
//! - the output "pixel" `oc` and "channel" `p` land at `out + oc*CP' + p*PP'`
//!   (`out_pix_pitch` = the output's channel pitch, `out_chan_pitch` its pixel
//!   pitch), the same tensor as the compiler's orientation writes;
//! - bias and requantization are per output channel, which now runs along the rows:
//!   `params_by_pixel` indexes them by the instruction's output pixel.
//!
//! Every accumulator is the same sum of the same products (only their order of
//! accumulation differs, and integer addition is exact), so results are bit-exact with
//! the compiler's orientation and the quantized reference interpreter.

use crate::base::act::Act;
use crate::base::params::DotParams;
use crate::error::{Limit, Refusal};
use crate::lower::fields::u32_of;
use nnac_isa::{DotProduct, PoolKind};

/// Largest `out_pix_pitch` (16-bit field).
const MAX_OUT_PIX_PITCH: u32 = u16::MAX as u32;
/// Largest `w_pitch` (24-bit field).
const MAX_W_PITCH: u32 = (1 << 24) - 1;

/// Whether the convolution `t` (the compiler's template) is a plain matrix product
/// this form can run: 1x1 kernel, stride 1, no padding, one group, no fused pool.
pub(crate) fn is_matmul(t: &DotProduct) -> bool {
    (t.kernel_h, t.kernel_w, t.stride_h, t.stride_w, t.groups) == (1, 1, 1, 1, 1)
        && t.pad_top + t.pad_left + t.pad_bottom + t.pad_right == 0
        && t.pool == PoolKind::None
}

/// Whether input `x` and output `y` are stored so that the turned instruction can
/// address them: each channel's pixels consecutive bytes in `x` (its planes are the
/// weight vectors), and `y`'s pixels evenly spaced with its channel pitch within the
/// 16-bit `out_pix_pitch`.
pub(crate) fn layouts_fit(x: &Act, y: &Act) -> bool {
    input_fits(x) && output_fits(y)
}

/// Each channel's pixels are consecutive bytes: its plane is a weight vector.
fn input_fits(x: &Act) -> bool {
    x.pix_pitch == 1 && x.row_pitch == x.w && x.chan_pitch <= MAX_W_PITCH
}

/// The pixels are evenly spaced and the channel pitch fits `out_pix_pitch`.
fn output_fits(y: &Act) -> bool {
    y.row_pitch == y.w * y.pix_pitch && y.chan_pitch <= MAX_OUT_PIX_PITCH
}

/// The turned template and parameters of the 1x1 convolution `t` over `x` (weights
/// `w` as `[oc][ic]`, `bias`, epilogue `entries`); the output fields are set by
/// [`out_fields`] once the output is placed. `None` when `t` is not a plain matrix
/// product or `x` is not stored as the form needs.
pub(crate) fn turn(
    t: &DotProduct,
    x: &Act,
    w: &[i8],
    bias: &[i32],
    entries: &[[i32; 4]],
) -> Result<Option<(DotProduct, DotParams)>, Refusal> {
    if !is_matmul(t) || !input_fits(x) {
        return Ok(None);
    }
    let (cout, cin) = (t.out_c as usize, t.in_c as usize);
    let pixels = u32_of(t.out_h as usize * t.out_w as usize, "turned out_c")?;
    if pixels > u32::from(u16::MAX) || t.out_c > u32::from(u16::MAX) {
        return Ok(None);
    }
    let turned = DotProduct {
        in_h: 1,
        in_w: t.out_c,
        in_c: t.in_c,
        in_row_pitch: t.out_c,
        in_pix_pitch: 1,
        in_chan_pitch: t.out_c,
        in_signed: t.w_signed,
        in_zero: 0,
        w_signed: t.in_signed,
        w_pitch: x.chan_pitch,
        params_by_pixel: true,
        out_h: 1,
        out_w: t.out_c,
        out_c: pixels,
        ..t.clone()
    };
    // [ic][oc]: term ic's row of every output channel.
    let mut wt = vec![0u8; cout * cin];
    for (oc, row) in w.chunks_exact(cin).enumerate().take(cout) {
        for (ic, &v) in row.iter().enumerate() {
            wt[ic * cout + oc] = v as u8;
        }
    }
    let params = DotParams {
        weights: wt,
        bias: bias.to_vec(),
        entries: entries.to_vec(),
        // Unused: a `w_pitch` tile's vectors start at its first pixel (`emit.rs`).
        block: 0,
    };
    Ok(Some((turned, params)))
}

/// Output fields of the turned instruction writing `y`: its "pixel" `oc` at the
/// channel pitch, its "channel" `p` at the pixel pitch (one row: no row pitch).
pub(crate) fn out_fields(t: &mut DotProduct, y: &Act) -> Result<(), Refusal> {
    if !output_fits(y) {
        return Err(Refusal::range(
            "channels-on-rows output channel pitch",
            y.chan_pitch,
            Limit::Field {
                min: 0,
                max: MAX_OUT_PIX_PITCH.into(),
            },
        ));
    }
    crate::lower::fields::out_fields(t, y)?;
    t.out_row_pitch = 0;
    t.out_pix_pitch = y.chan_pitch;
    t.out_chan_pitch = y.pix_pitch;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::checks::DotKind;

    fn conv1x1(h: u32, w: u32, cin: u32, cout: u32) -> (DotProduct, Act) {
        let x = Act {
            h,
            w,
            c: cin,
            pix_pitch: 1,
            row_pitch: w,
            chan_pitch: h * w,
            signed: true,
            zero_point: 0,
            scale: 1.0,
            rank: 4,
        };
        let t = DotProduct {
            in_h: h,
            in_w: w,
            in_c: cin,
            in_row_pitch: w,
            in_pix_pitch: 1,
            in_chan_pitch: h * w,
            out_h: h,
            out_w: w,
            out_c: cout,
            kernel_h: 1,
            kernel_w: 1,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            groups: 1,
            in_signed: true,
            w_signed: true,
            ..DotProduct::default()
        };
        (t, x)
    }

    #[test]
    fn operands_trade_places() {
        let (t, x) = conv1x1(7, 7, 3, 5);
        let w: Vec<i8> = (0..15).map(|i| i as i8).collect();
        let (g, p) = turn(&t, &x, &w, &[0; 5], &[[0; 4]; 5])
            .unwrap()
            .expect("a 1x1 convolution turns");
        assert_eq!((g.in_h, g.in_w, g.in_c, g.out_w, g.out_c), (1, 5, 3, 5, 49));
        assert_eq!((g.w_pitch, g.params_by_pixel), (49, true));
        assert_eq!(g.expected_out_hw(DotKind::Conv), Some((1, 5)));
        // W[oc=2][ic=1] = 2*3 + 1 = 7 sits at ic*Cout + oc = 1*5 + 2.
        assert_eq!(p.weights[7], 7);
        assert_eq!(p.weights.len(), 15);
    }

    #[test]
    fn only_plain_matrix_products_over_planes_turn() {
        let (t, x) = conv1x1(7, 7, 3, 5);
        let (w, b, e) = (vec![1i8; 15], vec![0; 5], vec![[0; 4]; 5]);
        let strided = DotProduct {
            stride_h: 2,
            ..t.clone()
        };
        assert!(turn(&strided, &x, &w, &b, &e).unwrap().is_none());
        let hwc = x.clone().hwc();
        assert!(turn(&t, &hwc, &w, &b, &e).unwrap().is_none());
        assert!(layouts_fit(&x, &x));
        assert!(!layouts_fit(&hwc, &x));
        assert!(layouts_fit(&x, &hwc));
    }
}
