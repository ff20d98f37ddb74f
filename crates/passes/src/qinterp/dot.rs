//! CONVOLUTION / DECONVOLUTION / INNER-PRODUCT on integer codes: the accumulator
//! starts at the int32 bias, adds `x_code * w_code` over the dot product (padding
//! reads the input zero point), wraps at 30 bits, then the SIMD epilogue and the
//! pooling unit run on it.

use super::pool::pool;
use super::{saturate, QTrace};
use crate::qinterp::epilogue;
use crate::quant::params::scale_zp;
use crate::PassError;
use nnac_ir::{ConvAttrs, ConvTransposeAttrs, DotKind, DotOp, Graph, NodeId};
use nnac_isa::arith::{wrap_acc, ACC_BITS};
use rayon::prelude::*;

/// `args`: input codes, weight codes, bias.
pub fn run(
    g: &Graph,
    id: NodeId,
    d: &DotOp,
    args: &[&[i32]; 3],
    trace: &mut QTrace,
) -> Result<Vec<i32>, PassError> {
    let node = g.node(id);
    let ins = g.node_inputs(id);
    let rq = d
        .epilogue
        .requant
        .as_ref()
        .ok_or_else(|| PassError::node("qinterp", &node.name, "dot op is not quantized"))?;
    let xt = g.value_type(ins[0]);
    let ws = &g.value_type(ins[1]).shape;
    let (_, zp) = scale_zp(xt);
    let [x, w, bias] = *args;
    let (acc, m, spatial) = match &d.kind {
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
    let out_t = &node.outputs[0];
    let pixels: usize = spatial.iter().product::<usize>().max(1);
    let mut codes = vec![0i32; acc.len()];
    for (i, &a) in acc.iter().enumerate() {
        let (v, wrapped) = wrap_acc(a, ACC_BITS);
        trace.acc_overflows += u64::from(wrapped);
        // Conv/deconv: channel-major [M, P]; inner product: [rows, N].
        let c = if spatial.is_empty() {
            i % m
        } else {
            i / pixels
        };
        codes[i] = saturate(
            epilogue::apply(rq, d.epilogue.act.as_ref(), v, c),
            out_t.dtype,
        );
    }
    Ok(match &d.pool {
        Some(p) => pool(p, &codes, m, spatial[0], spatial[1], scale_zp(out_t).1),
        None => codes,
    })
}

/// Exact accumulators `[M, OH*OW]` of a convolution, and the output size.
pub fn conv_acc(
    a: &ConvAttrs,
    x: &[i32],
    xs: &[usize],
    w: &[i32],
    ws: &[usize],
    bias: &[i32],
    zp: i32,
) -> (Vec<i64>, usize, usize) {
    let (h, wd) = (xs[2], xs[3]);
    let (m, cg, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
    let mg = m / a.group;
    let oh = (h + a.pads[0] + a.pads[2] - a.dilations[0] * (kh - 1) - 1) / a.strides[0] + 1;
    let ow = (wd + a.pads[1] + a.pads[3] - a.dilations[1] * (kw - 1) - 1) / a.strides[1] + 1;
    let mut out = vec![0i64; m * oh * ow];
    out.par_chunks_mut((oh * ow).max(1))
        .enumerate()
        .for_each(|(oc, plane)| {
            let grp = oc / mg;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = i64::from(bias[oc]);
                    for ic in 0..cg {
                        let ci = grp * cg + ic;
                        for ky in 0..kh {
                            let iy = (oy * a.strides[0] + ky * a.dilations[0]) as isize
                                - a.pads[0] as isize;
                            for kx in 0..kw {
                                let ix = (ox * a.strides[1] + kx * a.dilations[1]) as isize
                                    - a.pads[1] as isize;
                                let inside =
                                    iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd;
                                let xv = if inside {
                                    x[(ci * h + iy as usize) * wd + ix as usize]
                                } else {
                                    zp
                                };
                                acc += i64::from(xv)
                                    * i64::from(w[((oc * cg + ic) * kh + ky) * kw + kx]);
                            }
                        }
                    }
                    plane[oy * ow + ox] = acc;
                }
            }
        });
    (out, oh, ow)
}

/// Exact accumulators of a transposed convolution (input zero point is 0, so only
/// the taps that land on an output contribute).
pub fn deconv_acc(
    a: &ConvTransposeAttrs,
    x: &[i32],
    xs: &[usize],
    w: &[i32],
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
pub fn inner_acc(x: &[i32], xs: &[usize], w: &[i32], ws: &[usize], bias: &[i32]) -> Vec<i64> {
    let (rows, k, n) = (xs[0], xs[1], ws[0]);
    let mut out = vec![0i64; rows * n];
    for r in 0..rows {
        for j in 0..n {
            let dot: i64 = (0..k)
                .map(|i| i64::from(x[r * k + i]) * i64::from(w[j * k + i]))
                .sum();
            out[r * n + j] = i64::from(bias[j]) + dot;
        }
    }
    out
}
