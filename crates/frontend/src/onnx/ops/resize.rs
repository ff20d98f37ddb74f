//! Resize (opsets 10, 11, 13, 18, 19) and Upsample (7: scales attribute; 9: scales
//! input), nearest and linear. Scales and sizes must be constants; the IR gets the
//! output shape and the per-axis scale used by the coordinate transform.
//!
//! Before opset 11 (Resize-10, Upsample) the transform is `asymmetric` and nearest
//! rounding is ONNX Runtime's "simple" rule: floor when upsampling, ceil when
//! downsampling.

use super::{norm_axes, one};
use crate::onnx::ctx::{invalid, unsupported, Ctx, NResult, NodeCx, Out};
use crate::onnx::fold::i64s;
use crate::onnx::limits::MAX_ATTR;
use nnac_ir::{CoordTransform, NearestMode, Op, ResizeAttrs, ResizeMode};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Nearest,
    Linear,
}

fn kind(cx: &NodeCx) -> NResult<Kind> {
    match cx.attrs.string_or("mode", "nearest")?.as_str() {
        "nearest" => Ok(Kind::Nearest),
        "linear" | "bilinear" => Ok(Kind::Linear),
        "cubic" => Err(unsupported("mode 'cubic' (only nearest and linear)")),
        m => Err(unsupported(format!("mode '{m}'"))),
    }
}

fn coord(cx: &NodeCx) -> NResult<CoordTransform> {
    match cx
        .attrs
        .string_or("coordinate_transformation_mode", "half_pixel")?
        .as_str()
    {
        "half_pixel" => Ok(CoordTransform::HalfPixel),
        "pytorch_half_pixel" => Ok(CoordTransform::PytorchHalfPixel),
        "align_corners" => Ok(CoordTransform::AlignCorners),
        "asymmetric" => Ok(CoordTransform::Asymmetric),
        m => Err(unsupported(format!("coordinate_transformation_mode '{m}'"))),
    }
}

fn nearest_mode(cx: &NodeCx) -> NResult<NearestMode> {
    match cx
        .attrs
        .string_or("nearest_mode", "round_prefer_floor")?
        .as_str()
    {
        "round_prefer_floor" => Ok(NearestMode::RoundPreferFloor),
        "round_prefer_ceil" => Ok(NearestMode::RoundPreferCeil),
        "floor" => Ok(NearestMode::Floor),
        "ceil" => Ok(NearestMode::Ceil),
        m => Err(unsupported(format!("nearest_mode '{m}'"))),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Policy {
    Stretch,
    NotLarger,
    NotSmaller,
}

fn policy(cx: &NodeCx) -> NResult<Policy> {
    match cx
        .attrs
        .string_or("keep_aspect_ratio_policy", "stretch")?
        .as_str()
    {
        "stretch" => Ok(Policy::Stretch),
        "not_larger" => Ok(Policy::NotLarger),
        "not_smaller" => Ok(Policy::NotSmaller),
        m => Err(invalid(format!("keep_aspect_ratio_policy '{m}'"))),
    }
}

/// Attribute values nnac cannot honour (checked even when the node is not built).
pub fn check_resize(cx: &NodeCx) -> NResult<()> {
    let k = kind(cx)?;
    if cx.opset >= 11 {
        coord(cx)?;
        nearest_mode(cx)?;
        policy(cx)?;
    }
    if k == Kind::Linear && cx.attrs.int_or("antialias", 0)? != 0 {
        return Err(unsupported("antialias = 1"));
    }
    Ok(())
}

/// ONNX Runtime's rounding for Resize-10 and Upsample.
fn simple_nearest(scales: &[f32]) -> NResult<NearestMode> {
    let down = scales.iter().any(|&s| s < 1.0);
    let up = scales.iter().any(|&s| s > 1.0);
    match (down, up) {
        (true, true) => Err(unsupported(
            "nearest resize that upsamples some axes and downsamples others before opset 11",
        )),
        (true, false) => Ok(NearestMode::Ceil),
        _ => Ok(NearestMode::Floor),
    }
}

/// Output shape and per-axis scales from the given `scales` or `sizes` over `axes`.
fn resolve(
    input: &[usize],
    scales: Option<Vec<f32>>,
    sizes: Option<Vec<i64>>,
    axes: &[usize],
    policy: Policy,
) -> NResult<(Vec<usize>, Vec<f32>)> {
    let mut out = input.to_vec();
    let mut sc = vec![1.0f32; input.len()];
    match (scales, sizes) {
        (Some(s), None) => {
            if s.len() != axes.len() {
                return Err(invalid(format!(
                    "{} scales for {} axes",
                    s.len(),
                    axes.len()
                )));
            }
            for (&a, &v) in axes.iter().zip(&s) {
                let size = (input[a] as f32 * v).floor();
                if !(v > 0.0 && size.is_finite() && (1.0..=MAX_ATTR as f32).contains(&size)) {
                    return Err(invalid(format!(
                        "scale {v} gives output size {size} for axis {a} of size {}",
                        input[a]
                    )));
                }
                sc[a] = v;
                out[a] = size as usize;
            }
        }
        (None, Some(z)) => {
            if z.len() != axes.len() {
                return Err(invalid(format!(
                    "{} sizes for {} axes",
                    z.len(),
                    axes.len()
                )));
            }
            if let Some(v) = z.iter().find(|&&v| !(1..=MAX_ATTR).contains(&v)) {
                return Err(invalid(format!("output size {v} is out of range")));
            }
            let ratios: Vec<f32> = axes
                .iter()
                .zip(&z)
                .map(|(&a, &v)| v as f32 / input[a] as f32)
                .collect();
            let common = match policy {
                Policy::Stretch => None,
                Policy::NotLarger => ratios.iter().copied().reduce(f32::min),
                Policy::NotSmaller => ratios.iter().copied().reduce(f32::max),
            };
            for (k, &a) in axes.iter().enumerate() {
                match common {
                    None => (out[a], sc[a]) = (z[k] as usize, ratios[k]),
                    Some(s) => {
                        (out[a], sc[a]) =
                            (((s * input[a] as f32) + 0.5).floor().max(1.0) as usize, s)
                    }
                }
            }
        }
        (Some(_), Some(_)) => return Err(invalid("both scales and sizes are given")),
        (None, None) => return Err(invalid("neither scales nor sizes is given")),
    }
    Ok((out, sc))
}

/// A constant float vector input, `None` when absent or empty.
fn opt_floats(ctx: &Ctx, cx: &NodeCx, i: usize, what: &str) -> NResult<Option<Vec<f32>>> {
    Ok(ctx
        .opt_const(cx, i, what)?
        .filter(|t| t.numel() > 0)
        .map(|t| t.to_f32_vec()))
}

fn emit(
    ctx: &mut Ctx,
    cx: &NodeCx,
    mode: ResizeMode,
    coord: CoordTransform,
    sizes: Vec<usize>,
    scales: Vec<f32>,
) -> NResult<Vec<Out>> {
    let x = ctx.value(cx, 0)?;
    one(ctx.add(
        cx,
        "",
        Op::Resize(ResizeAttrs {
            mode,
            coord,
            sizes,
            scales,
        }),
        &[x],
    )?)
}

/// Resize-10 and Upsample: scales over all axes, asymmetric transform.
fn legacy(ctx: &mut Ctx, cx: &NodeCx, scales: Vec<f32>) -> NResult<Vec<Out>> {
    let input = ctx.shape(cx, 0)?;
    let all: Vec<usize> = (0..input.len()).collect();
    let (sizes, scales) = resolve(&input, Some(scales), None, &all, Policy::Stretch)?;
    let mode = match kind(cx)? {
        Kind::Nearest => ResizeMode::Nearest(simple_nearest(&scales)?),
        Kind::Linear => ResizeMode::Linear,
    };
    emit(ctx, cx, mode, CoordTransform::Asymmetric, sizes, scales)
}

pub fn resize(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    if cx.opset < 11 {
        let scales =
            opt_floats(ctx, cx, 1, "scales")?.ok_or_else(|| invalid("Resize-10 needs scales"))?;
        return legacy(ctx, cx, scales);
    }
    let input = ctx.shape(cx, 0)?;
    let axes = match cx.attrs.ints("axes")? {
        Some(a) => norm_axes(a, input.len())?,
        None => (0..input.len()).collect(),
    };
    let scales = opt_floats(ctx, cx, 2, "scales")?;
    let sizes = ctx
        .opt_const(cx, 3, "sizes")?
        .filter(|t| t.numel() > 0)
        .map(|t| i64s(t, "sizes"))
        .transpose()?;
    let (sizes, scales) = resolve(&input, scales, sizes, &axes, policy(cx)?)?;
    let mode = match kind(cx)? {
        Kind::Nearest => ResizeMode::Nearest(nearest_mode(cx)?),
        Kind::Linear => ResizeMode::Linear,
    };
    emit(ctx, cx, mode, coord(cx)?, sizes, scales)
}

pub fn upsample(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let scales = match cx.attrs.floats("scales")? {
        Some(s) => s.to_vec(),
        None => {
            opt_floats(ctx, cx, 1, "scales")?.ok_or_else(|| invalid("Upsample needs scales"))?
        }
    };
    legacy(ctx, cx, scales)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_floor_the_output_size() {
        let (out, sc) = resolve(
            &[1, 1, 5, 4],
            Some(vec![1.0, 1.0, 0.6, 2.5]),
            None,
            &[0, 1, 2, 3],
            Policy::Stretch,
        )
        .unwrap();
        assert_eq!(out, vec![1, 1, 3, 10]);
        assert_eq!(sc, vec![1.0, 1.0, 0.6, 2.5]);
    }

    #[test]
    fn sizes_with_aspect_policy() {
        let (out, sc) = resolve(
            &[1, 1, 2, 4],
            None,
            Some(vec![7, 8]),
            &[2, 3],
            Policy::NotLarger,
        )
        .unwrap();
        assert_eq!(out, vec![1, 1, 4, 8]);
        assert_eq!(sc[2], 2.0);
        let (out, _) = resolve(
            &[1, 1, 2, 4],
            None,
            Some(vec![7, 8]),
            &[2, 3],
            Policy::Stretch,
        )
        .unwrap();
        assert_eq!(out, vec![1, 1, 7, 8]);
    }

    #[test]
    fn simple_rounding() {
        assert_eq!(
            simple_nearest(&[1.0, 1.0, 2.0, 2.0]).unwrap(),
            NearestMode::Floor
        );
        assert_eq!(
            simple_nearest(&[1.0, 1.0, 0.5, 0.5]).unwrap(),
            NearestMode::Ceil
        );
        assert!(simple_nearest(&[1.0, 1.0, 0.5, 2.0]).is_err());
    }
}
