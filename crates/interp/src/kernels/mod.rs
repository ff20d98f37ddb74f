//! Float32 kernels, one module per op family, and [`eval`], which runs one compute
//! op on its input tensors. Callers check the inputs with shape inference first
//! (`nnac_ir::infer::infer_types`), so kernels may rely on its invariants (channel
//! counts, broadcastability, window sizes); anything inference does not guarantee is
//! checked here and reported as a [`KernelError`].

mod broadcast;
mod conv;
mod conv_transpose;
mod error;
pub use error::KernelError;
mod elementwise;
pub mod gemm;
mod geom;
mod layout;
pub use layout::{channel_shuffle, depth_to_space, slice, strided_slice, upsample_nearest};
mod linear;
mod nna;
mod norm;
mod pool;
mod qdq;
mod resize;
pub use resize::nearest_sources;
#[cfg(test)]
pub(crate) mod testutil;

use nnac_ir::{BinaryOp, Op};

/// A borrowed float tensor: row-major data and its shape.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    pub shape: &'a [usize],
    pub data: &'a [f32],
}

/// The first input of an op: borrowed, or handed over because this op is its last
/// user (then in-place ops reuse the buffer instead of allocating).
pub enum Operand<'a> {
    Borrowed(&'a [f32]),
    Owned(Vec<f32>),
}

impl Operand<'_> {
    fn as_slice(&self) -> &[f32] {
        match self {
            Operand::Borrowed(s) => s,
            Operand::Owned(v) => v,
        }
    }

    fn into_vec(self) -> Vec<f32> {
        match self {
            Operand::Borrowed(s) => s.to_vec(),
            Operand::Owned(v) => v,
        }
    }
}

/// Whether `op` can reuse its first input's buffer (so the executor should hand it
/// over when it can).
pub fn reuses_first_input(op: &Op) -> bool {
    matches!(
        op,
        Op::Act(_)
            | Op::Power { .. }
            | Op::Identity
            | Op::Reshape { .. }
            | Op::BatchNorm { .. }
            | Op::Softmax { .. }
            | Op::Binary(_)
    )
}

/// Runs compute op `op` with first input `x` (of shape `x_shape`) and further inputs
/// `rest`, producing a tensor of `out_shape` (the inferred output shape).
pub fn eval(
    op: &Op,
    x: Operand<'_>,
    x_shape: &[usize],
    rest: &[View<'_>],
    out_shape: &[usize],
) -> Result<Vec<f32>, KernelError> {
    let xv = || View {
        shape: x_shape,
        data: x.as_slice(),
    };
    match op {
        Op::Input | Op::Constant(_) => Err(KernelError::NotComputed),
        Op::Nna(n) => nna::eval(n, xv(), rest, out_shape),
        Op::Conv(a) => conv::conv(a, xv(), rest[0], rest.get(1).copied(), out_shape),
        Op::ConvTranspose(a) => {
            conv_transpose::conv_transpose(a, xv(), rest[0], rest.get(1).copied(), out_shape)
        }
        Op::Gemm(a) => linear::gemm(a, xv(), rest[0], rest.get(1).copied(), out_shape),
        Op::MatMul => linear::matmul(xv(), rest[0], out_shape),
        Op::BatchNorm { epsilon } => {
            let params = [rest[0].data, rest[1].data, rest[2].data, rest[3].data];
            let mut buf = x.into_vec();
            norm::batch_norm(&mut buf, x_shape, params, *epsilon);
            Ok(buf)
        }
        Op::Act(act) => {
            let mut buf = x.into_vec();
            elementwise::activation(*act, &mut buf);
            Ok(buf)
        }
        Op::PRelu => Ok(elementwise::prelu(xv(), rest[0])),
        Op::Binary(b) => Ok(binary(*b, x, x_shape, rest[0], out_shape)),
        Op::Concat { axis } => {
            let mut all = vec![xv()];
            all.extend_from_slice(rest);
            Ok(layout::concat(&all, *axis, out_shape))
        }
        Op::Pool(a) => pool::pool(a, xv(), out_shape),
        Op::GlobalPool(kind) => Ok(pool::global_pool(*kind, xv())),
        Op::Reshape { .. } | Op::Identity => Ok(x.into_vec()),
        Op::Transpose { perm } => Ok(layout::transpose(xv(), perm)),
        Op::Slice { axes, starts, ends } => {
            Ok(layout::slice(x.as_slice(), x_shape, axes, starts, ends))
        }
        Op::StridedSlice {
            axes,
            starts,
            ends,
            steps,
        } => Ok(layout::strided_slice(
            x.as_slice(),
            x_shape,
            axes,
            starts,
            ends,
            steps,
        )),
        Op::Softmax { axis } => {
            let mut buf = x.into_vec();
            norm::softmax(&mut buf, x_shape, *axis);
            Ok(buf)
        }
        Op::Resize(a) => resize::resize(a, xv()),
        Op::Quantize(q) => Ok(qdq::quantize_linear(q, xv())),
        Op::Dequantize(q) => qdq::dequantize_linear(q, xv()),
        Op::Pad { pads, value } => Ok(layout::pad(xv(), pads, *value, out_shape)),
        Op::Lrn {
            size,
            alpha,
            beta,
            bias,
        } => {
            if x_shape.len() < 2 || *size == 0 {
                return Err(KernelError::Lrn {
                    shape: x_shape.to_vec(),
                    size: *size,
                });
            }
            Ok(norm::lrn(xv(), *size, *alpha, *beta, *bias))
        }
        Op::Power {
            power,
            scale,
            shift,
        } => {
            let mut buf = x.into_vec();
            elementwise::power(*power, *scale, *shift, &mut buf);
            Ok(buf)
        }
    }
}

fn binary(
    op: BinaryOp,
    x: Operand<'_>,
    x_shape: &[usize],
    b: View<'_>,
    out_shape: &[usize],
) -> Vec<f32> {
    match x {
        Operand::Owned(mut buf) if x_shape == out_shape => {
            elementwise::binary_inplace(op, &mut buf, x_shape, b);
            buf
        }
        x => elementwise::binary(
            op,
            View {
                shape: x_shape,
                data: x.as_slice(),
            },
            b,
            out_shape,
        ),
    }
}
