//! Data movement: Transpose, Concat, constant Pad, channel shuffle. (Reshape and Identity only
//! change or keep the shape and need no kernel.)

use super::View;
use rayon::prelude::*;

/// Elements per parallel task.
const TASK: usize = 1 << 15;

pub fn transpose(x: View<'_>, perm: &[usize]) -> Vec<f32> {
    let rank = x.shape.len();
    let total = x.data.len();
    if rank == 0 || total == 0 {
        return x.data.to_vec();
    }
    let mut in_strides = vec![1usize; rank];
    for i in (0..rank - 1).rev() {
        in_strides[i] = in_strides[i + 1] * x.shape[i + 1];
    }
    let out_shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    let strides: Vec<usize> = perm.iter().map(|&p| in_strides[p]).collect();
    let inner = out_shape[rank - 1];
    let inner_stride = strides[rank - 1];
    let mut out = vec![0.0f32; total];
    let rows_per_task = (TASK / inner).max(1);
    out.par_chunks_mut(inner * rows_per_task)
        .enumerate()
        .for_each(|(t, chunk)| {
            for (r, orow) in chunk.chunks_exact_mut(inner).enumerate() {
                let mut row = t * rows_per_task + r;
                let mut off = 0;
                for d in (0..rank - 1).rev() {
                    off += (row % out_shape[d]) * strides[d];
                    row /= out_shape[d];
                }
                for (i, o) in orow.iter_mut().enumerate() {
                    *o = x.data[off + i * inner_stride];
                }
            }
        });
    out
}

/// Concatenation along `axis` (all other axes equal, checked by inference).
pub fn concat(inputs: &[View<'_>], axis: usize, out_shape: &[usize]) -> Vec<f32> {
    let outer: usize = out_shape[..axis].iter().product();
    let inner: usize = out_shape[axis + 1..].iter().product();
    let mut out = Vec::with_capacity(out_shape.iter().product());
    for o in 0..outer {
        for x in inputs {
            let chunk = x.shape[axis] * inner;
            out.extend_from_slice(&x.data[o * chunk..(o + 1) * chunk]);
        }
    }
    out
}

/// Channel shuffle of a row-major `[N, C, ...]` tensor (`shape`) in `groups` groups:
/// output channel `j * groups + i` is input channel `i * n + j`, `n = C / groups`
/// (`NnaOp::ChannelShuffle`). Generic so that the quantized interpreter permutes
/// codes with the same function. `C` must be a multiple of `groups` (checked by
/// the op's shape rule).
pub fn channel_shuffle<T: Copy>(data: &[T], shape: &[usize], groups: usize) -> Vec<T> {
    let c = shape.get(1).copied().unwrap_or(1);
    let plane: usize = shape.iter().skip(2).product();
    let n = c / groups.max(1);
    let mut out = Vec::with_capacity(data.len());
    for batch in data.chunks_exact((c * plane).max(1)) {
        for oc in 0..c {
            let (j, i) = (oc / groups, oc % groups);
            let ic = i * n + j;
            out.extend_from_slice(&batch[ic * plane..(ic + 1) * plane]);
        }
    }
    out
}

/// Depth-to-space of a row-major `[N, C, H, W]` tensor (`shape`) by `block` (`b`):
/// output `(c, y * b + dy, x * b + dx)` is input channel `(dy * b + dx) * C / b^2 + c`
/// (ONNX DepthToSpace mode DCR) or `c * b^2 + dy * b + dx` (`crd`, mode CRD) at
/// `(y, x)` (`NnaOp::DepthToSpace`). Generic so that the quantized interpreter moves
/// codes with the same function. `C` must be a multiple of `b^2` (checked by the op's
/// shape rule).
pub fn depth_to_space<T: Copy>(data: &[T], shape: &[usize], block: usize, crd: bool) -> Vec<T> {
    let (c, h, w) = (shape[1], shape[2], shape[3]);
    let b = block.max(1);
    let oc = c / (b * b);
    let mut out = Vec::with_capacity(data.len());
    for batch in data.chunks_exact((c * h * w).max(1)) {
        for co in 0..oc {
            for yo in 0..h * b {
                let (y, dy) = (yo / b, yo % b);
                for xo in 0..w * b {
                    let (x, dx) = (xo / b, xo % b);
                    let ci = if crd {
                        co * b * b + dy * b + dx
                    } else {
                        (dy * b + dx) * oc + co
                    };
                    out.push(batch[(ci * h + y) * w + x]);
                }
            }
        }
    }
    out
}

/// Constant padding; `pads` = all begins then all ends.
pub fn pad(x: View<'_>, pads: &[usize], value: f32, out_shape: &[usize]) -> Vec<f32> {
    let rank = x.shape.len();
    let mut out = vec![value; out_shape.iter().product()];
    if x.data.is_empty() {
        return out;
    }
    if rank == 0 {
        out.copy_from_slice(x.data);
        return out;
    }
    let inner = x.shape[rank - 1];
    let mut out_strides = vec![1usize; rank];
    for i in (0..rank - 1).rev() {
        out_strides[i] = out_strides[i + 1] * out_shape[i + 1];
    }
    for (row, src) in x.data.chunks_exact(inner.max(1)).enumerate() {
        let mut r = row;
        let mut off = pads[rank - 1];
        for d in (0..rank - 1).rev() {
            off += (r % x.shape[d] + pads[d]) * out_strides[d];
            r /= x.shape[d];
        }
        out[off..off + inner].copy_from_slice(src);
    }
    out
}

/// Nearest-neighbour upsampling of a row-major `[N, C, H, W]` tensor (`shape`) by
/// whole factors `[fh, fw]`: output `(y, x)` is input `(y / fh, x / fw)`
/// (`NnaOp::Upsample`). Generic so that the quantized interpreter moves codes with the
/// same function.
pub fn upsample_nearest<T: Copy>(data: &[T], shape: &[usize], [fh, fw]: [usize; 2]) -> Vec<T> {
    let (h, w) = (shape[2], shape[3]);
    let mut out = Vec::with_capacity(data.len() * fh * fw);
    for plane in data.chunks_exact((h * w).max(1)) {
        for y in 0..h * fh {
            let row = &plane[(y / fh) * w..(y / fh + 1) * w];
            for x in 0..w * fw {
                out.push(row[x / fw]);
            }
        }
    }
    out
}

/// The block `starts[k] .. ends[k]` of axis `axes[k]` of a row-major tensor of shape
/// `shape` (every other axis whole; bounds checked by the op's shape rule).
/// Generic so that the quantized interpreter slices codes with the same function.
pub fn slice<T: Copy>(
    data: &[T],
    shape: &[usize],
    axes: &[usize],
    starts: &[usize],
    ends: &[usize],
) -> Vec<T> {
    let mut range: Vec<(usize, usize)> = shape.iter().map(|&d| (0, d)).collect();
    for ((&a, &s), &e) in axes.iter().zip(starts).zip(ends) {
        range[a] = (s, e);
    }
    // Copy runs of the innermost axis; walk the outer indices like an odometer.
    let rank = shape.len();
    let strides: Vec<usize> = (0..rank).map(|i| shape[i + 1..].iter().product()).collect();
    let mut out = Vec::new();
    if rank == 0 || range.iter().any(|&(s, e)| s >= e) {
        return out;
    }
    let mut idx: Vec<usize> = range.iter().map(|&(s, _)| s).collect();
    let (s_in, e_in) = range[rank - 1];
    loop {
        let base: usize = (0..rank - 1).map(|i| idx[i] * strides[i]).sum();
        out.extend_from_slice(&data[base + s_in..base + e_in]);
        let mut k = rank - 1;
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < range[k].1 {
                break;
            }
            idx[k] = range[k].0;
        }
    }
}

/// Every `steps[k]`-th element of `starts[k]..ends[k]` on axis `axes[k]` (other axes
/// whole), in row-major order; an empty range gives an empty result.
pub fn strided_slice<T: Copy>(
    data: &[T],
    shape: &[usize],
    axes: &[usize],
    starts: &[usize],
    ends: &[usize],
    steps: &[usize],
) -> Vec<T> {
    let rank = shape.len();
    // Per axis the source indices it keeps.
    let mut keep: Vec<Vec<usize>> = shape.iter().map(|&d| (0..d).collect()).collect();
    for k in 0..axes.len() {
        keep[axes[k]] = (starts[k]..ends[k]).step_by(steps[k].max(1)).collect();
    }
    let mut out = Vec::new();
    if rank == 0 || keep.iter().any(|k| k.is_empty()) {
        return out;
    }
    let strides: Vec<usize> = (0..rank).map(|i| shape[i + 1..].iter().product()).collect();
    let mut idx = vec![0usize; rank];
    loop {
        let at: usize = (0..rank).map(|i| keep[i][idx[i]] * strides[i]).sum();
        out.push(data[at]);
        let mut k = rank;
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < keep[k].len() {
                break;
            }
            idx[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_slice_takes_every_second_row_and_column() {
        // 1x1x4x4 of 0..16: rows 1 and 3, columns 0 and 2.
        let x: Vec<i32> = (0..16).collect();
        let y = strided_slice(&x, &[1, 1, 4, 4], &[2, 3], &[1, 0], &[4, 4], &[2, 2]);
        assert_eq!(y, vec![4, 6, 12, 14]);
    }

    #[test]
    fn channel_shuffle_is_reshape_transpose_reshape() {
        // [1, 12, 2, 3] in 3 groups of 4, and the inverse view (4 groups of 3).
        let x: Vec<f32> = (0..72).map(|i| i as f32).collect();
        for (g, n) in [(3, 4), (4, 3)] {
            let via_transpose = transpose(
                View {
                    shape: &[1, g, n, 2, 3],
                    data: &x,
                },
                &[0, 2, 1, 3, 4],
            );
            assert_eq!(channel_shuffle(&x, &[1, 12, 2, 3], g), via_transpose);
        }
        // Output channel 1 (j = 0, i = 1) is input channel 4 in 3 groups of 4.
        assert_eq!(channel_shuffle(&x, &[1, 12, 2, 3], 3)[6], 24.0);
    }

    #[test]
    fn transpose_matches_index_formula() {
        let x: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let got = transpose(
            View {
                shape: &[2, 3, 4],
                data: &x,
            },
            &[2, 0, 1],
        );
        // out[k][i][j] = x[i][j][k]
        let mut want = Vec::new();
        for k in 0..4 {
            for i in 0..2 {
                for j in 0..3 {
                    want.push(x[i * 12 + j * 4 + k]);
                }
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn concat_middle_axis() {
        let a = [1.0f32, 2.0, 3.0, 4.0];
        let b = [5.0f32, 6.0];
        let got = concat(
            &[
                View {
                    shape: &[2, 2, 1],
                    data: &a,
                },
                View {
                    shape: &[2, 1, 1],
                    data: &b,
                },
            ],
            1,
            &[2, 3, 1],
        );
        assert_eq!(got, [1.0, 2.0, 5.0, 3.0, 4.0, 6.0]);
    }

    #[test]
    fn pad_all_sides() {
        let x = [1.0f32, 2.0, 3.0, 4.0];
        let got = pad(
            View {
                shape: &[2, 2],
                data: &x,
            },
            &[1, 0, 0, 2],
            -1.0,
            &[3, 4],
        );
        assert_eq!(
            got,
            [-1.0, -1.0, -1.0, -1.0, 1.0, 2.0, -1.0, -1.0, 3.0, 4.0, -1.0, -1.0]
        );
    }

    #[test]
    fn upsample_repeats_rows_and_columns() {
        // [1, 2, 2, 3] by 2 x 1, then by 1 x 2.
        let x: Vec<i32> = (0..12).collect();
        let y = upsample_nearest(&x, &[1, 2, 2, 3], [2, 1]);
        assert_eq!(&y[..12], &[0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]);
        assert_eq!(y.len(), 24);
        let z = upsample_nearest(&x, &[1, 2, 2, 3], [1, 2]);
        assert_eq!(&z[..12], &[0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
    }

    #[test]
    fn slice_takes_blocks_of_any_axes() {
        // [2, 3, 4]: channels 1..3 of batch 1, columns 1..3.
        let x: Vec<i32> = (0..24).collect();
        let y = slice(&x, &[2, 3, 4], &[0, 1, 2], &[1, 1, 1], &[2, 3, 3]);
        assert_eq!(y, [17, 18, 21, 22]);
        // One axis, the rest whole.
        assert_eq!(
            slice(&x, &[2, 3, 4], &[1], &[2], &[3]),
            [8, 9, 10, 11, 20, 21, 22, 23]
        );
        assert_eq!(slice(&x, &[24], &[0], &[5], &[7]), [5, 6]);
    }
}
