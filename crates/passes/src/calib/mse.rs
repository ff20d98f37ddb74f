//! Minimum-MSE clipping: choose the |x| threshold `t` whose quantization of the
//! histogrammed values has the least expected squared error — clipping error
//! `(|x| - t)^2` above `t`, rounding noise `step^2 / 12` below it, where `step` is the
//! code step of the range `[max(lo, -t), min(hi, t)]` on 255 steps (the actual
//! activation quantization of `params::act_quant`).

use super::histogram::{Histogram, BINS};

/// Fewest bins a candidate threshold keeps (never clip below 1/16 of the range).
const MIN_BINS: usize = BINS / 16;

/// The MSE-optimal threshold of `h` for a value observed in `[lo, hi]` (`lo <= 0 <= hi`).
pub fn mse_threshold(h: &Histogram, lo: f32, hi: f32) -> f32 {
    if h.total() == 0 || h.range == 0.0 {
        return h.range;
    }
    let w = f64::from(h.bin_width());
    let (lo, hi) = (f64::from(-lo), f64::from(hi));
    // Suffix sums over bins at or above i: count, sum of centres, sum of squares.
    let mut n = vec![0f64; BINS + 1];
    let mut s1 = vec![0f64; BINS + 1];
    let mut s2 = vec![0f64; BINS + 1];
    for i in (0..BINS).rev() {
        let c = h.counts[i] as f64;
        let x = (i as f64 + 0.5) * w;
        n[i] = n[i + 1] + c;
        s1[i] = s1[i + 1] + c * x;
        s2[i] = s2[i + 1] + c * x * x;
    }
    let total = n[0];
    let mut best = (f64::INFINITY, BINS);
    for i in MIN_BINS..=BINS {
        let t = i as f64 * w;
        let step = (lo.min(t) + hi.min(t)) / 255.0;
        // Values in bins >= i are clipped to t; the others are rounded.
        let clip = s2[i] - 2.0 * t * s1[i] + t * t * n[i];
        let round = (total - n[i]) * step * step / 12.0;
        let e = clip + round;
        if e < best.0 {
            best = (e, i);
        }
    }
    best.1 as f32 * h.bin_width()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_of_uniform_exponential_and_outliers() {
        // Uniform on [0, 1]: nothing to gain from clipping.
        let mut u = Histogram::default();
        u.add(
            &(1..=100_000)
                .map(|i| i as f32 / 100_000.0)
                .collect::<Vec<_>>(),
        );
        let t = mse_threshold(&u, 0.0, 1.0);
        assert!(t > 0.97, "{t}");
        // Exponential (deterministic quantiles, max ln(2n) = 12.9): the optimum of
        // 2 e^-t + t^2 / (12 * 255^2) is about 11.1, below the maximum.
        let n = 200_000;
        let xs: Vec<f32> = (0..n)
            .map(|i| -(1.0 - (i as f64 + 0.5) / n as f64).ln() as f32)
            .collect();
        let mut e = Histogram::default();
        e.add(&xs);
        let t = mse_threshold(&e, 0.0, e.range);
        assert!(t > 10.0 && t < 12.3, "{t} of {}", e.range);
        // A few huge outliers cost more clipped than rounded: kept.
        let mut tail = Histogram::default();
        let mut xs: Vec<f32> = (1..=100_000).map(|i| (i % 1000) as f32 / 1000.0).collect();
        xs.extend([50.0, 60.0, 100.0]);
        tail.add(&xs);
        assert!(mse_threshold(&tail, 0.0, 100.0) > 50.0);
        assert_eq!(mse_threshold(&Histogram::default(), 0.0, 0.0), 0.0);
    }
}
