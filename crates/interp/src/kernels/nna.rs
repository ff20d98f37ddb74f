//! Float semantics of the fused NNA ops (`Op::Nna`) in a fused-but-unquantized
//! graph, so a fusion pass can be checked against the original graph: a dot product
//! (conv, deconv, inner product) or per-channel scale, then the epilogue's activation
//! (or per-channel PReLU), then the optional pooling stage; an eltwise add with its
//! activation; concatenation; channel shuffle; host ops as their plain IR op. Quantized epilogues
//! (`requant`) belong to the quantized interpreter and are rejected.

use super::error::KernelError;
use super::{conv, conv_transpose, elementwise, layout, linear, pool, View};
use nnac_ir::{DotKind, Epilogue, FusedAct, GemmAttrs, NnaOp, PoolAttrs, PoolStage};

pub fn eval(
    op: &NnaOp,
    x: View<'_>,
    rest: &[View<'_>],
    out_shape: &[usize],
) -> Result<Vec<f32>, KernelError> {
    if op.epilogue().is_some_and(|e| e.requant.is_some()) {
        return Err(KernelError::Quantized { op: op.mnemonic() });
    }
    match op {
        NnaOp::Dot(d) => {
            let (shape, y) = match &d.kind {
                DotKind::Conv(a) => {
                    let s = inferred(nnac_ir::Op::Conv(a.clone()), x, rest[0])?;
                    let y = conv::conv(a, x, rest[0], Some(rest[1]), &s)?;
                    (s, y)
                }
                DotKind::Deconv(a) => {
                    let s = inferred(nnac_ir::Op::ConvTranspose(a.clone()), x, rest[0])?;
                    let y = conv_transpose::conv_transpose(a, x, rest[0], Some(rest[1]), &s)?;
                    (s, y)
                }
                DotKind::Inner => {
                    let s = vec![x.shape[0], rest[0].shape[0]];
                    let ga = GemmAttrs {
                        alpha: 1.0,
                        beta: 1.0,
                        trans_a: false,
                        trans_b: true,
                    };
                    let y = linear::gemm(&ga, x, rest[0], Some(rest[1]), &s)?;
                    (s, y)
                }
            };
            finish(&d.epilogue, d.pool.as_ref(), shape, y, out_shape)
        }
        NnaOp::Scale(s) => {
            let c = x.shape[1];
            let inner: usize = x.shape[2..].iter().product();
            let (w, b) = (rest[0].data, rest[1].data);
            let mut y = x.data.to_vec();
            for (p, plane) in y.chunks_exact_mut(inner.max(1)).enumerate() {
                let (wv, bv) = (w[p % c], b[p % c]);
                plane.iter_mut().for_each(|v| *v = *v * wv + bv);
            }
            finish(&s.epilogue, s.pool.as_ref(), x.shape.to_vec(), y, out_shape)
        }
        NnaOp::Eltwise(e) => {
            let y = elementwise::binary(e.kind.binary(), x, rest[0], x.shape);
            finish(&e.epilogue, None, x.shape.to_vec(), y, out_shape)
        }
        NnaOp::Concat { axis } => {
            let mut all = vec![x];
            all.extend_from_slice(rest);
            Ok(layout::concat(&all, *axis, out_shape))
        }
        NnaOp::ChannelShuffle { groups } => Ok(layout::channel_shuffle(x.data, x.shape, *groups)),
        NnaOp::Upsample { factors } => Ok(layout::upsample_nearest(x.data, x.shape, *factors)),
        NnaOp::DepthToSpace { block, crd } => {
            Ok(layout::depth_to_space(x.data, x.shape, *block, *crd))
        }
        NnaOp::Host(inner) => super::eval(
            inner,
            super::Operand::Borrowed(x.data),
            x.shape,
            rest,
            out_shape,
        ),
    }
}

/// The output shape of the dot product itself (before any pooling stage).
fn inferred(op: nnac_ir::Op, x: View<'_>, w: View<'_>) -> Result<Vec<usize>, KernelError> {
    let (xt, wt) = (
        nnac_ir::TensorType::f32(x.shape.to_vec()),
        nnac_ir::TensorType::f32(w.shape.to_vec()),
    );
    Ok(nnac_ir::infer::infer_types(&op, &[&xt, &wt])
        .map_err(KernelError::shape)?
        .remove(0)
        .shape)
}

/// Applies the activation, then the pooling stage.
fn finish(
    ep: &Epilogue,
    pool_stage: Option<&PoolStage>,
    shape: Vec<usize>,
    mut y: Vec<f32>,
    out_shape: &[usize],
) -> Result<Vec<f32>, KernelError> {
    match &ep.act {
        None => {}
        Some(FusedAct::Act(a)) => elementwise::activation(*a, &mut y),
        Some(FusedAct::PRelu(slopes)) => {
            let c = shape.get(1).copied().unwrap_or(1);
            let inner: usize = shape.iter().skip(2).product();
            if slopes.len() != c {
                return Err(KernelError::PreluSlopes {
                    slopes: slopes.len(),
                    channels: c,
                });
            }
            for (p, plane) in y.chunks_exact_mut(inner.max(1)).enumerate() {
                let s = slopes[p % c];
                plane
                    .iter_mut()
                    .for_each(|v| *v = if *v < 0.0 { s * *v } else { *v });
            }
        }
    }
    let Some(p) = pool_stage else { return Ok(y) };
    let attrs = PoolAttrs {
        kind: p.kind,
        kernel: p.kernel.to_vec(),
        strides: p.strides.to_vec(),
        pads: p.pads.to_vec(),
        dilations: vec![1, 1],
        ceil_mode: p.ceil_mode,
        count_include_pad: p.count_include_pad,
    };
    pool::pool(
        &attrs,
        View {
            shape: &shape,
            data: &y,
        },
        out_shape,
    )
}

#[cfg(test)]
mod tests {
    use crate::kernels::testutil::Rng;
    use crate::run_float;
    use nnac_ir::{
        Activation, ConvAttrs, DotKind, DotOp, EltwiseKind, EltwiseOp, Epilogue, FusedAct, Graph,
        NnaOp, Op, PoolAttrs, PoolKind, PoolStage, ScaleOp, Tensor, TensorType, Value,
    };
    use std::collections::BTreeMap;

    fn out(g: &mut Graph, name: &str, op: Op, ins: &[Value]) -> Value {
        Value::new(g.add_node(name, op, ins).unwrap(), 0)
    }

    /// conv + relu + 2x2 max pool, then a per-channel scale with PReLU, then an add
    /// with relu: once as plain IR ops and once fused; both must agree.
    #[test]
    fn fused_ops_match_their_unfused_graph() {
        let mut rng = Rng::new(8);
        let (c, m, h) = (3, 4, 6);
        let x = Tensor::f32(vec![1, c, h, h], rng.vec(c * h * h)).unwrap();
        let w = Tensor::f32(vec![m, c, 3, 3], rng.vec(m * c * 9)).unwrap();
        let b = Tensor::f32(vec![m], rng.vec(m)).unwrap();
        let (sw, sb) = (
            Tensor::f32(vec![m], rng.vec(m)).unwrap(),
            Tensor::f32(vec![m], rng.vec(m)).unwrap(),
        );
        let slopes = rng.vec(m);
        let conv = ConvAttrs {
            kernel: vec![3, 3],
            strides: vec![1, 1],
            pads: vec![1; 4],
            dilations: vec![1, 1],
            group: 1,
        };
        let stage = PoolStage {
            kind: PoolKind::Max,
            kernel: [2, 2],
            strides: [2, 2],
            pads: [0; 4],
            ceil_mode: false,
            count_include_pad: false,
        };
        let pool = PoolAttrs {
            kind: PoolKind::Max,
            kernel: vec![2, 2],
            strides: vec![2, 2],
            pads: vec![0; 4],
            dilations: vec![1, 1],
            ceil_mode: false,
            count_include_pad: false,
        };
        let pooled = TensorType::f32(vec![1, m, h / 2, h / 2]);

        let mut plain = Graph::new("plain");
        let xi = plain.add_input("x", TensorType::f32(vec![1, c, h, h]));
        let (wv, bv) = (
            plain.add_constant("w", w.clone()),
            plain.add_constant("b", b.clone()),
        );
        let y = out(&mut plain, "conv", Op::Conv(conv.clone()), &[xi, wv, bv]);
        let y = out(&mut plain, "relu", Op::Act(Activation::Relu), &[y]);
        let y = out(&mut plain, "pool", Op::Pool(pool), &[y]);
        let sw4 = plain.add_constant(
            "sw",
            Tensor::f32(vec![m, 1, 1], sw.as_f32().unwrap().to_vec()).unwrap(),
        );
        let sb4 = plain.add_constant(
            "sb",
            Tensor::f32(vec![m, 1, 1], sb.as_f32().unwrap().to_vec()).unwrap(),
        );
        let s = out(
            &mut plain,
            "mul",
            Op::Binary(nnac_ir::BinaryOp::Mul),
            &[y, sw4],
        );
        let s = out(
            &mut plain,
            "add_b",
            Op::Binary(nnac_ir::BinaryOp::Add),
            &[s, sb4],
        );
        let sl = plain.add_constant("slope", Tensor::f32(vec![m, 1, 1], slopes.clone()).unwrap());
        let s = out(&mut plain, "prelu", Op::PRelu, &[s, sl]);
        let e = out(
            &mut plain,
            "sum",
            Op::Binary(nnac_ir::BinaryOp::Add),
            &[s, y],
        );
        let e = out(&mut plain, "relu2", Op::Act(Activation::Relu), &[e]);
        plain.add_output("y", e);

        let ep = |act| Epilogue { act, requant: None };
        let mut fused = Graph::new("fused");
        let xi = fused.add_input("x", TensorType::f32(vec![1, c, h, h]));
        let (wv, bv) = (fused.add_constant("w", w), fused.add_constant("b", b));
        let dot = NnaOp::Dot(DotOp {
            kind: DotKind::Conv(conv),
            epilogue: ep(Some(FusedAct::Act(Activation::Relu))),
            pool: Some(stage),
        });
        let y = Value::new(
            fused.add_node_typed("conv", Op::Nna(dot), &[xi, wv, bv], vec![pooled.clone()]),
            0,
        );
        let (swv, sbv) = (fused.add_constant("sw", sw), fused.add_constant("sb", sb));
        let scale = NnaOp::Scale(ScaleOp {
            epilogue: ep(Some(FusedAct::PRelu(slopes))),
            pool: None,
        });
        let s = Value::new(
            fused.add_node_typed(
                "scale",
                Op::Nna(scale),
                &[y, swv, sbv],
                vec![pooled.clone()],
            ),
            0,
        );
        let elt = NnaOp::Eltwise(EltwiseOp {
            kind: EltwiseKind::Add,
            epilogue: ep(Some(FusedAct::Act(Activation::Relu))),
            inputs: None,
        });
        let e = Value::new(
            fused.add_node_typed("sum", Op::Nna(elt), &[s, y], vec![pooled]),
            0,
        );
        fused.add_output("y", e);

        let inputs = BTreeMap::from([("x".to_string(), x)]);
        let a = run_float(&plain, &inputs).unwrap();
        let b = run_float(&fused, &inputs).unwrap();
        crate::kernels::testutil::assert_close(
            b["y"].as_f32().unwrap(),
            a["y"].as_f32().unwrap(),
            1e-5,
            "fused vs plain",
        );
    }
}
