//! A histogram of |x| over `[0, range]` that widens (re-binning) as larger values
//! arrive, so one pass over the calibration frames suffices.
//!
//! Exact zeros are not counted: every activation quantization represents 0 exactly,
//! and the zero spike of ReLU outputs (often half the values) would otherwise
//! dominate the KL search and drive entropy thresholds far too low (measured: a
//! half-zero Gaussian got a threshold of 1.7 sigma instead of 4.2).

use rayon::prelude::*;

pub const BINS: usize = 2048;

#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    pub counts: Vec<u64>,
    /// Upper edge of the last bin.
    pub range: f32,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BINS],
            range: 0.0,
        }
    }
}

impl Histogram {
    pub fn bin_width(&self) -> f32 {
        self.range / BINS as f32
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Adds the absolute values of `xs` (non-finite values are ignored).
    pub fn add(&mut self, xs: &[f32]) {
        let m = xs
            .iter()
            .filter(|x| x.is_finite())
            .fold(0f32, |m, x| m.max(x.abs()));
        self.add_with_max(xs, m);
    }

    /// [`Histogram::add`] when the largest finite `|x|` of `xs`, `m`, is known.
    /// Counting runs on blocks in parallel; the counts are integers, so the result
    /// does not depend on how the blocks are split.
    pub fn add_with_max(&mut self, xs: &[f32], m: f32) {
        if m > self.range {
            self.widen(m);
        }
        if self.range == 0.0 {
            return; // all zeros
        }
        let scale = BINS as f32 / self.range;
        let counts = xs
            .par_chunks(BLOCK)
            .map(|b| count_block(b, scale))
            .reduce_with(|mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            });
        if let Some(c) = counts {
            self.counts
                .iter_mut()
                .zip(&c)
                .for_each(|(x, &y)| *x += u64::from(y));
        }
    }

    /// Re-bins to a new range (each old bin goes to the new bin holding its centre).
    fn widen(&mut self, new_range: f32) {
        let old = std::mem::replace(&mut self.counts, vec![0; BINS]);
        let old_w = self.bin_width();
        self.range = new_range;
        if old_w == 0.0 {
            self.counts[0] = old.iter().sum();
            return;
        }
        let new_w = self.bin_width();
        for (i, c) in old.into_iter().enumerate() {
            let centre = (i as f32 + 0.5) * old_w;
            self.counts[((centre / new_w) as usize).min(BINS - 1)] += c;
        }
    }

    /// The smallest |x| threshold below which a fraction `p` (0..=1) of values lie.
    pub fn percentile(&self, p: f64) -> f32 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        let want = (p * total as f64).ceil() as u64;
        let mut acc = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= want {
                return (i + 1) as f32 * self.bin_width();
            }
        }
        self.range
    }
}

/// Values counted per parallel block (small enough for u32 counts).
const BLOCK: usize = 1 << 16;

/// Bin counts of one block: finite nonzero `|x|` at `scale` bins per unit (every
/// finite `|x|` is at most the range, so `|x| * scale` is at most about `BINS`).
/// Zeros and non-finite values go to a spare bin (index `BINS`, dropped) instead of
/// a branch; the bins of eight values are computed together (vectorisable), and four
/// interleaved count arrays keep repeated bins from serialising.
fn count_block(xs: &[f32], scale: f32) -> Vec<u32> {
    const LANES: usize = 4;
    let mut c = vec![0u32; LANES * (BINS + 1)];
    let bin = |x: f32| -> u32 {
        let b = ((x.abs() * scale) as u32).min(BINS as u32 - 1);
        if x.is_finite() && x != 0.0 {
            b
        } else {
            BINS as u32
        }
    };
    let mut eights = xs.chunks_exact(8);
    for e in &mut eights {
        let bins: [u32; 8] = std::array::from_fn(|j| bin(e[j]));
        for (j, &b) in bins.iter().enumerate() {
            c[(j % LANES) * (BINS + 1) + b as usize] += 1;
        }
    }
    for &x in eights.remainder() {
        c[bin(x) as usize] += 1;
    }
    (0..BINS)
        .map(|b| (0..LANES).map(|lane| c[lane * (BINS + 1) + b]).sum())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_keeps_counts_and_percentiles() {
        let mut h = Histogram::default();
        h.add(&[0.5, -1.0, 0.0]);
        h.add(&(0..1000).map(|i| i as f32 / 100.0).collect::<Vec<_>>());
        assert_eq!(h.total(), 1001); // zeros are not counted
        assert!((h.range - 9.99).abs() < 1e-6);
        let p50 = h.percentile(0.5);
        assert!((p50 - 5.0).abs() < 0.05, "{p50}");
        assert!((h.percentile(1.0) - h.range).abs() < 1e-5);
    }

    #[test]
    fn blocks_count_like_one_pass() {
        // More than one parallel block, with zeros, non-finite values and the maximum.
        let xs: Vec<f32> = (0..3 * BLOCK + 5)
            .map(|i| match i % 7 {
                0 => 0.0,
                1 => f32::NAN,
                2 => f32::NEG_INFINITY,
                _ => ((i * 37) % 1001) as f32 / 100.0 - 5.0,
            })
            .collect();
        let mut h = Histogram::default();
        h.add(&xs);
        let mut want = vec![0u64; BINS];
        let scale = BINS as f32 / h.range;
        for x in xs.iter().filter(|x| x.is_finite() && **x != 0.0) {
            want[((x.abs() * scale) as usize).min(BINS - 1)] += 1;
        }
        assert_eq!(h.range, 5.0);
        assert_eq!(h.counts, want);
    }
}
