//! SCALE and ELTWISE: pure SIMD ops on integer codes.

use super::pool::pool;
use super::{saturate, QTrace};
use crate::epilogue;
use crate::scale_zp;
use crate::QError;
use nnac_ir::{EltwiseKind, EltwiseOp, Graph, NodeId, ScaleOp};
use nnac_isa::arith::{eltwise_combine, eltwise_rescale};
use nnac_isa::layouts::EltOp;
use rayon::prelude::*;

/// Maps `f(channel, element)` over a `[N, C, ...]` tensor, one channel plane per
/// parallel task; `f` returns the output code and whether the accumulator wrapped.
/// Returns the codes and the number of wrapped accumulators.
fn map_planes<T: Sync>(
    shape: &[usize],
    x: &[T],
    f: impl Fn(usize, usize) -> (i32, bool) + Sync,
) -> (Vec<i32>, u64) {
    let inner = plane_len(shape);
    let channels = shape.get(1).copied().unwrap_or(1).max(1);
    let mut out = vec![0i32; x.len()];
    let wrapped = out
        .par_chunks_mut(inner)
        .enumerate()
        .map(|(plane, o)| {
            let (c, base) = (plane % channels, plane * inner);
            let mut wrapped = 0;
            for (j, code) in o.iter_mut().enumerate() {
                let (v, w) = f(c, base + j);
                *code = v;
                wrapped += u64::from(w);
            }
            wrapped
        })
        .sum();
    (out, wrapped)
}

/// Elements of one channel plane of a `[N, C, ...]` tensor (1 for a tensor of rank
/// 2 or less: a lower-rank ELTWISE is valid IR, and bias correction runs it before the
/// partitioning moves it to the host).
fn plane_len(shape: &[usize]) -> usize {
    shape
        .get(2..)
        .map_or(1, |s| s.iter().product::<usize>())
        .max(1)
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
    let (codes, _) = map_planes(&xt.shape, x, |c, i| {
        let v = (x[i] - zp).wrapping_mul(w[c]).wrapping_add(b[c]);
        let code = saturate(
            epilogue::apply(rq, s.epilogue.act.as_ref(), v, c),
            out_t.dtype,
        );
        (code, false)
    });
    match (&s.pool, xt.shape.as_slice()) {
        (Some(p), &[_, c, h, w]) => pool(p, &codes, c, h, w, scale_zp(out_t).1),
        _ => codes,
    }
}

/// ELTWISE: rescale both inputs, combine (add, mul or max), wrap at 30 bits, epilogue.
pub fn eltwise(
    g: &Graph,
    id: NodeId,
    e: &EltwiseOp,
    a: &[i32],
    b: &[i32],
    trace: &mut QTrace,
) -> Result<Vec<i32>, QError> {
    let node = g.node(id);
    let ins = g.node_inputs(id);
    let (at, bt) = (g.value_type(ins[0]), g.value_type(ins[1]));
    let (za, zb) = (scale_zp(at).1, scale_zp(bt).1);
    let err = || QError::node(&node.name, "eltwise op is not quantized");
    let (rq, m) = (
        e.epilogue.requant.as_ref().ok_or_else(err)?,
        e.inputs.as_ref().ok_or_else(err)?,
    );
    let out_t = &node.outputs[0];
    let op = match e.kind {
        EltwiseKind::Add => EltOp::Add,
        EltwiseKind::Mul => EltOp::Mul,
        EltwiseKind::Max => EltOp::Max,
    };
    // b has a's shape, or one value per channel plane (broadcast over the pixels).
    let per_b = if b.len() == a.len() {
        1
    } else {
        plane_len(&at.shape)
    };
    let b_of = |i: usize| b[i / per_b];
    let (codes, wrapped) = map_planes(&at.shape, a, |c, i| {
        let ra = eltwise_rescale(a[i], za, m.a.mult, u32::from(m.a.shift));
        let rb = eltwise_rescale(b_of(i), zb, m.b.mult, u32::from(m.b.shift));
        let acc = eltwise_combine(op, ra, rb);
        epilogue::code(rq, e.epilogue.act.as_ref(), acc, c, out_t.dtype)
    });
    trace.acc_overflows += wrapped;
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lower-rank tensor (valid IR for an ELTWISE before partitioning) is one plane
    /// per element of one channel, never an out-of-range slice.
    #[test]
    fn tensors_below_rank_three_map_element_by_element() {
        assert_eq!(plane_len(&[6]), 1);
        assert_eq!(plane_len(&[2, 3]), 1);
        assert_eq!(plane_len(&[1, 3, 4, 5]), 20);
        let x = [1, 2, 3, 4, 5, 6];
        let (codes, wrapped) = map_planes(&[6], &x, |c, i| (x[i] * 10 + c as i32, false));
        assert_eq!(codes, vec![10, 20, 30, 40, 50, 60]);
        assert_eq!(wrapped, 0);
        let (codes, _) = map_planes(&[2, 3], &x, |c, i| (x[i] + 100 * c as i32, false));
        assert_eq!(codes, vec![1, 102, 203, 4, 105, 206]);
    }
}
