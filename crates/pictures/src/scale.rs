//! Axis scales: data values to pixels, and the tick values an axis shows.

/// A logarithmic scale over whole decades `10^lo ..= 10^hi` onto pixels `p0 ..= p1`
/// (`p1 < p0` for a y axis growing upwards).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogScale {
    /// Exponents of the first and last decade (`lo < hi`).
    pub lo: i32,
    pub hi: i32,
    pub p0: f64,
    pub p1: f64,
}

impl LogScale {
    /// The decades that hold every positive finite value of `values` (and, when none
    /// is, `1 ..= 10`), with at least `min_decades` between them.
    pub fn covering(values: impl IntoIterator<Item = f64>, min_decades: i32) -> (i32, i32) {
        let (mut lo, mut hi) = (i32::MAX, i32::MIN);
        for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
            let e = v.log10();
            lo = lo.min(e.floor() as i32);
            hi = hi.max(e.ceil() as i32);
        }
        if lo > hi {
            return (0, min_decades.max(1));
        }
        if hi <= lo {
            hi = lo + 1;
        }
        while hi - lo < min_decades {
            hi += 1;
            if hi - lo < min_decades {
                lo -= 1;
            }
        }
        (lo, hi)
    }

    /// Pixel of value `v` (> 0); values outside the decades extrapolate.
    pub fn px(&self, v: f64) -> f64 {
        let t = (v.log10() - f64::from(self.lo)) / f64::from(self.hi - self.lo);
        self.p0 + t * (self.p1 - self.p0)
    }

    /// Major ticks: every decade's value.
    pub fn decades(&self) -> Vec<f64> {
        (self.lo..=self.hi).map(|e| 10f64.powi(e)).collect()
    }

    /// Minor ticks: 2..9 times every decade but the last.
    pub fn minor(&self) -> Vec<f64> {
        (self.lo..self.hi)
            .flat_map(|e| (2..10).map(move |m| f64::from(m) * 10f64.powi(e)))
            .collect()
    }
}

/// A linear scale `v0 ..= v1` onto pixels `p0 ..= p1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinScale {
    pub v0: f64,
    pub v1: f64,
    pub p0: f64,
    pub p1: f64,
}

impl LinScale {
    /// Pixel of value `v`.
    pub fn px(&self, v: f64) -> f64 {
        let span = self.v1 - self.v0;
        if span == 0.0 {
            return self.p0;
        }
        self.p0 + (v - self.v0) / span * (self.p1 - self.p0)
    }

    /// Tick values at a step of 1, 2 or 5 times a power of ten giving about `n`
    /// intervals, from `v0` to `v1` inclusive.
    pub fn ticks(&self, n: u32) -> Vec<f64> {
        let span = self.v1 - self.v0;
        if span.is_nan() || span <= 0.0 || !span.is_finite() {
            return vec![self.v0];
        }
        let raw = span / f64::from(n.max(1));
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        let first = (self.v0 / step).ceil() as i64;
        let last = (self.v1 / step).floor() as i64;
        (first..=last).map(|k| k as f64 * step).collect()
    }
}

/// A value with an SI prefix and `unit`: `2.5 T` + `ops/s` = `2.5 Tops/s`.
pub fn si(v: f64, unit: &str) -> String {
    const PREFIX: [(f64, &str); 7] = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
    ];
    if v == 0.0 || !v.is_finite() {
        return format!("{v} {unit}");
    }
    let a = v.abs();
    if a < 1.0 {
        return format!("{} {unit}", trim(v, 3));
    }
    let (m, p) = PREFIX
        .iter()
        .find(|(m, _)| a >= *m)
        .copied()
        .unwrap_or((1.0, ""));
    format!("{} {p}{unit}", trim(v / m, 3))
}

/// `v` with at most `sig` significant digits, trailing zeros dropped.
fn trim(v: f64, sig: i32) -> String {
    let digits = (sig - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A decade as a tick label: `0.01`, `0.1`, `1`, `10`, `100`, `1k`, `10M`, ... (with
/// `unit`: `1 GB/s`).
pub fn decade_label(e: i32, unit: &str) -> String {
    let s = si(10f64.powi(e), unit);
    if unit.is_empty() {
        s.replace(' ', "")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_scale_maps_decades_evenly() {
        let s = LogScale {
            lo: 0,
            hi: 4,
            p0: 100.0,
            p1: 500.0,
        };
        assert!((s.px(1.0) - 100.0).abs() < 1e-9);
        assert!((s.px(100.0) - 300.0).abs() < 1e-9);
        assert_eq!(s.decades().len(), 5);
        assert_eq!(s.minor().len(), 32);
    }

    #[test]
    fn covering_spans_all_positive_values() {
        assert_eq!(
            LogScale::covering([3.0, 4000.0, 0.0, f64::INFINITY], 1),
            (0, 4)
        );
        assert_eq!(LogScale::covering([5.0], 3), (-1, 2));
        assert_eq!(LogScale::covering([], 2), (0, 2));
    }

    #[test]
    fn linear_ticks_are_round() {
        let s = LinScale {
            v0: 0.0,
            v1: 7.3,
            p0: 0.0,
            p1: 100.0,
        };
        assert_eq!(s.ticks(5), vec![0.0, 2.0, 4.0, 6.0]);
    }

    #[test]
    fn si_prefixes() {
        assert_eq!(si(36.864e12, "ops/s"), "36.9 Tops/s");
        assert_eq!(si(1e9, "B/s"), "1 GB/s");
        assert_eq!(si(0.25, "ops/B"), "0.25 ops/B");
        assert_eq!(decade_label(3, ""), "1k");
        assert_eq!(decade_label(-2, ""), "0.01");
    }
}
