//! The tuners. Each proposes points of a [`Space`] to a [`Search`], which evaluates
//! the new ones through the cost model and stops every tuner at the same budget:
//! `budget` distinct points evaluated (a point proposed again is answered from the
//! search's record and costs nothing). A tuner's proposals depend only on the seed
//! and on the scores it got, so a seed gives the same search on every run, for any
//! `--jobs` (a batch is evaluated in parallel but answered in proposal order).

pub mod anneal;
pub mod exhaustive;
pub mod nsga2;
pub mod progressive;
pub mod random;

use crate::error::TuneError;
use crate::rng::Rng;
use crate::space::{Point, Space};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A point's score as the tuners see it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// Latency (s), area (mm^2), energy (J): the Pareto objectives.
    pub objectives: [f64; 3],
    /// The single objective's value (minimised).
    pub value: f64,
    /// 0 when every constraint holds (`Metrics::violation`); a design the exact
    /// model could not compile scores [`FAILED`].
    pub violation: f64,
}

/// The violation of a design that does not compile.
pub const FAILED: f64 = 1e6;

impl Scored {
    pub fn feasible(&self) -> bool {
        self.violation <= 0.0
    }

    /// One number to minimise: `ln(value)` when feasible, else above every feasible
    /// key and growing with the violation.
    pub fn key(&self) -> f64 {
        if self.feasible() {
            self.value.max(1e-300).ln()
        } else {
            1e3 + self.violation
        }
    }
}

/// The names of the tuners, as `--tuner` takes them.
pub const TUNERS: [&str; 5] = ["exhaustive", "random", "anneal", "progressive", "nsga2"];

/// A budgeted search over a space through a cost-model oracle.
pub struct Search<'a> {
    pub space: &'a Space,
    oracle: &'a mut dyn FnMut(&[Point]) -> Vec<Scored>,
    pub budget: usize,
    /// Every point evaluated, in evaluation order, with its score.
    pub evaluated: Vec<(Point, Scored)>,
    index: BTreeMap<Point, usize>,
    /// Best feasible objective value after each evaluation (`None` before the first
    /// feasible point).
    pub trace: Vec<Option<f64>>,
}

impl<'a> Search<'a> {
    pub fn new(
        space: &'a Space,
        budget: usize,
        oracle: &'a mut dyn FnMut(&[Point]) -> Vec<Scored>,
    ) -> Search<'a> {
        Search {
            space,
            oracle,
            budget,
            evaluated: Vec::new(),
            index: BTreeMap::new(),
            trace: Vec::new(),
        }
    }

    /// Evaluations left in the budget.
    pub fn remaining(&self) -> usize {
        self.budget.saturating_sub(self.evaluated.len())
    }

    /// The budget is spent or every point of the space has been evaluated.
    pub fn done(&self) -> bool {
        self.remaining() == 0 || self.evaluated.len() as u128 >= self.space.size()
    }

    /// Whether `p` has been evaluated.
    pub fn seen(&self, p: &Point) -> bool {
        self.index.contains_key(p)
    }

    /// Scores `pts`: new points are evaluated (in one batch, at most the remaining
    /// budget of them, in order); known points are answered from the record. `None`
    /// for a point cut by the budget.
    pub fn ask(&mut self, pts: &[Point]) -> Vec<Option<Scored>> {
        let mut fresh: Vec<Point> = Vec::new();
        for p in pts {
            if !self.index.contains_key(p) && !fresh.contains(p) && fresh.len() < self.remaining() {
                fresh.push(p.clone());
            }
        }
        if !fresh.is_empty() {
            let scores = (self.oracle)(&fresh);
            for (p, s) in fresh.into_iter().zip(scores) {
                self.index.insert(p.clone(), self.evaluated.len());
                self.evaluated.push((p, s));
                let prev = self.trace.last().copied().flatten();
                let now = if s.feasible() {
                    Some(prev.map_or(s.value, |b: f64| b.min(s.value)))
                } else {
                    prev
                };
                self.trace.push(now);
            }
        }
        pts.iter()
            .map(|p| self.index.get(p).map(|&i| self.evaluated[i].1))
            .collect()
    }

    /// The best point found (least key; the first of equals).
    pub fn best(&self) -> Option<(Point, Scored)> {
        self.evaluated
            .iter()
            .min_by(|a, b| a.1.key().total_cmp(&b.1.key()))
            .cloned()
    }

    /// A uniformly random point.
    pub fn random_point(&self, rng: &mut Rng) -> Point {
        Point(
            self.space
                .dims()
                .iter()
                .map(|&d| rng.below(d) as u32)
                .collect(),
        )
    }
}

/// Runs tuner `name` until the search is done.
pub fn run(name: &str, search: &mut Search, seed: u64) -> Result<(), TuneError> {
    let mut rng = Rng::new(seed, name.len() as u64);
    match name {
        "exhaustive" => exhaustive::run(search),
        "random" => {
            random::run(search, &mut rng);
            Ok(())
        }
        "anneal" => {
            anneal::run(search, &mut rng);
            Ok(())
        }
        "progressive" => {
            progressive::run(search, &mut rng);
            Ok(())
        }
        "nsga2" => {
            nsga2::run(search, &mut rng);
            Ok(())
        }
        other => Err(TuneError::options(
            "--tuner",
            format!("unknown tuner `{other}`; tuners: {}", TUNERS.join(", ")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A space of 3 axes with a smooth bowl-shaped objective (minimum at 5, 2, 7).
    pub(crate) fn bowl() -> (Space, impl FnMut(&[Point]) -> Vec<Scored>) {
        let space = Space::from_toml_str(
            "[hw]\nmac_rows = { min = 16, max = 256, step = 16 }\nmac_cols = { min = 16, max = 128, step = 16 }\nsram_bytes = { min = 1048576, max = 16777216, step = 1048576 }\n",
        )
        .unwrap();
        let f = |pts: &[Point]| {
            pts.iter()
                .map(|p| {
                    let d = |i: usize, c: f64| (f64::from(p.0[i]) - c).powi(2);
                    let v = 1.0 + d(0, 5.0) + d(1, 2.0) + d(2, 7.0);
                    Scored {
                        objectives: [v, f64::from(p.0[0] + p.0[1]), f64::from(p.0[2])],
                        value: v,
                        violation: 0.0,
                    }
                })
                .collect()
        };
        (space, f)
    }

    #[test]
    fn every_tuner_is_deterministic_and_keeps_the_budget() {
        for name in ["random", "anneal", "progressive", "nsga2"] {
            let run_once = |seed: u64| {
                let (space, mut f) = bowl();
                let mut s = Search::new(&space, 150, &mut f);
                run(name, &mut s, seed).unwrap();
                (s.evaluated.clone(), s.best().unwrap().1.value)
            };
            let (a, best) = run_once(3);
            let (b, _) = run_once(3);
            let (c, _) = run_once(4);
            assert_eq!(a, b, "{name}: same seed, same search");
            assert_ne!(a, c, "{name}: another seed, another search");
            assert_eq!(a.len(), 150, "{name}");
            // The space has 2048 points; every tuner beats the mean of the bowl.
            assert!(best < 20.0, "{name}: best {best}");
        }
    }

    #[test]
    fn guided_tuners_find_the_bowl_bottom() {
        for name in ["anneal", "progressive"] {
            let (space, mut f) = bowl();
            let mut s = Search::new(&space, 300, &mut f);
            run(name, &mut s, 1).unwrap();
            let b = s.best().unwrap();
            assert!(b.1.value <= 2.0, "{name}: {:?}", b);
        }
    }

    #[test]
    fn exhaustive_refuses_a_space_above_the_budget() {
        let (space, mut f) = bowl();
        let mut s = Search::new(&space, 100, &mut f);
        let e = run("exhaustive", &mut s, 0).unwrap_err();
        assert!(e.to_string().contains("--budget"), "{e}");
        let mut s = Search::new(&space, 5000, &mut f);
        run("exhaustive", &mut s, 0).unwrap();
        assert_eq!(s.evaluated.len(), 2048);
        assert_eq!(s.best().unwrap().1.value, 1.0);
        assert!(run("magic", &mut s, 0)
            .unwrap_err()
            .to_string()
            .contains("--tuner"));
    }
}
