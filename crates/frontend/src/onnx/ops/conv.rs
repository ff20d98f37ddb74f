//! Conv and ConvTranspose (groups, dilations, pads, auto_pad; ConvTranspose
//! output_padding and output_shape resolved to pads as ONNX Runtime does).

use super::one;
use crate::onnx::ctx::{invalid, Ctx, NResult, NodeCx, Out};
use crate::onnx::limits::attr_size;
use crate::onnx::padding::{auto_pad, pads_attr, resolve_pads, spatial_attr, AutoPad};
use nnac_ir::{ConvAttrs, ConvTransposeAttrs, Op, Value};

/// Input and weight shapes of a convolution (inputs `x` and `w`), checked for rank.
fn conv_shapes(ctx: &Ctx, cx: &NodeCx, x: usize, w: usize) -> NResult<(Vec<usize>, Vec<usize>)> {
    let (xs, ws) = (ctx.shape(cx, x)?, ctx.shape(cx, w)?);
    if xs.len() < 3 {
        return Err(invalid(format!(
            "input shape {xs:?} needs rank >= 3 (N, C, spatial...)"
        )));
    }
    if ws.len() != xs.len() {
        return Err(invalid(format!(
            "weight shape {ws:?} does not match input rank {}",
            xs.len()
        )));
    }
    Ok((xs, ws))
}

/// `kernel_shape`, which must agree with the weight's spatial shape when given.
fn kernel(cx: &NodeCx, weight_spatial: &[usize]) -> NResult<Vec<usize>> {
    match cx.attrs.ints("kernel_shape")? {
        Some(k)
            if k.iter()
                .map(|&v| v as i128)
                .ne(weight_spatial.iter().map(|&v| v as i128)) =>
        {
            Err(invalid(format!(
                "kernel_shape {k:?} does not match the weight's spatial shape {weight_spatial:?}"
            )))
        }
        _ => Ok(weight_spatial.to_vec()),
    }
}

fn group(cx: &NodeCx) -> NResult<usize> {
    attr_size(cx.attrs.int_or("group", 1)?, 1, "group").map_err(invalid)
}

/// x, w and the optional bias as IR values.
fn operands(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Value>> {
    let mut v = vec![ctx.value(cx, 0)?, ctx.value(cx, 1)?];
    v.extend(ctx.opt_value(cx, 2)?);
    Ok(v)
}

pub fn conv(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let attrs = conv_attrs(ctx, cx, 0, 1)?;
    let ins = operands(ctx, cx)?;
    one(ctx.add(cx, "", Op::Conv(attrs), &ins)?)
}

/// The convolution attributes of the node whose input and weights are inputs `x`
/// and `w` (Conv, and the quantized convolutions).
pub fn conv_attrs(ctx: &Ctx, cx: &NodeCx, x: usize, w: usize) -> NResult<ConvAttrs> {
    let (xs, ws) = conv_shapes(ctx, cx, x, w)?;
    let n = xs.len() - 2;
    let kernel = kernel(cx, &ws[2..])?;
    let strides = spatial_attr(cx, "strides", n, 1, 1)?;
    let dilations = spatial_attr(cx, "dilations", n, 1, 1)?;
    let pads = resolve_pads(cx, &xs[2..], &kernel, &strides, &dilations)?;
    Ok(ConvAttrs {
        kernel,
        strides,
        pads,
        dilations,
        group: group(cx)?,
    })
}

/// Pads (begins then ends) and output padding that give the requested output size:
/// the total padding is split as ONNX Runtime does (odd unit at the end for
/// SAME_UPPER, at the beginning otherwise); a negative total enlarges the output at
/// the end (extra output padding).
#[allow(clippy::too_many_arguments)]
fn pads_for_output(
    input: &[usize],
    kernel: &[usize],
    strides: &[usize],
    dilations: &[usize],
    output_padding: &mut [usize],
    target: &[usize],
    upper: bool,
) -> Vec<usize> {
    let n = input.len();
    let mut pads = vec![0; 2 * n];
    for i in 0..n {
        let full =
            strides[i] * (input[i] - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1;
        if target[i] > full {
            output_padding[i] += target[i] - full;
            continue;
        }
        let total = full - target[i];
        let (head, tail) = if upper {
            (total / 2, total - total / 2)
        } else {
            (total - total / 2, total / 2)
        };
        pads[i] = head;
        pads[n + i] = tail;
    }
    pads
}

pub fn conv_transpose(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (xs, ws) = conv_shapes(ctx, cx, 0, 1)?;
    let n = xs.len() - 2;
    let input = &xs[2..];
    if input.contains(&0) {
        return Err(invalid(format!("input shape {xs:?} is empty")));
    }
    let kernel = kernel(cx, &ws[2..])?;
    if kernel.contains(&0) {
        return Err(invalid(format!("weight shape {ws:?} has an empty kernel")));
    }
    let strides = spatial_attr(cx, "strides", n, 1, 1)?;
    let dilations = spatial_attr(cx, "dilations", n, 1, 1)?;
    let mut output_padding = spatial_attr(cx, "output_padding", n, 0, 0)?;
    let mode = auto_pad(cx)?;
    let target: Option<Vec<usize>> = match cx.attrs.ints("output_shape")? {
        Some(os) => {
            let os = match os.len() {
                l if l == n => os,
                l if l == n + 2 => &os[2..],
                _ => {
                    return Err(invalid(format!(
                        "output_shape {os:?} does not match {n} spatial axes"
                    )))
                }
            };
            Some(
                os.iter()
                    .map(|&v| attr_size(v, 1, "output_shape").map_err(invalid))
                    .collect::<NResult<_>>()?,
            )
        }
        None if matches!(mode, AutoPad::SameUpper | AutoPad::SameLower) => {
            Some(input.iter().zip(&strides).map(|(i, s)| i * s).collect())
        }
        None => None,
    };
    let pads = match (target, mode) {
        (Some(t), _) => pads_for_output(
            input,
            &kernel,
            &strides,
            &dilations,
            &mut output_padding,
            &t,
            mode == AutoPad::SameUpper,
        ),
        (None, AutoPad::Valid) => vec![0; 2 * n],
        (None, _) => pads_attr(cx, n)?,
    };
    let attrs = ConvTransposeAttrs {
        kernel,
        strides,
        pads,
        dilations,
        output_padding,
        group: group(cx)?,
    };
    let ins = operands(ctx, cx)?;
    one(ctx.add(cx, "", Op::ConvTranspose(attrs), &ins)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_shape_larger_than_full_becomes_output_padding() {
        // in 3, k 3, s 3: full 9; target 10 -> one extra at the end.
        let mut op = vec![0];
        let pads = pads_for_output(&[3], &[3], &[3], &[1], &mut op, &[10], false);
        assert_eq!((pads, op), (vec![0, 0], vec![1]));
    }

    #[test]
    fn same_upper_puts_the_odd_pad_at_the_end() {
        // in 3, k 4, s 2: full 8; target 6 -> total 2... k 3: full 7, total 1.
        let mut op = vec![0];
        assert_eq!(
            pads_for_output(&[3], &[3], &[2], &[1], &mut op, &[6], true),
            vec![0, 1]
        );
        assert_eq!(
            pads_for_output(&[3], &[3], &[2], &[1], &mut op, &[6], false),
            vec![1, 0]
        );
    }
}
