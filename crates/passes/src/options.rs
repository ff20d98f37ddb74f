//! Options of the pass pipeline.

use std::path::PathBuf;

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
}

impl CalibMethod {
    pub const ALL: [CalibMethod; 3] = [
        CalibMethod::MinMax,
        CalibMethod::Percentile,
        CalibMethod::Entropy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CalibMethod::MinMax => "minmax",
            CalibMethod::Percentile => "percentile",
            CalibMethod::Entropy => "entropy",
        }
    }

    pub fn from_name(s: &str) -> Option<CalibMethod> {
        CalibMethod::ALL.into_iter().find(|m| m.name() == s)
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
    /// Run the verifier after every pass also in release builds.
    pub verify_each: bool,
    pub dump: Option<DumpSpec>,
    /// Stop after the float passes and fusion (no calibration, no quantization).
    pub skip_quantization: bool,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions {
            calib_method: CalibMethod::Percentile,
            percentile: 99.99,
            verify_each: false,
            dump: None,
            skip_quantization: false,
        }
    }
}
