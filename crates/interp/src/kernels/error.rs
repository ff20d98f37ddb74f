//! Why a kernel cannot compute a node (the interpreter adds the node's name).

use std::fmt;

/// A kernel's refusal: operands or attributes it cannot compute with.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelError {
    /// Inputs and constants hold values; they are not computed.
    NotComputed,
    /// More spatial axes than the kernels support.
    SpatialAxes { axes: usize, max: usize },
    /// `kernel`, `strides`, `dilations` and `pads` disagree on the number of axes.
    WindowAxes,
    /// An activation of rank other than 3 to `2 + max spatial axes`.
    ActivationRank { shape: Vec<usize>, max: usize },
    /// Gemm's C operand has rank above 2.
    GemmCRank { shape: Vec<usize> },
    /// Gemm's C operand does not broadcast to the `[m, n]` result.
    GemmCBroadcast {
        shape: Vec<usize>,
        m: usize,
        n: usize,
    },
    /// A MatMul operand of rank 0.
    MatmulRank,
    /// The MatMul output shape disagrees with its operands.
    MatmulOutput {
        out: Vec<usize>,
        a: Vec<usize>,
        b: Vec<usize>,
    },
    /// The IR's shape rule (broadcast, type inference) refuses the operands.
    Shape(Box<nnac_ir::ShapeError>),
    /// LRN on rank < 2 or with size 0.
    Lrn { shape: Vec<usize>, size: usize },
    /// A quantized NNA op given to the float interpreter.
    Quantized { op: &'static str },
    /// A PReLU with another number of slopes than channels.
    PreluSlopes { slopes: usize, channels: usize },
    /// Element `index` is no integer code of `dtype`.
    NotACode {
        index: usize,
        value: f32,
        dtype: &'static str,
    },
    /// A resize scale that is not positive and finite.
    ResizeScale { scale: f32, axis: usize },
    /// A resize of an empty axis to a non-empty one.
    ResizeEmptyAxis { axis: usize, out_len: usize },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::NotComputed => write!(f, "inputs and constants are not computed"),
            KernelError::SpatialAxes { axes, max } => {
                write!(f, "{axes} spatial axes are not supported (at most {max})")
            }
            KernelError::WindowAxes => write!(
                f,
                "window attributes disagree on the number of spatial axes"
            ),
            KernelError::ActivationRank { shape, max } => write!(
                f,
                "expected an activation of rank 3 to {}, got shape {shape:?}",
                2 + max
            ),
            KernelError::GemmCRank { shape } => write!(f, "gemm C of shape {shape:?} is not 2-D"),
            KernelError::GemmCBroadcast { shape, m, n } => write!(
                f,
                "gemm C of shape {shape:?} does not broadcast to [{m}, {n}]"
            ),
            KernelError::MatmulRank => write!(f, "matmul operands must have rank >= 1"),
            KernelError::MatmulOutput { out, a, b } => write!(
                f,
                "matmul output {out:?} does not match operands {a:?} x {b:?}"
            ),
            KernelError::Shape(e) => write!(f, "{e}"),
            KernelError::Lrn { shape, size } => write!(
                f,
                "lrn needs rank >= 2 and size >= 1 (shape {shape:?}, size {size})"
            ),
            KernelError::Quantized { op } => write!(
                f,
                "{op} is quantized; the float interpreter runs unquantized graphs only"
            ),
            KernelError::PreluSlopes { slopes, channels } => {
                write!(f, "{slopes} PReLU slopes for {channels} channels")
            }
            KernelError::NotACode {
                index,
                value,
                dtype,
            } => write!(f, "element {index} ({value}) is not a {dtype} code"),
            KernelError::ResizeScale { scale, axis } => write!(
                f,
                "resize scale {scale} on axis {axis} must be positive and finite"
            ),
            KernelError::ResizeEmptyAxis { axis, out_len } => {
                write!(f, "resize of an empty axis {axis} to {out_len}")
            }
        }
    }
}

impl std::error::Error for KernelError {}

impl KernelError {
    /// Wraps a refusal of the IR's shape rules.
    pub fn shape(e: nnac_ir::ShapeError) -> Self {
        KernelError::Shape(Box::new(e))
    }
}
