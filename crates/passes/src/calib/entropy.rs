//! TensorRT's entropy calibration: choose the |x| threshold whose quantized
//! distribution (`levels` bins) has the least KL divergence from the reference
//! distribution clipped at that threshold.

use super::histogram::{Histogram, BINS};

/// The KL-optimal threshold of `h` for `levels` quantization bins.
pub fn kl_threshold(h: &Histogram, levels: usize) -> f32 {
    if h.total() == 0 || h.range == 0.0 {
        return h.range;
    }
    let hist: Vec<f64> = h.counts.iter().map(|&c| c as f64).collect();
    let mut best = (f64::INFINITY, BINS);
    for i in levels..=BINS {
        let kl = divergence(&hist, i, levels);
        if kl < best.0 {
            best = (kl, i);
        }
    }
    best.1 as f32 * h.bin_width()
}

/// KL(P || Q) for the first `i` bins: P clips the tail into bin `i - 1`, Q merges
/// P's bins into `levels` groups and spreads each group evenly over its non-empty bins.
fn divergence(hist: &[f64], i: usize, levels: usize) -> f64 {
    let mut p: Vec<f64> = hist[..i].to_vec();
    p[i - 1] += hist[i..].iter().sum::<f64>();
    let mut q = vec![0f64; i];
    for j in 0..levels {
        let (lo, hi) = (
            j * i / levels,
            ((j + 1) * i / levels).max(j * i / levels + 1).min(i),
        );
        let src = &hist[lo..hi];
        let nonzero = src.iter().filter(|&&c| c > 0.0).count();
        if nonzero == 0 {
            continue;
        }
        let avg = src.iter().sum::<f64>() / nonzero as f64;
        for k in lo..hi {
            if hist[k] > 0.0 {
                q[k] = avg;
            }
        }
    }
    let (ps, qs): (f64, f64) = (p.iter().sum(), q.iter().sum());
    if ps == 0.0 || qs == 0.0 {
        return f64::INFINITY;
    }
    let mut kl = 0.0;
    for k in 0..i {
        if p[k] > 0.0 {
            let pk = p[k] / ps;
            // A bin P has and Q lacks (only the clipped tail bin) gets a small floor.
            let qk = (q[k] / qs).max(1e-12);
            kl += pk * (pk / qk).ln();
        }
    }
    kl
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaussian_hist(n: usize, zeros: usize) -> Histogram {
        let mut s: u64 = 0x1234_5678_9abc_def1;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let xs: Vec<f32> = (0..n)
            .map(|_| {
                let (u, v) = (next().max(1e-12), next());
                ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
            })
            .chain(std::iter::repeat_n(0.0, zeros))
            .collect();
        let mut h = Histogram::default();
        h.add(&xs);
        h
    }

    #[test]
    fn gaussian_thresholds_are_sane_and_ignore_the_zero_spike() {
        let h = gaussian_hist(200_000, 0);
        let t = kl_threshold(&h, 128);
        // Clips the extreme tail (max ~4.5 sigma) but keeps well beyond 3 sigma.
        assert!(t > 3.5 && t < h.range, "threshold {t}, range {}", h.range);
        // Half of the values exactly zero (ReLU): same threshold.
        let hz = gaussian_hist(200_000, 200_000);
        assert_eq!(kl_threshold(&hz, 128), t);
        assert!(kl_threshold(&h, 256) > 3.5);
    }

    #[test]
    fn degenerate_histograms() {
        assert_eq!(kl_threshold(&Histogram::default(), 128), 0.0);
        let mut h = Histogram::default();
        h.add(&[0.0, 0.0]);
        assert_eq!(kl_threshold(&h, 128), 0.0);
    }
}
