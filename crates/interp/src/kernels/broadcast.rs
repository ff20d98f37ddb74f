//! numpy (multidirectional) broadcasting of a binary elementwise function.
//!
//! Axes are first coalesced (size-1 axes dropped, neighbours merged where both
//! operands step through them contiguously), so `[1,C,H,W] + [1,C,1,1]` becomes `C`
//! rows of `H*W` with a scalar per row. Each output row then runs one of four tight
//! loops (operand contiguous or repeated), in parallel over rows for large tensors.

use super::View;
use rayon::prelude::*;

/// Elements per parallel task.
const TASK: usize = 1 << 15;

/// One coalesced axis: size and element stride of each operand (0 = broadcast).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Axis {
    size: usize,
    sa: usize,
    sb: usize,
}

/// `out[i] = f(a[..], b[..])` over `out_shape` (the broadcast of both shapes).
pub fn zip_broadcast<F>(a: View<'_>, b: View<'_>, out_shape: &[usize], f: F) -> Vec<f32>
where
    F: Fn(f32, f32) -> f32 + Sync,
{
    let total: usize = out_shape.iter().product();
    let mut out = vec![0.0f32; total];
    if total == 0 {
        return out;
    }
    let axes = coalesce(
        out_shape,
        &strides_for(a.shape, out_shape),
        &strides_for(b.shape, out_shape),
    );
    let (inner, outer) = match axes.split_last() {
        Some((last, rest)) => (*last, rest.to_vec()),
        None => (
            Axis {
                size: 1,
                sa: 0,
                sb: 0,
            },
            Vec::new(),
        ),
    };
    let rows_per_task = (TASK / inner.size).max(1);
    out.par_chunks_mut(inner.size * rows_per_task)
        .enumerate()
        .for_each(|(t, chunk)| {
            for (r, orow) in chunk.chunks_exact_mut(inner.size).enumerate() {
                let (oa, ob) = row_offsets(t * rows_per_task + r, &outer);
                run_row(a.data, oa, inner.sa, b.data, ob, inner.sb, orow, &f);
            }
        });
    out
}

/// `buf[i] = f(buf[i], b[..])` where `buf` already has the output shape.
pub fn zip_inplace_a<F>(buf: &mut [f32], shape: &[usize], b: View<'_>, f: F)
where
    F: Fn(f32, f32) -> f32 + Sync,
{
    if b.shape == shape {
        buf.par_chunks_mut(TASK)
            .zip(b.data.par_chunks(TASK))
            .for_each(|(x, y)| {
                for (x, &y) in x.iter_mut().zip(y) {
                    *x = f(*x, y);
                }
            });
    } else {
        let a = View { shape, data: buf };
        let out = zip_broadcast(a, b, shape, &f);
        buf.copy_from_slice(&out);
    }
}

/// Row-major element strides of `shape` aligned to the (longer) `out` shape, with
/// 0 for missing and broadcast axes.
fn strides_for(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; out.len()];
    let mut s = 1;
    for i in (0..shape.len()).rev() {
        let oi = out.len() - shape.len() + i;
        strides[oi] = if shape[i] == 1 { 0 } else { s };
        s *= shape[i];
    }
    strides
}

fn coalesce(out: &[usize], sa: &[usize], sb: &[usize]) -> Vec<Axis> {
    let mut axes: Vec<Axis> = Vec::new();
    for i in 0..out.len() {
        if out[i] == 1 {
            continue;
        }
        let ax = Axis {
            size: out[i],
            sa: sa[i],
            sb: sb[i],
        };
        match axes.last_mut() {
            Some(p) if p.sa == ax.sa * ax.size && p.sb == ax.sb * ax.size => {
                *p = Axis {
                    size: p.size * ax.size,
                    sa: ax.sa,
                    sb: ax.sb,
                };
            }
            _ => axes.push(ax),
        }
    }
    axes
}

/// Operand offsets of output row `row` over the outer axes.
fn row_offsets(mut row: usize, outer: &[Axis]) -> (usize, usize) {
    let (mut oa, mut ob) = (0, 0);
    for ax in outer.iter().rev() {
        let i = row % ax.size;
        row /= ax.size;
        oa += i * ax.sa;
        ob += i * ax.sb;
    }
    (oa, ob)
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn run_row<F: Fn(f32, f32) -> f32>(
    a: &[f32],
    oa: usize,
    sa: usize,
    b: &[f32],
    ob: usize,
    sb: usize,
    out: &mut [f32],
    f: &F,
) {
    let n = out.len();
    match (sa, sb) {
        (0, 0) => out.fill(f(a[oa], b[ob])),
        (0, _) => {
            let x = a[oa];
            for (o, &y) in out.iter_mut().zip(&b[ob..ob + n]) {
                *o = f(x, y);
            }
        }
        (_, 0) => {
            let y = b[ob];
            for (o, &x) in out.iter_mut().zip(&a[oa..oa + n]) {
                *o = f(x, y);
            }
        }
        _ => {
            for ((o, &x), &y) in out.iter_mut().zip(&a[oa..oa + n]).zip(&b[ob..ob + n]) {
                *o = f(x, y);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::Rng;

    /// Plain numpy broadcasting by index arithmetic.
    fn naive(a: View<'_>, b: View<'_>, out: &[usize]) -> Vec<f32> {
        let total: usize = out.iter().product();
        let pick = |v: &View<'_>, idx: &[usize]| -> f32 {
            let off = out.len() - v.shape.len();
            let mut flat = 0;
            for (i, &d) in v.shape.iter().enumerate() {
                flat = flat * d + if d == 1 { 0 } else { idx[off + i] };
            }
            v.data[flat]
        };
        (0..total)
            .map(|mut t| {
                let mut idx = vec![0; out.len()];
                for d in (0..out.len()).rev() {
                    idx[d] = t % out[d];
                    t /= out[d];
                }
                pick(&a, &idx) - 2.0 * pick(&b, &idx)
            })
            .collect()
    }

    #[test]
    fn matches_naive_broadcasting() {
        let mut rng = Rng::new(1);
        let cases: [(&[usize], &[usize]); 9] = [
            (&[1, 3, 4, 5], &[1, 3, 1, 1]),
            (&[1, 3, 4, 5], &[5]),
            (&[], &[2, 3]),
            (&[2, 1, 4], &[3, 1]),
            (&[3, 1], &[1, 4]),
            (&[1], &[1]),
            (&[2, 3, 4], &[2, 3, 4]),
            (&[1, 4, 1, 6], &[1, 1, 5, 1]),
            (&[200, 300], &[300]),
        ];
        for (sa, sb) in cases {
            let out = nnac_ir::infer::broadcast(sa, sb).unwrap();
            let ad = rng.vec(sa.iter().product());
            let bd = rng.vec(sb.iter().product());
            let (a, b) = (
                View {
                    shape: sa,
                    data: &ad,
                },
                View {
                    shape: sb,
                    data: &bd,
                },
            );
            let got = zip_broadcast(a, b, &out, |x, y| x - 2.0 * y);
            assert_eq!(got, naive(a, b, &out), "{sa:?} op {sb:?}");
            if out == sa {
                let mut buf = ad.clone();
                zip_inplace_a(&mut buf, sa, b, |x, y| x - 2.0 * y);
                assert_eq!(buf, got, "in place {sa:?} op {sb:?}");
            }
        }
    }
}
