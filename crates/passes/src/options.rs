//! Options of the pass pipeline.

use std::path::PathBuf;
use std::sync::Arc;

/// A step of the long-running stages, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressEvent {
    /// Calibration finished `done` of `total` frames.
    Calibrate { done: usize, total: usize },
    /// The quantization report (int8 vs float on the calibration frames) started.
    Report { frames: usize, layers: usize },
    /// A stage started: a pass of the pipeline (its name), `quantize`, or, reported
    /// by the callers of the pipeline, lowering and encoding.
    Stage { name: &'static str },
}

/// A callback told about [`ProgressEvent`]s (the CLI draws a progress bar).
#[derive(Clone)]
pub struct Progress(pub Arc<dyn Fn(ProgressEvent) + Send + Sync>);

impl Progress {
    pub fn report(&self, e: ProgressEvent) {
        (self.0)(e)
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

impl PartialEq for Progress {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How activation ranges are chosen from the calibration statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CalibMethod {
    /// The observed minimum and maximum.
    MinMax,
    /// Clip at a percentile of |x| (ONNX Runtime style; 99.99 by default).
    Percentile,
    /// KL-divergence threshold search (TensorRT's entropy calibration).
    Entropy,
    /// The threshold of least expected quantization MSE (clipping + rounding error)
    /// over the calibration histogram, per tensor.
    Mse,
}

impl CalibMethod {
    pub const ALL: [CalibMethod; 4] = [
        CalibMethod::MinMax,
        CalibMethod::Percentile,
        CalibMethod::Entropy,
        CalibMethod::Mse,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CalibMethod::MinMax => "minmax",
            CalibMethod::Percentile => "percentile",
            CalibMethod::Entropy => "entropy",
            CalibMethod::Mse => "mse",
        }
    }

    pub fn from_name(s: &str) -> Option<CalibMethod> {
        CalibMethod::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// How a dot product's float weights become int8 codes (`quant::weights`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightRounding {
    /// Each weight to its nearest code at the channel's scale.
    Nearest,
    /// GPTQ: codes chosen one by one to minimise the error of the layer's output on
    /// the calibration inputs (`quant::gptq`).
    Gptq,
}

impl WeightRounding {
    pub const ALL: [WeightRounding; 2] = [WeightRounding::Nearest, WeightRounding::Gptq];

    pub fn name(self) -> &'static str {
        match self {
            WeightRounding::Nearest => "nearest",
            WeightRounding::Gptq => "gptq",
        }
    }

    pub fn from_name(s: &str) -> Option<WeightRounding> {
        WeightRounding::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Which dot products empirical bias correction corrects (`quant::bias_correct`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BiasScope {
    /// None.
    Off,
    /// Depthwise convolutions (one input channel per output channel): each output
    /// sums a few products (9 for a 3x3 kernel), so the rounding errors of their
    /// weights and of the activations' clipping do not average out and shift the
    /// mean (Nagel et al., "Data-Free Quantization", 4.2). The default.
    Depthwise,
    /// Every dot product with constant weights.
    All,
}

impl BiasScope {
    pub const ALL: [BiasScope; 3] = [BiasScope::Off, BiasScope::Depthwise, BiasScope::All];

    pub fn name(self) -> &'static str {
        match self {
            BiasScope::Off => "off",
            BiasScope::Depthwise => "depthwise",
            BiasScope::All => "all",
        }
    }

    pub fn from_name(s: &str) -> Option<BiasScope> {
        BiasScope::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// How the SIMD epilogues requantize (docs/QUANTIZATION.md, "Requantizing as ONNX
/// Runtime does").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequantRule {
    /// The NNA's own: one FUSED_RELU with a 31-bit fixed-point multiplier, round half
    /// up; ELTWISE adds in fixed point with 20 fractional bits.
    Fixed,
    /// ONNX Runtime's int8 kernels, bit for bit: dot products (and the pooling
    /// convolutions) and ELTWISE products requantize in fp32 with ONNX Runtime's
    /// scale and round half to even (`MlasRequantizeOutput`, QLinearMul); ELTWISE adds
    /// of one shape compute QLinearAdd's two fused multiply-adds (12 SIMD
    /// instructions: slower unloads).
    OnnxRuntime,
}

impl RequantRule {
    pub const ALL: [RequantRule; 2] = [RequantRule::Fixed, RequantRule::OnnxRuntime];

    pub fn name(self) -> &'static str {
        match self {
            RequantRule::Fixed => "fixed",
            RequantRule::OnnxRuntime => "onnxruntime",
        }
    }

    pub fn from_name(s: &str) -> Option<RequantRule> {
        RequantRule::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Which IR dumps to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpSpec {
    /// `None`: after every pass (numbered `NN-<pass>.ir`); `Some(name)`: after that pass.
    pub stage: Option<String>,
    pub dir: PathBuf,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PassOptions {
    pub calib_method: CalibMethod,
    /// Percentile for [`CalibMethod::Percentile`] (e.g. 99.99).
    pub percentile: f32,
    /// Which dot ops empirical bias correction corrects on the calibration frames
    /// (`quant::bias_correct`).
    pub bias_correction: BiasScope,
    /// How weights are rounded to int8.
    pub weight_rounding: WeightRounding,
    /// How the epilogues requantize.
    pub requant: RequantRule,
    /// Run the verifier after every pass also in release builds.
    pub verify_each: bool,
    pub dump: Option<DumpSpec>,
    /// Stop after the float passes and fusion (no calibration, no quantization).
    pub skip_quantization: bool,
    /// Told about calibration and report progress.
    pub progress: Option<Progress>,
    /// Measure the quantized graph against the float graph (the per-layer and output
    /// accuracy and the accumulator overflow count of the report). Off, the report
    /// holds only the rewrites, host ops and calibration facts.
    pub measure: bool,
    /// Most bytes of float values kept from calibration for the measurement
    /// ([`crate::float_ref`]); frames beyond it run the float interpreter again.
    pub keep_float_bytes: usize,
    /// Nodes (by name) to run on the host, with the reason: what the NNA backend could
    /// not lower in an earlier attempt (`force_host`, partitioning).
    pub host_nodes: std::collections::BTreeMap<String, String>,
    /// Layers (fused layer names, or names of nodes they absorbed) to keep in float32
    /// on the host, with the reason the host-op list gives (`--float-layers`,
    /// `--auto-float`; the `float_layers` pass).
    pub float_layers: std::collections::BTreeMap<String, String>,
    /// Keep the folded float graph in [`crate::Compiled::reference`] (for
    /// [`crate::analysis::analyze`]).
    pub keep_reference: bool,
    /// Calibration statistics of an earlier compile of the same float graph on the
    /// same frames with the same options ([`crate::Compiled::stats`]): used instead
    /// of calibrating again when the report is not measured (partitioning rounds).
    pub calib_stats: Option<Arc<CalibStats>>,
}

/// Calibration statistics per value name.
pub type CalibStats = std::collections::BTreeMap<String, crate::calib::Stats>;

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions {
            calib_method: CalibMethod::Mse,
            percentile: 99.99,
            bias_correction: BiasScope::Depthwise,
            weight_rounding: WeightRounding::Nearest,
            requant: RequantRule::Fixed,
            verify_each: false,
            dump: None,
            skip_quantization: false,
            progress: None,
            measure: true,
            keep_float_bytes: crate::float_ref::KEEP_BYTES,
            host_nodes: std::collections::BTreeMap::new(),
            float_layers: std::collections::BTreeMap::new(),
            keep_reference: false,
            calib_stats: None,
        }
    }
}
