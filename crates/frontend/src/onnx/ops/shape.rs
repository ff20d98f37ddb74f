//! Shape-changing ops: Reshape (0 and -1, allowzero; shape attribute before opset 5),
//! Flatten, Squeeze and Unsqueeze (axes attribute before opset 13, input since) — all
//! lowered to `Reshape` —, Transpose and Concat. On constants they fold.

use super::folding::runtime_slice;
use super::{folded, norm_axes, norm_axis, one};
use crate::onnx::ctx::{invalid, Ctx, NResult, NodeCx, Out};
use crate::onnx::fold::{self, i64s, SliceAxis};
use crate::onnx::limits::{checked_numel, MAX_ELEMS};
use nnac_ir::{Op, Tensor};

/// Gives input 0 the shape `target` (same element count): a folded constant or an IR
/// `Reshape`.
fn reshape_to(ctx: &mut Ctx, cx: &NodeCx, target: Vec<usize>) -> NResult<Vec<Out>> {
    if let Some(t) = ctx.konst(cx, 0) {
        ctx.charge_shape(&target)?;
        let t = Tensor::new(target, t.data.clone())
            .ok_or_else(|| invalid("reshape changes the element count"))?;
        return folded(t);
    }
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", Op::Reshape { shape: target }, &[x])?)
}

/// The output shape of ONNX Reshape: `0` copies the input dimension (unless
/// `allowzero`), one `-1` takes the remaining elements.
pub fn reshape_target(input: &[usize], spec: &[i64], allowzero: bool) -> NResult<Vec<usize>> {
    let numel: usize = input.iter().product();
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &d) in spec.iter().enumerate() {
        let dim = match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            0 if !allowzero => *input.get(i).ok_or_else(|| {
                invalid(format!(
                    "shape {spec:?}: 0 at axis {i} has no input dimension to copy"
                ))
            })?,
            d if d >= 0 && d as u64 <= MAX_ELEMS as u64 => d as usize,
            _ => return Err(invalid(format!("invalid reshape target {spec:?}"))),
        };
        out.push(dim);
    }
    let known = checked_numel(&out).map_err(invalid)?;
    if let Some(i) = infer {
        if known == 0 || !numel.is_multiple_of(known) {
            return Err(invalid(format!("cannot reshape {input:?} to {spec:?}")));
        }
        out[i] = numel / known;
    } else if known != numel {
        return Err(invalid(format!(
            "cannot reshape {input:?} ({numel} elements) to {spec:?}"
        )));
    }
    Ok(out)
}

pub fn reshape(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let input = ctx.shape(cx, 0)?;
    let spec = if cx.opset < 5 {
        cx.attrs
            .ints("shape")?
            .ok_or_else(|| invalid("attribute 'shape' is required"))?
            .to_vec()
    } else {
        i64s(ctx.const_input(cx, 1, "shape")?, "shape")?
    };
    let allowzero = cx.attrs.int_or("allowzero", 0)? != 0;
    let target = reshape_target(&input, &spec, allowzero)?;
    reshape_to(ctx, cx, target)
}

pub fn flatten(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let input = ctx.shape(cx, 0)?;
    let axis = cx.attrs.int_or("axis", 1)?;
    let r = input.len() as i64;
    if axis < -r || axis > r {
        return Err(invalid(format!(
            "flatten axis {axis} is out of range for rank {r}"
        )));
    }
    let a = if axis < 0 { axis + r } else { axis } as usize;
    let target = vec![input[..a].iter().product(), input[a..].iter().product()];
    reshape_to(ctx, cx, target)
}

/// Squeeze/Unsqueeze axes: the attribute before opset 13, input 1 since.
fn axes_operand(ctx: &Ctx, cx: &NodeCx) -> NResult<Option<Vec<i64>>> {
    if cx.opset < 13 {
        return Ok(cx.attrs.ints("axes")?.map(<[i64]>::to_vec));
    }
    ctx.opt_const(cx, 1, "axes")?
        .map(|t| i64s(t, "axes"))
        .transpose()
}

pub fn squeeze(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let input = ctx.shape(cx, 0)?;
    let target = match axes_operand(ctx, cx)? {
        None => input.iter().copied().filter(|&d| d != 1).collect(),
        Some(axes) => {
            let axes = norm_axes(&axes, input.len())?;
            if let Some(&a) = axes.iter().find(|&&a| input[a] != 1) {
                return Err(invalid(format!(
                    "cannot squeeze axis {a} of size {} in {input:?}",
                    input[a]
                )));
            }
            input
                .iter()
                .enumerate()
                .filter(|(i, _)| !axes.contains(i))
                .map(|(_, &d)| d)
                .collect()
        }
    };
    reshape_to(ctx, cx, target)
}

pub fn unsqueeze(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let input = ctx.shape(cx, 0)?;
    let axes = axes_operand(ctx, cx)?.ok_or_else(|| invalid("Unsqueeze needs axes"))?;
    let rank = input.len() + axes.len();
    let axes = norm_axes(&axes, rank)?;
    let mut rest = input.iter();
    let target = (0..rank)
        .map(|i| {
            if axes.contains(&i) {
                1
            } else {
                *rest.next().unwrap_or(&1)
            }
        })
        .collect();
    reshape_to(ctx, cx, target)
}

pub fn transpose(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let rank = ctx.shape(cx, 0)?.len();
    let perm: Vec<usize> = match cx.attrs.ints("perm")? {
        None => (0..rank).rev().collect(),
        Some(p) => {
            let perm = norm_axes(p, rank)?;
            if perm.len() != rank {
                return Err(invalid(format!(
                    "perm {p:?} is not a permutation of rank {rank}"
                )));
            }
            perm
        }
    };
    if let Some(t) = ctx.konst(cx, 0) {
        return folded(fold::transpose(ctx, t, &perm)?);
    }
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", Op::Transpose { perm }, &[x])?)
}

pub fn concat(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let k = cx.num_inputs();
    if k == 0 || (0..k).any(|i| !cx.has_input(i)) {
        return Err(invalid("Concat needs one or more present inputs"));
    }
    let first = ctx.shape(cx, 0)?;
    let axis = norm_axis(
        cx.attrs
            .int("axis")?
            .ok_or_else(|| invalid("attribute 'axis' is required"))?,
        first.len(),
    )?;
    for i in 1..k {
        let s = ctx.shape(cx, i)?;
        if s.len() != first.len() || (0..s.len()).any(|d| d != axis && s[d] != first[d]) {
            return Err(invalid(format!(
                "concat inputs {first:?} and {s:?} differ off axis {axis}"
            )));
        }
    }
    if ctx.all_const(cx) {
        let parts: Vec<&Tensor> = (0..k)
            .map(|i| ctx.const_input(cx, i, "input"))
            .collect::<NResult<_>>()?;
        return folded(fold::concat(ctx, &parts, axis)?);
    }
    let ins = (0..k)
        .map(|i| ctx.value(cx, i))
        .collect::<NResult<Vec<_>>>()?;
    one(ctx.add(cx, "", Op::Concat { axis }, &ins)?)
}

/// The block size of SpaceToDepth / DepthToSpace (at least 1) and the 4-D input shape.
fn block_args(ctx: &Ctx, cx: &NodeCx) -> NResult<(usize, [usize; 4])> {
    let b = cx
        .attrs
        .int("blocksize")?
        .ok_or_else(|| invalid("attribute 'blocksize' is required"))?;
    let b = usize::try_from(b)
        .ok()
        .filter(|&b| b >= 1)
        .ok_or_else(|| invalid(format!("blocksize {b} is not positive")))?;
    match ctx.shape(cx, 0)?.as_slice() {
        &[n, c, h, w] => Ok((b, [n, c, h, w])),
        s => Err(invalid(format!("input of shape {s:?} is not 4-D"))),
    }
}

/// Reshape -> Transpose -> Reshape of runtime input 0 (the last node takes the ONNX
/// node's name): the layout moves of SpaceToDepth and DepthToSpace.
fn reshape_transpose_reshape(
    ctx: &mut Ctx,
    cx: &NodeCx,
    split: Vec<usize>,
    perm: Vec<usize>,
    out: Vec<usize>,
) -> NResult<Vec<Out>> {
    if ctx.konst(cx, 0).is_some() {
        return Err(crate::onnx::ctx::unsupported(format!(
            "{} of a constant tensor",
            cx.op_type()
        )));
    }
    let x = ctx.value(cx, 0)?;
    let a = ctx.add(cx, "/split", Op::Reshape { shape: split }, &[x])?;
    let t = ctx.add(cx, "/permute", Op::Transpose { perm }, &[a])?;
    one(ctx.add(cx, "", Op::Reshape { shape: out }, &[t])?)
}

/// ONNX SpaceToDepth (opsets 1 to 27; opset 28 adds a CRD `mode`): `[N, C, H, W]`
/// -> `[N, C*b*b, H/b, W/b]`, output channel `(dy*b + dx)*C + c`: the concatenation
/// over the block offsets `(dy, dx)`, in that order, of the strided slices
/// `x[:, :, dy::b, dx::b]` (the Focus stem's form, which the NNA backend copies with
/// strided SCALE reads into the concatenation's channel blocks).
pub fn space_to_depth(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (b, [n, c, h, w]) = block_args(ctx, cx)?;
    if h % b != 0 || w % b != 0 {
        return Err(invalid(format!(
            "{h}x{w} is not a multiple of the block size {b}"
        )));
    }
    // b*b slices; a block above 16 (more than 256 slices) keeps the 6-D form.
    if b == 1 || b > 16 || ctx.konst(cx, 0).is_some() {
        return reshape_transpose_reshape(
            ctx,
            cx,
            vec![n, c, h / b, b, w / b, b],
            vec![0, 3, 5, 1, 2, 4],
            vec![n, c * b * b, h / b, w / b],
        );
    }
    let step = i64::try_from(b).map_err(|_| invalid(format!("blocksize {b} too large")))?;
    let mut parts = Vec::with_capacity(b * b);
    for dy in 0..step {
        for dx in 0..step {
            let axis = |axis, start| SliceAxis {
                axis,
                start,
                end: i64::MAX,
                step,
            };
            let spec = [axis(2, dy), axis(3, dx)];
            parts.push(runtime_slice(ctx, cx, &format!("/block{dy}_{dx}"), &spec)?);
        }
    }
    one(ctx.add(cx, "", Op::Concat { axis: 1 }, &parts)?)
}

/// ONNX DepthToSpace (`mode` DCR, the default, or CRD): `[N, C, H, W]` ->
/// `[N, C/(b*b), H*b, W*b]`.
pub fn depth_to_space(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (b, [n, c, h, w]) = block_args(ctx, cx)?;
    if c % (b * b) != 0 {
        return Err(invalid(format!(
            "{c} channels are not a multiple of blocksize^2 = {}",
            b * b
        )));
    }
    let c2 = c / (b * b);
    let (split, perm) = match cx.attrs.string_or("mode", "DCR")?.as_str() {
        "DCR" => (vec![n, b, b, c2, h, w], vec![0, 3, 4, 1, 5, 2]),
        "CRD" => (vec![n, c2, b, b, h, w], vec![0, 1, 4, 2, 5, 3]),
        m => return Err(invalid(format!("mode '{m}' is not DCR or CRD"))),
    };
    reshape_transpose_reshape(ctx, cx, split, perm, vec![n, c2, h * b, w * b])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_zero_and_minus_one() {
        assert_eq!(
            reshape_target(&[1, 3, 4, 5], &[0, -1], false).unwrap(),
            vec![1, 60]
        );
        assert_eq!(
            reshape_target(&[2, 3, 4], &[0, 12], false).unwrap(),
            vec![2, 12]
        );
        assert!(reshape_target(&[2, 3], &[3, 0], false).is_err());
    }

    #[test]
    fn reshape_rejects_bad_targets() {
        assert!(reshape_target(&[2, 3], &[4, -1], false).is_err());
        assert!(reshape_target(&[2, 3], &[-1, -1], false).is_err());
        assert!(reshape_target(&[2, 3], &[7], false).is_err());
        assert!(reshape_target(&[0, 3], &[0, -1], true).is_err());
        assert_eq!(reshape_target(&[0, 3], &[0, 3], true).unwrap(), vec![0, 3]);
    }
}
