//! The float values the quantization report compares with, kept from the calibration
//! runs so the report does not run the float interpreter a second time on the same
//! frames. Only the values the report compares are kept (the outputs of the original
//! nodes that the fused layers stand for, and the graph outputs), and only for as
//! many frames as fit in a budget ([`KEEP_BYTES`] by default); the report re-runs the float interpreter on
//! the rest (the interpreter is deterministic, so the values are the same either way).

use nnac_ir::{Graph, Tensor};
use std::collections::{BTreeMap, BTreeSet};

/// Most bytes of float values kept across all frames (the default of
/// `PassOptions::keep_float_bytes`).
pub const KEEP_BYTES: usize = 256 << 20;

/// The float values of one calibration frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameValues {
    /// By original node name.
    pub values: BTreeMap<String, Vec<f32>>,
    /// Graph outputs by output name.
    pub outputs: BTreeMap<String, Tensor>,
}

/// Which values to keep, and the frames kept so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FloatRef {
    names: BTreeSet<String>,
    /// Frames `0..keep_frames` are kept.
    keep_frames: usize,
    frames: Vec<FrameValues>,
}

impl FloatRef {
    /// Plans to keep the values of the nodes of float graph `g` named in `names` for
    /// the first frames of `n_frames` that fit in `budget` bytes.
    pub fn plan(g: &Graph, names: BTreeSet<String>, n_frames: usize, budget: usize) -> FloatRef {
        let per_frame: usize = g
            .node_ids()
            .into_iter()
            .filter(|&n| names.contains(&g.node(n).name))
            .map(|n| g.node(n).outputs[0].numel())
            .chain(g.outputs().iter().map(|o| g.value_type(o.value).numel()))
            .sum::<usize>()
            * std::mem::size_of::<f32>();
        FloatRef {
            names,
            keep_frames: n_frames.min(budget / per_frame.max(1)),
            frames: Vec::new(),
        }
    }

    /// Whether frame `i`'s values are kept (they are, once [`FloatRef::push`]ed).
    pub fn keeps(&self, i: usize) -> bool {
        i < self.keep_frames
    }

    /// Whether node `name`'s value is one the report compares.
    pub fn wants(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Stores the next kept frame's values.
    pub fn push(&mut self, frame: FrameValues) {
        debug_assert!(self.keeps(self.frames.len()));
        self.frames.push(frame);
    }

    /// Frame `i`'s kept values, if kept.
    pub fn frame(&self, i: usize) -> Option<&FrameValues> {
        self.frames.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_ir::{DType, TensorType};

    #[test]
    fn keeps_the_frames_that_fit() {
        let mut g = Graph::new("g");
        let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 4]));
        g.add_output("y", x);
        let names: BTreeSet<String> = ["x".to_string()].into();
        // x (4 floats) and the output y (4 floats): 32 bytes per frame.
        let r = FloatRef::plan(&g, names.clone(), 5, 100);
        assert!(r.keeps(2) && !r.keeps(3));
        assert!(r.wants("x") && !r.wants("y"));
        let r = FloatRef::plan(&g, names, 2, 1 << 20);
        assert!(r.keeps(1) && !r.keeps(2));
    }
}
