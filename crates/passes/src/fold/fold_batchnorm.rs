//! Rewrites inference BatchNormalization with constant parameters into a per-channel
//! multiply and add (`y = x * a + b`, `a = scale / sqrt(var + eps)`,
//! `b = bias - mean * a`). `fold_scale_bias` then folds them into a preceding dot
//! product; what remains becomes an NNA SCALE op.

use crate::util::{add_const, const_f32};
use crate::{PassCtx, PassError};
use nnac_ir::{BinaryOp, Graph, Op, Tensor, Value};

pub fn fold_batchnorm(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        let Op::BatchNorm { epsilon } = g.node(id).op else {
            continue;
        };
        let ins = g.node_inputs(id);
        let params: Option<Vec<Vec<f32>>> = ins[1..].iter().map(|&v| const_f32(g, v)).collect();
        let Some(p) = params else {
            continue; // non-constant statistics: stays a (host) batch norm
        };
        let (scale, bias, mean, var) = (&p[0], &p[1], &p[2], &p[3]);
        let a: Vec<f32> = scale
            .iter()
            .zip(var)
            .map(|(s, v)| s / (v + epsilon).sqrt())
            .collect();
        let b: Vec<f32> = bias
            .iter()
            .zip(mean)
            .zip(&a)
            .map(|((b, m), a)| b - m * a)
            .collect();
        let x = ins[0];
        let ty = g.value_type(x).clone();
        let mut cshape = vec![1; ty.rank()];
        cshape[1] = a.len();
        let name = g.node(id).name.clone();
        let av = add_const(
            g,
            &name,
            "a",
            Tensor::f32(cshape.clone(), a).expect("C elements"),
        );
        let bv = add_const(g, &name, "b", Tensor::f32(cshape, b).expect("C elements"));
        let mul_name = g.fresh_name(&format!("{name}.mul"));
        let mul = g.add_node_typed(mul_name, Op::Binary(BinaryOp::Mul), &[x, av], vec![ty]);
        g.set_node_inputs(id, &[Value::new(mul, 0), bv]);
        g.node_mut(id).op = Op::Binary(BinaryOp::Add);
        ctx.note(&name, "batch_norm -> per-channel mul + add");
    }
    g.remove_dead();
    Ok(())
}
