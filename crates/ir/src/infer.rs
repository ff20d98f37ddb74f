//! Shape inference: the output types of an op from its input types. One function per
//! op family; used by importers (`Graph::add_node`) and by the verifier.

use crate::{ConvAttrs, ConvTransposeAttrs, GemmAttrs, Op, PoolAttrs, ShapeError, TensorType};

type R = Result<Vec<TensorType>, ShapeError>;

/// Output types of `op` applied to inputs of types `ins`.
pub fn infer_types(op: &Op, ins: &[&TensorType]) -> R {
    let (lo, hi) = op.arity();
    if ins.len() < lo || ins.len() > hi {
        return Err(ShapeError::Arity {
            op: op.mnemonic(),
            min: lo,
            max: hi,
            got: ins.len(),
        });
    }
    match op {
        Op::Input | Op::Constant(_) => Err(ShapeError::OwnType),
        Op::Nna(_) => Err(ShapeError::ExplicitType),
        Op::Conv(a) => conv(a, ins),
        Op::ConvTranspose(a) => conv_transpose(a, ins),
        Op::Gemm(a) => gemm(a, ins),
        Op::MatMul => matmul(ins[0], ins[1]),
        Op::BatchNorm { .. } => batch_norm(ins),
        Op::Act(_) | Op::Softmax { .. } | Op::Lrn { .. } | Op::Power { .. } | Op::Identity => {
            if let Op::Softmax { axis } = op {
                check_axis(*axis, ins[0].rank())?;
            }
            Ok(vec![ins[0].clone()])
        }
        Op::PRelu => {
            let s = broadcast(&ins[0].shape, &ins[1].shape)?;
            if s != ins[0].shape {
                return Err(ShapeError::PreluSlope {
                    slope: ins[1].shape.clone(),
                    input: ins[0].shape.clone(),
                });
            }
            Ok(vec![ins[0].clone()])
        }
        Op::Binary(_) => {
            let shape = broadcast(&ins[0].shape, &ins[1].shape)?;
            Ok(vec![TensorType::new(ins[0].dtype, shape)])
        }
        Op::Concat { axis } => concat(*axis, ins),
        Op::Pool(a) => pool(a, ins[0]),
        Op::GlobalPool(_) => {
            let x = spatial_input(ins[0], "global pool")?;
            let mut shape = x.shape[..2].to_vec();
            shape.extend(std::iter::repeat_n(1, x.rank() - 2));
            Ok(vec![TensorType::new(x.dtype, shape)])
        }
        Op::Reshape { shape } => {
            if checked_numel(shape) != checked_numel(&ins[0].shape) {
                return Err(ShapeError::Reshape {
                    from: ins[0].shape.clone(),
                    numel: ins[0].numel(),
                    to: shape.clone(),
                });
            }
            Ok(vec![TensorType::new(ins[0].dtype, shape.clone())])
        }
        Op::Slice { axes, starts, ends } => {
            let mut shape = ins[0].shape.clone();
            if axes.len() != starts.len() || axes.len() != ends.len() {
                return Err(ShapeError::SliceLengths { strided: false });
            }
            let mut seen = vec![false; shape.len()];
            for ((&a, &s), &e) in axes.iter().zip(starts).zip(ends) {
                if a >= shape.len() || std::mem::replace(&mut seen[a], true) {
                    return Err(ShapeError::SliceAxes {
                        strided: false,
                        axes: axes.clone(),
                        rank: shape.len(),
                    });
                }
                if s >= e || e > shape[a] {
                    return Err(ShapeError::SliceRange {
                        start: s,
                        end: e,
                        step: None,
                        axis: a,
                        size: shape[a],
                    });
                }
                shape[a] = e - s;
            }
            Ok(vec![TensorType::new(ins[0].dtype, shape)])
        }
        Op::StridedSlice {
            axes,
            starts,
            ends,
            steps,
        } => {
            let mut shape = ins[0].shape.clone();
            if axes.len() != starts.len() || axes.len() != ends.len() || axes.len() != steps.len() {
                return Err(ShapeError::SliceLengths { strided: true });
            }
            let mut seen = vec![false; shape.len()];
            for k in 0..axes.len() {
                let (a, s, e, st) = (axes[k], starts[k], ends[k], steps[k]);
                if a >= shape.len() || std::mem::replace(&mut seen[a], true) {
                    return Err(ShapeError::SliceAxes {
                        strided: true,
                        axes: axes.clone(),
                        rank: shape.len(),
                    });
                }
                if st == 0 || s >= e || e > shape[a] {
                    return Err(ShapeError::SliceRange {
                        start: s,
                        end: e,
                        step: Some(st),
                        axis: a,
                        size: shape[a],
                    });
                }
                shape[a] = (e - s).div_ceil(st);
            }
            Ok(vec![TensorType::new(ins[0].dtype, shape)])
        }
        Op::Transpose { perm } => {
            let mut seen = vec![false; ins[0].rank()];
            if perm.len() != ins[0].rank()
                || perm
                    .iter()
                    .any(|&p| p >= seen.len() || std::mem::replace(&mut seen[p], true))
            {
                return Err(ShapeError::Perm {
                    perm: perm.clone(),
                    rank: ins[0].rank(),
                });
            }
            let shape = perm.iter().map(|&p| ins[0].shape[p]).collect();
            Ok(vec![TensorType::new(ins[0].dtype, shape)])
        }
        Op::Resize(a) => {
            if a.sizes.len() != ins[0].rank() || a.scales.len() != ins[0].rank() {
                return Err(ShapeError::ResizeRank {
                    rank: ins[0].rank(),
                });
            }
            if a.sizes.contains(&0) {
                return Err(ShapeError::ResizeEmpty {
                    sizes: a.sizes.clone(),
                });
            }
            Ok(vec![TensorType::new(ins[0].dtype, a.sizes.clone())])
        }
        Op::Quantize(q) => {
            q.check(&ins[0].shape)?;
            Ok(vec![TensorType::new(q.dtype, ins[0].shape.clone())])
        }
        Op::Dequantize(q) => {
            q.check(&ins[0].shape)?;
            Ok(vec![TensorType::f32(ins[0].shape.clone())])
        }
        Op::Pad { pads, .. } => {
            let r = ins[0].rank();
            if pads.len() != 2 * r {
                return Err(ShapeError::PadCount {
                    needed: 2 * r,
                    got: pads.len(),
                });
            }
            let shape = (0..r)
                .map(|i| {
                    ins[0].shape[i]
                        .checked_add(pads[i])?
                        .checked_add(pads[i + r])
                })
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| ShapeError::PadOverflow {
                    pads: pads.clone(),
                    shape: ins[0].shape.clone(),
                })?;
            Ok(vec![TensorType::new(ins[0].dtype, shape)])
        }
    }
}

fn check_axis(axis: usize, rank: usize) -> Result<(), ShapeError> {
    if axis >= rank {
        return Err(ShapeError::Axis { axis, rank });
    }
    Ok(())
}

/// An activation `[1, C, spatial...]` with at least one spatial axis.
fn spatial_input<'a>(x: &'a TensorType, op: &'static str) -> Result<&'a TensorType, ShapeError> {
    if x.rank() < 3 {
        return Err(ShapeError::SpatialInput {
            op,
            shape: x.shape.clone(),
        });
    }
    Ok(x)
}

fn check_spatial_attrs(
    n: usize,
    kernel: &[usize],
    strides: &[usize],
    pads: &[usize],
    dilations: &[usize],
) -> Result<(), ShapeError> {
    if kernel.len() != n || strides.len() != n || dilations.len() != n || pads.len() != 2 * n {
        return Err(ShapeError::SpatialAttrs {
            axes: n,
            kernel: kernel.to_vec(),
            strides: strides.to_vec(),
            pads: pads.to_vec(),
            dilations: dilations.to_vec(),
        });
    }
    if kernel.contains(&0) || strides.contains(&0) || dilations.contains(&0) {
        return Err(ShapeError::ZeroWindow);
    }
    Ok(())
}

/// `floor((in + pads - dilated_kernel) / stride) + 1`, or an error if the window is
/// larger than the padded input.
fn window_out(
    input: usize,
    k: usize,
    s: usize,
    pb: usize,
    pe: usize,
    d: usize,
    ceil: bool,
) -> Result<usize, ShapeError> {
    let overflow = || ShapeError::WindowOverflow {
        input,
        kernel: k,
        pad_begin: pb,
        pad_end: pe,
        dilation: d,
    };
    let padded = input
        .checked_add(pb)
        .and_then(|v| v.checked_add(pe))
        .ok_or_else(overflow)?;
    let eff = d
        .checked_mul(k - 1)
        .and_then(|v| v.checked_add(1))
        .ok_or_else(overflow)?;
    if padded < eff {
        return Err(ShapeError::WindowTooLarge {
            window: eff,
            padded,
        });
    }
    let span = padded - eff;
    let mut out = if ceil {
        span.div_ceil(s) + 1
    } else {
        span / s + 1
    };
    // The last window must start inside the input or the begin padding.
    if ceil
        && (out - 1)
            .checked_mul(s)
            .is_none_or(|start| start >= input + pb)
    {
        out -= 1;
    }
    Ok(out)
}

fn conv(a: &ConvAttrs, ins: &[&TensorType]) -> R {
    let (x, w) = (spatial_input(ins[0], "conv")?, ins[1]);
    let n = x.rank() - 2;
    check_spatial_attrs(n, &a.kernel, &a.strides, &a.pads, &a.dilations)?;
    if w.rank() != x.rank() {
        return Err(ShapeError::WeightRank {
            weight: w.rank(),
            input: x.rank(),
        });
    }
    let (m, cg) = (w.shape[0], w.shape[1]);
    if a.group == 0 || Some(x.shape[1]) != cg.checked_mul(a.group) || m % a.group != 0 {
        return Err(ShapeError::ConvChannels {
            channels: x.shape[1],
            weight: w.shape.clone(),
            group: a.group,
        });
    }
    if w.shape[2..] != a.kernel[..] {
        return Err(ShapeError::WeightKernel {
            weight: w.shape[2..].to_vec(),
            kernel: a.kernel.clone(),
        });
    }
    check_bias(ins.get(2), m)?;
    let mut shape = vec![x.shape[0], m];
    for i in 0..n {
        shape.push(window_out(
            x.shape[2 + i],
            a.kernel[i],
            a.strides[i],
            a.pads[i],
            a.pads[n + i],
            a.dilations[i],
            false,
        )?);
    }
    Ok(vec![TensorType::new(x.dtype, shape)])
}

fn check_bias(b: Option<&&TensorType>, m: usize) -> Result<(), ShapeError> {
    match b {
        Some(b) if b.shape != [m] => Err(ShapeError::Bias {
            shape: b.shape.clone(),
            channels: m,
        }),
        _ => Ok(()),
    }
}

fn conv_transpose(a: &ConvTransposeAttrs, ins: &[&TensorType]) -> R {
    let (x, w) = (spatial_input(ins[0], "conv_transpose")?, ins[1]);
    let n = x.rank() - 2;
    check_spatial_attrs(n, &a.kernel, &a.strides, &a.pads, &a.dilations)?;
    if a.output_padding.len() != n {
        return Err(ShapeError::OutputPadding {
            output_padding: a.output_padding.clone(),
            axes: n,
        });
    }
    if w.rank() != x.rank() || w.shape[0] != x.shape[1] || a.group == 0 || x.shape[1] % a.group != 0
    {
        return Err(ShapeError::DeconvWeight {
            weight: w.shape.clone(),
            input: x.shape.clone(),
            group: a.group,
        });
    }
    if w.shape[2..] != a.kernel[..] {
        return Err(ShapeError::WeightKernel {
            weight: w.shape[2..].to_vec(),
            kernel: a.kernel.clone(),
        });
    }
    let m = w.shape[1]
        .checked_mul(a.group)
        .ok_or_else(|| ShapeError::DeconvChannels {
            weight: w.shape.clone(),
            group: a.group,
        })?;
    check_bias(ins.get(2), m)?;
    let mut shape = vec![x.shape[0], m];
    for i in 0..n {
        let full = (x.shape[2 + i].checked_sub(1))
            .and_then(|v| v.checked_mul(a.strides[i]))
            .and_then(|v| v.checked_add(a.output_padding[i]))
            .and_then(|v| v.checked_add((a.kernel[i] - 1).checked_mul(a.dilations[i])?))
            .and_then(|v| v.checked_add(1))
            .ok_or_else(|| ShapeError::DeconvOutput {
                input: x.shape.clone(),
            })?;
        let cut = a.pads[i].saturating_add(a.pads[n + i]);
        if full <= cut {
            return Err(ShapeError::PadsRemoveOutput {
                pads: a.pads.clone(),
                full,
            });
        }
        shape.push(full - cut);
    }
    Ok(vec![TensorType::new(x.dtype, shape)])
}

fn gemm(a: &GemmAttrs, ins: &[&TensorType]) -> R {
    let (ta, tb) = (ins[0], ins[1]);
    if ta.rank() != 2 || tb.rank() != 2 {
        return Err(ShapeError::GemmRank {
            a: ta.shape.clone(),
            b: tb.shape.clone(),
        });
    }
    let (m, k) = if a.trans_a {
        (ta.shape[1], ta.shape[0])
    } else {
        (ta.shape[0], ta.shape[1])
    };
    let (k2, n) = if a.trans_b {
        (tb.shape[1], tb.shape[0])
    } else {
        (tb.shape[0], tb.shape[1])
    };
    if k != k2 {
        return Err(ShapeError::InnerDims {
            op: "gemm",
            a: ta.shape.clone(),
            b: tb.shape.clone(),
        });
    }
    if let Some(c) = ins.get(2) {
        let s = broadcast(&[m, n], &c.shape)?;
        if s != [m, n] {
            return Err(ShapeError::GemmC {
                c: c.shape.clone(),
                m,
                n,
            });
        }
    }
    Ok(vec![TensorType::new(ta.dtype, vec![m, n])])
}

fn matmul(a: &TensorType, b: &TensorType) -> R {
    if a.rank() == 0 || b.rank() == 0 {
        return Err(ShapeError::MatMulRank);
    }
    let mut sa = a.shape.clone();
    let mut sb = b.shape.clone();
    let (va, vb) = (sa.len() == 1, sb.len() == 1);
    if va {
        sa.insert(0, 1);
    }
    if vb {
        sb.push(1);
    }
    let (ra, rb) = (sa.len(), sb.len());
    if sa[ra - 1] != sb[rb - 2] {
        return Err(ShapeError::InnerDims {
            op: "matmul",
            a: a.shape.clone(),
            b: b.shape.clone(),
        });
    }
    let mut shape = broadcast(&sa[..ra - 2], &sb[..rb - 2])?;
    if !va {
        shape.push(sa[ra - 2]);
    }
    if !vb {
        shape.push(sb[rb - 1]);
    }
    Ok(vec![TensorType::new(a.dtype, shape)])
}

fn batch_norm(ins: &[&TensorType]) -> R {
    let x = ins[0];
    if x.rank() < 2 {
        return Err(ShapeError::BatchNormRank {
            shape: x.shape.clone(),
        });
    }
    for (i, p) in ins[1..].iter().enumerate() {
        if p.shape != [x.shape[1]] {
            return Err(ShapeError::BatchNormParam {
                index: i + 1,
                shape: p.shape.clone(),
                channels: x.shape[1],
            });
        }
    }
    Ok(vec![x.clone()])
}

fn concat(axis: usize, ins: &[&TensorType]) -> R {
    let first = ins[0];
    check_axis(axis, first.rank())?;
    let mut shape = first.shape.clone();
    for t in &ins[1..] {
        let same_rest = t.rank() == first.rank()
            && (0..first.rank()).all(|i| i == axis || t.shape[i] == first.shape[i]);
        if !same_rest {
            return Err(ShapeError::ConcatShapes {
                a: first.shape.clone(),
                b: t.shape.clone(),
                axis,
            });
        }
        shape[axis] = shape[axis]
            .checked_add(t.shape[axis])
            .ok_or(ShapeError::ConcatOverflow)?;
    }
    Ok(vec![TensorType::new(first.dtype, shape)])
}

fn pool(a: &PoolAttrs, x: &TensorType) -> R {
    let x = spatial_input(x, "pool")?;
    let n = x.rank() - 2;
    check_spatial_attrs(n, &a.kernel, &a.strides, &a.pads, &a.dilations)?;
    let mut shape = x.shape[..2].to_vec();
    for i in 0..n {
        let window = a.kernel[i].saturating_mul(a.dilations[i]);
        if a.pads[i] >= window || a.pads[n + i] >= window {
            return Err(ShapeError::PoolPads {
                pads: a.pads.clone(),
                kernel: a.kernel.clone(),
            });
        }
        shape.push(window_out(
            x.shape[2 + i],
            a.kernel[i],
            a.strides[i],
            a.pads[i],
            a.pads[n + i],
            a.dilations[i],
            a.ceil_mode,
        )?);
    }
    Ok(vec![TensorType::new(x.dtype, shape)])
}

/// The element count of a shape, `None` if it overflows.
fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// numpy multidirectional broadcasting of two shapes.
pub fn broadcast(a: &[usize], b: &[usize]) -> Result<Vec<usize>, ShapeError> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let da = if i + a.len() >= r {
            a[i + a.len() - r]
        } else {
            1
        };
        let db = if i + b.len() >= r {
            b[i + b.len() - r]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(ShapeError::Broadcast {
                    a: a.to_vec(),
                    b: b.to_vec(),
                })
            }
        };
    }
    Ok(out)
}
