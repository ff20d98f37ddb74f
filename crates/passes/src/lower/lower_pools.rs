//! Pools the pooling unit cannot run become work it or the dot-product engine can do
//! (float-level rewrites, checked for equivalence by the float interpreter):
//! - global average pool, and average pools without padding or partial windows, become
//!   depthwise convolutions with constant `1/N` weights (exact in int8: every weight
//!   quantizes to 127 with scale `1/(127 N)`); an average pool with one output pixel
//!   whose window covers the whole input and whose padding does not count (ONNX
//!   `count_include_pad=0`, e.g. a 7x7 window on a 6x6 map padded to 7x7) is a global
//!   average pool and becomes the same conv;
//! - max pools with an odd window `k > 3`, stride 1 and "same" padding `(k-1)/2`
//!   become `(k-1)/2` cascaded 3x3 stride-1 max pools (exact: the max over a cascade
//!   of windows is the max over their union);
//! - anything else (global max pool, strided large max pools) stays and becomes a host op.

use crate::lower::pool_unit::pool_stage;
use crate::util::add_const;
use crate::{PassCtx, PassError};
use nnac_ir::{ConvAttrs, Graph, NodeId, Op, PoolAttrs, PoolKind, Tensor, TensorType, Value};

pub fn lower_pools(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        let x = match g.node_inputs(id).first() {
            Some(&x) => x,
            None => continue,
        };
        let shape = g.value_type(x).shape.clone();
        if shape.len() != 4 {
            continue;
        }
        let name = g.node(id).name.clone();
        match g.node(id).op.clone() {
            Op::GlobalPool(PoolKind::Avg) => {
                avg_as_conv(g, id, [shape[2], shape[3]], [1, 1], shape[1]);
                ctx.note(
                    &name,
                    "global average pool -> depthwise conv with 1/N weights",
                );
            }
            Op::Pool(p)
                if p.kind == PoolKind::Avg
                    && pool_stage(&p, &shape).is_none()
                    && avg_is_plain(&p, &shape) =>
            {
                avg_as_conv(
                    g,
                    id,
                    [p.kernel[0], p.kernel[1]],
                    [p.strides[0], p.strides[1]],
                    shape[1],
                );
                ctx.note(&name, "average pool -> depthwise conv with 1/N weights");
            }
            Op::Pool(p)
                if p.kind == PoolKind::Avg
                    && pool_stage(&p, &shape).is_none()
                    && avg_is_global(&p, &shape, &g.node(id).outputs[0].shape) =>
            {
                avg_as_conv(g, id, [shape[2], shape[3]], [1, 1], shape[1]);
                ctx.note(
                    &name,
                    format!(
                        "average pool {:?} with uncounted padding {:?} over the whole {}x{} \
                         input -> global average pool -> depthwise conv with 1/N weights",
                        p.kernel, p.pads, shape[2], shape[3]
                    ),
                );
            }
            Op::Pool(p) if p.kind == PoolKind::Max && pool_stage(&p, &shape).is_none() => {
                if let Some(n) = same_max_cascade(&p) {
                    cascade_max(g, id, x, n);
                    ctx.note(
                        &name,
                        format!(
                            "max pool {:?} -> {n} cascaded 3x3 stride-1 max pools",
                            p.kernel
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// No padding, no dilation, no partial windows: every window averages `kh*kw` values.
fn avg_is_plain(p: &PoolAttrs, shape: &[usize]) -> bool {
    let exact = (0..2).all(|i| {
        let span = shape[2 + i] - p.kernel[i];
        span / p.strides[i] * p.strides[i] == span || !p.ceil_mode
    });
    p.pads.iter().all(|&x| x == 0)
        && p.dilations.iter().all(|&d| d == 1)
        && exact
        && p.kernel.len() == 2
}

/// One output pixel whose window covers every input pixel, padding not counted: the
/// average of the whole `H x W` map, a global average pool. Pads are
/// `[top, left, bottom, right]`.
fn avg_is_global(p: &PoolAttrs, shape: &[usize], out: &[usize]) -> bool {
    let covers = (0..2).all(|i| {
        let (begin, extent) = (p.pads[i], shape[2 + i]);
        p.kernel[i] >= begin + extent
    });
    p.kernel.len() == 2
        && p.pads.len() == 4
        && out.len() == 4
        && out[2] == 1
        && out[3] == 1
        && !p.count_include_pad
        && p.dilations.iter().all(|&d| d == 1)
        && covers
}

fn avg_as_conv(g: &mut Graph, id: NodeId, kernel: [usize; 2], strides: [usize; 2], c: usize) {
    let name = g.node(id).name.clone();
    let n = kernel[0] * kernel[1];
    let w = Tensor::f32(
        vec![c, 1, kernel[0], kernel[1]],
        vec![1.0 / n as f32; c * n],
    )
    .expect("c*n elements");
    let wv = add_const(g, &name, "avg_weight", w);
    let x = g.node_inputs(id)[0];
    g.set_node_inputs(id, &[x, wv]);
    g.node_mut(id).op = Op::Conv(ConvAttrs {
        kernel: kernel.to_vec(),
        strides: strides.to_vec(),
        pads: vec![0; 4],
        dilations: vec![1, 1],
        group: c,
    });
}

/// Number of 3x3 stride-1 pad-1 max pools equal to `p`, if any.
fn same_max_cascade(p: &PoolAttrs) -> Option<usize> {
    let k = p.kernel[0];
    let same = p.kernel.iter().all(|&x| x == k) && k % 2 == 1 && k > 3;
    let unit = p.strides.iter().all(|&s| s == 1) && p.dilations.iter().all(|&d| d == 1);
    (same && unit && p.pads.iter().all(|&x| x == (k - 1) / 2)).then_some((k - 1) / 2)
}

fn cascade_max(g: &mut Graph, id: NodeId, x: Value, n: usize) {
    let ty: TensorType = g.node(id).outputs[0].clone();
    let name = g.node(id).name.clone();
    let step = PoolAttrs {
        kind: PoolKind::Max,
        kernel: vec![3, 3],
        strides: vec![1, 1],
        pads: vec![1; 4],
        dilations: vec![1, 1],
        ceil_mode: false,
        count_include_pad: false,
    };
    let mut cur = x;
    for i in 0..n - 1 {
        let nm = g.fresh_name(&format!("{name}.cascade{i}"));
        cur = Value::new(
            g.add_node_typed(nm, Op::Pool(step.clone()), &[cur], vec![ty.clone()]),
            0,
        );
    }
    g.set_node_inputs(id, &[cur]);
    g.node_mut(id).op = Op::Pool(step);
}
