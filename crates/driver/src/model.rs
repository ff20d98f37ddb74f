//! The model and quantization options of every front end that reads a model (`nnac
//! inspect`, `eval`, `compile`; `nnac.compile`, `nnac.inspect`, ...): the `MODEL
//! [--weights W] [--input-shape NAME=1x3xHxW ...]` arguments and loading.

use crate::error::Error;
use nnac_frontend::{load_model, ImportOptions};
use nnac_ir::Graph;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The model to load: flatten into a subcommand's `Args` with `#[command(flatten)]`.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct ModelArgs {
    /// The model: an ONNX file (.onnx) or a Caffe network (.prototxt).
    pub model: PathBuf,
    /// Caffe weights (.caffemodel) for a .prototxt model.
    #[cfg_attr(feature = "cli", arg(long, value_name = "W"))]
    pub weights: Option<PathBuf>,
    /// Fixes the shape of a graph input with dynamic dimensions, e.g.
    /// `--input-shape x=1x3x640x640` (repeatable, one per input).
    #[cfg_attr(feature = "cli", arg(long = "input-shape", value_name = "NAME=SHAPE", value_parser = parse_input_shape))]
    pub input_shape: Vec<(String, Vec<usize>)>,
}

impl ModelArgs {
    /// The import options these arguments describe; a name given twice is an error.
    pub fn import_options(&self) -> Result<ImportOptions, Error> {
        let mut input_shapes = BTreeMap::new();
        for (name, shape) in &self.input_shape {
            if input_shapes.insert(name.clone(), shape.clone()).is_some() {
                return Err(Error::user(format!(
                    "--input-shape given twice for input '{name}'"
                )));
            }
        }
        Ok(ImportOptions { input_shapes })
    }
}

/// Parses `NAME=1x3x224x224` into the input name and its dimensions. The name may
/// itself contain `=` (the shape follows the last one); every dimension must be a
/// positive integer.
pub fn parse_input_shape(s: &str) -> Result<(String, Vec<usize>), Error> {
    let (name, dims) = s.rsplit_once('=').ok_or_else(|| {
        Error::user(format!(
            "--input-shape '{s}': expected NAME=SHAPE, e.g. x=1x3x224x224"
        ))
    })?;
    if name.is_empty() {
        return Err(Error::user(format!(
            "--input-shape '{s}': the input name is empty"
        )));
    }
    let shape = dims
        .split(['x', 'X'])
        .map(|d| parse_dim(s, d.trim()))
        .collect::<Result<Vec<usize>, Error>>()?;
    Ok((name.to_string(), shape))
}

fn parse_dim(whole: &str, d: &str) -> Result<usize, Error> {
    match d.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::user(format!(
            "--input-shape '{whole}': dimension '{d}' is not a positive integer (expected e.g. 1x3x224x224)"
        ))),
    }
}

/// Loads the model the arguments name; every import failure is the user's (exit 1).
pub fn load(args: &ModelArgs) -> Result<Graph, Error> {
    let opts = args.import_options()?;
    load_model(&args.model, args.weights.as_deref(), &opts).map_err(|e| Error::user(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_and_dims() {
        let (n, s) = parse_input_shape("images=1x3x640x640").unwrap();
        assert_eq!(n, "images");
        assert_eq!(s, vec![1, 3, 640, 640]);
    }

    #[test]
    fn name_may_contain_equals() {
        let (n, s) = parse_input_shape("a=b=1x2").unwrap();
        assert_eq!(n, "a=b");
        assert_eq!(s, vec![1, 2]);
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "images", "=1x3", "x=", "x=1x", "x=1x0x3", "x=1xHx3", "x=-1x3",
        ] {
            let e = parse_input_shape(bad).unwrap_err();
            assert!(matches!(e, Error::User(_)), "{bad}");
            assert!(e.to_string().contains("--input-shape"), "{bad}: {e}");
        }
    }

    #[test]
    fn duplicate_input_is_an_error() {
        let a = ModelArgs {
            model: PathBuf::from("m.onnx"),
            weights: None,
            input_shape: vec![("x".into(), vec![1]), ("x".into(), vec![2])],
        };
        assert!(a.import_options().is_err());
    }
}

/// How `compile`, `eval --quantized` and `inspect --calib` quantize: the options of
/// the pass pipeline's calibration.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct QuantArgs {
    /// How activation ranges are chosen from calibration statistics: `mse` (the
    /// default) clips each tensor where the expected quantization error is least.
    #[cfg_attr(feature = "cli", arg( long, default_value = "mse", value_parser = clap::builder::PossibleValuesParser::new( nnac_passes::CalibMethod::ALL.map(nnac_passes::CalibMethod::name) ) ))]
    pub calib_method: String,
    /// Percentile of |x| the `percentile` method clips at (0 < P <= 100).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 99.99, value_name = "P"))]
    pub percentile: f32,
    /// Empirical bias correction: subtract from a dot product's bias the mean error
    /// of its int8 pre-activation against float on the calibration frames, for
    /// `depthwise` convolutions (the default), `all` dot products (the bare flag) or
    /// none (`off`). Never on synthetic calibration frames or on a model that carries
    /// its own quantization.
    #[cfg_attr(feature = "cli", arg( long, value_name = "SCOPE", default_value = "depthwise", num_args = 0..=1, overrides_with = "bias_correction", require_equals = true, default_missing_value = "all", value_parser = clap::builder::PossibleValuesParser::new( nnac_passes::BiasScope::ALL.map(nnac_passes::BiasScope::name) ) ))]
    pub bias_correction: String,
    /// How weights become int8 codes: `nearest` rounds each weight at its channel's
    /// scale; `gptq` picks the codes that minimise the error of each layer's output on
    /// the calibration frames (GPTQ, docs/QUANTIZATION.md).
    #[cfg_attr(feature = "cli", arg( long, default_value = "nearest", value_parser = clap::builder::PossibleValuesParser::new( nnac_passes::WeightRounding::ALL.map(nnac_passes::WeightRounding::name) ) ))]
    pub weight_rounding: String,
    /// How the SIMD epilogues requantize: `fixed` (the NNA's fixed-point multiplier,
    /// round half up) or `onnxruntime` (ONNX Runtime's int8 kernels bit for bit: fp32
    /// requantization rounding half to even, QLinearAdd's fused multiply-adds; longer
    /// SIMD programs, docs/QUANTIZATION.md).
    #[cfg_attr(feature = "cli", arg( long, default_value = "fixed", value_parser = clap::builder::PossibleValuesParser::new( nnac_passes::RequantRule::ALL.map(nnac_passes::RequantRule::name) ) ))]
    pub requant: String,
    /// Layers to keep in float32 on the host (comma-separated or repeated): their
    /// inputs are dequantized, the layer runs in float with its float weights, its
    /// output is quantized (docs/QUANTIZATION.md, "Hybrid precision"). Names as
    /// `nnac analyze` and the compile summary print them.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_delimiter = ',', value_name = "NAMES")
    )]
    pub float_layers: Vec<String>,
    /// Also keep in float32 the N layers that the accuracy analysis on the
    /// calibration frames ranks most sensitive (`nnac analyze`'s ranking).
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub auto_float: Option<usize>,
}

impl Default for QuantArgs {
    /// The pass pipeline's defaults (the CLI's): MSE-chosen ranges, bias correction
    /// of depthwise convolutions, nearest rounding.
    fn default() -> Self {
        let d = nnac_passes::PassOptions::default();
        QuantArgs {
            calib_method: d.calib_method.name().to_string(),
            percentile: d.percentile,
            bias_correction: d.bias_correction.name().to_string(),
            weight_rounding: d.weight_rounding.name().to_string(),
            requant: d.requant.name().to_string(),
            float_layers: Vec::new(),
            auto_float: None,
        }
    }
}

impl QuantArgs {
    /// The pass options these flags set; everything else at its default. An unknown
    /// method name (the CLI's parser refuses it before) is the user's error.
    pub fn pass_options(&self) -> Result<nnac_passes::PassOptions, Error> {
        use nnac_passes::{BiasScope, CalibMethod, RequantRule, WeightRounding};
        let calib_method = by_name(
            &self.calib_method,
            "calibration method",
            &CalibMethod::ALL,
            CalibMethod::name,
        )?;
        let weight_rounding = by_name(
            &self.weight_rounding,
            "weight rounding",
            &WeightRounding::ALL,
            WeightRounding::name,
        )?;
        let bias_correction = by_name(
            &self.bias_correction,
            "bias correction",
            &BiasScope::ALL,
            BiasScope::name,
        )?;
        let requant = by_name(
            &self.requant,
            "requantization",
            &RequantRule::ALL,
            RequantRule::name,
        )?;
        Ok(nnac_passes::PassOptions {
            calib_method,
            percentile: self.percentile,
            bias_correction,
            weight_rounding,
            requant,
            float_layers: self
                .float_layers
                .iter()
                .map(|n| (n.clone(), nnac_passes::FLOAT_LAYER_REASON.to_string()))
                .collect(),
            ..nnac_passes::PassOptions::default()
        })
    }
}

/// The option value `value` as one of `all` by its name, else the user's error naming
/// `what` and the choices.
fn by_name<T: Copy>(
    value: &str,
    what: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<T, Error> {
    all.iter()
        .copied()
        .find(|&t| name(t) == value)
        .ok_or_else(|| {
            let choices: Vec<&str> = all.iter().map(|&t| name(t)).collect();
            Error::user(format!(
                "unknown {what} '{value}' (one of {})",
                choices.join(", ")
            ))
        })
}
