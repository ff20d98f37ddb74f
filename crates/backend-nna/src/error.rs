//! Backend errors. Every error names the node (layer) it is about; a node the
//! backend cannot lower carries a [`Refusal`], the reason the partitioner
//! (`nnac-partition`) records when it moves the node to the host (its text is part
//! of the program's metadata: change it only with intent).

use nnac_ir::DType;
use std::fmt;

/// A node the NNA backend cannot lower, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct UnsupportedNode {
    pub node: String,
    pub reason: Refusal,
}

impl UnsupportedNode {
    /// `node` cannot be lowered because of `reason`.
    pub fn new(node: impl Into<String>, reason: Refusal) -> Self {
        UnsupportedNode {
            node: node.into(),
            reason,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum BackendError {
    /// The graph fails `nnac_ir::verify` (one line per verifier error).
    Invalid(Vec<String>),
    /// A value the backend must place is not an 8-bit per-tensor quantized tensor.
    NotQuantized { node: String, detail: String },
    /// Nodes the NNA backend cannot lower yet, all of them at once.
    Unsupported(Vec<UnsupportedNode>),
    /// A layer does not fit in SRAM even split into its smallest pieces (one output
    /// row band, one weight group, activations spilled to DRAM).
    SramFull {
        node: String,
        needed: u64,
        sram: u64,
    },
    /// A field is out of the instruction's range, or an emitted instruction breaks
    /// `nnac_isa::checks::check_instr` (a backend bug; names the layer).
    Emit { node: String, detail: String },
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Invalid(v) => write!(f, "graph fails verification: {}", v.join("; ")),
            BackendError::NotQuantized { node, detail } => {
                write!(f, "node '{node}': not quantized: {detail}")
            }
            BackendError::Unsupported(v) => {
                let list: Vec<String> = v
                    .iter()
                    .map(|u| format!("'{}' ({})", u.node, u.reason))
                    .collect();
                write!(
                    f,
                    "{} node(s) not supported by the NNA backend: {}",
                    v.len(),
                    list.join(", ")
                )
            }
            BackendError::SramFull { node, needed, sram } => write!(
                f,
                "layer '{node}': needs {needed} bytes of SRAM live at once (split into its smallest row band and weight group, activations in DRAM where possible), the SRAM has {sram}"
            ),
            BackendError::Emit { node, detail } => write!(f, "layer '{node}': {detail}"),
        }
    }
}

impl std::error::Error for BackendError {}

impl BackendError {
    /// Whether the error is a bug in nnac rather than a limit the model meets (the CLI
    /// exits 2 for these, 1 for the others): IR that fails verification or is not
    /// quantized never leaves the pass pipeline, and an instruction out of range is
    /// the backend's own doing. Every variant is decided here.
    pub fn is_internal(&self) -> bool {
        match self {
            BackendError::Invalid(_)
            | BackendError::NotQuantized { .. }
            | BackendError::Emit { .. } => true,
            BackendError::Unsupported(_) | BackendError::SramFull { .. } => false,
        }
    }

    /// The reason alone: for one unsupported node, its reason without the node
    /// count and name (a walk step reports it under that node already); else the
    /// whole message.
    pub fn detail(&self) -> String {
        match self {
            BackendError::Unsupported(v) if v.len() == 1 => v[0].reason.to_string(),
            e => e.to_string(),
        }
    }
}

pub(crate) fn emit_err(node: &str, detail: impl Into<String>) -> BackendError {
    BackendError::Emit {
        node: node.to_string(),
        detail: detail.into(),
    }
}

/// The limit a value breaks ([`Refusal::OutOfRange`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limit {
    /// Beyond `u32` (a dimension, a count, a field).
    TooLarge,
    /// Beyond the 16-bit field that holds it.
    Int16,
    /// Beyond FUSED_RELU's 16-bit requantization fields.
    RequantInt16,
    /// A weight or scale code beyond int8.
    Int8Code,
    /// A bias or scale value beyond int32.
    Int32,
    /// Beyond the dot-product instructions' field range (docs/ISA.md).
    Field { min: i64, max: i64 },
    /// A dimension of an activation outside `1..=65535`.
    Dimension,
    /// More SCALE copies than one layout move may take (`lower/copy.rs`).
    Copies { max: u64 },
}

/// Why the NNA backend cannot lower a node (or a value it reads).
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// `operand` (`"input"`, `"input A"`, `"graph output"`, ...) is not an activation
    /// in SRAM or DRAM.
    NotActivation { operand: &'static str },
    /// `what` must be an integer constant.
    NotConstant { what: String },
    /// `what` = `value` breaks `limit`.
    OutOfRange {
        what: String,
        value: i64,
        limit: Limit,
    },
    /// `count` entries of `what` for `channels` channels.
    ChannelCount {
        what: &'static str,
        count: usize,
        channels: usize,
    },
    /// SCALE's scale and bias vectors do not match the channels.
    ScaleBiasCount {
        scales: usize,
        biases: usize,
        channels: usize,
    },
    /// A dot product's weights are not `out_c x k`.
    WeightCount {
        weights: usize,
        out_c: usize,
        k: usize,
    },
    /// A bias cannot be held by the accumulator.
    BiasOverflow { channel: usize, bias: i64 },
    /// A view (`"reshape"`, `"slice"`) with another quantization than its input.
    QuantizationChange { op: &'static str },
    /// A concatenation input quantized unlike the concatenation.
    ConcatQuantization,
    /// `op` reads a spilled value without running in bands.
    SpilledOperand { op: &'static str },
    /// A dot product whose output has no pixels.
    EmptyGeometry,
    /// The instruction's stored output is not the IR's output.
    StoredOutput {
        stored: Option<(u32, u32)>,
        h: u32,
        w: u32,
    },
    /// A 2-D attribute (`"kernel"`, `"pads"`, ...) of another length.
    NotTwoD { what: String, value: Vec<usize> },
    /// A band of output rows of a split layer that covers no convolution row.
    BandWithoutRows { s0: u32, s1: u32 },
    /// A band of output rows of a split layer that reads only padding.
    BandOnlyPadding { s0: u32, s1: u32 },
    /// A transposed convolution's output padding beyond its `side` pad.
    OutputPadding { side: &'static str },
    /// A pool with a non-square kernel or stride.
    PoolNotSquare {
        kernel: Vec<usize>,
        strides: Vec<usize>,
    },
    /// A pool window larger than its input.
    PoolWindow,
    /// Average pooling in ceil mode.
    CeilModeAverage,
    /// A pool output smaller than the floor rule gives.
    PoolOutput,
    /// Pool padding beyond 2.
    PoolPadding,
    /// A global pool whose output is not `1 x 1 x C`.
    GlobalPoolOutput { h: u32, w: u32, c: u32, out_w: u32 },
    /// An upsampling whose output pitch overflows.
    PitchOverflow { pitch: u32, factor: u32 },
    /// A plane larger than a 28-bit channel pitch.
    PlanePitch { h: u32, w: u32 },
    /// An activation of another rank than `[1, C, H, W]` or `[1, K]`.
    ActivationShape { shape: Vec<usize> },
    /// An op outside the quantized NNA IR.
    NotNnaOp { mnemonic: String },
    /// A concatenation on another axis than the channels of a 4-D tensor.
    ConcatAxis { axis: usize },
    /// A concatenation through DRAM of non-dense channel planes.
    ConcatNotDense,
    /// A reshape to another shape than `[1, C*H*W]`.
    ReshapeShape { shape: Vec<usize> },
    /// A flatten of a spatial tensor read by an op other than an inner product.
    FlattenSpatial,
    /// A host-op tensor of another dtype than int8/uint8.
    HostDtype { dtype: DType },
    /// A host-op tensor without per-tensor quantization.
    HostQuantization,
    /// `nna.slice` lowering called for another op (a backend bug).
    NotSlice,
    /// A transposed convolution whose input zero point is not 0.
    DeconvZeroPoint,
    /// An epilogue without requantization.
    EpilogueNotQuantized,
    /// A requantization (`"even"`, `"fma_add"`) with an activation it cannot carry.
    RequantActivation { requant: &'static str },
    /// A `fma_add` requantization on another ELTWISE than an add whose input stage
    /// is `EltwiseRequant::FMA_ADD`.
    FmaAddInputs,
    /// An ELTWISE without its input rescaling.
    EltwiseRescaleMissing,
    /// A host-op tensor whose I/O descriptor the container refuses.
    Descriptor(nnac_isa::error::DescError),
    /// A backend error met while lowering the node (its text without the node).
    Backend(Box<BackendError>),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Refusal as R;
        match self {
            R::NotActivation { operand } => write!(f, "{operand} is not an activation"),
            R::NotConstant { what } => write!(f, "{what} is not an integer constant"),
            R::OutOfRange { what, value, limit } => match limit {
                Limit::TooLarge => write!(f, "{what} {value} too large"),
                Limit::Int16 => write!(f, "{what} {value} out of range"),
                Limit::RequantInt16 => write!(f, "requant {what} {value} out of int16"),
                Limit::Int8Code => write!(f, "{what} code {value} is not int8"),
                Limit::Int32 => write!(f, "{what} value {value} is not int32"),
                Limit::Field { min, max } => write!(
                    f,
                    "{what} {value} is beyond the dot-product instructions' {min}..={max}"
                ),
                Limit::Dimension => write!(f, "{what} {value} out of 1..=65535"),
                Limit::Copies { max } => write!(
                    f,
                    "{value} SCALE {what}, more than the {max} one layout move may take"
                ),
            },
            R::ChannelCount {
                what,
                count,
                channels,
            } => write!(f, "{count} {what} for {channels} channels"),
            R::ScaleBiasCount {
                scales,
                biases,
                channels,
            } => write!(
                f,
                "{scales} scales / {biases} biases for {channels} channels"
            ),
            R::WeightCount { weights, out_c, k } => {
                write!(f, "{weights} weights, expected {out_c} x {k}")
            }
            R::BiasOverflow { channel, bias } => {
                write!(
                    f,
                    "channel {channel}: bias {bias} too large for the accumulator"
                )
            }
            R::QuantizationChange { op } => write!(f, "{op} changes the quantization"),
            R::ConcatQuantization => {
                write!(f, "concatenation input with a different quantization")
            }
            R::SpilledOperand { op } => write!(f, "spilled operand of {op}"),
            R::EmptyGeometry => write!(f, "output geometry is empty"),
            R::StoredOutput { stored, h, w } => {
                write!(
                    f,
                    "stored output {stored:?} differs from the IR output {h}x{w}"
                )
            }
            R::NotTwoD { what, value } => write!(f, "{what} {value:?} is not 2-D"),
            R::BandWithoutRows { s0, s1 } => {
                write!(f, "output rows {s0}..{s1} cover no convolution row")
            }
            R::BandOnlyPadding { s0, s1 } => {
                write!(f, "output rows {s0}..{s1} read only padding")
            }
            R::OutputPadding { side } => {
                write!(f, "output_padding larger than the {side} pad")
            }
            R::PoolNotSquare { kernel, strides } => {
                write!(f, "pool {kernel:?}/{strides:?} is not square")
            }
            R::PoolWindow => write!(f, "pool window larger than its input"),
            R::CeilModeAverage => write!(f, "ceil-mode average pooling"),
            R::PoolOutput => write!(f, "pool output smaller than the floor rule"),
            R::PoolPadding => write!(f, "pool padding beyond 2"),
            R::GlobalPoolOutput { h, w, c, out_w } => {
                write!(f, "global pool output {h}x{w}x{c} is not 1x1x{out_w}")
            }
            R::PitchOverflow { pitch, factor } => {
                write!(f, "output pitch {pitch} x {factor} overflows")
            }
            R::PlanePitch { h, w } => write!(f, "{h}x{w} plane exceeds a 28-bit pitch"),
            R::ActivationShape { shape } => {
                write!(f, "activation shape {shape:?} is not [1,C,H,W] or [1,K]")
            }
            R::NotNnaOp { mnemonic } => {
                write!(f, "{mnemonic} is not an op of the quantized NNA IR")
            }
            R::ConcatAxis { axis } => {
                write!(
                    f,
                    "nna.concat on axis {axis} (only channels of a 4-D tensor)"
                )
            }
            R::ConcatNotDense => {
                write!(f, "concatenation through DRAM needs dense channel planes")
            }
            R::ReshapeShape { shape } => write!(f, "reshape to {shape:?} (only [1, C*H*W])"),
            R::FlattenSpatial => {
                write!(
                    f,
                    "flatten of a spatial tensor read by a non-inner-product op"
                )
            }
            R::HostDtype { dtype } => {
                write!(f, "host-op tensor of dtype {dtype:?} (int8/uint8 only)")
            }
            R::HostQuantization => write!(f, "host-op tensor without per-tensor quantization"),
            R::NotSlice => write!(f, "not a slice"),
            R::DeconvZeroPoint => write!(f, "deconvolution input zero point is not 0"),
            R::EpilogueNotQuantized => write!(f, "epilogue is not quantized"),
            R::RequantActivation { requant } => write!(
                f,
                "requantization '{requant}' carries no activation but ReLU and Clip (its clamp)"
            ),
            R::FmaAddInputs => write!(
                f,
                "requantization 'fma_add' needs an add with input stage 2^9 >> 0, 1 >> 0"
            ),
            R::EltwiseRescaleMissing => write!(f, "eltwise input rescaling missing"),
            R::Descriptor(e) => write!(f, "{e}"),
            R::Backend(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// `what` = `value` breaks `limit`.
    pub(crate) fn range(what: impl Into<String>, value: impl Into<i64>, limit: Limit) -> Self {
        Refusal::OutOfRange {
            what: what.into(),
            value: value.into(),
            limit,
        }
    }
}

/// A backend error met while lowering a node becomes the node's reason: the one
/// reason of a single unsupported node, else the whole error.
impl From<BackendError> for Refusal {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Unsupported(mut v) if v.len() == 1 => v.remove(0).reason,
            e => Refusal::Backend(Box::new(e)),
        }
    }
}

/// `v` as an `i64` for [`Refusal::OutOfRange`] (saturating: a `usize` beyond
/// `i64::MAX` is reported as `i64::MAX`).
pub(crate) fn wide(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
