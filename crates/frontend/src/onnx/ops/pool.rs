//! MaxPool, AveragePool (ceil_mode, pads, auto_pad, dilations, count_include_pad) and
//! the global pools. MaxPool's optional `Indices` output is not produced: the driver
//! marks it unavailable, so a model that uses it is reported unsupported.

use super::one;
use crate::onnx::ctx::{invalid, Ctx, NResult, NodeCx, Out};
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
