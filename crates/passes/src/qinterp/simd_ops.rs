//! SCALE and ELTWISE: pure SIMD ops on integer codes.

use super::pool::pool;
use super::{saturate, QTrace};
use crate::qinterp::epilogue;
use crate::quant::params::scale_zp;
use crate::PassError;
use nnac_ir::{EltwiseOp, Graph, NodeId, ScaleOp};
use nnac_isa::arith::{eltwise_combine, eltwise_rescale, wrap_acc, ACC_BITS};
use nnac_isa::layouts::EltOp;

/// Channel of flat element `i` of a `[1, C, ...]` tensor.
fn channel_of(shape: &[usize], i: usize) -> usize {
    let inner: usize = shape[2..].iter().product::<usize>().max(1);
    (i / inner) % shape[1]
}

/// SCALE: `v = (x - zp_in) * w[c] + b[c]` (int32, wrapping like IMUL / IADD), then the
/// epilogue and the optional pool.
pub fn scale(g: &Graph, id: NodeId, s: &ScaleOp, x: &[i32], w: &[i32], b: &[i32]) -> Vec<i32> {
    let node = g.node(id);
    let xt = g.value_type(g.node_inputs(id)[0]);
    let (_, zp) = scale_zp(xt);
    let out_t = &node.outputs[0];
    let rq = s
        .epilogue
        .requant
        .as_ref()
        .expect("checked by run_quantized: quantized scale");
    let codes: Vec<i32> = x
        .iter()
        .enumerate()
        .map(|(i, &q)| {
            let c = channel_of(&xt.shape, i);
            let v = (q - zp).wrapping_mul(w[c]).wrapping_add(b[c]);
            saturate(
                epilogue::apply(rq, s.epilogue.act.as_ref(), v, c),
                out_t.dtype,
            )
        })
        .collect();
    match (&s.pool, xt.shape.as_slice()) {
        (Some(p), &[_, c, h, w]) => pool(p, &codes, c, h, w, scale_zp(out_t).1),
        _ => codes,
    }
}

/// ELTWISE add: rescale both inputs, add, wrap at 30 bits, epilogue.
pub fn eltwise(
    g: &Graph,
    id: NodeId,
    e: &EltwiseOp,
    a: &[i32],
    b: &[i32],
    trace: &mut QTrace,
) -> Result<Vec<i32>, PassError> {
    let node = g.node(id);
    let ins = g.node_inputs(id);
    let (at, bt) = (g.value_type(ins[0]), g.value_type(ins[1]));
    let (za, zb) = (scale_zp(at).1, scale_zp(bt).1);
    let err = || PassError::node("qinterp", &node.name, "eltwise op is not quantized");
    let (rq, m) = (
        e.epilogue.requant.as_ref().ok_or_else(err)?,
        e.inputs.as_ref().ok_or_else(err)?,
    );
    let out_t = &node.outputs[0];
    Ok(a.iter()
        .zip(b)
        .enumerate()
        .map(|(i, (&qa, &qb))| {
            let ra = eltwise_rescale(qa, za, m.a.mult, u32::from(m.a.shift));
            let rb = eltwise_rescale(qb, zb, m.b.mult, u32::from(m.b.shift));
            let (v, wrapped) = wrap_acc(eltwise_combine(EltOp::Add, ra, rb), ACC_BITS);
            trace.acc_overflows += u64::from(wrapped);
            let c = channel_of(&at.shape, i);
            saturate(
                epilogue::apply(rq, e.epilogue.act.as_ref(), v, c),
                out_t.dtype,
            )
        })
        .collect())
}
