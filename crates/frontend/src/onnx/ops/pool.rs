//! MaxPool, AveragePool (ceil_mode, pads, auto_pad, dilations, count_include_pad), the
//! global pools, and ReduceMean / ReduceMax over the spatial axes (global pools). MaxPool's optional `Indices` output is not produced: the driver
//! marks it unavailable, so a model that uses it is reported unsupported.

use super::one;
use crate::onnx::ctx::{invalid, unsupported, Ctx, NResult, NodeCx, Out};
use crate::onnx::limits::attr_size;
use crate::onnx::padding::{resolve_pads, spatial_attr};
use nnac_ir::{Op, PoolAttrs, PoolKind};

fn pool(ctx: &mut Ctx, cx: &NodeCx, kind: PoolKind) -> NResult<Vec<Out>> {
    let xs = ctx.shape(cx, 0)?;
    if xs.len() < 3 {
        return Err(invalid(format!(
            "input shape {xs:?} needs rank >= 3 (N, C, spatial...)"
        )));
    }
    let n = xs.len() - 2;
    let kernel: Vec<usize> = match cx.attrs.ints("kernel_shape")? {
        Some(k) if k.len() == n => k
            .iter()
            .map(|&v| attr_size(v, 1, "kernel_shape").map_err(invalid))
            .collect::<NResult<_>>()?,
        Some(k) => {
            return Err(invalid(format!(
                "kernel_shape {k:?} does not match {n} spatial axes"
            )))
        }
        None => return Err(invalid("attribute 'kernel_shape' is required")),
    };
    let strides = spatial_attr(cx, "strides", n, 1, 1)?;
    let dilations = spatial_attr(cx, "dilations", n, 1, 1)?;
    let pads = resolve_pads(cx, &xs[2..], &kernel, &strides, &dilations)?;
    let ceil_mode = cx.attrs.int_or("ceil_mode", 0)? != 0;
    let count_include_pad = kind == PoolKind::Avg && cx.attrs.int_or("count_include_pad", 0)? != 0;
    let attrs = PoolAttrs {
        kind,
        kernel,
        strides,
        pads,
        dilations,
        ceil_mode,
        count_include_pad,
    };
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", Op::Pool(attrs), &[x])?)
}

pub fn max_pool(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    pool(ctx, cx, PoolKind::Max)
}

pub fn average_pool(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    pool(ctx, cx, PoolKind::Avg)
}

fn global(ctx: &mut Ctx, cx: &NodeCx, kind: PoolKind) -> NResult<Vec<Out>> {
    let x = ctx.value(cx, 0)?;
    one(ctx.add(cx, "", Op::GlobalPool(kind), &[x])?)
}

pub fn global_average_pool(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    global(ctx, cx, PoolKind::Avg)
}

pub fn global_max_pool(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    global(ctx, cx, PoolKind::Max)
}

/// ReduceMean / ReduceMax over exactly the spatial axes of a tensor of rank >= 3 (the
/// squeeze-and-excitation pooling of TensorFlow exports): a global pool, followed by
/// a reshape to `[N, C]` when `keepdims = 0`. The axes come from the attribute (input
/// 1 from opset 18); other axes are unsupported.
fn reduce(ctx: &mut Ctx, cx: &NodeCx, kind: PoolKind) -> NResult<Vec<Out>> {
    let xs = ctx.shape(cx, 0)?.to_vec();
    let axes: Option<Vec<i64>> = if cx.opset >= 18 && cx.has_input(1) {
        let t = ctx
            .konst(cx, 1)
            .ok_or_else(|| unsupported("axes computed at run time"))?;
        Some(crate::onnx::fold::i64s(t, "axes")?)
    } else {
        cx.attrs.ints("axes")?.map(<[i64]>::to_vec)
    };
    let spatial: Vec<usize> = (2..xs.len()).collect();
    let mut axes = match axes {
        Some(a) if !a.is_empty() => super::norm_axes(&a, xs.len())?,
        _ if cx.attrs.int_or("noop_with_empty_axes", 0)? != 0 => {
            return Err(unsupported("noop_with_empty_axes = 1 (an identity)"));
        }
        _ => (0..xs.len()).collect(),
    };
    axes.sort_unstable();
    axes.dedup();
    if xs.len() < 3 || axes != spatial {
        return Err(unsupported(format!(
            "{} over axes {axes:?} of a rank-{} tensor (only its spatial axes {spatial:?}: \
             a global pool)",
            cx.op_type(),
            xs.len()
        )));
    }
    let x = ctx.value(cx, 0)?;
    let keep = cx.attrs.int_or("keepdims", 1)? != 0;
    if keep {
        return one(ctx.add(cx, "", Op::GlobalPool(kind), &[x])?);
    }
    let pooled = ctx.add(cx, "pool", Op::GlobalPool(kind), &[x])?;
    let shape = xs[..2].to_vec();
    one(ctx.add(cx, "", Op::Reshape { shape }, &[pooled])?)
}

pub fn reduce_mean(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    reduce(ctx, cx, PoolKind::Avg)
}

pub fn reduce_max(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    reduce(ctx, cx, PoolKind::Max)
}
