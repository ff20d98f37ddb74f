//! The NNA's compound operations, as produced by `nnac-passes` (fusion, then
//! quantization) and consumed by the backend and the quantized reference interpreter.
//!
//! A fused graph holds these ops with f32 tensors; a quantized graph holds the same
//! ops with 8-bit activations (`TensorType::quant` set), int8 per-channel weights and
//! int32 biases, and a [`Requant`] in every epilogue. Nodes holding `Op::Nna` always
//! carry explicit output types (the verifier checks them with [`NnaOp::check`]).
//!
//! Integer semantics (quantized graphs; docs/ISA.md is the normative text):
//! - the MAC array accumulates `acc = sum(x_q * w_q)` over the raw stored 8-bit
//!   activation bytes and int8 weights (padding reads the input's zero point);
//! - the SIMD program adds the int32 `bias` input (which already includes the
//!   zero-point correction `-zp_in * sum(w_q)`), then applies the [`Requant`];
//! - the pooling unit pools the 8-bit SIMD output (same scale and zero point).

use crate::{
    Activation, BinaryOp, ConvAttrs, ConvTransposeAttrs, NnaTypeError, Op, PoolKind, ShapeError,
    TensorType,
};
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum NnaOp {
    /// CONVOLUTION / DECONVOLUTION / INNER-PRODUCT + SIMD epilogue + optional pool.
    /// Inputs: x, w, bias. Weights keep the IR layout (`Conv` `[M, C/g, kh, kw]`,
    /// deconv `[C, M/g, kh, kw]`, inner product `[N, K]`); bias is `[M]` (f32 in a
    /// fused graph, i32 in a quantized one).
    Dot(DotOp),
    /// SCALE (pure SIMD): `y[c] = x[c] * w[c] + b[c]` per channel, then the epilogue
    /// and optional pool. Inputs: x `[1, C, ...]`, w `[C]`, b `[C]` (i8 / i32 when
    /// quantized; the integer value is `(x_q - zp_in) * w_q + b_q`).
    Scale(ScaleOp),
    /// ELTWISE add, multiply or maximum of two tensors, then the epilogue. Inputs: a,
    /// b; b has a's shape, or is broadcast over a's pixels (`[N, C, 1, ..]` against
    /// `[N, C, H, ..]`, e.g. the channel weights of a squeeze-and-excitation block).
    Eltwise(EltwiseOp),
    /// Concatenation by placement: the producers write into one buffer, no compute.
    /// Every input has the output's quantization (the quantizer guarantees it).
    Concat { axis: usize },
    /// Channel shuffle (ShuffleNet) of `x` `[N, C, ...]` with `C = groups * n`:
    /// output channel `j * groups + i` is input channel `i * n + j` (ONNX: reshape to
    /// `[N, groups, n, ...]`, transpose the two channel axes, reshape back). A pure
    /// permutation: the output has the input's quantization (codes move unchanged);
    /// the backend copies channel planes with SCALE instructions.
    ChannelShuffle { groups: usize },
    /// Nearest-neighbour upsampling of `x` `[N, C, H, W]` by whole factors
    /// `[fh, fw]`: output `(y, x)` is input `(y / fh, x / fw)` (ONNX Resize modes that
    /// pick exactly these pixels). Codes move unchanged (the output has the input's
    /// quantization); the backend writes each of the `fh * fw` phases of the output
    /// with SCALE copies through strided output pitches.
    Upsample { factors: [usize; 2] },
    /// Depth-to-space (ONNX DepthToSpace, PyTorch's pixel shuffle) of `x`
    /// `[N, C, H, W]` by `block` (`b`): output `[N, C / b^2, H * b, W * b]`, output
    /// `(c, y * b + dy, x * b + dx)` is input channel `(dy * b + dx) * C / b^2 + c`
    /// (ONNX mode DCR) or, with `crd`, `c * b^2 + dy * b + dx` (mode CRD), pixel
    /// `(y, x)`. Codes move unchanged (the output has the input's quantization); the
    /// backend writes each of the `b^2` phases of the output with SCALE copies of one
    /// channel block through strided output pitches.
    DepthToSpace { block: usize, crd: bool },
    /// An op the NNA has no instruction for: the runtime runs it on the host CPU
    /// (dequantize, float op, requantize to the output type).
    Host(Box<Op>),
}

/// Which dot-product instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum DotKind {
    Conv(ConvAttrs),
    Deconv(ConvTransposeAttrs),
    /// `y[m, n] = sum_k x[m, k] * w[n, k]` (x `[M, K]`, w `[N, K]`).
    Inner,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DotOp {
    pub kind: DotKind,
    pub epilogue: Epilogue,
    /// Pooling-unit stage on the SIMD output (2x2 or 3x3, stride 1 or 2).
    pub pool: Option<PoolStage>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ScaleOp {
    pub epilogue: Epilogue,
    pub pool: Option<PoolStage>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EltwiseOp {
    pub kind: EltwiseKind,
    pub epilogue: Epilogue,
    /// Integer input rescaling (quantized graphs only).
    pub inputs: Option<EltwiseRequant>,
}

/// How ELTWISE combines its two inputs (the instruction's `op` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EltwiseKind {
    Add,
    Mul,
    Max,
}

impl EltwiseKind {
    pub const ALL: [EltwiseKind; 3] = [EltwiseKind::Add, EltwiseKind::Mul, EltwiseKind::Max];

    /// The IR binary op it computes.
    pub fn binary(self) -> BinaryOp {
        match self {
            EltwiseKind::Add => BinaryOp::Add,
            EltwiseKind::Mul => BinaryOp::Mul,
            EltwiseKind::Max => BinaryOp::Max,
        }
    }

    /// The kind computing `op`, if ELTWISE can.
    pub fn of(op: BinaryOp) -> Option<EltwiseKind> {
        EltwiseKind::ALL.into_iter().find(|k| k.binary() == op)
    }

    pub fn mnemonic(self) -> &'static str {
        self.binary().mnemonic()
    }
}

/// Whether `b` is `a`'s shape or broadcast over its pixels: same rank, the same batch
/// and channels, every spatial extent 1 (an ELTWISE's second input).
pub fn eltwise_operand_fits(a: &[usize], b: &[usize]) -> bool {
    a == b
        || (a.len() == b.len() && a.len() > 2 && a[..2] == b[..2] && b[2..].iter().all(|&d| d == 1))
}

/// ELTWISE integer input stage (docs/ISA.md): `v = rescale(a_q - zp_a, a) op
/// rescale(b_q - zp_b, b)` with `rescale(x, m) = rshift_round(x * m.mult, m.shift)` and
/// `op` the [`EltwiseKind`], then the epilogue's requantization of `v`.
#[derive(Clone, Debug, PartialEq)]
pub struct EltwiseRequant {
    pub a: Multiplier,
    pub b: Multiplier,
}

impl EltwiseRequant {
    /// The input stage of an add requantized by [`Requant::FmaAdd`]: `A = 2^9 (a - a_zp)`,
    /// `B = b - b_zp`, so `v = A + B` holds both differences (`|B| <= 255 < 2^8`).
    pub const FMA_ADD: EltwiseRequant = EltwiseRequant {
        a: Multiplier {
            mult: 1 << FMA_ADD_SHIFT,
            shift: 0,
        },
        b: Multiplier { mult: 1, shift: 0 },
    };
}

/// The shift separating the two inputs in [`EltwiseRequant::FMA_ADD`]'s accumulator.
pub const FMA_ADD_SHIFT: u32 = 9;

/// The SIMD program after the dot product: activation and (once quantized) the
/// requantization to 8 bits.
#[derive(Clone, Debug, PartialEq)]
pub struct Epilogue {
    pub act: Option<FusedAct>,
    pub requant: Option<Requant>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FusedAct {
    Act(Activation),
    /// PReLU with one slope per output channel.
    PRelu(Vec<f32>),
}

/// A fixed-point multiplier: `real ~= mult / 2^shift`, applied as
/// `rshift_round(v * mult, shift)` (round half toward +infinity; `shift` 0..=63).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Multiplier {
    pub mult: i32,
    pub shift: u8,
}

/// Requantization of the SIMD input (accumulator + bias) to the 8-bit output.
#[derive(Clone, Debug, PartialEq)]
pub enum Requant {
    /// FUSED_RELU (integer path, one SIMD instruction with per-channel multiplier and
    /// shift): `y = clamp(rshift_round(v * mult[c].mult, mult[c].shift) + zp, lo, hi)`.
    /// No activation, ReLU and Clip (ReLU6) are expressed through `lo`/`hi`.
    Int {
        mult: Vec<Multiplier>,
        zero_point: i32,
        lo: i32,
        hi: i32,
    },
    /// FP32 path: `y = clamp(f2i(act_c(i2f(v) * in_scale[c]) * inv_out_scale) + zp,
    /// lo, hi)` (sigmoid, tanh, hard-sigmoid, hard-swish, leaky ReLU, PReLU; the
    /// exact op sequences are in nnac-qinterp `simd_float.rs`).
    Float {
        in_scale: Vec<f32>,
        inv_out_scale: f32,
        zero_point: i32,
        lo: i32,
        hi: i32,
    },
    /// ONNX Runtime's requantization of a dot product (its `MlasRequantizeOutput`,
    /// `--requant onnxruntime`):
    /// `y = clamp(round_half_even(fp32(fp32(v) * scale[c])) + zp, lo, hi)`, the
    /// product rounded once to fp32, `scale[c]` computed as ONNX Runtime computes it
    /// (`s_x * s_w[c] / s_y` in fp32). No activation but ReLU and Clip (through
    /// `lo`/`hi`).
    Even {
        scale: Vec<f32>,
        zero_point: i32,
        lo: i32,
        hi: i32,
    },
    /// ONNX Runtime's QLinearAdd (its AVX2 kernel, `--requant onnxruntime`) on an
    /// ELTWISE add whose input stage leaves `v = 512 (a - a_zp) + (b - b_zp)` (input
    /// multipliers `2^9 >> 0` and `1 >> 0`): with the codes ONNX Runtime sees,
    /// `a' = (v rshift_round 9) + code_a`, `b' = v - 512 (v rshift_round 9) + code_b`,
    /// `u = fma(a', ratio_a, fma(b', ratio_b, fixed))` (each fused multiply-add
    /// rounded once to fp32), `y = clamp(round_half_even(u) + offset, lo, hi)`.
    /// `code_a`/`code_b` are the zero points in ONNX Runtime's codes (a uint8 value
    /// the NNA stores as int8 is 128 codes up), `offset` the NNA's output zero point
    /// minus ONNX Runtime's.
    FmaAdd {
        ratio_a: f32,
        ratio_b: f32,
        fixed: f32,
        code_a: i32,
        code_b: i32,
        offset: i32,
        lo: i32,
        hi: i32,
    },
}

impl Requant {
    /// The clamp of the output codes.
    pub fn code_range(&self) -> (i32, i32) {
        match *self {
            Requant::Int { lo, hi, .. }
            | Requant::Float { lo, hi, .. }
            | Requant::Even { lo, hi, .. }
            | Requant::FmaAdd { lo, hi, .. } => (lo, hi),
        }
    }
}

/// The pooling unit's work.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolStage {
    pub kind: PoolKind,
    /// `[kh, kw]`, each 2 or 3.
    pub kernel: [usize; 2],
    /// `[sh, sw]`, each 1 or 2.
    pub strides: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub pads: [usize; 4],
    pub ceil_mode: bool,
    pub count_include_pad: bool,
}

impl PoolStage {
    /// Output spatial size for an input `[h, w]` (the IR pool rule).
    pub fn out_hw(&self, h: usize, w: usize) -> Option<[usize; 2]> {
        let one = |i: usize, k: usize, s: usize, pb: usize, pe: usize| -> Option<usize> {
            let padded = i.checked_add(pb)?.checked_add(pe)?;
            let span = padded.checked_sub(k)?;
            if s == 0 {
                return None;
            }
            let mut o = if self.ceil_mode {
                span.div_ceil(s) + 1
            } else {
                span / s + 1
            };
            if self.ceil_mode && (o - 1).checked_mul(s).is_none_or(|start| start >= i + pb) {
                o -= 1;
            }
            Some(o)
        };
        Some([
            one(
                h,
                self.kernel[0],
                self.strides[0],
                self.pads[0],
                self.pads[2],
            )?,
            one(
                w,
                self.kernel[1],
                self.strides[1],
                self.pads[1],
                self.pads[3],
            )?,
        ])
    }
}

impl NnaOp {
    /// The op's mnemonic (from the op table).
    pub fn mnemonic(&self) -> &'static str {
        crate::tagged::Tagged::tag(self)
    }

    pub fn arity(&self) -> (usize, usize) {
        match self {
            NnaOp::Dot(_) | NnaOp::Scale(_) => (3, 3),
            NnaOp::Eltwise(_) => (2, 2),
            NnaOp::ChannelShuffle { .. } | NnaOp::Upsample { .. } | NnaOp::DepthToSpace { .. } => {
                (1, 1)
            }
            NnaOp::Concat { .. } => (1, usize::MAX),
            NnaOp::Host(op) => op.arity(),
        }
    }

    pub fn epilogue(&self) -> Option<&Epilogue> {
        match self {
            NnaOp::Dot(d) => Some(&d.epilogue),
            NnaOp::Scale(s) => Some(&s.epilogue),
            NnaOp::Eltwise(e) => Some(&e.epilogue),
            _ => None,
        }
    }

    /// Checks explicit output types against the inputs: shapes via the underlying IR
    /// op's inference, and dtype consistency (float graph: all f32; quantized graph:
    /// 8-bit activations with per-tensor quantization). Used by the verifier.
    pub fn check(&self, ins: &[&TensorType], outs: &[TensorType]) -> Result<(), NnaTypeError> {
        let (lo, hi) = self.arity();
        let op = self.mnemonic();
        if ins.len() < lo || ins.len() > hi {
            return Err(NnaTypeError::Arity {
                op,
                min: lo,
                max: hi,
                got: ins.len(),
            });
        }
        let [out] = outs else {
            return Err(NnaTypeError::Outputs {
                op,
                got: outs.len(),
            });
        };
        let shape = self.out_shape(ins)?;
        if shape != out.shape {
            return Err(NnaTypeError::OutputShape {
                op,
                declared: out.shape.clone(),
                computed: shape,
            });
        }
        let quantized = out.dtype != crate::DType::F32;
        if quantized && !matches!(out.quant, Some(crate::Quant::PerTensor { .. })) {
            return Err(NnaTypeError::NoPerTensorQuant {
                op,
                out: out.clone(),
            });
        }
        if quantized != self.epilogue().is_some_and(|e| e.requant.is_some())
            && self.epilogue().is_some()
        {
            return Err(NnaTypeError::RequantMismatch {
                op,
                out: out.clone(),
            });
        }
        if matches!(
            self,
            NnaOp::ChannelShuffle { .. } | NnaOp::Upsample { .. } | NnaOp::DepthToSpace { .. }
        ) && (out.dtype != ins[0].dtype || out.quant != ins[0].quant)
        {
            return Err(NnaTypeError::NotPassThrough {
                op,
                out: out.clone(),
            });
        }
        Ok(())
    }

    /// The output shape the op computes from inputs of types `ins` (shapes only).
    pub fn out_shape(&self, ins: &[&TensorType]) -> Result<Vec<usize>, NnaTypeError> {
        let f = |t: &TensorType| TensorType::f32(t.shape.clone());
        let fl: Vec<TensorType> = ins.iter().map(|t| f(t)).collect();
        let refs: Vec<&TensorType> = fl.iter().collect();
        let first = |op: Op, n: usize| -> Result<Vec<usize>, NnaTypeError> {
            Ok(crate::infer::infer_types(&op, &refs[..n])?.remove(0).shape)
        };
        let pooled =
            |shape: Vec<usize>, pool: &Option<PoolStage>| -> Result<Vec<usize>, NnaTypeError> {
                match pool {
                    None => Ok(shape),
                    Some(p) if shape.len() == 4 => {
                        let [h, w] = p
                            .out_hw(shape[2], shape[3])
                            .ok_or(NnaTypeError::PoolWindow)?;
                        Ok(vec![shape[0], shape[1], h, w])
                    }
                    Some(_) => Err(NnaTypeError::PoolRank { shape }),
                }
            };
        match self {
            NnaOp::Dot(d) => {
                let s = match &d.kind {
                    DotKind::Conv(a) => first(Op::Conv(a.clone()), 2)?,
                    DotKind::Deconv(a) => first(Op::ConvTranspose(a.clone()), 2)?,
                    DotKind::Inner => {
                        let ga = crate::GemmAttrs {
                            alpha: 1.0,
                            beta: 1.0,
                            trans_a: false,
                            trans_b: true,
                        };
                        first(Op::Gemm(ga), 2)?
                    }
                };
                let m = s.get(1).copied().unwrap_or(0);
                if ins[2].shape != [m] {
                    return Err(ShapeError::Bias {
                        shape: ins[2].shape.clone(),
                        channels: m,
                    }
                    .into());
                }
                pooled(s, &d.pool)
            }
            NnaOp::Scale(s) => {
                let c = ins[0].shape.get(1).copied().unwrap_or(0);
                if ins[1].shape != [c] || ins[2].shape != [c] {
                    return Err(NnaTypeError::ScaleParams {
                        weights: ins[1].shape.clone(),
                        bias: ins[2].shape.clone(),
                        channels: c,
                    });
                }
                pooled(ins[0].shape.clone(), &s.pool)
            }
            NnaOp::Eltwise(_) => {
                if !eltwise_operand_fits(&ins[0].shape, &ins[1].shape) {
                    return Err(NnaTypeError::EltwiseOperand {
                        a: ins[0].shape.clone(),
                        b: ins[1].shape.clone(),
                    });
                }
                Ok(ins[0].shape.clone())
            }
            NnaOp::Concat { axis } => first(Op::Concat { axis: *axis }, ins.len()),
            NnaOp::ChannelShuffle { groups } => {
                let s = &ins[0].shape;
                match s.get(1) {
                    Some(&c) if *groups > 0 && c % groups == 0 => Ok(s.clone()),
                    _ => Err(NnaTypeError::ShuffleGroups {
                        shape: s.clone(),
                        groups: *groups,
                    }),
                }
            }
            NnaOp::Upsample { factors: [fh, fw] } => match ins[0].shape.as_slice() {
                &[n, c, h, w] if *fh > 0 && *fw > 0 => Ok(vec![n, c, h * fh, w * fw]),
                s => Err(NnaTypeError::Upsample {
                    shape: s.to_vec(),
                    factors: [*fh, *fw],
                }),
            },
            NnaOp::DepthToSpace { block: b, .. } => match ins[0].shape.as_slice() {
                &[n, c, h, w] if *b > 0 && c % (b * b) == 0 => {
                    Ok(vec![n, c / (b * b), h * b, w * b])
                }
                s => Err(NnaTypeError::DepthToSpace {
                    shape: s.to_vec(),
                    block: *b,
                }),
            },
            // A fused op kept in float32 on the host (`--float-layers`) has its own rule.
            NnaOp::Host(op) => match &**op {
                Op::Nna(inner) => inner.out_shape(ins),
                op => first(op.clone(), ins.len()),
            },
        }
    }
}

impl fmt::Display for NnaOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}
