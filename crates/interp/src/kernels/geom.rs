//! Window geometry shared by convolution, transposed convolution and pooling.
//!
//! Kernels work on three spatial axes `(D, H, W)`; 1-D and 2-D ops are lifted by
//! prepending unit axes (kernel 1, stride 1, no padding), which changes nothing
//! numerically. Ops with more than three spatial axes are rejected.

use super::error::KernelError;
use std::ops::Range;

/// Number of spatial axes the kernels handle natively.
pub const SP: usize = 3;

/// Window attributes of one op, lifted to three spatial axes.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub kernel: [usize; SP],
    pub strides: [usize; SP],
    pub dilations: [usize; SP],
    /// Padding before each axis.
    pub pad_begin: [usize; SP],
    /// Padding after each axis.
    pub pad_end: [usize; SP],
}

impl Window {
    /// Lifts ONNX-style attributes (`pads` = begins then ends).
    pub fn lift(
        kernel: &[usize],
        strides: &[usize],
        pads: &[usize],
        dilations: &[usize],
    ) -> Result<Window, KernelError> {
        let n = kernel.len();
        if n > SP {
            return Err(KernelError::SpatialAxes { axes: n, max: SP });
        }
        if strides.len() != n || dilations.len() != n || pads.len() != 2 * n {
            return Err(KernelError::WindowAxes);
        }
        Ok(Window {
            kernel: lift(kernel, 1),
            strides: lift(strides, 1),
            dilations: lift(dilations, 1),
            pad_begin: lift(&pads[..n], 0),
            pad_end: lift(&pads[n..], 0),
        })
    }

    pub fn kernel_volume(&self) -> usize {
        self.kernel.iter().product()
    }
}

/// `v` right-aligned in an array of `SP`, the front filled with `fill`.
pub fn lift(v: &[usize], fill: usize) -> [usize; SP] {
    let mut out = [fill; SP];
    out[SP - v.len()..].copy_from_slice(v);
    out
}

/// Splits an activation shape `[N, C, spatial...]` into `(N, C, [D, H, W])`.
pub fn split_nc(shape: &[usize]) -> Result<(usize, usize, [usize; SP]), KernelError> {
    if shape.len() < 3 || shape.len() > 2 + SP {
        return Err(KernelError::ActivationRank {
            shape: shape.to_vec(),
            max: SP,
        });
    }
    Ok((shape[0], shape[1], lift(&shape[2..], 1)))
}

/// The indices `i` in `0..count` with `0 <= i * stride + offset < bound`.
pub fn valid_range(count: usize, bound: usize, stride: usize, offset: isize) -> Range<usize> {
    let (s, b) = (stride as isize, bound as isize);
    let lo = if offset >= 0 {
        0
    } else {
        (-offset + s - 1) / s
    };
    let hi = if b - 1 - offset < 0 {
        0
    } else {
        (b - 1 - offset) / s + 1
    };
    let hi = (hi.max(0) as usize).min(count);
    let lo = (lo as usize).min(hi);
    lo..hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_shapes_and_windows_are_typed_errors() {
        assert_eq!(
            split_nc(&[1, 2]),
            Err(KernelError::ActivationRank {
                shape: vec![1, 2],
                max: SP
            })
        );
        assert_eq!(
            Window::lift(&[3, 3], &[1], &[0, 0, 0, 0], &[1, 1]).err(),
            Some(KernelError::WindowAxes)
        );
        let e = Window::lift(&[1; 4], &[1; 4], &[0; 8], &[1; 4]).unwrap_err();
        assert_eq!(e, KernelError::SpatialAxes { axes: 4, max: SP });
        assert!(e.to_string().contains("4 spatial axes"), "{e}");
    }

    #[test]
    fn valid_range_matches_brute_force() {
        for count in 0..7 {
            for bound in 0..7 {
                for stride in 1..4 {
                    for offset in -8isize..8 {
                        let want: Vec<usize> = (0..count)
                            .filter(|&i| {
                                let p = i as isize * stride as isize + offset;
                                p >= 0 && p < bound as isize
                            })
                            .collect();
                        let got: Vec<usize> = valid_range(count, bound, stride, offset).collect();
                        assert_eq!(
                            got, want,
                            "count {count} bound {bound} stride {stride} offset {offset}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn lifting_prepends_unit_axes() {
        let w = Window::lift(&[3], &[2], &[1, 0], &[1]).unwrap();
        assert_eq!(w.kernel, [1, 1, 3]);
        assert_eq!(w.pad_begin, [0, 0, 1]);
        assert_eq!(w.pad_end, [0, 0, 0]);
        assert!(Window::lift(&[1, 1, 1, 1], &[1; 4], &[0; 8], &[1; 4]).is_err());
        assert_eq!(split_nc(&[1, 2, 5]).unwrap(), (1, 2, [1, 1, 5]));
    }
}
