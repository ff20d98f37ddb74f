//! Max and average pooling (windowed and global), 1 to 3 spatial axes.
//!
//! Per axis and output position, a table gives the window taps that land inside the
//! input (a contiguous tap range, also with dilation) and how many taps land inside
//! the padded input. Max pooling ignores padding; average pooling divides by the
//! taps inside the padded input when `count_include_pad` (the window clipped to the
//! padded extent, so a ceil-mode window hanging past the end padding does not count
//! its overhang) and by the taps inside the input otherwise.

use super::error::KernelError;
use super::geom::{split_nc, Window, SP};
use super::View;
use nnac_ir::{PoolAttrs, PoolKind};
use rayon::prelude::*;
use std::ops::Range;

/// One output position along one axis.
#[derive(Clone, Debug)]
struct Span {
    /// Taps inside the input.
    taps: Range<usize>,
    /// First input index of the window (may be negative).
    start: isize,
    /// Taps inside the padded input.
    padded: usize,
}

fn spans(input: usize, output: usize, win: &Window, ax: usize) -> Vec<Span> {
    let (k, s, d) = (win.kernel[ax], win.strides[ax], win.dilations[ax]);
    let (pb, pe) = (win.pad_begin[ax] as isize, win.pad_end[ax] as isize);
    (0..output)
        .map(|o| {
            let start = (o * s) as isize - pb;
            let inside = |lo: isize, hi: isize| {
                super::geom::valid_range(k, (hi - lo) as usize, d, start - lo)
            };
            Span {
                taps: inside(0, input as isize),
                start,
                padded: inside(-pb, input as isize + pe).len(),
            }
        })
        .collect()
}

pub fn pool(a: &PoolAttrs, x: View<'_>, out_shape: &[usize]) -> Result<Vec<f32>, KernelError> {
    let (_, _, ins) = split_nc(x.shape)?;
    let (_, _, outs) = split_nc(out_shape)?;
    let win = Window::lift(&a.kernel, &a.strides, &a.pads, &a.dilations)?;
    let tables: Vec<Vec<Span>> = (0..SP)
        .map(|ax| spans(ins[ax], outs[ax], &win, ax))
        .collect();
    let (inp, outp): (usize, usize) = (ins.iter().product(), outs.iter().product());
    let mut out = vec![0.0f32; out_shape.iter().product()];
    if outp == 0 || inp == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(outp)
        .zip(x.data.par_chunks(inp))
        .for_each(|(oplane, iplane)| {
            let mut o = oplane.iter_mut();
            for sz in &tables[0] {
                for sy in &tables[1] {
                    for sx in &tables[2] {
                        let v = o.next().expect("one output per window");
                        *v = window(a, &win, ins, iplane, [sz, sy, sx]);
                    }
                }
            }
        });
    Ok(out)
}

/// The pooled value of one window.
fn window(a: &PoolAttrs, win: &Window, ins: [usize; SP], plane: &[f32], sp: [&Span; SP]) -> f32 {
    let d = win.dilations;
    let mut max = f32::NEG_INFINITY;
    let mut sum = 0.0f32;
    for tz in sp[0].taps.clone() {
        let z = (sp[0].start + (tz * d[0]) as isize) as usize;
        for ty in sp[1].taps.clone() {
            let y = (sp[1].start + (ty * d[1]) as isize) as usize;
            let row = &plane[(z * ins[1] + y) * ins[2]..][..ins[2]];
            for tx in sp[2].taps.clone() {
                let v = row[(sp[2].start + (tx * d[2]) as isize) as usize];
                max = max.max(v);
                sum += v;
            }
        }
    }
    match a.kind {
        PoolKind::Max => max,
        PoolKind::Avg => {
            let count: usize = if a.count_include_pad {
                sp.iter().map(|s| s.padded).product()
            } else {
                sp.iter().map(|s| s.taps.len()).product()
            };
            sum / count as f32
        }
    }
}

/// Max or mean over all spatial positions of each `(n, c)` plane.
pub fn global_pool(kind: PoolKind, x: View<'_>) -> Vec<f32> {
    let inner: usize = x.shape[2..].iter().product();
    let planes = x.shape[0] * x.shape[1];
    if inner == 0 {
        return vec![0.0; planes];
    }
    x.data
        .par_chunks(inner)
        .map(|p| match kind {
            PoolKind::Max => p.iter().copied().fold(f32::NEG_INFINITY, f32::max),
            PoolKind::Avg => p.iter().sum::<f32>() / inner as f32,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, Rng};
    use nnac_ir::infer::infer_types;
    use nnac_ir::{Op, TensorType};

    /// Pooling written out with explicit padded coordinates.
    fn naive(a: &PoolAttrs, x: &[f32], ins: [usize; 2], outs: [usize; 2]) -> Vec<f32> {
        let mut out = Vec::new();
        for oy in 0..outs[0] {
            for ox in 0..outs[1] {
                let (mut max, mut sum, mut valid, mut padded) = (f32::NEG_INFINITY, 0.0f32, 0, 0);
                for ky in 0..a.kernel[0] {
                    for kx in 0..a.kernel[1] {
                        let y =
                            (oy * a.strides[0] + ky * a.dilations[0]) as isize - a.pads[0] as isize;
                        let xx =
                            (ox * a.strides[1] + kx * a.dilations[1]) as isize - a.pads[1] as isize;
                        let in_pad_y =
                            y >= -(a.pads[0] as isize) && y < (ins[0] + a.pads[2]) as isize;
                        let in_pad_x =
                            xx >= -(a.pads[1] as isize) && xx < (ins[1] + a.pads[3]) as isize;
                        if in_pad_y && in_pad_x {
                            padded += 1;
                        }
                        if y >= 0 && (y as usize) < ins[0] && xx >= 0 && (xx as usize) < ins[1] {
                            let v = x[y as usize * ins[1] + xx as usize];
                            max = max.max(v);
                            sum += v;
                            valid += 1;
                        }
                    }
                }
                out.push(match a.kind {
                    PoolKind::Max => max,
                    PoolKind::Avg if a.count_include_pad => sum / padded as f32,
                    PoolKind::Avg => sum / valid as f32,
                });
            }
        }
        out
    }

    #[test]
    fn matches_naive_over_random_configurations() {
        let mut rng = Rng::new(4);
        let mut checked = 0;
        for _ in 0..400 {
            let k = [rng.range(1, 3), rng.range(1, 3)];
            let d = [rng.range(1, 2), rng.range(1, 2)];
            let pads: Vec<usize> = (0..4)
                .map(|i| rng.range(0, k[i % 2] * d[i % 2] - 1).min(2))
                .collect();
            let a = PoolAttrs {
                kind: if rng.range(0, 1) == 0 {
                    PoolKind::Max
                } else {
                    PoolKind::Avg
                },
                kernel: k.to_vec(),
                strides: vec![rng.range(1, 3), rng.range(1, 3)],
                pads,
                dilations: d.to_vec(),
                ceil_mode: rng.range(0, 1) == 1,
                count_include_pad: rng.range(0, 1) == 1,
            };
            let ins = [rng.range(1, 7), rng.range(1, 7)];
            let ty = TensorType::f32(vec![1, 2, ins[0], ins[1]]);
            let Ok(out_ty) = infer_types(&Op::Pool(a.clone()), &[&ty]) else {
                continue;
            };
            let outs = [out_ty[0].shape[2], out_ty[0].shape[3]];
            let x = rng.vec(2 * ins[0] * ins[1]);
            let got = pool(
                &a,
                View {
                    shape: &ty.shape,
                    data: &x,
                },
                &out_ty[0].shape,
            )
            .unwrap();
            let plane = ins[0] * ins[1];
            let mut want = naive(&a, &x[..plane], ins, outs);
            want.extend(naive(&a, &x[plane..], ins, outs));
            assert_close(&got, &want, 1e-6, &format!("{a:?} on {ins:?}"));
            checked += 1;
        }
        assert!(checked > 200, "only {checked} configurations were valid");
    }

    #[test]
    fn one_and_three_dimensional_pooling() {
        let x: Vec<f32> = (0..8).map(|i| i as f32).collect();
        let a = PoolAttrs {
            kind: PoolKind::Avg,
            kernel: vec![2],
            strides: vec![2],
            pads: vec![0, 0],
            dilations: vec![1],
            ceil_mode: false,
            count_include_pad: false,
        };
        assert_eq!(
            pool(
                &a,
                View {
                    shape: &[1, 1, 8],
                    data: &x
                },
                &[1, 1, 4]
            )
            .unwrap(),
            [0.5, 2.5, 4.5, 6.5]
        );
        let a3 = PoolAttrs {
            kind: PoolKind::Max,
            kernel: vec![2; 3],
            strides: vec![2; 3],
            pads: vec![0; 6],
            dilations: vec![1; 3],
            ..a
        };
        assert_eq!(
            pool(
                &a3,
                View {
                    shape: &[1, 1, 2, 2, 2],
                    data: &x
                },
                &[1, 1, 1, 1, 1]
            )
            .unwrap(),
            [7.0]
        );
    }

    #[test]
    fn global_pooling() {
        let x = [1.0f32, 2.0, 3.0, 6.0];
        assert_eq!(
            global_pool(
                PoolKind::Avg,
                View {
                    shape: &[1, 2, 2],
                    data: &x
                }
            ),
            [1.5, 4.5]
        );
        assert_eq!(
            global_pool(
                PoolKind::Max,
                View {
                    shape: &[1, 2, 2],
                    data: &x
                }
            ),
            [2.0, 6.0]
        );
    }
}
