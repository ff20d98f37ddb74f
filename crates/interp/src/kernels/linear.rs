//! `Gemm` (`alpha * A' * B' + beta * C`) and numpy `MatMul` (batched, broadcasting
//! batch axes, 1-D operands promoted and their axis dropped again).

use super::error::KernelError;
use super::gemm::{matmul_acc, MatRef};
use super::View;
use nnac_ir::GemmAttrs;

pub fn gemm(
    a: &GemmAttrs,
    x: View<'_>,
    w: View<'_>,
    c: Option<View<'_>>,
    out_shape: &[usize],
) -> Result<Vec<f32>, KernelError> {
    let (m, n) = (out_shape[0], out_shape[1]);
    let am = MatRef::row_major(x.data, x.shape[0], x.shape[1]);
    let bm = MatRef::row_major(w.data, w.shape[0], w.shape[1]);
    let am = if a.trans_a { am.t() } else { am };
    let bm = if a.trans_b { bm.t() } else { bm };
    let mut out = vec![0.0f32; m * n];
    if let Some(c) = c {
        if a.beta != 0.0 {
            fill_broadcast_2d(&mut out, m, n, c, a.beta)?;
        }
    }
    matmul_acc(am, bm, &mut out, a.alpha);
    Ok(out)
}

/// `out[i][j] = beta * c[i][j]` with `c` broadcast (unidirectionally) to `[m, n]`.
fn fill_broadcast_2d(
    out: &mut [f32],
    m: usize,
    n: usize,
    c: View<'_>,
    beta: f32,
) -> Result<(), KernelError> {
    let (cm, cn) = match c.shape {
        [] => (1, 1),
        [cn] => (1, *cn),
        [cm, cn] => (*cm, *cn),
        s => return Err(KernelError::GemmCRank { shape: s.to_vec() }),
    };
    if !(cm == 1 || cm == m) || !(cn == 1 || cn == n) {
        return Err(KernelError::GemmCBroadcast {
            shape: c.shape.to_vec(),
            m,
            n,
        });
    }
    for (i, row) in out.chunks_exact_mut(n.max(1)).enumerate().take(m) {
        let crow = &c.data[if cm == 1 { 0 } else { i * cn }..][..cn];
        for (j, v) in row.iter_mut().enumerate() {
            *v = beta * crow[if cn == 1 { 0 } else { j }];
        }
    }
    Ok(())
}

pub fn matmul(a: View<'_>, b: View<'_>, out_shape: &[usize]) -> Result<Vec<f32>, KernelError> {
    let sa: Vec<usize> = if a.shape.len() == 1 {
        vec![1, a.shape[0]]
    } else {
        a.shape.to_vec()
    };
    let sb: Vec<usize> = if b.shape.len() == 1 {
        vec![b.shape[0], 1]
    } else {
        b.shape.to_vec()
    };
    if sa.len() < 2 || sb.len() < 2 {
        return Err(KernelError::MatmulRank);
    }
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let n = sb[sb.len() - 1];
    let (ba, bb) = (&sa[..sa.len() - 2], &sb[..sb.len() - 2]);
    let batch = nnac_ir::infer::broadcast(ba, bb).map_err(KernelError::shape)?;
    let count: usize = batch.iter().product();
    if count * m * n != out_shape.iter().product::<usize>() {
        return Err(KernelError::MatmulOutput {
            out: out_shape.to_vec(),
            a: a.shape.to_vec(),
            b: b.shape.to_vec(),
        });
    }
    let stride_a = batch_strides(ba, &batch, m * k);
    let stride_b = batch_strides(bb, &batch, k * n);
    let mut out = vec![0.0f32; count * m * n];
    for (bi, cm) in out.chunks_exact_mut((m * n).max(1)).enumerate().take(count) {
        let (oa, ob) = (
            batch_offset(bi, &batch, &stride_a),
            batch_offset(bi, &batch, &stride_b),
        );
        let am = MatRef::row_major(&a.data[oa..oa + m * k], m, k);
        let bm = MatRef::row_major(&b.data[ob..ob + k * n], k, n);
        matmul_acc(am, bm, cm, 1.0);
    }
    Ok(out)
}

/// Element strides of an operand's batch axes against the broadcast batch shape
/// (0 on broadcast axes), for matrices of `mat` elements.
fn batch_strides(shape: &[usize], batch: &[usize], mat: usize) -> Vec<usize> {
    let mut strides = vec![0; batch.len()];
    let mut s = mat;
    for i in (0..shape.len()).rev() {
        let bi = batch.len() - shape.len() + i;
        strides[bi] = if shape[i] == 1 { 0 } else { s };
        s *= shape[i];
    }
    strides
}

fn batch_offset(mut index: usize, batch: &[usize], strides: &[usize]) -> usize {
    let mut off = 0;
    for (d, s) in batch.iter().zip(strides).rev() {
        off += (index % d) * s;
        index /= d;
    }
    off
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, Rng};

    #[test]
    fn batched_broadcast_matmul_matches_naive() {
        let mut rng = Rng::new(11);
        let cases: [(&[usize], &[usize], &[usize]); 5] = [
            (&[2, 1, 3, 4], &[3, 4, 5], &[2, 3, 3, 5]),
            (&[4], &[4, 7], &[7]),
            (&[2, 3, 4], &[4], &[2, 3]),
            (&[4], &[4], &[]),
            (&[1, 8, 9], &[2, 9, 3], &[2, 8, 3]),
        ];
        for (sa, sb, so) in cases {
            let ad = rng.vec(sa.iter().product());
            let bd = rng.vec(sb.iter().product());
            let got = matmul(
                View {
                    shape: sa,
                    data: &ad,
                },
                View {
                    shape: sb,
                    data: &bd,
                },
                so,
            )
            .unwrap();
            // Naive: promote, broadcast by explicit index arithmetic.
            let pa: Vec<usize> = if sa.len() == 1 {
                vec![1, sa[0]]
            } else {
                sa.to_vec()
            };
            let pb: Vec<usize> = if sb.len() == 1 {
                vec![sb[0], 1]
            } else {
                sb.to_vec()
            };
            let (m, k, n) = (pa[pa.len() - 2], pa[pa.len() - 1], pb[pb.len() - 1]);
            let ra = pa.len().max(pb.len());
            let pad = |s: &[usize]| -> Vec<usize> {
                std::iter::repeat_n(1, ra - s.len())
                    .chain(s.iter().copied())
                    .collect()
            };
            let (fa, fb) = (pad(&pa), pad(&pb));
            let batch: Vec<usize> = (0..ra - 2).map(|i| fa[i].max(fb[i])).collect();
            let count: usize = batch.iter().product();
            let mut want = Vec::new();
            for bi in 0..count {
                let mut idx = vec![0; batch.len()];
                let mut r = bi;
                for d in (0..batch.len()).rev() {
                    idx[d] = r % batch[d];
                    r /= batch[d];
                }
                let flat = |full: &[usize]| -> usize {
                    let mut off = 0;
                    for d in 0..batch.len() {
                        off = off * full[d] + if full[d] == 1 { 0 } else { idx[d] };
                    }
                    off
                };
                let (oa, ob) = (flat(&fa) * m * k, flat(&fb) * k * n);
                for i in 0..m {
                    for j in 0..n {
                        let s: f32 = (0..k)
                            .map(|kk| ad[oa + i * k + kk] * bd[ob + kk * n + j])
                            .sum();
                        want.push(s);
                    }
                }
            }
            assert_close(&got, &want, 1e-5, &format!("{sa:?} x {sb:?}"));
        }
    }

    #[test]
    fn gemm_transposes_scales_and_broadcasts_c() {
        let mut rng = Rng::new(5);
        let (m, k, n) = (7, 5, 9);
        let ad = rng.vec(m * k);
        let bd = rng.vec(k * n);
        let cd = rng.vec(n);
        // A given transposed ([k, m]); B as is.
        let at: Vec<f32> = (0..k * m).map(|i| ad[(i % m) * k + i / m]).collect();
        let attrs = GemmAttrs {
            alpha: 0.5,
            beta: 2.0,
            trans_a: true,
            trans_b: false,
        };
        let got = gemm(
            &attrs,
            View {
                shape: &[k, m],
                data: &at,
            },
            View {
                shape: &[k, n],
                data: &bd,
            },
            Some(View {
                shape: &[n],
                data: &cd,
            }),
            &[m, n],
        )
        .unwrap();
        let mut want = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let s: f32 = (0..k).map(|kk| ad[i * k + kk] * bd[kk * n + j]).sum();
                want[i * n + j] = 0.5 * s + 2.0 * cd[j];
            }
        }
        assert_close(&got, &want, 1e-5, "gemm");
    }
}
