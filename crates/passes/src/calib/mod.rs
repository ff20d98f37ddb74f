//! Calibration: runs the float interpreter over the calibration frames, keeps per
//! value (by node name) the min, max and a histogram of |x|, and turns them into an
//! activation range by the chosen method.

mod entropy;
mod histogram;
mod mse;

pub use entropy::kl_threshold;
pub use histogram::{Histogram, BINS};
pub use mse::mse_threshold;

use crate::float_eval::{run_observed, Frame};
use crate::float_ref::{FloatRef, FrameValues};
use crate::quant::gptq::{self, Hessian};
use crate::util::is_const_dot;
use crate::{CalibMethod, PassError, Progress, ProgressEvent};
use nnac_ir::{DType, Graph, NodeId, Value};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Fewest nonzero samples a value needs before percentile / entropy may clip it.
pub const MIN_CLIP_SAMPLES: u64 = BINS as u64;

/// Statistics of one value over all calibration frames.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub min: f32,
    pub max: f32,
    pub hist: Histogram,
    pub seen: bool,
    /// Per-channel sums (axis 1 of a `[1, C, ...]` value) over all frames and
    /// positions, and the number of samples per channel: the float means bias
    /// correction aims the int8 dot products at.
    pub chan_sum: Vec<f64>,
    pub chan_samples: u64,
    /// For a dot product with constant weights, `sum x x^T` of its input vectors
    /// (GPTQ weight rounding, `quant::gptq`), when asked for.
    pub hessian: Option<Hessian>,
}

impl Stats {
    pub fn add(&mut self, xs: &[f32]) {
        let (lo, hi) = finite_min_max(xs);
        if lo > hi {
            return;
        }
        if self.seen {
            self.min = self.min.min(lo);
            self.max = self.max.max(hi);
        } else {
            (self.min, self.max, self.seen) = (lo, hi, true);
        }
        self.hist.add_with_max(xs, (-lo).max(hi).max(0.0));
    }

    /// Adds the per-channel sums of a `[1, C, ...]` value (other shapes are skipped).
    pub fn add_channels(&mut self, shape: &[usize], xs: &[f32]) {
        if shape.len() < 2 || shape[0] != 1 || shape[1] == 0 || xs.is_empty() {
            return;
        }
        let c = shape[1];
        if self.chan_sum.len() != c {
            if !self.chan_sum.is_empty() {
                return;
            }
            self.chan_sum = vec![0.0; c];
        }
        let per = xs.len() / c;
        let sums: Vec<f64> = xs
            .par_chunks(per.max(1))
            .map(|p| p.iter().map(|&x| f64::from(x)).sum::<f64>())
            .collect();
        self.chan_sum
            .iter_mut()
            .zip(&sums)
            .for_each(|(a, b)| *a += b);
        self.chan_samples += per as u64;
    }

    /// The float mean of every channel (empty when no channel sums were kept).
    pub fn chan_means(&self) -> Vec<f64> {
        if self.chan_samples == 0 {
            return Vec::new();
        }
        let n = self.chan_samples as f64;
        self.chan_sum.iter().map(|s| s / n).collect()
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
            CalibMethod::Mse => mse_threshold(&self.hist, lo, hi),
        };
        (lo.max(-t), hi.min(t))
    }
}

/// The smallest and largest finite values of `xs` (`(inf, -inf)` if none), over
/// eight lanes and parallel blocks (min and max are exact: the split does not change
/// the result).
fn finite_min_max(xs: &[f32]) -> (f32, f32) {
    const NONE: (f32, f32) = (f32::INFINITY, f32::NEG_INFINITY);
    let merge = |a: (f32, f32), b: (f32, f32)| (a.0.min(b.0), a.1.max(b.1));
    let block = |b: &[f32]| {
        let (mut lo, mut hi) = ([f32::INFINITY; 8], [f32::NEG_INFINITY; 8]);
        let mut lanes = b.chunks_exact(8);
        for c in &mut lanes {
            for j in 0..8 {
                let x = c[j];
                let f = x.is_finite();
                lo[j] = if f && x < lo[j] { x } else { lo[j] };
                hi[j] = if f && x > hi[j] { x } else { hi[j] };
            }
        }
        let lanes_mm = lo
            .iter()
            .zip(&hi)
            .fold(NONE, |a, (&l, &h)| merge(a, (l, h)));
        lanes
            .remainder()
            .iter()
            .filter(|x| x.is_finite())
            .fold(lanes_mm, |a, &x| merge(a, (x, x)))
    };
    xs.par_chunks(1 << 16).map(block).reduce(|| NONE, merge)
}

/// What [`collect`] keeps beyond every value's range statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extras {
    /// The per-channel sums bias correction needs (for the outputs of dot products
    /// with constant weights).
    pub channel_means: bool,
    /// The input Hessians GPTQ rounding needs (dot products with constant weights,
    /// on at most [`gptq::MAX_FRAMES`] evenly spaced frames), in the dot's stats.
    pub hessians: bool,
}

/// Per-node-name statistics of every f32 value of `g` (graph inputs included) over
/// `frames`; `progress` is told after every frame. With `keep`, the values the
/// quantization report compares are kept for the frames it plans to keep; `extras`
/// says what else is kept.
pub fn collect(
    g: &Graph,
    frames: &[Frame],
    progress: Option<&Progress>,
    mut keep: Option<&mut FloatRef>,
    extras: Extras,
) -> Result<BTreeMap<String, Stats>, PassError> {
    if frames.is_empty() {
        return Err(PassError::Calib("no calibration frames".into()));
    }
    // Bias correction reads the channel means of the dot products it corrects: those
    // built from dot products with constant weights (fuse_dot).
    let const_dots = || g.node_ids().into_iter().filter(|&n| is_const_dot(g, n));
    let dots: BTreeSet<NodeId> = if extras.channel_means {
        const_dots().collect()
    } else {
        BTreeSet::new()
    };
    let mut stats: BTreeMap<String, Stats> = BTreeMap::new();
    // GPTQ: the dots reading each value, with their accumulators (in the dots' stats).
    let mut readers: BTreeMap<Value, Vec<String>> = BTreeMap::new();
    if extras.hessians {
        for n in const_dots() {
            let ins = g.node_inputs(n);
            let x = ins[0];
            let on_grid = |w: &nnac_ir::Tensor| {
                let m = w.shape.first().copied().unwrap_or(0);
                matches!(g.node(n).op, nnac_ir::Op::Conv(_))
                    && w.as_f32().is_some_and(|v| gptq::on_grid(v, m))
            };
            if ins.get(1).and_then(|&w| g.const_of(w)).is_some_and(on_grid) {
                continue;
            }
            let y = &g.node(n).outputs[0].shape;
            if let Some(h) = Hessian::for_op(&g.node(n).op, &g.value_type(x).shape, y) {
                let name = g.node(n).name.clone();
                stats.entry(name.clone()).or_default().hessian = Some(h);
                readers.entry(x).or_default().push(name);
            }
        }
    }
    let h_every = frames.len().div_ceil(gptq::MAX_FRAMES).max(1);
    for (i, frame) in frames.iter().enumerate() {
        check_frame(g, frame, i)?;
        let take_h = i % h_every == 0;
        let kept = keep.as_deref().filter(|k| k.keeps(i));
        let mut values: BTreeMap<String, Vec<f32>> = BTreeMap::new();
        let outputs = run_observed(g, frame, &format!("calibration frame {i}"), &mut |v, t| {
            let name = &g.node(v.node).name;
            if v.port == 0 && t.dtype() == DType::F32 {
                if let Some(xs) = t.as_f32() {
                    let st = stats.entry(name.clone()).or_default();
                    st.add(xs);
                    if dots.contains(&v.node) {
                        st.add_channels(&t.shape, xs);
                    }
                    for dot in readers.get(&v).filter(|_| take_h).into_iter().flatten() {
                        if let Some(h) = stats.get_mut(dot).and_then(|s| s.hessian.as_mut()) {
                            h.add(xs);
                        }
                    }
                }
            }
            if kept.is_some_and(|k| k.wants(name)) {
                values.insert(name.clone(), t.to_f32_vec());
            }
        })?;
        if let Some(k) = keep.as_deref_mut().filter(|k| k.keeps(i)) {
            k.push(FrameValues { values, outputs });
        }
        if let Some(p) = progress {
            p.report(ProgressEvent::Calibrate {
                done: i + 1,
                total: frames.len(),
            });
        }
    }
    Ok(stats)
}

pub use nnac_qinterp::check_frame;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_ignores_non_finite_values_in_every_lane_and_block() {
        let mut xs: Vec<f32> = (0..(1 << 17) + 11).map(|i| (i % 1000) as f32).collect();
        xs[3] = -7.5;
        xs[(1 << 16) + 9] = 1e6;
        xs[5] = f32::NAN;
        xs[6] = f32::INFINITY;
        xs[(1 << 17) + 10] = f32::NEG_INFINITY;
        assert_eq!(finite_min_max(&xs), (-7.5, 1e6));
        assert_eq!(finite_min_max(&[f32::NAN, 2.0, -1.0]), (-1.0, 2.0));
        assert_eq!(
            finite_min_max(&[f32::NAN; 9]),
            (f32::INFINITY, f32::NEG_INFINITY)
        );
    }
}
