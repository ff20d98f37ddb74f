//! CONVOLUTION / DECONVOLUTION / INNER-PRODUCT on integer codes: the accumulator
//! starts at the int32 bias, adds `x_code * w_code` over the dot product (padding
//! reads the input zero point), wraps at 30 bits, then the SIMD epilogue and the
//! pooling unit run on it. Convolutions gather each output pixel's patch (im2col) and
//! take its exact dot product with every weight row (`gemm.rs`).

use super::gemm;
use super::pool::pool;
use super::QTrace;
use crate::epilogue;
use crate::scale_zp;
use crate::QError;
use nnac_ir::{ConvAttrs, ConvTransposeAttrs, DotKind, DotOp, Graph, NodeId, TensorData, Value};
use rayon::prelude::*;

/// The weights of a dot op: an int8 constant read where it is in the graph, or codes
/// computed by the run.
pub enum Weights<'a> {
    Int8(&'a [i8]),
    Codes(&'a [i32]),
}

impl<'a> Weights<'a> {
    /// The int8 constant feeding `v`, if it is one (read in place: no codes vector).
    pub fn int8_const(g: &'a Graph, v: Value) -> Option<&'a [i8]> {
        match g.const_of(v).map(|t| &t.data) {
            Some(TensorData::I8(w)) => Some(w),
            _ => None,
        }
    }
}

/// The exact (unwrapped) accumulators of a dot op: each is `bias + sum of products`
/// in i64, before the 30-bit wrap.
pub struct Accumulators {
    /// Channel-major `[M, P]` for convolutions, rows of `[N, M]` for an inner product.
    pub values: Vec<i64>,
    /// The number of output channels `M`.
    pub channels: usize,
    /// The output's spatial size (empty for an inner product).
    pub spatial: Vec<usize>,
}

impl Accumulators {
    /// The length of a run of consecutive accumulators of one channel (a convolution's
    /// plane, one value of an inner product's row); run k belongs to channel
    /// `k % channels`.
    fn run_len(&self) -> usize {
        self.spatial.iter().product::<usize>().max(1)
    }

    /// The sum of every channel's accumulators, and the number of accumulators per
    /// channel.
    pub fn channel_sums(&self) -> (Vec<i128>, u64) {
        let m = self.channels.max(1);
        let mut sums = vec![0i128; self.channels];
        for (k, r) in self.values.chunks(self.run_len()).enumerate() {
            sums[k % m] += r.iter().map(|&a| i128::from(a)).sum::<i128>();
        }
        (sums, (self.values.len() / m) as u64)
    }

    /// Subtracts `delta[c]` from every accumulator of channel c: the accumulators the
    /// same products give with bias `bias[c] - delta[c]` (exact: nothing has wrapped).
    pub fn subtract_per_channel(&mut self, delta: &[i64]) {
        let (run, m) = (self.run_len(), self.channels.max(1));
        for (k, r) in self.values.chunks_mut(run).enumerate() {
            let d = delta[k % m];
            r.iter_mut().for_each(|a| *a -= d);
        }
    }
}

/// The dot op's output codes from its accumulators: the 30-bit wrap, the SIMD
/// epilogue, the 8-bit saturation and the pooling unit.
pub fn finish(
    g: &Graph,
    id: NodeId,
    d: &DotOp,
    acc: &Accumulators,
    trace: &mut QTrace,
) -> Result<Vec<i32>, QError> {
    let node = g.node(id);
    let rq = d
        .epilogue
        .requant
        .as_ref()
        .ok_or_else(|| QError::node(&node.name, "dot op is not quantized"))?;
    let (m, spatial) = (acc.channels, &acc.spatial);
    let out_t = &node.outputs[0];
    let act = d.epilogue.act.as_ref();
    let mut codes = vec![0i32; acc.values.len()];
    let overflows: u64 = if spatial.is_empty() {
        // Inner product: rows of [N], channel = position in the row.
        codes
            .par_chunks_mut(m.max(1))
            .zip(acc.values.par_chunks(m.max(1)))
            .map(|(out, row)| epilogue::row(rq, act, row, out, out_t.dtype))
            .sum()
    } else {
        // Conv/deconv: channel-major [M, P], one plane per channel.
        let pixels: usize = spatial.iter().product::<usize>().max(1);
        codes
            .par_chunks_mut(pixels)
            .zip(acc.values.par_chunks(pixels))
            .enumerate()
            .map(|(c, (out, plane))| epilogue::plane(rq, act, c, plane, out, out_t.dtype))
            .sum()
    };
    trace.acc_overflows += overflows;
    Ok(match &d.pool {
        Some(p) => pool(p, &codes, m, spatial[0], spatial[1], scale_zp(out_t).1),
        None => codes,
    })
}

/// The exact accumulators of a dot op: `x`: input codes, `w`: weights, `bias`: int32
/// bias.
pub fn accumulators(
    g: &Graph,
    id: NodeId,
    d: &DotOp,
    (x, w, bias): (&[i32], Weights<'_>, &[i32]),
) -> Result<Accumulators, QError> {
    let node = g.node(id);
    let ins = g.node_inputs(id);
    let xt = g.value_type(ins[0]);
    let ws = &g.value_type(ins[1]).shape;
    let (_, zp) = scale_zp(xt);
    let narrow = |codes: &[i32], what: &str| {
        gemm::to_i16(codes)
            .map_err(|c| QError::node(&node.name, format!("{what} code {c} is not an 8-bit code")))
    };
    let w = match w {
        Weights::Int8(w) => w.iter().map(|&c| i16::from(c)).collect(),
        Weights::Codes(w) => narrow(w, "weight")?,
    };
    let x = narrow(x, "input")?;
    let zp = narrow(&[zp], "input zero point")?[0];
    let (x, w) = (x.as_slice(), w.as_slice());
    if !matches!(d.kind, DotKind::Inner) && xt.shape.first() != Some(&1) {
        return Err(QError::node(
            &node.name,
            format!(
                "input of shape {:?}: the NNA computes one frame at a time (batch 1)",
                xt.shape
            ),
        ));
    }
    let (values, channels, spatial) = match &d.kind {
        DotKind::Conv(a) => {
            let (acc, oh, ow) = conv_acc(a, x, &xt.shape, w, ws, bias, zp);
            (acc, ws[0], vec![oh, ow])
        }
        DotKind::Deconv(a) => {
            let (acc, oh, ow) = deconv_acc(a, x, &xt.shape, w, ws, bias);
            (acc, ws[1] * a.group, vec![oh, ow])
        }
        DotKind::Inner => (inner_acc(x, &xt.shape, w, ws, bias), ws[0], vec![]),
    };
    Ok(Accumulators {
        values,
        channels,
        spatial,
    })
}

/// Exact accumulators `[M, OH*OW]` of a convolution, and the output size: per group,
/// the patch of every output pixel (im2col) against every weight row of the group.
pub fn conv_acc(
    a: &ConvAttrs,
    x: &[i16],
    xs: &[usize],
    w: &[i16],
    ws: &[usize],
    bias: &[i32],
    zp: i16,
) -> (Vec<i64>, usize, usize) {
    let (m, cg, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
    let mg = m / a.group;
    let k = cg * kh * kw;
    let (oh, ow) = conv_out_hw(a, xs, kh, kw);
    let pixels = oh * ow;
    let mut out = vec![0i64; m * pixels];
    for grp in 0..a.group {
        let patch = im2col(a, x, xs, grp * cg..(grp + 1) * cg, kh, kw, zp);
        let wg = &w[grp * mg * k..(grp + 1) * mg * k];
        let planes = &mut out[grp * mg * pixels..(grp + 1) * mg * pixels];
        // The same exact dot products in either loop order; the outer loop runs over
        // the larger operand so that the smaller one stays in cache.
        if mg <= pixels {
            let mut dots = vec![0i64; pixels * mg];
            let rows = gemm::BLOCK_ROWS;
            dots.par_chunks_mut(rows * mg)
                .zip(patch.par_chunks(rows * k))
                .for_each(|(o, xs)| gemm::dot_rows_block(xs, xs.len() / k, wg, o));
            for (j, plane) in planes.chunks_exact_mut(pixels).enumerate() {
                for (p, acc) in plane.iter_mut().enumerate() {
                    *acc = dots[p * mg + j];
                }
            }
        } else {
            let rows = gemm::BLOCK_ROWS;
            planes
                .par_chunks_mut(rows * pixels)
                .zip(wg.par_chunks(rows * k))
                .for_each(|(o, ws)| gemm::dot_rows_block(ws, ws.len() / k, &patch, o));
        }
        for (j, plane) in planes.chunks_exact_mut(pixels).enumerate() {
            let b = i64::from(bias[grp * mg + j]);
            plane.iter_mut().for_each(|acc| *acc += b);
        }
    }
    (out, oh, ow)
}

/// Output height and width of a convolution.
fn conv_out_hw(a: &ConvAttrs, xs: &[usize], kh: usize, kw: usize) -> (usize, usize) {
    let (h, wd) = (xs[2], xs[3]);
    let oh = (h + a.pads[0] + a.pads[2] - a.dilations[0] * (kh - 1) - 1) / a.strides[0] + 1;
    let ow = (wd + a.pads[1] + a.pads[3] - a.dilations[1] * (kw - 1) - 1) / a.strides[1] + 1;
    (oh, ow)
}

/// The input patch of every output pixel over input channels `chans`: one row of
/// `chans.len() * kh * kw` codes per pixel, in the weights' term order (ic, ky, kx);
/// taps in the padding read the input zero point `zp`.
fn im2col(
    a: &ConvAttrs,
    x: &[i16],
    xs: &[usize],
    chans: std::ops::Range<usize>,
    kh: usize,
    kw: usize,
    zp: i16,
) -> Vec<i16> {
    let (h, wd) = (xs[2], xs[3]);
    let (oh, ow) = conv_out_hw(a, xs, kh, kw);
    let k = chans.len() * kh * kw;
    let mut patch = vec![zp; oh * ow * k];
    patch.par_chunks_mut(k).enumerate().for_each(|(p, row)| {
        let (oy, ox) = (p / ow, p % ow);
        let mut t = 0;
        for ci in chans.clone() {
            for ky in 0..kh {
                let iy = (oy * a.strides[0] + ky * a.dilations[0]) as isize - a.pads[0] as isize;
                for kx in 0..kw {
                    let ix =
                        (ox * a.strides[1] + kx * a.dilations[1]) as isize - a.pads[1] as isize;
                    if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                        row[t] = x[(ci * h + iy as usize) * wd + ix as usize];
                    }
                    t += 1;
                }
            }
        }
    });
    patch
}

/// Exact accumulators of a transposed convolution (input zero point is 0, so only
/// the taps that land on an output contribute).
pub fn deconv_acc(
    a: &ConvTransposeAttrs,
    x: &[i16],
    xs: &[usize],
    w: &[i16],
    ws: &[usize],
    bias: &[i32],
) -> (Vec<i64>, usize, usize) {
    let (c, h, wd) = (xs[1], xs[2], xs[3]);
    let (mg, kh, kw) = (ws[1], ws[2], ws[3]);
    let cg = c / a.group;
    let m = mg * a.group;
    let full = |i: usize, k: usize, ax: usize| {
        a.strides[ax] * (i - 1) + a.output_padding[ax] + (k - 1) * a.dilations[ax] + 1
    };
    let oh = full(h, kh, 0) - a.pads[0] - a.pads[2];
    let ow = full(wd, kw, 1) - a.pads[1] - a.pads[3];
    let mut out = vec![0i64; m * oh * ow];
    out.par_chunks_mut((oh * ow).max(1))
        .enumerate()
        .for_each(|(oc, plane)| {
            plane.iter_mut().for_each(|v| *v = i64::from(bias[oc]));
            let (grp, j) = (oc / mg, oc % mg);
            for ci in grp * cg..(grp + 1) * cg {
                for iy in 0..h {
                    for ix in 0..wd {
                        let xv = i64::from(x[(ci * h + iy) * wd + ix]);
                        for ky in 0..kh {
                            let oy = (iy * a.strides[0] + ky * a.dilations[0]) as isize
                                - a.pads[0] as isize;
                            if oy < 0 || oy as usize >= oh {
                                continue;
                            }
                            for kx in 0..kw {
                                let ox = (ix * a.strides[1] + kx * a.dilations[1]) as isize
                                    - a.pads[1] as isize;
                                if ox < 0 || ox as usize >= ow {
                                    continue;
                                }
                                let wv = i64::from(w[((ci * mg + j) * kh + ky) * kw + kx]);
                                plane[oy as usize * ow + ox as usize] += xv * wv;
                            }
                        }
                    }
                }
            }
        });
    (out, oh, ow)
}

/// Exact accumulators `[rows, N]` of an inner product (x `[rows, K]`, w `[N, K]`).
pub fn inner_acc(x: &[i16], xs: &[usize], w: &[i16], ws: &[usize], bias: &[i32]) -> Vec<i64> {
    let (k, n) = (xs[1], ws[0]);
    let mut out = vec![0i64; xs[0] * n];
    for (orow, xrow) in out.chunks_exact_mut(n.max(1)).zip(x.chunks_exact(k.max(1))) {
        gemm::dot_rows(xrow, w, orow);
        for (o, &b) in orow.iter_mut().zip(bias) {
            *o += i64::from(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one accumulator at a time in i64.
    #[allow(clippy::too_many_arguments)]
    fn conv_definition(
        a: &ConvAttrs,
        x: &[i16],
        xs: &[usize],
        w: &[i16],
        ws: &[usize],
        bias: &[i32],
        zp: i16,
    ) -> Vec<i64> {
        let (h, wd) = (xs[2], xs[3]);
        let (m, cg, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
        let (oh, ow) = conv_out_hw(a, xs, kh, kw);
        let mut out = Vec::new();
        for oc in 0..m {
            let grp = oc / (m / a.group);
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = i64::from(bias[oc]);
                    for ic in 0..cg {
                        let ci = grp * cg + ic;
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (oy * a.strides[0] + ky * a.dilations[0]) as isize
                                    - a.pads[0] as isize;
                                let ix = (ox * a.strides[1] + kx * a.dilations[1]) as isize
                                    - a.pads[1] as isize;
                                let inside =
                                    iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd;
                                let xv = if inside {
                                    x[(ci * h + iy as usize) * wd + ix as usize]
                                } else {
                                    zp
                                };
                                let wv = w[((oc * cg + ic) * kh + ky) * kw + kx];
                                acc += i64::from(xv) * i64::from(wv);
                            }
                        }
                    }
                    out.push(acc);
                }
            }
        }
        out
    }

    fn codes(n: usize, seed: &mut u32, lo: i32, hi: i32) -> Vec<i16> {
        (0..n)
            .map(|_| {
                *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (lo + ((*seed >> 8) % (hi - lo + 1) as u32) as i32) as i16
            })
            .collect()
    }

    #[test]
    fn im2col_conv_equals_the_definition() {
        let mut seed = 3u32;
        // (c, h, w, m, k, stride, pad, dilation, group)
        for (c, h, w, m, k, s, p, d, grp) in [
            (3, 9, 7, 4, 3, 1, 1, 1, 1),
            (4, 8, 8, 6, 3, 2, 1, 1, 2),
            (4, 7, 9, 4, 3, 1, 2, 2, 4),
            (5, 6, 6, 3, 1, 1, 0, 1, 1),
            (2, 11, 10, 2, 5, 3, 2, 1, 1),
            // More channels per group than output pixels: the channel-outer order.
            (6, 4, 4, 24, 3, 2, 1, 1, 2),
        ] {
            let a = ConvAttrs {
                kernel: vec![k, k],
                strides: vec![s, s + 1],
                pads: vec![p, p + 1, p, p],
                dilations: vec![d, d],
                group: grp,
            };
            let xs = [1, c, h, w];
            let ws = [m, c / grp, k, k];
            let x = codes(c * h * w, &mut seed, 0, 255);
            let wt = codes(ws.iter().product(), &mut seed, -128, 127);
            let bias: Vec<i32> = (0..m as i32).map(|i| i * 1000 - 2500).collect();
            let (got, _, _) = conv_acc(&a, &x, &xs, &wt, &ws, &bias, 17);
            assert_eq!(got, conv_definition(&a, &x, &xs, &wt, &ws, &bias, 17));
        }
    }

    #[test]
    fn inner_product_equals_the_definition() {
        let mut seed = 9u32;
        let (rows, k, n) = (3, 70, 5);
        let x = codes(rows * k, &mut seed, -128, 127);
        let w = codes(n * k, &mut seed, -128, 127);
        let bias = vec![7, -7, 100, 0, 1 << 20];
        let got = inner_acc(&x, &[rows, k], &w, &[n, k], &bias);
        for r in 0..rows {
            for j in 0..n {
                let want: i64 = i64::from(bias[j])
                    + (0..k)
                        .map(|i| i64::from(x[r * k + i]) * i64::from(w[j * k + i]))
                        .sum::<i64>();
                assert_eq!(got[r * n + j], want);
            }
        }
    }
}
