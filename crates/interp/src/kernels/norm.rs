//! Normalisations: BatchNormalization (inference), LRN across channels, Softmax.

use super::View;
use rayon::prelude::*;

/// `y = scale * (x - mean) / sqrt(var + eps) + bias` per channel (axis 1), in place.
pub fn batch_norm(x: &mut [f32], shape: &[usize], params: [&[f32]; 4], eps: f32) {
    let [scale, bias, mean, var] = params;
    let c = shape.get(1).copied().unwrap_or(1);
    let inner: usize = shape.iter().skip(2).product();
    let mul: Vec<f32> = (0..c).map(|i| scale[i] / (var[i] + eps).sqrt()).collect();
    let add: Vec<f32> = (0..c).map(|i| bias[i] - mean[i] * mul[i]).collect();
    x.par_chunks_mut(inner.max(1))
        .enumerate()
        .for_each(|(p, plane)| {
            let (m, a) = (mul[p % c], add[p % c]);
            for v in plane {
                *v = *v * m + a;
            }
        });
}

/// ONNX LRN: `y = x / (bias + alpha / size * sum_sq) ^ beta`, the sum over channels
/// `c - floor((size - 1) / 2) ..= c + ceil((size - 1) / 2)` clipped to the tensor.
pub fn lrn(x: View<'_>, size: usize, alpha: f32, beta: f32, bias: f32) -> Vec<f32> {
    let (n, c) = (x.shape[0], x.shape[1]);
    let inner: usize = x.shape[2..].iter().product();
    let (before, after) = ((size.max(1) - 1) / 2, (size.max(1) - 1).div_ceil(2));
    let sq: Vec<f32> = x.data.iter().map(|v| v * v).collect();
    let mut out = vec![0.0f32; x.data.len()];
    if inner == 0 {
        return out;
    }
    out.par_chunks_mut(inner).enumerate().for_each(|(p, orow)| {
        let (b, ch) = (p / c, p % c);
        let lo = ch.saturating_sub(before);
        let hi = (ch + after).min(c - 1);
        let mut sum = vec![0.0f32; inner];
        for cc in lo..=hi {
            let srow = &sq[(b * c + cc) * inner..][..inner];
            for (s, v) in sum.iter_mut().zip(srow) {
                *s += v;
            }
        }
        let xrow = &x.data[p * inner..][..inner];
        let k = alpha / size as f32;
        for ((o, &xv), s) in orow.iter_mut().zip(xrow).zip(&sum) {
            *o = xv / (bias + k * s).powf(beta);
        }
    });
    debug_assert_eq!(out.len(), n * c * inner);
    out
}

/// Softmax along `axis` (opset-13 semantics), in place; numerically stable.
pub fn softmax(x: &mut [f32], shape: &[usize], axis: usize) {
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    if len == 0 || inner == 0 {
        return;
    }
    x.par_chunks_mut(len * inner).for_each(|block| {
        if inner == 1 {
            softmax_row(block);
        } else {
            softmax_columns(block, inner);
        }
    });
}

fn softmax_row(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// Softmax down the columns of a `[len, inner]` block.
fn softmax_columns(block: &mut [f32], inner: usize) {
    let mut max = vec![f32::NEG_INFINITY; inner];
    for row in block.chunks_exact(inner) {
        for (m, &v) in max.iter_mut().zip(row) {
            *m = m.max(v);
        }
    }
    let mut sum = vec![0.0f32; inner];
    for row in block.chunks_exact_mut(inner) {
        for ((v, m), s) in row.iter_mut().zip(&max).zip(sum.iter_mut()) {
            *v = (*v - m).exp();
            *s += *v;
        }
    }
    for row in block.chunks_exact_mut(inner) {
        for (v, s) in row.iter_mut().zip(&sum) {
            *v /= s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, Rng};

    #[test]
    fn lrn_matches_onnx_formula() {
        let mut rng = Rng::new(9);
        let (c, inner) = (6, 5);
        let x = rng.vec(c * inner);
        for size in [1, 2, 3, 4, 5] {
            let got = lrn(
                View {
                    shape: &[1, c, 1, inner],
                    data: &x,
                },
                size,
                1e-1,
                0.75,
                2.0,
            );
            let mut want = vec![0.0; c * inner];
            for ch in 0..c {
                for i in 0..inner {
                    let lo = (ch as isize - ((size - 1) / 2) as isize).max(0) as usize;
                    let hi = (ch + (size - 1).div_ceil(2)).min(c - 1);
                    let s: f32 = (lo..=hi).map(|cc| x[cc * inner + i].powi(2)).sum();
                    want[ch * inner + i] =
                        x[ch * inner + i] / (2.0 + 0.1 / size as f32 * s).powf(0.75);
                }
            }
            assert_close(&got, &want, 1e-5, &format!("size {size}"));
        }
    }

    #[test]
    fn softmax_on_every_axis() {
        let mut rng = Rng::new(2);
        let shape = [2, 3, 4];
        let x = rng.vec(24);
        for axis in 0..3 {
            let mut got = x.clone();
            softmax(&mut got, &shape, axis);
            let strides = [12, 4, 1];
            let mut want = vec![0.0; 24];
            for (i, w) in want.iter_mut().enumerate() {
                let pos = (i / strides[axis]) % shape[axis];
                let base = i - pos * strides[axis];
                let denom: f32 = (0..shape[axis])
                    .map(|j| x[base + j * strides[axis]].exp())
                    .sum();
                *w = x[i].exp() / denom;
            }
            assert_close(&got, &want, 1e-5, &format!("axis {axis}"));
        }
    }

    #[test]
    fn batch_norm_per_channel() {
        let mut x = vec![1.0f32, 2.0, 3.0, 4.0];
        batch_norm(
            &mut x,
            &[1, 2, 2],
            [&[2.0, 1.0], &[0.5, 0.0], &[1.0, 3.0], &[4.0, 1.0]],
            0.0,
        );
        assert_eq!(x, [0.5, 1.5, 0.0, 1.0]);
    }
}
