//! GPTQ weight rounding (`--weight-rounding gptq`): chooses each channel's int8 codes
//! to minimise the error of the layer's *output* on the calibration inputs instead of
//! each weight's own rounding error.
//!
//! Frantar et al., "GPTQ: Accurate Post-Training Quantization for Generative
//! Pre-trained Transformers" (2022), after Optimal Brain Quantization: with
//! `H = sum x x^T` over the layer's input vectors `x` (its im2col columns on the
//! calibration frames), the weights of one output channel are rounded one at a time in
//! input order; after weight `i` is rounded, the remaining weights `j > i` move by
//! `-err_i * U[i][j]`, `err_i = (w_i - q_i) / U[i][i]`, `U` being the upper Cholesky
//! factor of `(H + damp * mean(diag H) * I)^-1`. That is the least-squares
//! compensation of the output error `(w - q) . x` by the not-yet-rounded weights.
//! The scale stays the channel's round-to-nearest scale (`max |w| / 127`); codes are
//! clamped to [-127, 127] as every int8 weight is.
//!
//! Scope: convolutions (any groups; a depthwise layer has one 9 x 9 `H` per channel)
//! and inner products whose reduction length `K` is at most [`MAX_K`] (the cost is
//! `K^2` per output position and `K^3` per group) and whose `H` has at most
//! [`MAX_ENTRIES`] entries; others keep round-to-nearest.
//! `H` is accumulated on at most [`MAX_FRAMES`] calibration frames, evenly spaced.
//! Everything is in f64 in a fixed order: the codes do not depend on the thread count.

use nnac_ir::{ConvAttrs, Op};
use rayon::prelude::*;

/// Largest reduction length (`in_c / groups * kernel_h * kernel_w`, or an inner
/// product's `K`) rounded by GPTQ.
pub const MAX_K: usize = 1152;

/// Most entries (`groups * K^2`, f64) of one layer's `H`: 32 MiB. A global average
/// pool lowered to a depthwise convolution over thousands of taps would otherwise take
/// gigabytes (its equal weights are on the grid anyway).
pub const MAX_ENTRIES: usize = 1 << 22;

/// Most calibration frames `H` is accumulated on.
pub const MAX_FRAMES: usize = 32;

/// Relative damping of `H` (the GPTQ paper's 1%).
pub const DAMP: f64 = 0.01;

/// Output positions whose im2col columns are built at once.
const POS_CHUNK: usize = 256;

/// How a dot product's input vectors are formed from its input tensor.
#[derive(Clone, Debug, PartialEq)]
enum Shape {
    /// 2-D convolution over an `[N, C, H, W]` input giving `oh x ow` pixels.
    Conv {
        attrs: ConvAttrs,
        c: usize,
        h: usize,
        w: usize,
        oh: usize,
        ow: usize,
    },
    /// Inner product over an `[M, K]` input.
    Rows,
}

/// `H = sum x x^T` of one dot product, one `k x k` block per convolution group
/// (only the upper triangle is accumulated; [`Hessian::factor`] mirrors it).
#[derive(Clone, Debug, PartialEq)]
pub struct Hessian {
    pub k: usize,
    pub groups: usize,
    shape: Shape,
    h: Vec<f64>,
}

impl Hessian {
    /// The accumulator for dot op `op` (a float-graph Conv or Gemm) reading an input of
    /// shape `x` and giving an output of shape `y`; `None` when GPTQ does not apply.
    pub fn for_op(op: &Op, x: &[usize], y: &[usize]) -> Option<Hessian> {
        if x.contains(&0) || y.contains(&0) {
            return None;
        }
        let (k, groups, shape) = match op {
            Op::Conv(a) if a.kernel.len() == 2 && x.len() == 4 && y.len() == 4 => {
                let g = a.group.max(1);
                if !x[1].is_multiple_of(g) || a.strides.len() != 2 || a.dilations.len() != 2 {
                    return None;
                }
                let k = x[1] / g * a.kernel[0] * a.kernel[1];
                let shape = Shape::Conv {
                    attrs: a.clone(),
                    c: x[1],
                    h: x[2],
                    w: x[3],
                    oh: y[2],
                    ow: y[3],
                };
                (k, g, shape)
            }
            Op::Gemm(a) if !a.trans_a && x.len() == 2 => (x[1], 1, Shape::Rows),
            _ => return None,
        };
        if k == 0 || k > MAX_K || groups.saturating_mul(k * k) > MAX_ENTRIES {
            return None;
        }
        Some(Hessian {
            k,
            groups,
            shape,
            h: vec![0.0; groups * k * k],
        })
    }

    /// Adds the input vectors of one input tensor (`xs`, the shape given to
    /// [`Hessian::for_op`]).
    pub fn add(&mut self, xs: &[f32]) {
        let (k, groups) = (self.k, self.groups);
        match &self.shape {
            Shape::Rows => {
                for rows in xs.chunks(k * POS_CHUNK) {
                    let cols: Vec<f64> = rows.iter().map(|&v| f64::from(v)).collect();
                    accumulate(&mut self.h, &cols, k, 1, cols.len() / k);
                }
            }
            Shape::Conv {
                attrs,
                c,
                h,
                w,
                oh,
                ow,
            } => {
                let plane = c * h * w;
                let npos = oh * ow;
                let mut cols = Vec::new();
                for img in xs.chunks_exact(plane) {
                    for p0 in (0..npos).step_by(POS_CHUNK) {
                        let n = POS_CHUNK.min(npos - p0);
                        cols.clear();
                        cols.resize(groups * n * k, 0.0);
                        im2col(img, attrs, (*c, *h, *w), *ow, p0..p0 + n, groups, &mut cols);
                        accumulate(&mut self.h, &cols, k, groups, n);
                    }
                }
            }
        }
    }

    /// The upper Cholesky factor `U` of `(H_g + damp I)^-1` for every group `g`
    /// (`k * k` each, row-major); `None` for a group whose matrix is not positive
    /// definite even damped (its channels keep round-to-nearest).
    ///
    /// With `J` the order reversal, `J H J = L L^T` (lower Cholesky) gives
    /// `H^-1 = (J L^-1 J)^T (J L^-1 J)` with `J L^-1 J` upper triangular with a
    /// positive diagonal: that is `U` (one factorisation and one triangular inverse).
    pub fn factor(&self) -> Vec<Option<Vec<f64>>> {
        let k = self.k;
        self.h
            .par_chunks(k * k)
            .map(|hg| {
                // J H J from the upper triangle, damped.
                let mean = (0..k).map(|i| hg[i * k + i]).sum::<f64>() / k as f64;
                let damp = DAMP * if mean > 0.0 { mean } else { 1.0 };
                let mut a = vec![0.0; k * k];
                for i in 0..k {
                    for j in i..k {
                        let v = if i == j {
                            // An input that was always 0 gets a unit diagonal: its
                            // weight is rounded to nearest and moves no other weight.
                            if hg[i * k + i] > 0.0 {
                                hg[i * k + i] + damp
                            } else {
                                1.0
                            }
                        } else {
                            hg[i * k + j]
                        };
                        let (ri, rj) = (k - 1 - i, k - 1 - j);
                        a[ri * k + rj] = v;
                        a[rj * k + ri] = v;
                    }
                }
                let l = cholesky_lower(&a, k)?;
                let m = lower_inverse(&l, k);
                let mut u = vec![0.0; k * k];
                for i in 0..k {
                    for j in i..k {
                        u[i * k + j] = m[(k - 1 - i) * k + (k - 1 - j)];
                    }
                }
                Some(u)
            })
            .collect()
    }
}

/// Builds the im2col columns of positions `pos` of one image, per group:
/// `cols[(g * n + p) * k + (ci * kh + ky) * kw + kx]` (the weight order of a
/// `[M, C/g, kh, kw]` channel block). Padding reads 0.
fn im2col(
    img: &[f32],
    a: &ConvAttrs,
    (c, h, w): (usize, usize, usize),
    ow: usize,
    pos: std::ops::Range<usize>,
    groups: usize,
    cols: &mut [f64],
) {
    let (kh, kw) = (a.kernel[0], a.kernel[1]);
    let icpg = c / groups;
    let k = icpg * kh * kw;
    let n = pos.len();
    let pad = |i: usize| a.pads.get(i).copied().unwrap_or(0) as isize;
    for (p, opos) in pos.enumerate() {
        let (oy, ox) = (opos / ow, opos % ow);
        for g in 0..groups {
            let col = &mut cols[(g * n + p) * k..(g * n + p + 1) * k];
            let mut i = 0;
            for ci in 0..icpg {
                let ch = &img[(g * icpg + ci) * h * w..(g * icpg + ci + 1) * h * w];
                for ky in 0..kh {
                    let iy = (oy * a.strides[0] + ky * a.dilations[0]) as isize - pad(0);
                    for kx in 0..kw {
                        let ix = (ox * a.strides[1] + kx * a.dilations[1]) as isize - pad(1);
                        if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                            col[i] = f64::from(ch[iy as usize * w + ix as usize]);
                        }
                        i += 1;
                    }
                }
            }
        }
    }
}

/// Rows of `H` updated together from one pass over the columns.
const ROW_BLOCK: usize = 8;

/// `H_g[p][q] += sum over the n columns of group g of col[p] * col[q]`, `q >= p`.
/// In parallel over groups (several) or blocks of rows (one); every entry sums its
/// columns in order, so the result does not depend on the split.
fn accumulate(h: &mut [f64], cols: &[f64], k: usize, groups: usize, n: usize) {
    let rows = |hb: &mut [f64], p0: usize, cg: &[f64]| {
        for col in cg.chunks_exact(k) {
            for (r, row) in hb.chunks_exact_mut(k).enumerate() {
                let p = p0 + r;
                let x = col[p];
                if x != 0.0 {
                    for (hq, &cq) in row[p..].iter_mut().zip(&col[p..]) {
                        *hq += x * cq;
                    }
                }
            }
        }
    };
    if groups > 1 {
        h.par_chunks_mut(k * k)
            .zip(cols.par_chunks(n * k))
            .for_each(|(hg, cg)| {
                for (b, hb) in hg.chunks_mut(ROW_BLOCK * k).enumerate() {
                    rows(hb, b * ROW_BLOCK, cg);
                }
            });
    } else {
        h.par_chunks_mut(ROW_BLOCK * k)
            .enumerate()
            .for_each(|(b, hb)| rows(hb, b * ROW_BLOCK, &cols[..n * k]));
    }
}

/// Lower Cholesky factor of the symmetric `a` (`None` if not positive definite).
/// Row by row; every inner product runs over two contiguous rows.
fn cholesky_lower(a: &[f64], k: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; k * k];
    for i in 0..k {
        let (done, rest) = l.split_at_mut(i * k);
        let row_i = &mut rest[..k];
        for j in 0..=i {
            let dot: f64 = if j < i {
                let row_j = &done[j * k..j * k + j];
                row_i[..j].iter().zip(row_j).map(|(x, y)| x * y).sum()
            } else {
                row_i[..j].iter().map(|x| x * x).sum()
            };
            let s = a[i * k + j] - dot;
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                row_i[i] = s.sqrt();
            } else {
                row_i[j] = s / done[j * k + j];
            }
        }
    }
    Some(l)
}

/// `L^-1` of a lower triangular `L` with a positive diagonal, row by row (row `i` of
/// the inverse is `(e_i - sum_t<i L[i][t] row_t) / L[i][i]`: contiguous updates).
fn lower_inverse(l: &[f64], k: usize) -> Vec<f64> {
    let mut m = vec![0.0; k * k];
    for i in 0..k {
        let (done, rest) = m.split_at_mut(i * k);
        let row_i = &mut rest[..k];
        for t in 0..i {
            let c = l[i * k + t];
            if c != 0.0 {
                for (x, y) in row_i[..=t].iter_mut().zip(&done[t * k..=t * k + t]) {
                    *x -= c * y;
                }
            }
        }
        row_i[i] = 1.0;
        let d = l[i * k + i];
        row_i[..=i].iter_mut().for_each(|x| *x /= d);
    }
    m
}

/// Whether every one of the `m` contiguous channel blocks of `w` is exactly on its
/// round-to-nearest grid (e.g. a pool's equal weights): GPTQ would change nothing.
pub fn on_grid(w: &[f32], m: usize) -> bool {
    let len = w.len().checked_div(m).unwrap_or(0);
    len == 0
        || w.chunks(len).all(|c| {
            let s = super::params::weight_scale(c);
            c.iter().all(|&x| {
                let q = f64::from(x) / f64::from(s);
                (q - q.round()).abs() < 1e-4
            })
        })
}

/// Rounds one channel's weights `w` at `scale` into `q` by GPTQ with the factor `u`
/// of its group (`w.len() == k`).
pub fn round_channel(w: &[f32], u: &[f64], scale: f32, q: &mut [i8]) {
    let k = w.len();
    let mut r: Vec<f64> = w.iter().map(|&x| f64::from(x)).collect();
    for i in 0..k {
        let qi = super::params::quantize_weight(r[i] as f32, scale);
        q[i] = qi;
        let err = (r[i] - f64::from(qi) * f64::from(scale)) / u[i * k + i];
        for j in i + 1..k {
            r[j] -= err * u[i * k + j];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_ir::GemmAttrs;

    fn gemm() -> Op {
        Op::Gemm(GemmAttrs {
            alpha: 1.0,
            beta: 1.0,
            trans_a: false,
            trans_b: true,
        })
    }

    /// A deterministic pseudo-random stream in [-1, 1).
    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn out_err(w: &[f32], q: &[i8], s: f32, xs: &[f32], k: usize) -> f64 {
        xs.chunks(k)
            .map(|x| {
                let d: f64 = (0..k)
                    .map(|i| f64::from(x[i]) * (f64::from(w[i]) - f64::from(q[i]) * f64::from(s)))
                    .sum();
                d * d
            })
            .sum()
    }

    #[test]
    fn gptq_output_error_beats_round_to_nearest_on_correlated_inputs() {
        let (k, rows) = (24, 400);
        let mut seed = 7;
        // Correlated inputs: x_i = base + small noise, so errors can cancel.
        let mut xs = Vec::new();
        for _ in 0..rows {
            let base = lcg(&mut seed);
            for _ in 0..k {
                xs.push(base + 0.3 * lcg(&mut seed));
            }
        }
        let w: Vec<f32> = (0..k).map(|_| lcg(&mut seed)).collect();
        let mut hs = Hessian::for_op(&gemm(), &[rows, k], &[rows, 1]).unwrap();
        hs.add(&xs);
        let u = hs.factor().remove(0).unwrap();
        let s = super::super::params::weight_scale(&w);
        let mut q = vec![0i8; k];
        round_channel(&w, &u, s, &mut q);
        let mut rtn = vec![0i8; k];
        super::super::params::quantize_weights_into(&w, s, &mut rtn);
        let (eg, er) = (out_err(&w, &q, s, &xs, k), out_err(&w, &rtn, s, &xs, k));
        assert!(eg < 0.5 * er, "gptq {eg} vs nearest {er}");
        assert!(q.iter().all(|&c| (-127..=127).contains(&c)));
    }

    #[test]
    fn factor_is_the_upper_cholesky_factor_of_the_damped_inverse() {
        let (k, rows) = (7, 40);
        let mut seed = 5;
        let xs: Vec<f32> = (0..k * rows).map(|_| lcg(&mut seed)).collect();
        let mut hs = Hessian::for_op(&gemm(), &[rows, k], &[rows, 1]).unwrap();
        hs.add(&xs);
        let u = hs.factor().remove(0).unwrap();
        // (H + damp I) * U^T U = I, U upper with a positive diagonal.
        let mut h = vec![0f64; k * k];
        for x in xs.chunks(k) {
            for p in 0..k {
                for q in 0..k {
                    h[p * k + q] += f64::from(x[p]) * f64::from(x[q]);
                }
            }
        }
        let mean = (0..k).map(|i| h[i * k + i]).sum::<f64>() / k as f64;
        (0..k).for_each(|i| h[i * k + i] += DAMP * mean);
        for i in 0..k {
            assert!(u[i * k + i] > 0.0);
            for j in 0..i {
                assert_eq!(u[i * k + j], 0.0);
            }
            for j in 0..k {
                let utu =
                    |a: usize, b: usize| (0..k).map(|t| u[t * k + a] * u[t * k + b]).sum::<f64>();
                let v: f64 = (0..k).map(|t| h[i * k + t] * utu(t, j)).sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((v - want).abs() < 1e-9, "({i}, {j}): {v}");
            }
        }
    }

    #[test]
    fn weights_on_the_grid_are_kept() {
        let k = 6;
        let s = 0.5f32;
        let codes: Vec<i8> = vec![3, -127, 0, 64, 127, -5];
        let w: Vec<f32> = codes.iter().map(|&c| f32::from(c) * s).collect();
        let mut seed = 3;
        let xs: Vec<f32> = (0..k * 50).map(|_| lcg(&mut seed)).collect();
        let mut hs = Hessian::for_op(&gemm(), &[50, k], &[50, 1]).unwrap();
        hs.add(&xs);
        let u = hs.factor().remove(0).unwrap();
        let mut q = vec![0i8; k];
        round_channel(&w, &u, s, &mut q);
        assert_eq!(q, codes);
    }

    #[test]
    fn conv_columns_match_a_direct_sum_and_dead_inputs_stay_nearest() {
        // A 2-group 3x3 conv with padding 1 over a 4-channel 3x4 input: H of group 1
        // equals the sum of x x^T over the explicitly built columns.
        let attrs = ConvAttrs {
            kernel: vec![3, 3],
            strides: vec![1, 1],
            pads: vec![1, 1, 1, 1],
            dilations: vec![1, 1],
            group: 2,
        };
        let op = Op::Conv(attrs);
        let mut seed = 11;
        let x: Vec<f32> = (0..4 * 3 * 4).map(|_| lcg(&mut seed)).collect();
        let mut hs = Hessian::for_op(&op, &[1, 4, 3, 4], &[1, 2, 3, 4]).unwrap();
        hs.add(&x);
        assert_eq!((hs.k, hs.groups), (18, 2));
        let k = 18;
        let mut direct = vec![0f64; k * k];
        for oy in 0..3isize {
            for ox in 0..4isize {
                let mut col = vec![0f64; k];
                for ci in 0..2 {
                    for ky in 0..3 {
                        for kx in 0..3 {
                            let (iy, ix) = (oy + ky - 1, ox + kx - 1);
                            if (0..3).contains(&iy) && (0..4).contains(&ix) {
                                let ch = 2 + ci;
                                col[ci * 9 + (ky * 3 + kx) as usize] =
                                    f64::from(x[ch * 12 + iy as usize * 4 + ix as usize]);
                            }
                        }
                    }
                }
                for p in 0..k {
                    for q in p..k {
                        direct[p * k + q] += col[p] * col[q];
                    }
                }
            }
        }
        let got = &hs.h[k * k..];
        for (a, b) in got.iter().zip(&direct) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        // An input that is always zero: its factor row moves nothing.
        let mut hz = Hessian::for_op(&gemm(), &[3, 2], &[3, 1]).unwrap();
        hz.add(&[1.0, 0.0, 2.0, 0.0, -1.0, 0.0]);
        let u = hz.factor().remove(0).unwrap();
        assert_eq!(u[1], 0.0);
        assert!(Hessian::for_op(&gemm(), &[1, MAX_K + 1], &[1, 1]).is_none());
        assert!(Hessian::for_op(&op, &[1, 4, 0, 4], &[1, 2, 0, 4]).is_none());
        // A pool as a depthwise conv over 24 x 24 taps of 16 channels: 16 x 576^2
        // entries, over the size budget.
        let gap = Op::Conv(ConvAttrs {
            kernel: vec![24, 24],
            strides: vec![1, 1],
            pads: vec![0; 4],
            dilations: vec![1, 1],
            group: 16,
        });
        assert!(Hessian::for_op(&gap, &[1, 16, 24, 24], &[1, 16, 1, 1]).is_none());
        assert!(on_grid(&[0.5, 0.5, 0.5, -1.27, 0.01, 0.0], 2));
        assert!(!on_grid(&[0.5, 0.3, 0.5, -1.27, 0.01, 0.0], 2));
    }
}
