//! Brings every inner product with constant weights into one form the later passes
//! understand: `Gemm { alpha: 1, beta: 1, trans_a: false, trans_b: true }` with B
//! `[N, K]` and C `[N]` (or absent). `MatMul(x [M, K], const [K, N])` becomes such a
//! Gemm. Gemms that do not fit (transposed A, non-constant B, C not per-column) stay
//! as they are (and later become host ops).

use crate::fixed::FixedWeights;
use crate::util::add_const;
use crate::{PassCtx, PassError};
use nnac_ir::{GemmAttrs, Graph, NodeId, Op, Tensor, Value};

const CANON: GemmAttrs = GemmAttrs {
    alpha: 1.0,
    beta: 1.0,
    trans_a: false,
    trans_b: true,
};

pub fn normalize_gemm(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        let ins = g.node_inputs(id);
        let attrs = match &g.node(id).op {
            Op::Gemm(a) if *a != CANON => a.clone(),
            Op::MatMul if ins.len() == 2 => GemmAttrs {
                alpha: 1.0,
                beta: 1.0,
                trans_a: false,
                trans_b: false,
            },
            _ => continue,
        };
        if attrs.trans_a || g.value_type(ins[0]).rank() != 2 {
            continue;
        }
        let Some(b) = g.const_of(ins[1]).filter(|t| t.shape.len() == 2).cloned() else {
            continue;
        };
        let c = match ins.get(2) {
            Some(&cv) => match g.const_of(cv) {
                Some(t) => Some(t.clone()),
                None => continue,
            },
            None => None,
        };
        rewrite(g, id, &attrs, &b, c.as_ref());
        rekey_fixed_weights(g, ctx, ins[1], g.node_inputs(id)[1], &attrs);
        let name = g.node(id).name.clone();
        ctx.note(&name, "inner product normalized to gemm(B [N,K], C [N])");
    }
    Ok(())
}

/// A pre-quantized model's weight scales (`PassCtx::fixed`) follow B into its
/// `[N, K]` form: along N (the output channels), now axis 0.
fn rekey_fixed_weights(g: &Graph, ctx: &mut PassCtx, old: Value, new: Value, a: &GemmAttrs) {
    if old == new || a.alpha != 1.0 {
        return;
    }
    let Some(f) = ctx.fixed.weights.get(&g.node(old.node).name).cloned() else {
        return;
    };
    let n_axis = if a.trans_b { 0 } else { 1 };
    if f.axis.is_some_and(|ax| ax != n_axis) {
        return;
    }
    let axis = f.axis.map(|_| 0);
    ctx.fixed
        .weights
        .insert(g.node(new.node).name.clone(), FixedWeights { axis, ..f });
}

fn rewrite(g: &mut Graph, id: NodeId, a: &GemmAttrs, b: &Tensor, c: Option<&Tensor>) {
    let (k, n) = if a.trans_b {
        (b.shape[1], b.shape[0])
    } else {
        (b.shape[0], b.shape[1])
    };
    let bv = b.to_f32_vec();
    let mut w = vec![0f32; n * k];
    for (j, row) in w.chunks_mut(k).enumerate() {
        for (i, x) in row.iter_mut().enumerate() {
            let src = if a.trans_b {
                bv[j * k + i]
            } else {
                bv[i * n + j]
            };
            *x = a.alpha * src;
        }
    }
    let bias: Option<Vec<f32>> = c.and_then(|c| {
        let v = c.to_f32_vec();
        let per_col = match c.shape.as_slice() {
            [] | [1] | [1, 1] => Some(vec![v[0]; n]),
            [m] | [1, m] if *m == n => Some(v),
            _ => None,
        };
        per_col.map(|p| p.into_iter().map(|x| a.beta * x).collect())
    });
    if c.is_some() && bias.is_none() {
        return; // C varies along rows: keep the Gemm as it is.
    }
    let name = g.node(id).name.clone();
    let wv = add_const(
        g,
        &name,
        "weight",
        Tensor::f32(vec![n, k], w).expect("n*k elements"),
    );
    let x = g.node_inputs(id)[0];
    let mut ins = vec![x, wv];
    if let Some(bias) = bias {
        ins.push(add_const(
            g,
            &name,
            "bias",
            Tensor::f32(vec![n], bias).expect("n elements"),
        ));
    }
    g.set_node_inputs(id, &ins);
    g.node_mut(id).op = Op::Gemm(CANON);
}
