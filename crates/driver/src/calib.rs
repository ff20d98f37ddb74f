//! Calibration frames keyed by input name, from files (`--calib [INPUT=]PATH`) or from
//! tensors handed over in memory (the Python package's numpy arrays): one rule for
//! naming the input, counting frames and checking that every input has as many.

use crate::error::Error;
use crate::frames::{load_frames, split_frames, Preprocess};
use nnac_ir::{Graph, Tensor, TensorType};
use nnac_passes::{BiasScope, Frame, PassOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Calibration frames and, when they are synthetic, the note that says so.
pub struct Calibration {
    pub frames: Vec<Frame>,
    /// `Some(description)` when no calibration data was given and the frames were
    /// made up ([`crate::synthetic`]); the program's metadata records it.
    pub synthetic: Option<String>,
}

impl Calibration {
    /// Frames given by the user (or none, for a pre-quantized model).
    pub fn real(frames: Vec<Frame>) -> Self {
        Calibration {
            frames,
            synthetic: None,
        }
    }

    /// The pass options `opts` as these frames allow: bias correction measures the
    /// mean int8 error on the calibration frames, which on synthetic frames would
    /// fit the noise they are made of, so it runs on real frames only.
    pub fn pass_options(&self, opts: PassOptions) -> PassOptions {
        match self.synthetic {
            None => opts,
            Some(_) => PassOptions {
                bias_correction: BiasScope::Off,
                ..opts
            },
        }
    }

    /// The synthetic-calibration warning to print, if the frames are synthetic.
    pub fn warning(&self) -> Option<String> {
        self.synthetic.as_deref().map(crate::synthetic::warning)
    }
}

/// Where one input's calibration frames come from.
#[derive(Clone, Debug)]
pub enum CalibSource {
    /// An `.npy` (one frame or N stacked), a PNG/JPEG, or a directory of them.
    Path(PathBuf),
    /// A float32 tensor of one frame or N stacked along a new leading axis.
    Tensor(Tensor),
}

/// One calibration source and the input it feeds (`None`: the model's only input).
#[derive(Clone, Debug)]
pub struct CalibSpec {
    pub input: Option<String>,
    pub source: CalibSource,
}

/// The graph's inputs in model order: name and declared type.
pub fn graph_inputs(graph: &Graph) -> Vec<(String, TensorType)> {
    graph
        .inputs()
        .iter()
        .map(|&id| {
            (
                graph.node(id).name.clone(),
                graph.node(id).outputs[0].clone(),
            )
        })
        .collect()
}

/// Parses the CLI's `--calib [INPUT=]PATH`: the text before the first `=` names the
/// input when it is one of the model's; otherwise the whole text is the path of the
/// single input's data.
pub fn parse_calib_arg(spec: &str, graph: &Graph) -> Result<CalibSpec, Error> {
    parse_frame_arg("--calib", spec, graph)
}

/// Parses a `[INPUT=]PATH` argument of option `flag` (`--calib`, `nnac analyze
/// --input`): the rule of [`parse_calib_arg`].
pub fn parse_frame_arg(flag: &str, spec: &str, graph: &Graph) -> Result<CalibSpec, Error> {
    let inputs = graph_inputs(graph);
    let (input, path) = match spec.split_once('=') {
        Some((n, p)) if inputs.iter().any(|(i, _)| i == n) => (Some(n.to_string()), p),
        _ if inputs.len() == 1 => (None, spec),
        _ => {
            let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
            return Err(Error::user(format!(
                "{flag} {spec}: the model has inputs {names:?}; write {flag} INPUT=PATH"
            )));
        }
    };
    Ok(CalibSpec {
        input,
        source: CalibSource::Path(PathBuf::from(path)),
    })
}

/// The calibration frames of the CLI's `--calib [INPUT=]PATH` arguments
/// ([`parse_calib_arg`] then [`calib_frames`]).
pub fn calib_args(args: &[String], pre: &Preprocess, graph: &Graph) -> Result<Vec<Frame>, Error> {
    calib_frames(&parse_calib_args(args, graph)?, pre, graph)
}

/// Every `--calib [INPUT=]PATH` argument parsed ([`parse_calib_arg`]).
pub fn parse_calib_args(args: &[String], graph: &Graph) -> Result<Vec<CalibSpec>, Error> {
    args.iter().map(|c| parse_calib_arg(c, graph)).collect()
}

/// The calibration frames the specs give, one map per frame; every input must get
/// the same number of frames. A pre-quantized graph (QDQ / QOperator ONNX) needs
/// none: without specs it gets no frames and keeps the file's quantization.
pub fn calib_frames(
    specs: &[CalibSpec],
    pre: &Preprocess,
    graph: &Graph,
) -> Result<Vec<Frame>, Error> {
    let inputs = graph_inputs(graph);
    if specs.is_empty() && nnac_passes::fixed::is_pre_quantized(graph) {
        // The file's scales and zero points; the quantizer names any value they miss.
        return Ok(Vec::new());
    }
    if specs.is_empty() {
        return Err(Error::user(
            "quantization needs calibration data: --calib PATH (an .npy, an image, or a directory)",
        ));
    }
    let mut per_input: BTreeMap<String, Vec<Tensor>> = BTreeMap::new();
    for (k, spec) in specs.iter().enumerate() {
        let name = match &spec.input {
            Some(n) => n.clone(),
            None if inputs.len() == 1 => inputs[0].0.clone(),
            None => {
                let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
                return Err(Error::user(format!(
                    "calibration data {k}: the model has inputs {names:?}; name the input"
                )));
            }
        };
        let ty = &inputs
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| {
                let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
                Error::user(format!(
                    "calibration data for '{name}': the model has no such input (inputs: {names:?})"
                ))
            })?
            .1;
        let frames = match &spec.source {
            CalibSource::Path(p) => load_frames(Path::new(p), &name, ty, pre)?,
            CalibSource::Tensor(t) => {
                split_frames(t.clone(), &format!("calibration data {k}"), &name, ty)?
            }
        };
        per_input.entry(name).or_default().extend(frames);
    }
    let counts: BTreeMap<&String, usize> = per_input.iter().map(|(k, v)| (k, v.len())).collect();
    let n = counts.values().copied().max().unwrap_or(0);
    if per_input.len() != inputs.len() || counts.values().any(|&c| c != n) {
        return Err(Error::user(format!(
            "--calib must give the same number of frames for every input; got {counts:?} for inputs {:?}",
            inputs.iter().map(|(n, _)| n).collect::<Vec<_>>()
        )));
    }
    Ok((0..n)
        .map(|i| {
            per_input
                .iter()
                .map(|(k, v)| (k.clone(), v[i].clone()))
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bias correction, on by default, runs on real frames only: on synthetic ones it
    /// would fit their noise.
    #[test]
    fn bias_correction_needs_real_frames() {
        let default = PassOptions::default();
        assert_eq!(default.bias_correction, BiasScope::Depthwise);
        let real = Calibration::real(Vec::new());
        let synthetic = Calibration {
            frames: Vec::new(),
            synthetic: Some("made up".into()),
        };
        for scope in BiasScope::ALL {
            let opts = PassOptions {
                bias_correction: scope,
                ..default.clone()
            };
            assert_eq!(real.pass_options(opts.clone()).bias_correction, scope);
            assert_eq!(synthetic.pass_options(opts).bias_correction, BiasScope::Off);
        }
    }
}
