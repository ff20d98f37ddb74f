//! The operations of the graph IR: one enum with typed attributes. Nothing downstream
//! of the importers matches on op-name strings.
//!
//! Conventions (all ONNX semantics; importers translate other frameworks into them):
//! - activations are NCHW with N = 1; weights of Conv are `[M, C/group, kh, kw]`, of
//!   ConvTranspose `[C, M/group, kh, kw]`;
//! - spatial attribute vectors (`kernel`, `strides`, `dilations`) have one entry per
//!   spatial axis; `pads` has `2 * spatial` entries: all begins, then all ends
//!   (ONNX order `[h_begin, w_begin, h_end, w_end]`). Importers resolve `auto_pad`.
//! - binary elementwise ops broadcast numpy-style (multidirectional).

use std::fmt;

/// A constant's index in the graph's constant pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConstId(pub u32);

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A graph input; its type is the node's output type.
    Input,
    /// A constant from the pool.
    Constant(ConstId),
    /// Inputs: x `[1,C,H,W]`, w `[M,C/g,kh,kw]`, optional bias `[M]`.
    Conv(ConvAttrs),
    /// Inputs: x `[1,C,H,W]`, w `[C,M/g,kh,kw]`, optional bias `[M]`.
    ConvTranspose(ConvTransposeAttrs),
    /// `alpha * A' * B' + beta * C` with optional transposes; inputs a, b, optional c.
    Gemm(GemmAttrs),
    /// numpy matmul (batched, broadcasting).
    MatMul,
    /// Inputs: x, scale, bias, mean, var (each `[C]`).
    BatchNorm {
        epsilon: f32,
    },
    /// Elementwise activation of one input.
    Act(Activation),
    /// Inputs: x, slope (broadcast to x).
    PRelu,
    /// Binary elementwise op with broadcasting.
    Binary(BinaryOp),
    Concat {
        axis: usize,
    },
    Pool(PoolAttrs),
    /// Global pooling over all spatial axes (output keeps them as size 1).
    GlobalPool(PoolKind),
    /// Reshape to a concrete shape (also Flatten, Squeeze, Unsqueeze).
    Reshape {
        shape: Vec<usize>,
    },
    Transpose {
        perm: Vec<usize>,
    },
    /// The elements `starts[k] .. ends[k]` of axis `axes[k]` (step 1, bounds already
    /// clamped by the importer; every other axis whole). Also ONNX Split, one Slice
    /// per output.
    Slice {
        axes: Vec<usize>,
        starts: Vec<usize>,
        ends: Vec<usize>,
    },
    /// Every `steps[k]`-th element of `starts[k] .. ends[k]` on axis `axes[k]` (a
    /// step above 1 on some axis; bounds clamped by the importer; every other axis
    /// whole): ONNX Slice with steps, e.g. the Focus stem's `x[..., ::2, ::2]`.
    StridedSlice {
        axes: Vec<usize>,
        starts: Vec<usize>,
        ends: Vec<usize>,
        steps: Vec<usize>,
    },
    /// Softmax along one axis (ONNX opset-13 semantics).
    Softmax {
        axis: usize,
    },
    Resize(ResizeAttrs),
    /// Constant padding: `pads` = all begins then all ends, one per axis.
    Pad {
        pads: Vec<usize>,
        value: f32,
    },
    /// Local response normalisation across channels.
    Lrn {
        size: usize,
        alpha: f32,
        beta: f32,
        bias: f32,
    },
    /// `(shift + scale * x) ^ power` (Caffe Power).
    Power {
        power: f32,
        scale: f32,
        shift: f32,
    },
    Identity,
    /// ONNX QuantizeLinear: `saturate(round_half_even(x / scale) + zero_point)` to
    /// the codes of `dtype` (held as f32 values by the float interpreter).
    Quantize(QdqAttrs),
    /// ONNX DequantizeLinear: `(q - zero_point) * scale` of integer codes.
    Dequantize(QdqAttrs),
    /// An NNA compound operation (fused / quantized graphs only; see `nna_op.rs`).
    Nna(crate::NnaOp),
}

/// The constant parameters of a QuantizeLinear / DequantizeLinear: one scale and zero
/// point for the tensor, or one per index of `axis` (per-axis quantization).
#[derive(Clone, Debug, PartialEq)]
pub struct QdqAttrs {
    /// `None`: per tensor (`scales` and `zero_points` have one entry each).
    pub axis: Option<usize>,
    pub scales: Vec<f32>,
    pub zero_points: Vec<i32>,
    /// The code type: `I8` or `U8` (`I32` only for a dequantized bias).
    pub dtype: crate::DType,
}

impl QdqAttrs {
    /// `(scale, zero_point)` applying to the element at `index` of a tensor of
    /// `shape` (row-major).
    #[inline]
    pub fn params_at(&self, shape: &[usize], index: usize) -> (f32, i32) {
        match self.axis {
            None => (self.scales[0], self.zero_points[0]),
            Some(a) => {
                let inner: usize = shape[a + 1..].iter().product();
                let c = (index / inner.max(1)) % shape[a].max(1);
                (self.scales[c], self.zero_points[c])
            }
        }
    }

    /// How many entries `scales` and `zero_points` need for an input of `shape`, or
    /// why the parameters do not fit it.
    pub fn check(&self, shape: &[usize]) -> Result<(), crate::ShapeError> {
        let want = match self.axis {
            None => 1,
            Some(a) if a < shape.len() => shape[a],
            Some(a) => {
                return Err(crate::ShapeError::QdqAxis {
                    axis: a,
                    rank: shape.len(),
                })
            }
        };
        if self.scales.len() != want || self.zero_points.len() != want {
            return Err(crate::ShapeError::QdqCount {
                scales: self.scales.len(),
                zero_points: self.zero_points.len(),
                channels: want,
            });
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConvAttrs {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub pads: Vec<usize>,
    pub dilations: Vec<usize>,
    pub group: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConvTransposeAttrs {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    /// Pads removed from the full output (begins then ends), after resolving
    /// `output_shape`/`auto_pad`.
    pub pads: Vec<usize>,
    pub dilations: Vec<usize>,
    pub output_padding: Vec<usize>,
    pub group: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GemmAttrs {
    pub alpha: f32,
    pub beta: f32,
    pub trans_a: bool,
    pub trans_b: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    Relu,
    LeakyRelu {
        alpha: f32,
    },
    /// Clamp to `[min, max]` (ReLU6 is `Clip{0, 6}`); unbounded sides are +-inf.
    Clip {
        min: f32,
        max: f32,
    },
    Sigmoid,
    Tanh,
    /// `max(0, min(1, alpha * x + beta))`.
    HardSigmoid {
        alpha: f32,
        beta: f32,
    },
    /// `x * HardSigmoid(alpha = 1/6, beta = 1/2)(x)`.
    HardSwish,
    /// SiLU (swish): `x * sigmoid(x)`.
    Silu,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    Max,
    Avg,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PoolAttrs {
    pub kind: PoolKind,
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub pads: Vec<usize>,
    pub dilations: Vec<usize>,
    /// Output size rounds up (Caffe's rule, ONNX `ceil_mode=1`); a window that would
    /// start entirely in the end padding is dropped.
    pub ceil_mode: bool,
    /// Average pooling divides by the window clipped to the padded input (ONNX
    /// `count_include_pad=1`, Caffe AVE) instead of by the valid elements only.
    pub count_include_pad: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResizeMode {
    Nearest(NearestMode),
    Linear,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NearestMode {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoordTransform {
    HalfPixel,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ResizeAttrs {
    pub mode: ResizeMode,
    pub coord: CoordTransform,
    /// Output shape (all axes).
    pub sizes: Vec<usize>,
    /// Scale per axis used in the coordinate transform (output/input when the model
    /// gave sizes).
    pub scales: Vec<f32>,
}

impl Op {
    /// A short lowercase mnemonic for dumps and error messages (from the op table,
    /// `op_table.rs`).
    pub fn mnemonic(&self) -> &'static str {
        crate::tagged::Tagged::tag(self)
    }

    /// How many inputs the op takes: `(min, max)`.
    pub fn arity(&self) -> (usize, usize) {
        match self {
            Op::Input | Op::Constant(_) => (0, 0),
            Op::Conv(_) | Op::ConvTranspose(_) | Op::Gemm(_) => (2, 3),
            Op::MatMul | Op::PRelu | Op::Binary(_) => (2, 2),
            Op::BatchNorm { .. } => (5, 5),
            Op::Concat { .. } => (1, usize::MAX),
            Op::Nna(n) => n.arity(),
            _ => (1, 1),
        }
    }
}

impl Activation {
    /// The activation's mnemonic (from the op table).
    pub fn mnemonic(&self) -> &'static str {
        crate::tagged::Tagged::tag(self)
    }

    /// The activation applied to one float value (the float reference semantics).
    /// Inlinable: the interpreter's per-activation loops then vectorise.
    #[inline]
    pub fn apply(&self, x: f32) -> f32 {
        match *self {
            Activation::Relu => x.max(0.0),
            Activation::LeakyRelu { alpha } => {
                if x < 0.0 {
                    alpha * x
                } else {
                    x
                }
            }
            Activation::Clip { min, max } => x.max(min).min(max),
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Activation::Tanh => x.tanh(),
            Activation::HardSigmoid { alpha, beta } => (alpha * x + beta).clamp(0.0, 1.0),
            Activation::HardSwish => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
            Activation::Silu => x / (1.0 + (-x).exp()),
        }
    }
}

impl BinaryOp {
    /// The op's mnemonic (from the op table).
    pub fn mnemonic(&self) -> &'static str {
        crate::tagged::Tagged::tag(self)
    }

    #[inline]
    pub fn apply(&self, a: f32, b: f32) -> f32 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Max => a.max(b),
            BinaryOp::Min => a.min(b),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}
