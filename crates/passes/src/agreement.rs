//! Agreement of an int8 value with its float counterpart: the running sums behind
//! SQNR, cosine similarity and the largest error, shared by the compile report
//! (`report.rs`) and the accuracy analysis (`analysis.rs`).

/// Running sums over pairs `(x, y)`: `x` the float reference, `y` the int8 value
/// dequantized.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sums {
    xx: f64,
    yy: f64,
    xy: f64,
    ee: f64,
    max_abs: f64,
}

/// Agreement of an int8 value with its float counterpart.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Accuracy {
    /// `10 log10(sum x^2 / sum (x - y)^2)`; `None` when the error is exactly 0.
    pub sqnr_db: Option<f64>,
    pub cosine: f64,
}

impl Sums {
    /// Adds the pairs of `x` (float) and `y` (dequantized int8).
    pub fn add(&mut self, x: &[f32], y: &[f32]) {
        for (&a, &b) in x.iter().zip(y) {
            let (a, b) = (f64::from(a), f64::from(b));
            self.xx += a * a;
            self.yy += b * b;
            self.xy += a * b;
            self.ee += (a - b) * (a - b);
            self.max_abs = self.max_abs.max((a - b).abs());
        }
    }

    /// SQNR and cosine of the pairs added so far.
    pub fn accuracy(&self) -> Accuracy {
        let sqnr_db = (self.ee > 0.0).then(|| 10.0 * (self.xx / self.ee).log10());
        let den = (self.xx * self.yy).sqrt();
        let cosine = if den > 0.0 {
            self.xy / den
        } else if self.ee == 0.0 {
            1.0
        } else {
            0.0
        };
        Accuracy { sqnr_db, cosine }
    }

    /// The largest `|x - y|` seen.
    pub fn max_abs(&self) -> f64 {
        self.max_abs
    }

    /// `sum (x - y)^2`.
    pub fn error_energy(&self) -> f64 {
        self.ee
    }

    /// `sum x^2`.
    pub fn signal_energy(&self) -> f64 {
        self.xx
    }
}

/// An SQNR for tables: one decimal, or `exact` when there was no error.
pub fn db_text(sqnr_db: Option<f64>) -> String {
    sqnr_db.map_or("exact".to_string(), |v| format!("{v:.1}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_values_have_no_sqnr_and_cosine_one() {
        let mut s = Sums::default();
        s.add(&[1.0, -2.0], &[1.0, -2.0]);
        assert_eq!(
            s.accuracy(),
            Accuracy {
                sqnr_db: None,
                cosine: 1.0
            }
        );
        assert_eq!(s.max_abs(), 0.0);
    }

    #[test]
    fn sqnr_cosine_and_max_error_of_a_known_error() {
        let mut s = Sums::default();
        // Signal energy 1 + 9 = 10, error energy 0.01 + 0.01: SQNR 10 log10(500).
        s.add(&[1.0, 3.0], &[1.1, 2.9]);
        let a = s.accuracy();
        assert!((a.sqnr_db.unwrap() - 10.0 * 500f64.log10()).abs() < 1e-3);
        assert!(a.cosine > 0.99 && a.cosine < 1.0);
        assert!((s.max_abs() - 0.1).abs() < 1e-6);
        // All-zero reference against a non-zero value: cosine 0.
        let mut z = Sums::default();
        z.add(&[0.0], &[0.5]);
        assert_eq!(z.accuracy().cosine, 0.0);
    }
}
