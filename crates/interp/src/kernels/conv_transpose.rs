//! Transposed convolution (ONNX `ConvTranspose`): groups, strides, dilations, pads
//! and output padding (both already resolved into the output shape by inference).
//!
//! Per group, the GEMM `col = W_g^T * X_g` gives every (output channel, tap) row for
//! every input position; col2im then scatters each row into the output at
//! `o = i * stride - pad_begin + tap * dilation`, dropping positions cut by the pads.
//! Output channels are independent, so col2im runs in parallel over them.

use super::error::KernelError;
use super::gemm::{matmul_acc, MatRef};
use super::geom::{split_nc, valid_range, Window, SP};
use super::View;
use nnac_ir::ConvTransposeAttrs;
use rayon::prelude::*;

pub fn conv_transpose(
    a: &ConvTransposeAttrs,
    x: View<'_>,
    w: View<'_>,
    bias: Option<View<'_>>,
    out_shape: &[usize],
) -> Result<Vec<f32>, KernelError> {
    let (_, c_in, ins) = split_nc(x.shape)?;
    let (_, m_out, outs) = split_nc(out_shape)?;
    let win = Window::lift(&a.kernel, &a.strides, &a.pads, &a.dilations)?;
    let (g, kvol) = (a.group, win.kernel_volume());
    let (cg, mg) = (c_in / g, m_out / g);
    let inp: usize = ins.iter().product();
    let outp: usize = outs.iter().product();
    let mut out = vec![0.0f32; x.shape[0] * m_out * outp];
    if let Some(b) = bias {
        for (ch, plane) in out.chunks_exact_mut(outp.max(1)).enumerate() {
            plane.fill(b.data[ch % m_out]);
        }
    }
    if outp == 0 || inp == 0 {
        return Ok(out);
    }
    let mut col = vec![0.0f32; mg * kvol * inp];
    for (xb, ob) in x
        .data
        .chunks_exact(c_in * inp)
        .zip(out.chunks_exact_mut(m_out * outp))
    {
        for gi in 0..g {
            let wg = MatRef::row_major(
                &w.data[gi * cg * mg * kvol..(gi + 1) * cg * mg * kvol],
                cg,
                mg * kvol,
            );
            let xg = MatRef::row_major(&xb[gi * cg * inp..(gi + 1) * cg * inp], cg, inp);
            col.fill(0.0);
            matmul_acc(wg.t(), xg, &mut col, 1.0);
            let og = &mut ob[gi * mg * outp..(gi + 1) * mg * outp];
            og.par_chunks_mut(outp)
                .zip(col.par_chunks(kvol * inp))
                .for_each(|(oplane, crows)| {
                    col2im_channel(&win, ins, outs, crows, oplane);
                });
        }
    }
    Ok(out)
}

/// Adds the `kvol` rows of one output channel (one row per tap, one column per input
/// position) into that channel's output plane.
fn col2im_channel(
    win: &Window,
    ins: [usize; SP],
    outs: [usize; SP],
    crows: &[f32],
    oplane: &mut [f32],
) {
    let inp: usize = ins.iter().product();
    let mut rows = crows.chunks_exact(inp);
    for kz in 0..win.kernel[0] {
        for ky in 0..win.kernel[1] {
            for kx in 0..win.kernel[2] {
                let row = rows.next().expect("one col row per tap");
                let off = |ax: usize, k: usize| {
                    (k * win.dilations[ax]) as isize - win.pad_begin[ax] as isize
                };
                let (oz, oy, ox) = (off(0, kz), off(1, ky), off(2, kx));
                let rx = valid_range(ins[2], outs[2], win.strides[2], ox);
                for iz in valid_range(ins[0], outs[0], win.strides[0], oz) {
                    let z = (iz * win.strides[0]) as isize + oz;
                    for iy in valid_range(ins[1], outs[1], win.strides[1], oy) {
                        let y = (iy * win.strides[1]) as isize + oy;
                        let orow =
                            &mut oplane[(z as usize * outs[1] + y as usize) * outs[2]..][..outs[2]];
                        let irow = &row[(iz * ins[1] + iy) * ins[2]..][..ins[2]];
                        for ix in rx.clone() {
                            let xo = (ix * win.strides[2]) as isize + ox;
                            orow[xo as usize] += irow[ix];
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, Rng};
    use nnac_ir::infer::infer_types;
    use nnac_ir::{Op, TensorType};

    /// Scatter form: every input element times every tap lands at
    /// `i * stride - pad_begin + k * dilation` when that is inside the output.
    fn naive(
        a: &ConvTransposeAttrs,
        x: View<'_>,
        w: &[f32],
        bias: &[f32],
        out_shape: &[usize],
    ) -> Vec<f32> {
        let (n, c, ins) = split_nc(x.shape).unwrap();
        let (_, m, outs) = split_nc(out_shape).unwrap();
        let win = Window::lift(&a.kernel, &a.strides, &a.pads, &a.dilations).unwrap();
        let (cg, mg) = (c / a.group, m / a.group);
        let k = win.kernel;
        let outp: usize = outs.iter().product();
        let mut out: Vec<f64> = (0..n * m * outp)
            .map(|i| bias[(i / outp) % m] as f64)
            .collect();
        for b in 0..n {
            for ci in 0..c {
                let g = ci / cg;
                for iz in 0..ins[0] {
                    for iy in 0..ins[1] {
                        for ix in 0..ins[2] {
                            let xv = x.data
                                [(((b * c + ci) * ins[0] + iz) * ins[1] + iy) * ins[2] + ix]
                                as f64;
                            for ml in 0..mg {
                                for kz in 0..k[0] {
                                    for ky in 0..k[1] {
                                        for kx in 0..k[2] {
                                            let (i, kk) = ([iz, iy, ix], [kz, ky, kx]);
                                            let mut o = [0usize; SP];
                                            let mut inside = true;
                                            for ax in 0..SP {
                                                let p = (i[ax] * win.strides[ax]
                                                    + kk[ax] * win.dilations[ax])
                                                    as isize
                                                    - win.pad_begin[ax] as isize;
                                                inside &= p >= 0 && (p as usize) < outs[ax];
                                                o[ax] = p.max(0) as usize;
                                            }
                                            if inside {
                                                let mo = g * mg + ml;
                                                let wi = (((ci * mg + ml) * k[0] + kz) * k[1] + ky)
                                                    * k[2]
                                                    + kx;
                                                let oi = (((b * m + mo) * outs[0] + o[0])
                                                    * outs[1]
                                                    + o[1])
                                                    * outs[2]
                                                    + o[2];
                                                out[oi] += xv * w[wi] as f64;
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        out.into_iter().map(|v| v as f32).collect()
    }

    #[test]
    fn random_transposed_convolutions_match_naive() {
        let mut rng = Rng::new(31);
        let mut checked = 0;
        for trial in 0..200 {
            let spatial = if trial % 10 == 0 {
                1
            } else if trial % 10 == 1 {
                3
            } else {
                2
            };
            let group = rng.range(1, 2);
            let (c, m) = (group * rng.range(1, 3), group * rng.range(1, 3));
            let a = ConvTransposeAttrs {
                kernel: (0..spatial).map(|_| rng.range(1, 3)).collect(),
                strides: (0..spatial).map(|_| rng.range(1, 3)).collect(),
                pads: (0..2 * spatial).map(|_| rng.range(0, 1)).collect(),
                dilations: (0..spatial).map(|_| rng.range(1, 2)).collect(),
                output_padding: (0..spatial).map(|_| rng.range(0, 1)).collect(),
                group,
            };
            let mut x_shape = vec![1, c];
            x_shape.extend((0..spatial).map(|_| rng.range(1, 5)));
            let mut w_shape = vec![c, m / group];
            w_shape.extend_from_slice(&a.kernel);
            let (xt, wt) = (
                TensorType::f32(x_shape.clone()),
                TensorType::f32(w_shape.clone()),
            );
            let Ok(out) = infer_types(&Op::ConvTranspose(a.clone()), &[&xt, &wt]) else {
                continue;
            };
            let out_shape = &out[0].shape;
            let x = rng.vec(x_shape.iter().product());
            let w = rng.vec(w_shape.iter().product());
            let b = rng.vec(m);
            let xv = View {
                shape: &x_shape,
                data: &x,
            };
            let b_shape = [m];
            let bv = View {
                shape: &b_shape,
                data: &b[..],
            };
            let got = conv_transpose(
                &a,
                xv,
                View {
                    shape: &w_shape,
                    data: &w,
                },
                Some(bv),
                out_shape,
            )
            .unwrap();
            assert_close(
                &got,
                &naive(&a, xv, &w, &b, out_shape),
                1e-4,
                &format!("{a:?} on {x_shape:?}"),
            );
            checked += 1;
        }
        assert!(checked > 100, "only {checked} valid configurations");
    }
}
