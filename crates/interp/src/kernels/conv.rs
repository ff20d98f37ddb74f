//! Convolution (ONNX `Conv`): groups, strides, dilations, asymmetric pads, 1 to 3
//! spatial axes, any batch size.
//!
//! Strategy per group: depthwise convolutions (one input channel per group) of 1-D
//! and 2-D inputs use a direct row kernel; point-wise convolutions (1x1, stride 1,
//! no padding) multiply the weights with the input as it is; everything else goes
//! through im2col, written straight into the GEMM's packed `B` layout, followed by
//! the blocked GEMM.

use super::error::KernelError;
use super::gemm::{gemm_packed, MatRef, PackedA, PackedB, NR};
use super::geom::{split_nc, valid_range, Window, SP};
use super::View;
use nnac_ir::ConvAttrs;
use rayon::prelude::*;

/// The shape facts of one convolution, lifted to three spatial axes.
struct Geometry {
    c_in: usize,
    m_out: usize,
    group: usize,
    ins: [usize; SP],
    outs: [usize; SP],
    win: Window,
}

impl Geometry {
    fn in_plane(&self) -> usize {
        self.ins.iter().product()
    }
    fn out_plane(&self) -> usize {
        self.outs.iter().product()
    }
    fn cg(&self) -> usize {
        self.c_in / self.group
    }
    fn mg(&self) -> usize {
        self.m_out / self.group
    }
    fn pointwise(&self) -> bool {
        let w = &self.win;
        w.kernel == [1; SP]
            && w.strides == [1; SP]
            && w.pad_begin == [0; SP]
            && w.pad_end == [0; SP]
    }
    /// One input channel per group on a (lifted) 1-D or 2-D input.
    fn depthwise_2d(&self) -> bool {
        self.cg() == 1
            && self.group > 1
            && self.ins[0] == 1
            && self.outs[0] == 1
            && self.win.kernel[0] == 1
    }
}

/// `out_shape` is the inferred output shape (checked by the caller).
pub fn conv(
    a: &ConvAttrs,
    x: View<'_>,
    w: View<'_>,
    bias: Option<View<'_>>,
    out_shape: &[usize],
) -> Result<Vec<f32>, KernelError> {
    let (batch, c_in, ins) = split_nc(x.shape)?;
    let (_, m_out, outs) = split_nc(out_shape)?;
    let win = Window::lift(&a.kernel, &a.strides, &a.pads, &a.dilations)?;
    let g = Geometry {
        c_in,
        m_out,
        group: a.group,
        ins,
        outs,
        win,
    };
    let (inp, outp) = (g.in_plane(), g.out_plane());
    let mut out = vec![0.0f32; batch * m_out * outp];
    if let Some(b) = bias {
        for (ch, plane) in out.chunks_exact_mut(outp.max(1)).enumerate() {
            plane.fill(b.data[ch % m_out]);
        }
    }
    if outp == 0 {
        return Ok(out);
    }
    for (xb, ob) in x
        .data
        .chunks_exact(c_in * inp)
        .zip(out.chunks_exact_mut(m_out * outp))
    {
        if g.depthwise_2d() {
            depthwise_2d(&g, xb, w.data, ob);
            continue;
        }
        let kdim = g.cg() * g.win.kernel_volume();
        for gi in 0..g.group {
            let wg = MatRef::row_major(
                &w.data[gi * g.mg() * kdim..(gi + 1) * g.mg() * kdim],
                g.mg(),
                kdim,
            );
            let xg = &xb[gi * g.cg() * inp..(gi + 1) * g.cg() * inp];
            let packed_b = if g.pointwise() {
                PackedB::pack(MatRef::row_major(xg, g.cg(), inp))
            } else {
                im2col(&g, xg)
            };
            let og = &mut ob[gi * g.mg() * outp..(gi + 1) * g.mg() * outp];
            gemm_packed(&PackedA::pack(wg, 1.0), &packed_b, og);
        }
    }
    Ok(out)
}

/// The im2col matrix (`cg * kernel volume` rows, one column per output position) of
/// one group's input `xg`, in packed-`B` form. Taps in the padding are zero.
fn im2col(g: &Geometry, xg: &[f32]) -> PackedB {
    let w = &g.win;
    let (ins, outs) = (g.ins, g.outs);
    let inp = g.in_plane();
    let p = g.out_plane();
    let rows = g.cg() * w.kernel_volume();
    PackedB::from_strips(rows, p, |j, strip| {
        let p0 = j * NR;
        let lanes = NR.min(p - p0);
        let mut base = [[0isize; SP]; NR];
        for (l, b) in base.iter_mut().enumerate().take(lanes) {
            let q = p0 + l;
            let pos = [
                q / (outs[1] * outs[2]),
                (q / outs[2]) % outs[1],
                q % outs[2],
            ];
            for ax in 0..SP {
                b[ax] = (pos[ax] * w.strides[ax]) as isize - w.pad_begin[ax] as isize;
            }
        }
        let mut rows_out = strip.chunks_exact_mut(NR);
        for plane in xg.chunks_exact(inp) {
            for kz in 0..w.kernel[0] {
                for ky in 0..w.kernel[1] {
                    for kx in 0..w.kernel[2] {
                        let dst = rows_out.next().expect("one packed row per tap");
                        let off = [
                            kz * w.dilations[0],
                            ky * w.dilations[1],
                            kx * w.dilations[2],
                        ];
                        gather_row(plane, ins, &base[..lanes], off, &mut dst[..lanes]);
                    }
                }
            }
        }
    })
}

/// `dst[l] = plane[base[l] + off]`, or 0 where that position is in the padding.
#[inline]
fn gather_row(
    plane: &[f32],
    ins: [usize; SP],
    base: &[[isize; SP]],
    off: [usize; SP],
    dst: &mut [f32],
) {
    for (d, b) in dst.iter_mut().zip(base) {
        // Negative coordinates wrap to huge values and fail the bound check.
        let z = (b[0] + off[0] as isize) as usize;
        let y = (b[1] + off[1] as isize) as usize;
        let x = (b[2] + off[2] as isize) as usize;
        if z < ins[0] && y < ins[1] && x < ins[2] {
            *d = plane[(z * ins[1] + y) * ins[2] + x];
        }
    }
}

/// Direct depthwise kernel: output channel `m` reads input channel `m / (M / C)`;
/// each (row, tap) pair is one vectorisable row update with no bounds checks.
fn depthwise_2d(g: &Geometry, x: &[f32], w: &[f32], out: &mut [f32]) {
    let win = &g.win;
    let (ih, iw) = (g.ins[1], g.ins[2]);
    let (oh, ow) = (g.outs[1], g.outs[2]);
    let (kh, kw) = (win.kernel[1], win.kernel[2]);
    let mult = g.mg();
    out.par_chunks_mut(oh * ow)
        .enumerate()
        .for_each(|(m, oplane)| {
            let plane = &x[(m / mult) * ih * iw..(m / mult + 1) * ih * iw];
            let wm = &w[m * kh * kw..(m + 1) * kh * kw];
            for (oy, orow) in oplane.chunks_exact_mut(ow).enumerate() {
                for ky in 0..kh {
                    let iy = (oy * win.strides[1] + ky * win.dilations[1]) as isize
                        - win.pad_begin[1] as isize;
                    if iy < 0 || iy >= ih as isize {
                        continue;
                    }
                    let irow = &plane[iy as usize * iw..(iy as usize + 1) * iw];
                    for kx in 0..kw {
                        let off = (kx * win.dilations[2]) as isize - win.pad_begin[2] as isize;
                        let r = valid_range(ow, iw, win.strides[2], off);
                        if r.is_empty() {
                            continue;
                        }
                        let first = (r.start * win.strides[2]) as isize + off;
                        axpy_strided(
                            wm[ky * kw + kx],
                            &irow[first as usize..],
                            win.strides[2],
                            &mut orow[r],
                        );
                    }
                }
            }
        });
}

/// `dst[i] += wv * src[i * stride]` (all positions known to be in range).
#[inline]
fn axpy_strided(wv: f32, src: &[f32], stride: usize, dst: &mut [f32]) {
    if stride == 1 {
        for (d, s) in dst.iter_mut().zip(src) {
            *d += wv * s;
        }
    } else {
        for (d, s) in dst.iter_mut().zip(src.iter().step_by(stride)) {
            *d += wv * s;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, Rng};
    use nnac_ir::infer::infer_types;
    use nnac_ir::{Op, TensorType};

    /// The textbook convolution: one loop per index, padding by bounds checks.
    pub(crate) fn naive_conv(
        a: &ConvAttrs,
        x: View<'_>,
        w: &[f32],
        bias: Option<&[f32]>,
        out_shape: &[usize],
    ) -> Vec<f32> {
        let (n, c, ins) = split_nc(x.shape).unwrap();
        let (_, m, outs) = split_nc(out_shape).unwrap();
        let win = Window::lift(&a.kernel, &a.strides, &a.pads, &a.dilations).unwrap();
        let (cg, mg) = (c / a.group, m / a.group);
        let k = win.kernel;
        let mut out = Vec::new();
        for b in 0..n {
            for mo in 0..m {
                let g = mo / mg;
                for oz in 0..outs[0] {
                    for oy in 0..outs[1] {
                        for ox in 0..outs[2] {
                            let mut s = bias.map_or(0.0, |bv| bv[mo]) as f64;
                            for ci in 0..cg {
                                for kz in 0..k[0] {
                                    for ky in 0..k[1] {
                                        for kx in 0..k[2] {
                                            let pos = [oz, oy, ox];
                                            let kk = [kz, ky, kx];
                                            let mut idx = [0usize; SP];
                                            let mut inside = true;
                                            for ax in 0..SP {
                                                let p = (pos[ax] * win.strides[ax]
                                                    + kk[ax] * win.dilations[ax])
                                                    as isize
                                                    - win.pad_begin[ax] as isize;
                                                inside &= p >= 0 && (p as usize) < ins[ax];
                                                idx[ax] = p.max(0) as usize;
                                            }
                                            if inside {
                                                let xi = (((b * c + g * cg + ci) * ins[0]
                                                    + idx[0])
                                                    * ins[1]
                                                    + idx[1])
                                                    * ins[2]
                                                    + idx[2];
                                                let wi = (((mo * cg + ci) * k[0] + kz) * k[1] + ky)
                                                    * k[2]
                                                    + kx;
                                                s += x.data[xi] as f64 * w[wi] as f64;
                                            }
                                        }
                                    }
                                }
                            }
                            out.push(s as f32);
                        }
                    }
                }
            }
        }
        out
    }

    fn check(rng: &mut Rng, a: &ConvAttrs, x_shape: &[usize], m: usize, with_bias: bool) -> bool {
        let c = x_shape[1];
        let mut w_shape = vec![m, c / a.group];
        w_shape.extend_from_slice(&a.kernel);
        let xt = TensorType::f32(x_shape.to_vec());
        let wt = TensorType::f32(w_shape.clone());
        let Ok(out) = infer_types(&Op::Conv(a.clone()), &[&xt, &wt]) else {
            return false;
        };
        let out_shape = out[0].shape.clone();
        let x = rng.vec(x_shape.iter().product());
        let w = rng.vec(w_shape.iter().product());
        let b = rng.vec(m);
        let b_shape = [m];
        let bias = with_bias.then_some(View {
            shape: &b_shape,
            data: &b[..],
        });
        let xv = View {
            shape: x_shape,
            data: &x,
        };
        let got = conv(
            a,
            xv,
            View {
                shape: &w_shape,
                data: &w,
            },
            bias,
            &out_shape,
        )
        .unwrap();
        let want = naive_conv(a, xv, &w, with_bias.then_some(&b[..]), &out_shape);
        assert_close(&got, &want, 1e-4, &format!("{a:?} x {x_shape:?} m {m}"));
        true
    }

    #[test]
    fn random_2d_convolutions_match_naive() {
        let mut rng = Rng::new(21);
        let mut checked = 0;
        for _ in 0..300 {
            let group = [1, 1, 2, 3][rng.range(0, 3)];
            let c = group * rng.range(1, 3);
            let m = group * rng.range(1, 4);
            let kernel = vec![rng.range(1, 3), rng.range(1, 3)];
            let a = ConvAttrs {
                strides: vec![rng.range(1, 3), rng.range(1, 2)],
                pads: (0..4).map(|_| rng.range(0, 2)).collect(),
                dilations: vec![rng.range(1, 2), rng.range(1, 3)],
                group,
                kernel,
            };
            let x_shape = [rng.range(1, 2), c, rng.range(1, 9), rng.range(1, 9)];
            let with_bias = rng.range(0, 1) == 1;
            checked += check(&mut rng, &a, &x_shape, m, with_bias) as usize;
        }
        assert!(checked > 150, "only {checked} valid configurations");
    }

    #[test]
    fn depthwise_and_pointwise_paths_match_naive() {
        let mut rng = Rng::new(22);
        for (stride, pad, dil, mult) in [
            (1, 1, 1, 1),
            (2, 1, 1, 1),
            (1, 2, 2, 2),
            (2, 0, 1, 3),
            (3, 2, 2, 1),
        ] {
            let a = ConvAttrs {
                kernel: vec![3, 3],
                strides: vec![stride; 2],
                pads: vec![pad; 4],
                dilations: vec![dil; 2],
                group: 4,
            };
            assert!(check(&mut rng, &a, &[1, 4, 11, 13], 4 * mult, true));
        }
        let pw = ConvAttrs {
            kernel: vec![1, 1],
            strides: vec![1, 1],
            pads: vec![0; 4],
            dilations: vec![1, 1],
            group: 1,
        };
        assert!(check(&mut rng, &pw, &[1, 7, 5, 9], 13, true));
        // Large enough for several GEMM row blocks and column strips.
        let big = ConvAttrs {
            kernel: vec![3, 3],
            strides: vec![1, 1],
            pads: vec![1; 4],
            dilations: vec![1, 1],
            group: 1,
        };
        assert!(check(&mut rng, &big, &[1, 16, 20, 21], 70, true));
    }

    #[test]
    fn one_and_three_dimensional_convolutions_match_naive() {
        let mut rng = Rng::new(23);
        let a1 = ConvAttrs {
            kernel: vec![3],
            strides: vec![2],
            pads: vec![1, 2],
            dilations: vec![2],
            group: 2,
        };
        assert!(check(&mut rng, &a1, &[1, 4, 17], 6, true));
        let a3 = ConvAttrs {
            kernel: vec![2, 3, 1],
            strides: vec![1, 2, 1],
            pads: vec![1, 0, 1, 0, 1, 0],
            dilations: vec![1, 1, 2],
            group: 1,
        };
        assert!(check(&mut rng, &a3, &[1, 3, 4, 5, 6], 5, false));
    }
}
