//! ONNX `Resize`: nearest (four rounding modes) and N-linear interpolation with the
//! half_pixel, pytorch_half_pixel, align_corners and asymmetric coordinate
//! transforms.
//!
//! Both modes are separable, so each resized axis is resampled in turn (an axis
//! whose size and scale are unchanged is skipped). Per axis, a table maps every
//! output index to its source index (nearest) or its two neighbours and weight
//! (linear). Source coordinates follow the ONNX reference: computed in f64, out-of-
//! range neighbours clamped to the edge (the reference's edge padding).

use super::error::KernelError;
use super::View;
use nnac_ir::{CoordTransform, NearestMode, ResizeAttrs, ResizeMode};
use rayon::prelude::*;

/// The source of each output index along one axis.
enum Taps {
    Nearest(Vec<usize>),
    /// `(lower neighbour, upper neighbour, weight of the upper one)`.
    Linear(Vec<(usize, usize, f32)>),
}

pub fn resize(a: &ResizeAttrs, x: View<'_>) -> Result<Vec<f32>, KernelError> {
    let mut shape = x.shape.to_vec();
    let mut data = x.data.to_vec();
    for axis in 0..shape.len() {
        let (len, out_len, scale) = (shape[axis], a.sizes[axis], a.scales[axis]);
        if len == out_len && scale == 1.0 {
            continue;
        }
        if !(scale.is_finite() && scale > 0.0) {
            return Err(KernelError::ResizeScale { scale, axis });
        }
        if len == 0 {
            return Err(KernelError::ResizeEmptyAxis { axis, out_len });
        }
        let scale = effective_scale(scale, len, out_len);
        let taps = taps(a, len, out_len, scale);
        data = resample_axis(&data, &shape, axis, out_len, &taps);
        shape[axis] = out_len;
    }
    Ok(data)
}

/// The source index of every output index along `axis` of a nearest-neighbour resize
/// of an axis of `len` elements (`None` for linear modes, or a scale the kernel
/// refuses): the exact table the kernel uses, so a caller can recognise a resize
/// that copies pixels in a pattern of its own (an integer upsampling).
pub fn nearest_sources(a: &ResizeAttrs, axis: usize, len: usize) -> Option<Vec<usize>> {
    let (out_len, scale) = (*a.sizes.get(axis)?, *a.scales.get(axis)?);
    if !matches!(a.mode, ResizeMode::Nearest(_)) || len == 0 {
        return None;
    }
    if len == out_len && scale == 1.0 {
        return Some((0..len).collect());
    }
    if !(scale.is_finite() && scale > 0.0) {
        return None;
    }
    match taps(a, len, out_len, effective_scale(scale, len, out_len)) {
        Taps::Nearest(t) => Some(t),
        Taps::Linear(_) => None,
    }
}

/// The scale used in the coordinate transform, in f64. When the f32 scale is the
/// ratio of the sizes (a model that gave `sizes`), the exact ratio is used, as the
/// ONNX reference does; otherwise the model's f32 scale.
fn effective_scale(scale: f32, len: usize, out_len: usize) -> f64 {
    let ratio = out_len as f64 / len as f64;
    if ratio as f32 == scale {
        ratio
    } else {
        scale as f64
    }
}

/// Source coordinate of output index `x`.
fn source_coord(t: CoordTransform, x: usize, len: usize, out_len: usize, scale: f64) -> f64 {
    let x = x as f64;
    match t {
        CoordTransform::HalfPixel => (x + 0.5) / scale - 0.5,
        CoordTransform::PytorchHalfPixel if out_len > 1 => (x + 0.5) / scale - 0.5,
        CoordTransform::PytorchHalfPixel => -0.5,
        CoordTransform::AlignCorners => {
            let out_w = scale * len as f64;
            if out_w == 1.0 {
                0.0
            } else {
                x * (len as f64 - 1.0) / (out_w - 1.0)
            }
        }
        CoordTransform::Asymmetric => x / scale,
    }
}

fn round_nearest(mode: NearestMode, c: f64) -> f64 {
    let f = c.floor();
    match mode {
        NearestMode::RoundPreferFloor if c - f == 0.5 => f,
        NearestMode::RoundPreferCeil if c - f == 0.5 => f + 1.0,
        NearestMode::RoundPreferFloor | NearestMode::RoundPreferCeil => c.round(),
        NearestMode::Floor => f,
        NearestMode::Ceil => c.ceil(),
    }
}

/// Clamps a (possibly negative) coordinate to a valid index.
fn clamp_index(i: f64, len: usize) -> usize {
    i.max(0.0).min((len - 1) as f64) as usize
}

fn taps(a: &ResizeAttrs, len: usize, out_len: usize, scale: f64) -> Taps {
    let coords = (0..out_len).map(|x| source_coord(a.coord, x, len, out_len, scale));
    match a.mode {
        ResizeMode::Nearest(m) => Taps::Nearest(
            coords
                .map(|c| clamp_index(round_nearest(m, c), len))
                .collect(),
        ),
        ResizeMode::Linear => Taps::Linear(
            coords
                .map(|c| {
                    let c = c.clamp(0.0, (len - 1) as f64);
                    let lo = c.floor();
                    let i0 = lo as usize;
                    (i0, (i0 + 1).min(len - 1), (c - lo) as f32)
                })
                .collect(),
        ),
    }
}

fn resample_axis(
    data: &[f32],
    shape: &[usize],
    axis: usize,
    out_len: usize,
    taps: &Taps,
) -> Vec<f32> {
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut out = vec![0.0f32; outer * out_len * inner];
    if out.is_empty() {
        return out;
    }
    out.par_chunks_mut(out_len * inner)
        .zip(data.par_chunks(len * inner))
        .for_each(|(ob, ib)| {
            for (o, orow) in ob.chunks_exact_mut(inner).enumerate() {
                match taps {
                    Taps::Nearest(idx) => orow.copy_from_slice(&ib[idx[o] * inner..][..inner]),
                    Taps::Linear(t) => {
                        let (i0, i1, r) = t[o];
                        let (lo, hi) = (&ib[i0 * inner..][..inner], &ib[i1 * inner..][..inner]);
                        for ((v, &p), &q) in orow.iter_mut().zip(lo).zip(hi) {
                            *v = if r == 0.0 { p } else { p * (1.0 - r) + q * r };
                        }
                    }
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(
        mode: ResizeMode,
        coord: CoordTransform,
        sizes: &[usize],
        scales: &[f32],
    ) -> ResizeAttrs {
        ResizeAttrs {
            mode,
            coord,
            sizes: sizes.to_vec(),
            scales: scales.to_vec(),
        }
    }

    #[test]
    fn nearest_upsample_asymmetric_repeats() {
        let x = [1.0f32, 2.0, 3.0, 4.0];
        let a = attrs(
            ResizeMode::Nearest(NearestMode::Floor),
            CoordTransform::Asymmetric,
            &[1, 1, 4, 4],
            &[1.0, 1.0, 2.0, 2.0],
        );
        let got = resize(
            &a,
            View {
                shape: &[1, 1, 2, 2],
                data: &x,
            },
        )
        .unwrap();
        assert_eq!(
            got,
            [1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.]
        );
    }

    #[test]
    fn linear_align_corners_with_fractional_scale() {
        // The ONNX test resize_downsample_scales_linear_align_corners: 2x4 -> 1x2
        // with scales 0.6 gives [1, 3.142857].
        let x: Vec<f32> = (1..=8).map(|v| v as f32).collect();
        let a = attrs(
            ResizeMode::Linear,
            CoordTransform::AlignCorners,
            &[1, 1, 1, 2],
            &[1.0, 1.0, 0.6, 0.6],
        );
        let got = resize(
            &a,
            View {
                shape: &[1, 1, 2, 4],
                data: &x,
            },
        )
        .unwrap();
        assert!(
            (got[0] - 1.0).abs() < 1e-6 && (got[1] - 3.142857).abs() < 1e-5,
            "{got:?}"
        );
    }

    #[test]
    fn linear_half_pixel_upsample_clamps_edges() {
        let x = [1.0f32, 3.0];
        let a = attrs(ResizeMode::Linear, CoordTransform::HalfPixel, &[4], &[2.0]);
        // Source coords -0.25, 0.25, 0.75, 1.25 -> clamped 0, 0.25, 0.75, 1.
        assert_eq!(
            resize(
                &a,
                View {
                    shape: &[2],
                    data: &x
                }
            )
            .unwrap(),
            [1.0, 1.5, 2.5, 3.0]
        );
    }

    #[test]
    fn nearest_rounding_modes() {
        assert_eq!(round_nearest(NearestMode::RoundPreferFloor, 1.5), 1.0);
        assert_eq!(round_nearest(NearestMode::RoundPreferCeil, 1.5), 2.0);
        assert_eq!(round_nearest(NearestMode::RoundPreferFloor, 1.6), 2.0);
        assert_eq!(round_nearest(NearestMode::Floor, 1.9), 1.0);
        assert_eq!(round_nearest(NearestMode::Ceil, 1.1), 2.0);
        assert_eq!(clamp_index(-1.0, 3), 0);
        assert_eq!(clamp_index(7.0, 3), 2);
    }
}
