//! Calibration without data (`nnac compile MODEL` with no `--calib`): a few seeded
//! synthetic frames, so that a model compiles as the design card writes it. The
//! ranges they give are not those of real inputs: the compile prints a warning and
//! the program's metadata records it (`nnac run` / `profile` repeat it).

use crate::error::Error;
use nnac_ir::{DType, Graph, Tensor, TensorData};
use nnac_passes::Frame;
use nnac_runtime_sim::rng::SplitMix64;

/// Most synthetic frames.
pub const FRAMES: usize = 8;
/// Fewest input values the synthetic frames hold together: the activation ranges are
/// percentiles over every element of a frame, so a frame of a camera-size input holds
/// as many samples as eight small ones, and calibration (the float interpreter on
/// every frame) costs a multiple of the frame count.
pub const MIN_VALUES: usize = 1 << 20;

/// How many synthetic frames a graph gets: enough to hold [`MIN_VALUES`] input values,
/// at least 1 and at most [`FRAMES`] (224x224 RGB: 7; 320x320: 4; 960x1280: 1).
pub fn frame_count(graph: &Graph) -> usize {
    let per_frame: usize = graph
        .inputs()
        .iter()
        .map(|&id| graph.node(id).outputs[0].shape.iter().product::<usize>())
        .sum();
    MIN_VALUES.div_ceil(per_frame.max(1)).clamp(1, FRAMES)
}
/// Seed of the first frame (frame `k` uses `SEED + k`).
pub const SEED: u64 = 0x6e6e_6163;

/// The metadata note and warning text: the number of frames and the distribution
/// they were drawn from.
pub fn description(frames: usize) -> String {
    format!(
        "synthetic calibration: {frames} frame(s) of i.i.d. standard normal values (N(0, 1), \
         seeds {SEED:#x}+k), not real data"
    )
}

/// The warning printed by `compile` (and repeated by `run` and `profile`).
pub fn warning(note: &str) -> String {
    format!(
        "warning: {note}: the int8 ranges and accuracy are not representative of real \
         inputs, and bias correction is skipped; give real frames with --calib PATH (an \
         .npy, an image, or a directory of them)"
    )
}

/// The warning for a program calibrated on synthetic frames (its metadata note says
/// so), which `nnac run` / `profile` repeat on stderr; `None` for real calibration.
pub fn program_warning(p: &nnac_isa::Program) -> Option<String> {
    p.meta.note(nnac_isa::NOTE_CALIBRATION).map(warning)
}

/// [`frame_count`] frames of every graph input, each element drawn from N(0, 1) with a
/// SplitMix64 generator and the Box-Muller transform (deterministic on every
/// machine). Inputs that are not float32 cannot be made up: an error names them.
pub fn frames(graph: &Graph) -> Result<Vec<Frame>, Error> {
    let mut out = vec![Frame::new(); frame_count(graph)];
    for &id in graph.inputs() {
        let node = graph.node(id);
        let t = &node.outputs[0];
        if t.dtype != DType::F32 {
            return Err(Error::user(format!(
                "input '{}' is {:?}, not float32: synthetic calibration frames cannot be \
                 made for it; give --calib {}=PATH",
                node.name, t.dtype, node.name
            )));
        }
        let n: usize = t.shape.iter().product();
        for (k, frame) in out.iter_mut().enumerate() {
            let mut rng = SplitMix64::new(SEED.wrapping_add(k as u64));
            let data: Vec<f32> = (0..n).map(|_| normal(&mut rng)).collect();
            let tensor = Tensor::new(t.shape.clone(), TensorData::F32(data))
                .ok_or_else(|| Error::internal("synthetic calibration", "frame size"))?;
            frame.insert(node.name.clone(), tensor);
        }
    }
    Ok(out)
}

/// Uniform in (0, 1].
fn unit(rng: &mut SplitMix64) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
}

/// One standard normal value (Box-Muller, the cosine branch).
fn normal(rng: &mut SplitMix64) -> f32 {
    let (u, v) = (unit(rng), unit(rng));
    ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
}

#[cfg(test)]
mod tests {
    use super::{frame_count, normal, SplitMix64};

    fn graph_with_input(shape: &str) -> nnac_ir::Graph {
        nnac_ir::parse(&format!(
            "graph \"g\"\ninputs %x\n%x = input() -> f32[{shape}]\n%y = relu(%x) -> f32[{shape}]\noutput \"y\" = %y\n"
        ))
        .unwrap()
    }

    #[test]
    fn frames_hold_a_million_values_at_most_eight_frames() {
        assert_eq!(frame_count(&graph_with_input("1x3x8x8")), 8);
        assert_eq!(frame_count(&graph_with_input("1x3x224x224")), 7);
        assert_eq!(frame_count(&graph_with_input("1x3x320x320")), 4);
        assert_eq!(frame_count(&graph_with_input("1x3x960x1280")), 1);
    }

    #[test]
    fn normal_values_have_mean_0_and_variance_1() {
        let mut r = SplitMix64::new(super::SEED);
        let v: Vec<f64> = (0..100_000).map(|_| f64::from(normal(&mut r))).collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
    }
}
