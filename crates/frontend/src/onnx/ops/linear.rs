//! Gemm (alpha, beta, transA, transB, optional C) and MatMul.

use super::one;
use crate::onnx::ctx::{Ctx, NResult, NodeCx, Out};
use nnac_ir::{GemmAttrs, Op};

pub fn gemm(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let attrs = GemmAttrs {
        alpha: cx.attrs.float_or("alpha", 1.0)?,
        beta: cx.attrs.float_or("beta", 1.0)?,
        trans_a: cx.attrs.int_or("transA", 0)? != 0,
        trans_b: cx.attrs.int_or("transB", 0)? != 0,
    };
    let mut ins = vec![ctx.value(cx, 0)?, ctx.value(cx, 1)?];
    ins.extend(ctx.opt_value(cx, 2)?);
    one(ctx.add(cx, "", Op::Gemm(attrs), &ins)?)
}

pub fn matmul(ctx: &mut Ctx, cx: &NodeCx) -> NResult<Vec<Out>> {
    let (a, b) = (ctx.value(cx, 0)?, ctx.value(cx, 1)?);
    one(ctx.add(cx, "", Op::MatMul, &[a, b])?)
}
