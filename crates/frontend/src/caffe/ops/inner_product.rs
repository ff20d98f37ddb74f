//! InnerProduct: the input is viewed as `[M, K]` (axes before `axis` make M, the rest
//! K), multiplied by weights `[N, K]` (or `[K, N]` with `transpose`) and biased by
//! `[N]`; the output is the leading axes followed by N. Lowered to an optional
//! flattening Reshape, a Gemm, and a Reshape when the output is not `[M, N]`.

use crate::caffe::error::LayerError;
use crate::caffe::layer::{numel, Layer};
use nnac_ir::{GemmAttrs, Graph, Op, Value};

pub(in crate::caffe) fn inner_product(g: &mut Graph, l: &Layer) -> Result<Vec<Value>, LayerError> {
    l.expect_bottoms(1, 1)?;
    let Some(p) = l.param.inner_product_param.as_ref() else {
        return Err(l.invalid("inner_product_param is missing"));
    };
    let x = l.shape(g, 0);
    let axis = l.axis(p.axis().into(), x.len(), "axis")?;
    let n = p.num_output() as usize;
    let (Some(m), Some(k)) = (numel(&x[..axis]), numel(&x[axis..])) else {
        return Err(l.invalid(format!("input shape {x:?} overflows")));
    };
    if n == 0 {
        return Err(l.invalid("num_output must be positive"));
    }
    let w_shape = if p.transpose() { [k, n] } else { [n, k] };
    let mut inputs = vec![
        l.reshape_to(g, "flatten", l.x(), vec![m, k])?,
        l.weight_const(g, 0, "weights", &w_shape)?,
    ];
    if p.bias_term() {
        inputs.push(l.weight_const(g, 1, "bias", &[n])?);
    }
    let gemm = Op::Gemm(GemmAttrs {
        alpha: 1.0,
        beta: 1.0,
        trans_a: false,
        trans_b: !p.transpose(),
    });
    let mut out_shape = x[..axis].to_vec();
    out_shape.push(n);
    if out_shape == [m, n] {
        return Ok(vec![l.node(g, gemm, &inputs)?]);
    }
    let product = l.helper(g, "gemm", gemm, &inputs)?;
    Ok(vec![l.node(
        g,
        Op::Reshape { shape: out_shape },
        &[product],
    )?])
}
