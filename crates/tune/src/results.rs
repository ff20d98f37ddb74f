//! A run's results as one JSON document: what was searched (the configuration and its
//! fingerprint), every point evaluated with its analytical and exact metrics, and
//! what follows from them (front, best, Spearman, the FSD baseline, mapping changes,
//! the tuner comparison). `--resume` reads it back to continue a search; `nnac tune
//! merge` joins the documents of the shards of one run.

use crate::costs::CostModel;
use crate::error::TuneError;
use crate::mapping::MappingChange;
use crate::objective::{Constraints, Metrics, Objective};
use crate::space::{Point, Space};
use crate::workload::Workload;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Format version of the results document.
pub const VERSION: u32 = 1;

/// Which tier drives the tuner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CostTier {
    /// The tuner searches with the analytical model; the best points are confirmed
    /// with the exact one.
    Analytic,
    /// Every evaluation of the tuner is exact.
    Exact,
}

/// One model of the mix as the run saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    pub weight: f64,
    pub layers: usize,
    pub macs: u64,
    /// FNV-1a of the model's layer shapes (JSON): a resumed or merged run must
    /// see the same models.
    pub shapes_hash: String,
}

impl ModelInfo {
    pub fn of(w: &Workload) -> ModelInfo {
        let json = serde_json::to_string(&w.layers).unwrap_or_default();
        ModelInfo {
            name: w.name.clone(),
            weight: w.weight,
            layers: w.layers.len(),
            macs: w.macs(),
            shapes_hash: format!("{:016x}", nnac_isa::hw::fnv1a64(json.as_bytes())),
        }
    }
}

/// Everything that decides a run's evaluations (not `--jobs`, not the outputs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub models: Vec<ModelInfo>,
    pub space: Space,
    pub costs: CostModel,
    pub objective: Objective,
    pub constraints: Constraints,
    pub tuner: String,
    pub seed: u64,
    pub budget: usize,
    pub cost: CostTier,
    /// Points of the analytical front confirmed with the exact model.
    pub confirm: usize,
}

impl RunConfig {
    /// FNV-1a of the configuration's JSON, in hex.
    pub fn fingerprint(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{:016x}", nnac_isa::hw::fnv1a64(json.as_bytes()))
    }
}

/// What the exact model said about a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exact {
    Metrics(Metrics),
    /// The design cannot run a model (the compiler's error).
    Error(String),
}

impl Exact {
    pub fn metrics(&self) -> Option<&Metrics> {
        match self {
            Exact::Metrics(m) => Some(m),
            Exact::Error(_) => None,
        }
    }
}

/// One evaluated point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    pub point: Point,
    /// `key=value` of every axis.
    pub values: String,
    pub analytic: Metrics,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<Exact>,
}

/// Shard `index` of `count` (0-based index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Parses `K/N` (K in 0..N).
    pub fn parse(s: &str) -> Result<Shard, TuneError> {
        let bad = || {
            TuneError::options(
                "--shard",
                format!("`{s}`: expected K/N with 0 <= K < N, e.g. 0/4"),
            )
        };
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            k.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether the `i`-th exact evaluation of the run is this shard's.
    pub fn owns(&self, i: usize) -> bool {
        i % self.count == self.index
    }
}

/// The tuner comparison of `--compare-tuners`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub tuner: String,
    pub evaluations: usize,
    /// Best feasible objective value found after 1/8, 1/4, 1/2 and all of the budget.
    pub best_at: Vec<(usize, Option<f64>)>,
    pub best_values: Option<String>,
    /// Hypervolume of the tuner's front, objectives normalised by a reference point
    /// common to all tuners (1.1 x the largest value any tuner saw).
    pub hypervolume: f64,
    /// Why it did not run (exhaustive on a space above the budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The FSD default design against the tuned one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub analytic: Metrics,
    pub exact: Option<Exact>,
}

/// Wall-clock figures (differ between runs; everything else is deterministic).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub analytic_evaluations: usize,
    pub analytic_seconds: f64,
    pub exact_evaluations: usize,
    pub exact_seconds: f64,
    pub prepare_seconds: f64,
}

/// The results document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub version: u32,
    pub fingerprint: String,
    pub config: RunConfig,
    /// Present in a shard's document; absent after `merge` and in a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Every point the tuner evaluated, in evaluation order, then the points only
    /// confirmed.
    pub points: Vec<PointRecord>,
    /// Best feasible objective value after each tuner evaluation.
    pub trace: Vec<Option<f64>>,
    /// Indices (into `points`) of the points evaluated exactly, in order.
    pub exact_order: Vec<usize>,
    /// Indices of the Pareto front (latency, area, energy) of the exactly evaluated
    /// feasible points, by increasing latency.
    pub front: Vec<usize>,
    /// The analytical front of the search (indices), by increasing latency.
    pub analytic_front: Vec<usize>,
    /// The best exactly evaluated feasible point on the objective.
    pub best: Option<usize>,
    /// Spearman rank correlation of analytical against exact latency over the points
    /// evaluated both ways.
    pub spearman: Option<f64>,
    pub baseline: Option<Baseline>,
    /// The best point with at most the baseline's area that beats it (exact).
    pub beats_baseline: Option<usize>,
    pub mapping: Vec<MappingChange>,
    pub compare: Vec<CompareRow>,
    pub timing: Timing,
}

impl Results {
    /// Reads a results document.
    pub fn read(path: &Path) -> Result<Results, TuneError> {
        let bad = |message: String| TuneError::Results {
            file: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read: {e}")))?;
        let r: Results = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if r.version != VERSION {
            return Err(bad(format!(
                "format version {} (this nnac writes {VERSION})",
                r.version
            )));
        }
        if r.config.fingerprint() != r.fingerprint {
            return Err(bad(
                "its fingerprint does not match its configuration (edited?)".into(),
            ));
        }
        Ok(r)
    }

    /// The analytical and exact metrics known for each point (for `--resume`).
    pub fn known(&self) -> BTreeMap<Point, (Metrics, Option<Exact>)> {
        self.points
            .iter()
            .map(|r| (r.point.clone(), (r.analytic.clone(), r.exact.clone())))
            .collect()
    }

    /// The JSON text (pretty, with a final newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}
