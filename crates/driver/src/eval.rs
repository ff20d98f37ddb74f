//! Running a model on the reference interpreters (`nnac eval`, `nnac.eval_float`,
//! `nnac.eval_quantized`): the float32 interpreter on the imported graph, or the
//! quantized one on the compiled int8 graph (outputs dequantized to float32). An input
//! with one extra leading axis `N` runs `N` frames one after another (inputs without
//! it are reused for every frame) and every output is stacked the same way (the files
//! they go to: `outputs.rs`).

use crate::calib::Calibration;
use crate::error::Error;
use crate::model::QuantArgs;
use crate::options::CompileOptions;
use nnac_interp::npy::read_npy;
use nnac_interp::run_float;
use nnac_ir::{Graph, Tensor, TensorData, TensorType};
use nnac_isa::HwConfig;
use nnac_passes::run_quantized;
use std::collections::BTreeMap;
use std::path::Path;

/// The model `eval` runs: the float graph, or the compiled int8 graph.
pub enum Runner {
    Float(Graph),
    Quantized(Graph),
}

impl Runner {
    /// Folds, fuses, calibrates on `calib` and quantizes as `compile` does, with the
    /// same ops on the host (partitioned for the FSD NNA), so that `nnac run` of the
    /// program is bit-exact with this interpreter (no accuracy report: only the
    /// quantized graph is used). A graph that then fails to lower for another reason
    /// (SRAM, encoding) still runs here: `compile` reports that error.
    pub fn quantized(
        graph: Graph,
        calib: &Calibration,
        quant: &QuantArgs,
    ) -> Result<Runner, Error> {
        let opts = CompileOptions {
            quant: quant.clone(),
            measure: false,
            ..CompileOptions::default()
        };
        let parted =
            crate::analyze::partition(&graph, calib, &HwConfig::fsd(), &opts, false, &|_, _| {})?;
        Ok(Runner::Quantized(parted.compiled.graph))
    }

    /// One frame: every graph output by name.
    pub fn run(
        &self,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>, Error> {
        match self {
            Runner::Float(g) => run_float(g, inputs).map_err(|e| e.to_string()),
            Runner::Quantized(g) => run_quantized(g, inputs).map_err(|e| e.to_string()),
        }
        .map_err(|e| Error::user(format!("evaluation failed: {e}")))
    }

    /// Every frame of the feeds (`frames`: their common count, `None` for one
    /// unstacked frame), outputs collected per name in frame order.
    pub fn run_frames(
        &self,
        feeds: &BTreeMap<String, Feed>,
        frames: Option<usize>,
    ) -> Result<BTreeMap<String, Vec<Tensor>>, Error> {
        let mut results: BTreeMap<String, Vec<Tensor>> = BTreeMap::new();
        for f in 0..frames.unwrap_or(1) {
            let inputs: BTreeMap<String, Tensor> = feeds
                .iter()
                .map(|(n, feed)| (n.clone(), frame_of(feed, f)))
                .collect();
            for (name, t) in self.run(&inputs)? {
                results.entry(name).or_default().push(t);
            }
        }
        Ok(results)
    }
}

/// One graph input's data: a single frame or `frames` stacked along a new axis 0.
pub struct Feed {
    pub tensor: Tensor,
    pub frames: Option<usize>,
}

/// Graph input `name` of type `ty` read from an `.npy` file.
pub fn read_feed(name: &str, ty: &TensorType, path: &Path) -> Result<Feed, Error> {
    let t = read_npy(path).map_err(|e| Error::user(format!("input '{name}': {e}")))?;
    feed(name, ty, t, &path.display().to_string())
}

/// Graph input `name` of type `ty` from tensor `t`: one frame or N stacked; errors
/// start with `origin` (the file, or what else the tensor came from).
pub fn feed(name: &str, ty: &TensorType, t: Tensor, origin: &str) -> Result<Feed, Error> {
    if t.dtype() != ty.dtype {
        return Err(Error::user(format!(
            "{origin}: input '{name}' needs {} data, the file holds {}",
            ty.dtype,
            t.dtype()
        )));
    }
    let (n, stacked) = crate::frame_shape::frames_in(name, &t.shape, &ty.shape)
        .map_err(|m| Error::user(format!("{origin}: {m}")))?;
    Ok(Feed {
        tensor: t,
        frames: stacked.then_some(n),
    })
}

/// The common frame count of all framed inputs (`None` if no input is framed).
pub fn frame_count(feeds: &BTreeMap<String, Feed>) -> Result<Option<usize>, Error> {
    let mut frames: Option<(usize, &str)> = None;
    for (name, f) in feeds {
        match (f.frames, frames) {
            (Some(n), Some((m, other))) if n != m => {
                return Err(Error::user(format!(
                    "input '{name}' has {n} frames but input '{other}' has {m}"
                )));
            }
            (Some(n), None) => frames = Some((n, name)),
            _ => {}
        }
    }
    Ok(frames.map(|(n, _)| n))
}

/// Frame `f` of a feed (the whole tensor when it is not framed).
pub fn frame_of(feed: &Feed, f: usize) -> Tensor {
    let Some(n) = feed.frames else {
        return feed.tensor.clone();
    };
    let shape = feed.tensor.shape[1..].to_vec();
    let len = feed.tensor.numel() / n;
    let range = f * len..(f + 1) * len;
    let data = match &feed.tensor.data {
        TensorData::F32(v) => TensorData::F32(v[range].to_vec()),
        TensorData::I8(v) => TensorData::I8(v[range].to_vec()),
        TensorData::U8(v) => TensorData::U8(v[range].to_vec()),
        TensorData::I32(v) => TensorData::I32(v[range].to_vec()),
        TensorData::I64(v) => TensorData::I64(v[range].to_vec()),
    };
    Tensor { shape, data }
}

/// Name and stacked tensor of every graph output, in graph output order.
pub fn stack_outputs(
    graph: &Graph,
    mut results: BTreeMap<String, Vec<Tensor>>,
    frames: Option<usize>,
) -> Result<Vec<(String, Tensor)>, Error> {
    let mut out = Vec::new();
    for o in graph.outputs() {
        let parts = results.remove(&o.name).ok_or_else(|| {
            Error::internal("eval", format!("output '{}' was not produced", o.name))
        })?;
        let tensor = match frames {
            None => parts
                .into_iter()
                .next()
                .ok_or_else(|| Error::internal("eval", "no frame ran"))?,
            Some(n) => {
                let mut shape = vec![n];
                shape.extend_from_slice(&parts[0].shape);
                let data: Vec<f32> = parts.iter().flat_map(|t| t.to_f32_vec()).collect();
                Tensor::f32(shape, data).ok_or_else(|| {
                    Error::internal(
                        "eval",
                        format!("frames of output '{}' differ in size", o.name),
                    )
                })?
            }
        };
        let tensor = Tensor {
            shape: tensor.shape.clone(),
            data: TensorData::F32(tensor.to_f32_vec()),
        };
        out.push((o.name.clone(), tensor));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split() {
        let feed = Feed {
            tensor: Tensor::f32(vec![3, 1, 2], vec![1., 2., 3., 4., 5., 6.]).unwrap(),
            frames: Some(3),
        };
        assert_eq!(
            frame_of(&feed, 1),
            Tensor::f32(vec![1, 2], vec![3., 4.]).unwrap()
        );
    }
}
