//! Calibration: runs the float interpreter over the calibration frames, keeps per
//! value (by node name) the min, max and a histogram of |x|, and turns them into an
//! activation range by the chosen method.

mod entropy;
mod histogram;

pub use entropy::kl_threshold;
pub use histogram::{Histogram, BINS};

use crate::float_eval::{run_observed, Frame};
use crate::{CalibMethod, PassError, Progress, ProgressEvent};
use nnac_ir::{DType, Graph};
use std::collections::BTreeMap;

/// Fewest nonzero samples a value needs before percentile / entropy may clip it.
pub const MIN_CLIP_SAMPLES: u64 = BINS as u64;

/// Statistics of one value over all calibration frames.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub min: f32,
    pub max: f32,
    pub hist: Histogram,
    pub seen: bool,
}

impl Stats {
    pub fn add(&mut self, xs: &[f32]) {
        let (lo, hi) = xs
            .iter()
            .filter(|x| x.is_finite())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &x| {
                (l.min(x), h.max(x))
            });
        if lo > hi {
            return;
        }
        if self.seen {
            self.min = self.min.min(lo);
            self.max = self.max.max(hi);
        } else {
            (self.min, self.max, self.seen) = (lo, hi, true);
        }
        self.hist.add(xs);
    }

    /// The range `[lo, hi]` to quantize to (always contains 0). Clipping methods need
    /// a populated histogram: with fewer than [`MIN_CLIP_SAMPLES`] nonzero samples
    /// (e.g. logits of a few calibration frames) the value keeps its min/max range —
    /// measured: KL on 60 logits clipped them to 3 dB SQNR.
    pub fn range(&self, method: CalibMethod, percentile: f32) -> (f32, f32) {
        let (lo, hi) = (self.min.min(0.0), self.max.max(0.0));
        if self.hist.total() < MIN_CLIP_SAMPLES {
            return (lo, hi);
        }
        let t = match method {
            CalibMethod::MinMax => return (lo, hi),
            CalibMethod::Percentile => self.hist.percentile(f64::from(percentile) / 100.0),
            CalibMethod::Entropy => kl_threshold(&self.hist, if lo < 0.0 { 128 } else { 256 }),
        };
        (lo.max(-t), hi.min(t))
    }
}

/// Per-node-name statistics of every f32 value of `g` (graph inputs included) over
/// `frames`; `progress` is told after every frame.
pub fn collect(
    g: &Graph,
    frames: &[Frame],
    progress: Option<&Progress>,
) -> Result<BTreeMap<String, Stats>, PassError> {
    if frames.is_empty() {
        return Err(PassError::Calib("no calibration frames".into()));
    }
    let mut stats: BTreeMap<String, Stats> = BTreeMap::new();
    for (i, frame) in frames.iter().enumerate() {
        check_frame(g, frame, i)?;
        run_observed(g, frame, &format!("calibration frame {i}"), &mut |v, t| {
            if v.port == 0 && t.dtype() == DType::F32 {
                if let Some(xs) = t.as_f32() {
                    stats
                        .entry(g.node(v.node).name.clone())
                        .or_default()
                        .add(xs);
                }
            }
        })?;
        if let Some(p) = progress {
            p.report(ProgressEvent::Calibrate {
                done: i + 1,
                total: frames.len(),
            });
        }
    }
    Ok(stats)
}

/// Checks that a frame gives every graph input with its element count.
pub fn check_frame(g: &Graph, frame: &Frame, index: usize) -> Result<(), PassError> {
    for &id in g.inputs() {
        let node = g.node(id);
        let want = &node.outputs[0];
        match frame.get(&node.name) {
            None => {
                return Err(PassError::Calib(format!(
                    "frame {index} lacks input '{}'",
                    node.name
                )))
            }
            Some(t) if t.numel() != want.numel() => {
                return Err(PassError::Calib(format!(
                    "frame {index}: input '{}' needs shape {:?}, got {:?}",
                    node.name, want.shape, t.shape
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}
