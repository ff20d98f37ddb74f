//! Calibration without data (`nnac compile MODEL` with no `--calib`): a few seeded
//! synthetic frames, so that a model compiles as the design card writes it. The
//! ranges they give are not those of real inputs: the compile prints a warning and
//! the program's metadata records it (`nnac run` / `profile` repeat it).

use crate::error::Error;
use nnac_ir::{DType, Graph, Tensor, TensorData};
use nnac_passes::Frame;
use nnac_runtime_sim::rng::SplitMix64;

/// Number of synthetic frames.
pub const FRAMES: usize = 8;
/// Seed of the first frame (frame `k` uses `SEED + k`).
pub const SEED: u64 = 0x6e6e_6163;

/// The metadata note and warning text: the distribution the frames were drawn from.
pub fn description() -> String {
    format!(
        "synthetic calibration: {FRAMES} frames of i.i.d. standard normal values (N(0, 1), \
         seeds {SEED:#x}+k), not real data"
    )
}

/// The warning printed by `compile` (and repeated by `run` and `profile`).
pub fn warning(note: &str) -> String {
    format!(
        "warning: {note}: the int8 ranges and accuracy are not representative of real \
         inputs; give real frames with --calib PATH (an .npy, an image, or a directory \
         of them)"
    )
}

/// The warning for a program calibrated on synthetic frames (its metadata note says
/// so), which `nnac run` / `profile` repeat on stderr; `None` for real calibration.
pub fn program_warning(p: &nnac_isa::Program) -> Option<String> {
    p.meta.note(nnac_isa::NOTE_CALIBRATION).map(warning)
}

/// [`FRAMES`] frames of every graph input, each element drawn from N(0, 1) with a
/// SplitMix64 generator and the Box-Muller transform (deterministic on every
/// machine). Inputs that are not float32 cannot be made up: an error names them.
pub fn frames(graph: &Graph) -> Result<Vec<Frame>, Error> {
    let mut out = vec![Frame::new(); FRAMES];
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
    use super::{normal, SplitMix64};

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
