//! nnac's reference interpreters.
//!
//! [`run_float`] executes a graph in float32 with ONNX semantics for every IR op. It
//! is the reference the quantizer calibrates with ([`run_float_observed`] reports
//! every intermediate value) and the compiled program is measured against, so it is
//! exact where ONNX is exact and fast enough for real models: convolutions run as
//! im2col plus a blocked, vectorised GEMM (direct kernels for depthwise), in parallel
//! on rayon. Intermediate tensors are freed as soon as their last user has run.
//!
//! Coverage: every `nnac_ir::Op` — Conv / ConvTranspose (groups, dilations, pads,
//! output padding; 1 to 3 spatial axes), Gemm, MatMul (batched, broadcasting, 1-D),
//! BatchNorm, the activations, PRelu, broadcasting binary ops, Concat, Pool (max/avg,
//! ceil mode, `count_include_pad`, dilations), GlobalPool, Reshape, Transpose,
//! Softmax, Resize (nearest in all rounding modes, N-linear; half_pixel,
//! pytorch_half_pixel, align_corners, asymmetric), Pad, LRN, Power, Identity — and
//! the fused `Op::Nna` ops of an unquantized graph (dot product or scale, activation,
//! pooling stage; eltwise; concat; host ops). Quantized epilogues are rejected.
//!
//! [`npy`] reads and writes NumPy `.npy` files (inputs and outputs of `nnac eval`).
//!
//! [`host`] defines host ops (dequantize, float op, quantize): the one implementation
//! the quantized reference interpreter and the simulator share.

mod error;
mod exec;
pub mod host;
pub mod kernels;
pub mod npy;

pub use error::InterpError;

/// One set of graph inputs, by input name: what the float and the quantized reference
/// interpreters run on.
pub type Frame = std::collections::BTreeMap<String, nnac_ir::Tensor>;
pub use exec::{run_float, run_float_observed};
