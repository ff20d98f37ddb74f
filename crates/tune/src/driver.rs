//! One `nnac tune` run: the search (with the analytical or the exact model), the
//! exact confirmation of the analytical front, the FSD baseline, the tuner
//! comparison, sharding of the exact evaluations, checkpoints for `--resume`; and
//! [`finalize`], which derives the front, the best point and the Spearman
//! correlation from the evaluated points (also after `merge`).

use crate::costs::CostModel;
use crate::error::TuneError;
use crate::evaluate::{self, ExactModel};
use crate::mapping;
use crate::objective::{Metrics, Objective};
use crate::pareto;
use crate::results::{
    Baseline, CompareRow, CostTier, Exact, PointRecord, Results, RunConfig, Shard, Timing, VERSION,
};
use crate::space::{Design, Knobs, Point, Space};
use crate::stats::spearman;
use crate::tuners::{self, Scored, Search, FAILED, TUNERS};
use crate::workload::Workload;
use nnac_isa::HwConfig;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// What the progress display is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressEvent {
    /// A phase starts with `total` steps.
    Phase { name: &'static str, total: u64 },
    /// `n` more steps are done.
    Advance(u64),
    /// The phase is over.
    Finish,
}

/// A progress callback.
pub type ProgressFn = dyn Fn(ProgressEvent) + Sync;

/// Everything one run needs.
pub struct Run<'a> {
    pub config: RunConfig,
    pub workloads: Vec<Workload>,
    /// The exact tier (required unless the run is analytical only with `confirm = 0`).
    pub exact: Option<&'a ExactModel>,
    /// Threads for exact evaluations.
    pub jobs: usize,
    pub shard: Option<Shard>,
    pub resume: Option<Results>,
    pub compare_tuners: bool,
    pub progress: Option<&'a ProgressFn>,
    /// Where to write the results after every batch of exact evaluations.
    pub checkpoint: Option<PathBuf>,
}

fn tell(p: Option<&ProgressFn>, e: ProgressEvent) {
    if let Some(f) = p {
        f(e);
    }
}

/// The tuner's view of a point's metrics.
fn score(m: &Metrics, cfg: &RunConfig) -> Scored {
    Scored {
        objectives: m.front_objectives(),
        value: m.value(cfg.objective),
        violation: m.violation(&cfg.constraints),
    }
}

fn exact_score(e: &Exact, cfg: &RunConfig) -> Scored {
    match e {
        Exact::Metrics(m) => score(m, cfg),
        Exact::Error(_) => Scored {
            objectives: [f64::MAX; 3],
            value: f64::MAX,
            violation: FAILED,
        },
    }
}

/// Refuses constraints no point of the space can meet, naming the option.
pub fn check_constraints(cfg: &RunConfig) -> Result<(), TuneError> {
    let space = &cfg.space;
    // Area and SRAM grow with every axis value: the least of each axis is the
    // smallest design.
    let smallest = smallest_design(space, &cfg.costs);
    if let Some(a) = cfg.constraints.max_area_mm2 {
        let least = cfg.costs.area_mm2(&smallest.hw);
        if a.is_nan() || a <= 0.0 || least > a {
            return Err(TuneError::options(
                "--max-area-mm2",
                format!("{a} mm^2 is infeasible: the smallest design of the space ({}) takes {least:.2} mm^2", describe_hw(&smallest.hw)),
            ));
        }
    }
    if let Some(s) = cfg.constraints.max_sram_bytes {
        if smallest.hw.sram_bytes > s {
            return Err(TuneError::options(
                "--max-sram",
                format!(
                    "{s} bytes is infeasible: the space's least sram_bytes is {}",
                    smallest.hw.sram_bytes
                ),
            ));
        }
    }
    if let Some(f) = cfg.constraints.min_fps {
        if !(f > 0.0 && f.is_finite()) {
            return Err(TuneError::options(
                "--min-fps",
                format!("{f} is not a positive number"),
            ));
        }
    }
    Ok(())
}

fn describe_hw(hw: &HwConfig) -> String {
    format!(
        "{}x{} MACs, {} MiB SRAM",
        hw.mac_rows,
        hw.mac_cols,
        hw.sram_bytes as f64 / f64::from(1u32 << 20)
    )
}

/// The design with every axis at its least area.
fn smallest_design(space: &Space, costs: &CostModel) -> Design {
    let mut p = Point(vec![0; space.axes.len()]);
    for k in 0..space.axes.len() {
        let best = (0..space.axes[k].values.len())
            .min_by(|&a, &b| {
                let mut pa = p.clone();
                pa.0[k] = a as u32;
                let mut pb = p.clone();
                pb.0[k] = b as u32;
                costs
                    .area_mm2(&space.design(&pa).hw)
                    .total_cmp(&costs.area_mm2(&space.design(&pb).hw))
                    .then(
                        space
                            .design(&pa)
                            .hw
                            .sram_bytes
                            .cmp(&space.design(&pb).hw.sram_bytes),
                    )
            })
            .unwrap_or(0);
        p.0[k] = best as u32;
    }
    space.design(&p)
}

/// The FSD default design with the space's base for keys the space does not vary.
pub fn baseline_design() -> Design {
    Design {
        hw: HwConfig::fsd(),
        knobs: Knobs::default(),
    }
}

/// The state of a run between phases.
struct State<'a> {
    cfg: &'a RunConfig,
    workloads: &'a [Workload],
    exact: Option<&'a ExactModel>,
    pool: rayon::ThreadPool,
    analytic: BTreeMap<Point, Metrics>,
    exact_done: BTreeMap<Point, Exact>,
    progress: Option<&'a ProgressFn>,
    timing: Timing,
}

impl State<'_> {
    fn analytic_of(&mut self, p: &Point) -> Metrics {
        if let Some(m) = self.analytic.get(p) {
            return m.clone();
        }
        let t = Instant::now();
        let m = evaluate::analytic(self.workloads, &self.cfg.costs, &self.cfg.space.design(p));
        self.timing.analytic_seconds += t.elapsed().as_secs_f64();
        self.timing.analytic_evaluations += 1;
        self.analytic.insert(p.clone(), m.clone());
        m
    }

    /// Exact metrics of `designs` in parallel, in order.
    fn exact_many(&mut self, designs: &[Design]) -> Result<Vec<Exact>, TuneError> {
        let model = self.exact.ok_or_else(|| {
            TuneError::Internal("exact evaluations requested without the exact model".into())
        })?;
        let costs = &self.cfg.costs;
        let progress = self.progress;
        let t = Instant::now();
        let out: Vec<Exact> = self.pool.install(|| {
            designs
                .par_iter()
                .map(|d| {
                    let e = match model.evaluate(costs, d) {
                        Ok(m) => Exact::Metrics(m),
                        Err(e) => Exact::Error(e.to_string()),
                    };
                    tell(progress, ProgressEvent::Advance(1));
                    e
                })
                .collect()
        });
        self.timing.exact_seconds += t.elapsed().as_secs_f64();
        self.timing.exact_evaluations += designs.len();
        Ok(out)
    }

    /// Exact metrics of the points not yet known (those `owned` by this shard).
    fn exact_points(&mut self, pts: &[Point]) -> Result<(), TuneError> {
        let todo: Vec<Point> = pts
            .iter()
            .filter(|p| !self.exact_done.contains_key(*p))
            .cloned()
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        let designs: Vec<Design> = todo.iter().map(|p| self.cfg.space.design(p)).collect();
        let res = self.exact_many(&designs)?;
        for (p, e) in todo.into_iter().zip(res) {
            self.exact_done.insert(p, e);
        }
        Ok(())
    }
}

/// Runs tuner `name` on the configured tier; returns the evaluated points and trace.
type Evaluated = (Vec<(Point, Scored)>, Vec<Option<f64>>);

fn search(
    st: &mut State,
    name: &str,
    tier: CostTier,
    checkpoint: &mut dyn FnMut(&State),
) -> Result<Evaluated, TuneError> {
    let cfg = st.cfg;
    let space = &cfg.space;
    let mut failure: Option<TuneError> = None;
    let budget = cfg.budget;
    let result = {
        let mut oracle = |pts: &[Point]| -> Vec<Scored> {
            let scores: Vec<Scored> = match tier {
                CostTier::Analytic => {
                    let s = pts.iter().map(|p| score(&st.analytic_of(p), cfg)).collect();
                    tell(st.progress, ProgressEvent::Advance(pts.len() as u64));
                    s
                }
                CostTier::Exact => {
                    pts.iter().for_each(|p| {
                        st.analytic_of(p);
                    });
                    if let Err(e) = st.exact_points(pts) {
                        failure.get_or_insert(e);
                    }
                    checkpoint(st);
                    pts.iter()
                        .map(|p| match st.exact_done.get(p) {
                            Some(e) => exact_score(e, cfg),
                            None => Scored {
                                objectives: [f64::MAX; 3],
                                value: f64::MAX,
                                violation: FAILED,
                            },
                        })
                        .collect()
                }
            };
            scores
        };
        let mut s = Search::new(space, budget, &mut oracle);
        tuners::run(name, &mut s, cfg.seed).map(|()| (s.evaluated, s.trace))
    };
    match failure {
        Some(e) => Err(e),
        None => result,
    }
}

/// Runs a whole search.
pub fn execute(run: Run) -> Result<Results, TuneError> {
    let cfg = &run.config;
    check_constraints(cfg)?;
    if cfg.budget == 0 {
        return Err(TuneError::options("--budget", "must be at least 1"));
    }
    if !TUNERS.contains(&cfg.tuner.as_str()) {
        return Err(TuneError::options(
            "--tuner",
            format!(
                "unknown tuner `{}`; tuners: {}",
                cfg.tuner,
                TUNERS.join(", ")
            ),
        ));
    }
    if let (Some(_), CostTier::Exact) = (run.shard, cfg.cost) {
        if !["exhaustive", "random"].contains(&cfg.tuner.as_str()) {
            return Err(TuneError::options(
                "--shard",
                format!("with --cost exact the shards split the tuner's own evaluations, which only exhaustive and random propose without waiting for scores; `{}` does", cfg.tuner),
            ));
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(run.jobs.max(1))
        .build()
        .map_err(|e| TuneError::Internal(format!("thread pool: {e}")))?;
    let mut st = State {
        cfg,
        workloads: &run.workloads,
        exact: run.exact,
        pool,
        analytic: BTreeMap::new(),
        exact_done: BTreeMap::new(),
        progress: run.progress,
        timing: Timing::default(),
    };
    let mut baseline_exact: Option<Exact> = None;
    if let Some(prev) = &run.resume {
        check_resume(prev, cfg)?;
        for (p, (a, e)) in prev.known() {
            st.analytic.insert(p.clone(), a);
            if let Some(e) = e {
                st.exact_done.insert(p, e);
            }
        }
        baseline_exact = prev.baseline.as_ref().and_then(|b| b.exact.clone());
    }
    let shard = run.shard;
    let checkpoint_path = run.checkpoint.clone();
    let mut checkpoint = |s: &State| {
        if let Some(path) = &checkpoint_path {
            let partial = assemble(s, cfg, &[], &[], None, Vec::new(), shard);
            let _ = std::fs::write(path, partial.to_json());
        }
    };

    // 1. The search. With shards and the exact tier, the proposals come from the
    //    analytical tier (exhaustive and random do not look at scores) and each shard
    //    evaluates its share exactly.
    let search_tier = if shard.is_some() {
        CostTier::Analytic
    } else {
        cfg.cost
    };
    tell(
        run.progress,
        ProgressEvent::Phase {
            name: "search",
            total: cfg.budget as u64,
        },
    );
    let (evaluated, _) = search(&mut st, &cfg.tuner, search_tier, &mut checkpoint)?;
    tell(run.progress, ProgressEvent::Finish);

    // 2. The exact evaluations: the baseline, then the tuner's points (exact tier,
    //    sharded) or the analytical front's best `confirm` points.
    let tuner_points: Vec<Point> = evaluated.iter().map(|(p, _)| p.clone()).collect();
    let to_confirm: Vec<Point> = match cfg.cost {
        CostTier::Exact => tuner_points.clone(),
        CostTier::Analytic => confirm_list(&evaluated, cfg),
    };
    let owned = |i: usize| shard.is_none_or(|s| s.owns(i));
    let todo: Vec<Point> = to_confirm
        .iter()
        .enumerate()
        .filter(|(i, _)| owned(i + 1))
        .map(|(_, p)| p.clone())
        .collect();
    let need_baseline =
        owned(0) && baseline_exact.is_none() && (cfg.confirm > 0 || cfg.cost == CostTier::Exact);
    let exact_total = todo
        .iter()
        .filter(|p| !st.exact_done.contains_key(*p))
        .count()
        + usize::from(need_baseline);
    if exact_total > 0 {
        tell(
            run.progress,
            ProgressEvent::Phase {
                name: "exact",
                total: exact_total as u64,
            },
        );
        if need_baseline {
            baseline_exact = st.exact_many(&[baseline_design()])?.pop();
        }
        for chunk in todo.chunks(run.jobs.max(1) * 2) {
            st.exact_points(chunk)?;
            checkpoint(&st);
        }
        tell(run.progress, ProgressEvent::Finish);
    }

    // 3. The tuner comparison (same tier, budget and seed for every tuner).
    let compare = if run.compare_tuners {
        compare_tuners(&mut st, &mut checkpoint)?
    } else {
        Vec::new()
    };

    // 4. The mapping knob on the best analytical design that has it on.
    let mapping = evaluated
        .iter()
        .filter(|(p, s)| s.feasible() && cfg.space.design(p).knobs.mapping)
        .min_by(|a, b| a.1.key().total_cmp(&b.1.key()))
        .map(|(p, _)| mapping::changes(&run.workloads, &cfg.space.design(p).hw))
        .unwrap_or_default();

    let base = Baseline {
        analytic: evaluate::analytic(&run.workloads, &cfg.costs, &baseline_design()),
        exact: baseline_exact,
    };
    let mut r = assemble(
        &st,
        cfg,
        &tuner_points,
        &to_confirm,
        Some(base),
        compare,
        shard,
    );
    r.mapping = mapping;
    finalize(&mut r);
    Ok(r)
}

/// The analytical front's feasible points, best objective first, at most `confirm`.
fn confirm_list(evaluated: &[(Point, Scored)], cfg: &RunConfig) -> Vec<Point> {
    let feasible: Vec<&(Point, Scored)> = evaluated.iter().filter(|(_, s)| s.feasible()).collect();
    let objs: Vec<Vec<f64>> = feasible
        .iter()
        .map(|(_, s)| s.objectives.to_vec())
        .collect();
    let mut front: Vec<&(Point, Scored)> = pareto::front(&objs)
        .into_iter()
        .map(|i| feasible[i])
        .collect();
    front.sort_by(|a, b| a.1.value.total_cmp(&b.1.value).then(a.0.cmp(&b.0)));
    let mut out: Vec<Point> = front.iter().map(|(p, _)| p.clone()).collect();
    // Fill up with the next best points by objective, so Spearman sees a spread.
    let mut rest: Vec<&(Point, Scored)> = feasible
        .iter()
        .copied()
        .filter(|(p, _)| !out.contains(p))
        .collect();
    rest.sort_by(|a, b| a.1.value.total_cmp(&b.1.value).then(a.0.cmp(&b.0)));
    let stride = (rest.len() / cfg.confirm.max(1)).max(1);
    out.extend(rest.iter().step_by(stride).map(|(p, _)| p.clone()));
    out.truncate(cfg.confirm);
    out
}

fn check_resume(prev: &Results, cfg: &RunConfig) -> Result<(), TuneError> {
    let mut a = prev.config.clone();
    a.budget = cfg.budget;
    a.confirm = cfg.confirm;
    if a.fingerprint() != cfg.fingerprint() {
        return Err(TuneError::Results {
            file: "--resume".into(),
            message: "it is the result of another search (models, space, cost model, objective, constraints, tuner, seed or cost tier differ); only --budget and --confirm may change".into(),
        });
    }
    Ok(())
}

fn compare_tuners(
    st: &mut State,
    checkpoint: &mut dyn FnMut(&State),
) -> Result<Vec<CompareRow>, TuneError> {
    let cfg = st.cfg;
    let mut runs = Vec::new();
    for name in TUNERS {
        if name == "exhaustive" && cfg.space.size() > cfg.budget as u128 {
            runs.push((name, None));
            continue;
        }
        tell(
            st.progress,
            ProgressEvent::Phase {
                name: "compare",
                total: cfg.budget as u64,
            },
        );
        let r = search(st, name, cfg.cost, checkpoint)?;
        tell(st.progress, ProgressEvent::Finish);
        runs.push((name, Some(r)));
    }
    // A reference point common to all tuners: 1.1 x the largest feasible value seen.
    let mut reference = [0.0f64; 3];
    for (_, r) in &runs {
        for (_, s) in r
            .iter()
            .flat_map(|r| r.0.iter())
            .filter(|(_, s)| s.feasible())
        {
            for (r, o) in reference.iter_mut().zip(s.objectives) {
                *r = r.max(o * 1.1);
            }
        }
    }
    let mut rows = Vec::new();
    for (name, r) in runs {
        let Some((evaluated, trace)) = r else {
            rows.push(CompareRow {
                tuner: name.into(),
                evaluations: 0,
                best_at: Vec::new(),
                best_values: None,
                hypervolume: 0.0,
                skipped: Some(format!(
                    "the space has {} points, more than the budget {}",
                    cfg.space.size(),
                    cfg.budget
                )),
            });
            continue;
        };
        let feas: Vec<[f64; 3]> = evaluated
            .iter()
            .filter(|(_, s)| s.feasible())
            .map(|(_, s)| {
                let mut v = [0.0; 3];
                for k in 0..3 {
                    v[k] = s.objectives[k] / reference[k].max(1e-300);
                }
                v
            })
            .collect();
        let marks = [cfg.budget / 8, cfg.budget / 4, cfg.budget / 2, cfg.budget];
        let best_at = marks
            .iter()
            .map(|&m| {
                let i = m.clamp(1, trace.len().max(1)) - 1;
                (m, trace.get(i).copied().flatten())
            })
            .collect();
        let best = evaluated
            .iter()
            .filter(|(_, s)| s.feasible())
            .min_by(|a, b| a.1.key().total_cmp(&b.1.key()));
        rows.push(CompareRow {
            tuner: name.into(),
            evaluations: evaluated.len(),
            best_at,
            best_values: best.map(|(p, _)| cfg.space.describe(p)),
            hypervolume: pareto::hypervolume(&feas, [1.0, 1.0, 1.0]),
            skipped: None,
        });
    }
    Ok(rows)
}

/// Builds the results document from the state (the derived fields empty).
fn assemble(
    st: &State,
    cfg: &RunConfig,
    tuner_points: &[Point],
    confirmed: &[Point],
    baseline: Option<Baseline>,
    compare: Vec<CompareRow>,
    shard: Option<Shard>,
) -> Results {
    let mut order: Vec<Point> = tuner_points.to_vec();
    for p in confirmed {
        if !order.contains(p) {
            order.push(p.clone());
        }
    }
    // A checkpoint before the end holds every point known so far.
    if tuner_points.is_empty() {
        order = st.analytic.keys().cloned().collect();
    }
    let exact_list: Vec<&Point> = match cfg.cost {
        CostTier::Exact => tuner_points.iter().collect(),
        CostTier::Analytic => confirmed.iter().collect(),
    };
    // A checkpoint keeps every exact result (a resumed run finds them); the final
    // document only those of the points this run evaluates exactly.
    let keep_exact = |p: &Point| tuner_points.is_empty() || exact_list.contains(&p);
    let points: Vec<PointRecord> = order
        .iter()
        .filter_map(|p| {
            Some(PointRecord {
                point: p.clone(),
                values: cfg.space.describe(p),
                analytic: st.analytic.get(p)?.clone(),
                exact: st.exact_done.get(p).filter(|_| keep_exact(p)).cloned(),
            })
        })
        .collect();
    let index: BTreeMap<&Point, usize> = points
        .iter()
        .enumerate()
        .map(|(i, r)| (&r.point, i))
        .collect();
    let mut exact_order: Vec<usize> = exact_list
        .iter()
        .filter(|p| st.exact_done.contains_key(**p))
        .filter_map(|p| index.get(*p).copied())
        .collect();
    exact_order.sort_unstable();
    exact_order.dedup();
    Results {
        version: VERSION,
        fingerprint: cfg.fingerprint(),
        config: cfg.clone(),
        shard,
        points,
        trace: Vec::new(),
        exact_order,
        front: Vec::new(),
        analytic_front: Vec::new(),
        best: None,
        spearman: None,
        baseline,
        beats_baseline: None,
        mapping: Vec::new(),
        compare,
        timing: st.timing.clone(),
    }
}

/// Derives the front, the analytical front, the best point, Spearman and the
/// baseline comparison from the points.
pub fn finalize(r: &mut Results) {
    let cfg = &r.config;
    let objective: Objective = cfg.objective;
    let feasible_exact: Vec<usize> = r
        .exact_order
        .iter()
        .copied()
        .filter(|&i| {
            r.points[i]
                .exact
                .as_ref()
                .and_then(Exact::metrics)
                .is_some_and(|m| m.violation(&cfg.constraints) <= 0.0)
        })
        .collect();
    let metrics = |i: usize| r.points[i].exact.as_ref().and_then(Exact::metrics);
    let objs: Vec<Vec<f64>> = feasible_exact
        .iter()
        .map(|&i| {
            metrics(i)
                .map(|m| m.front_objectives().to_vec())
                .unwrap_or_default()
        })
        .collect();
    let mut front: Vec<usize> = pareto::front(&objs)
        .into_iter()
        .map(|k| feasible_exact[k])
        .collect();
    front.sort_by(|&a, &b| {
        let la = metrics(a).map_or(f64::MAX, |m| m.latency_s);
        let lb = metrics(b).map_or(f64::MAX, |m| m.latency_s);
        la.total_cmp(&lb).then(a.cmp(&b))
    });
    r.front = front;
    let feasible_analytic: Vec<usize> = (0..r.points.len())
        .filter(|&i| r.points[i].analytic.violation(&cfg.constraints) <= 0.0)
        .collect();
    let aobjs: Vec<Vec<f64>> = feasible_analytic
        .iter()
        .map(|&i| r.points[i].analytic.front_objectives().to_vec())
        .collect();
    let mut af: Vec<usize> = pareto::front(&aobjs)
        .into_iter()
        .map(|k| feasible_analytic[k])
        .collect();
    af.sort_by(|&a, &b| {
        r.points[a]
            .analytic
            .latency_s
            .total_cmp(&r.points[b].analytic.latency_s)
            .then(a.cmp(&b))
    });
    r.analytic_front = af;
    let best_by = |cands: &mut dyn Iterator<Item = usize>| {
        cands.min_by(|&a, &b| {
            let va = metrics(a).map_or(f64::MAX, |m| m.value(objective));
            let vb = metrics(b).map_or(f64::MAX, |m| m.value(objective));
            va.total_cmp(&vb).then(a.cmp(&b))
        })
    };
    r.best = best_by(&mut feasible_exact.iter().copied());
    let pairs: Vec<(f64, f64)> = r
        .exact_order
        .iter()
        .filter_map(|&i| metrics(i).map(|m| (r.points[i].analytic.latency_s, m.latency_s)))
        .collect();
    let (a, e): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
    r.spearman = spearman(&a, &e);
    // Best feasible objective value after each of the tuner's evaluations, by the
    // tier that drove it.
    let mut best: Option<f64> = None;
    r.trace = r
        .points
        .iter()
        .map(|p| {
            let m = match cfg.cost {
                CostTier::Exact => p.exact.as_ref().and_then(Exact::metrics),
                CostTier::Analytic => Some(&p.analytic),
            };
            if let Some(m) = m.filter(|m| m.violation(&cfg.constraints) <= 0.0) {
                best = Some(best.map_or(m.value(objective), |b: f64| b.min(m.value(objective))));
            }
            best
        })
        .collect();
    r.beats_baseline = r
        .baseline
        .as_ref()
        .and_then(|b| b.exact.as_ref())
        .and_then(Exact::metrics)
        .and_then(|base| {
            best_by(&mut feasible_exact.iter().copied().filter(|&i| {
                metrics(i).is_some_and(|m| {
                    m.area_mm2 <= base.area_mm2 + 1e-9 && m.value(objective) < base.value(objective)
                })
            }))
        });
}

/// Joins the documents of the shards of one run into the whole run's results.
pub fn merge(mut shards: Vec<Results>) -> Result<Results, TuneError> {
    let bad = |m: String| TuneError::Results {
        file: "merge".into(),
        message: m,
    };
    let first = shards
        .first()
        .ok_or_else(|| bad("no shard files given".into()))?
        .clone();
    let count = first.shard.map_or(1, |s| s.count);
    let mut seen = vec![false; count];
    for s in &shards {
        if s.fingerprint != first.fingerprint {
            return Err(bad(format!(
                "shard {:?} is of another run (fingerprint {} against {})",
                s.shard, s.fingerprint, first.fingerprint
            )));
        }
        let sh = s.shard.ok_or_else(|| {
            bad("a document without a shard (a whole run) cannot be merged".into())
        })?;
        if sh.count != count {
            return Err(bad(format!(
                "shard {}/{} does not belong to a run of {count} shards",
                sh.index, sh.count
            )));
        }
        if std::mem::replace(&mut seen[sh.index], true) {
            return Err(bad(format!("shard {}/{count} is given twice", sh.index)));
        }
    }
    if let Some(k) = seen.iter().position(|s| !s) {
        return Err(bad(format!("shard {k}/{count} is missing")));
    }
    shards.sort_by_key(|s| s.shard.map_or(0, |x| x.index));
    let mut out = shards[0].clone();
    out.shard = None;
    for s in &shards[1..] {
        if s.points.len() != out.points.len()
            || s.points
                .iter()
                .zip(&out.points)
                .any(|(a, b)| a.point != b.point)
        {
            return Err(bad(
                "the shards list different points (different nnac versions?)".into(),
            ));
        }
        for (o, p) in out.points.iter_mut().zip(&s.points) {
            if o.exact.is_none() {
                o.exact = p.exact.clone();
            }
        }
        if let (Some(ob), Some(sb)) = (out.baseline.as_mut(), s.baseline.as_ref()) {
            if ob.exact.is_none() {
                ob.exact = sb.exact.clone();
            }
        }
        out.timing.exact_evaluations += s.timing.exact_evaluations;
        out.timing.exact_seconds += s.timing.exact_seconds;
    }
    // The exact evaluation order of the whole run: every listed point, now known.
    let cost = out.config.cost;
    let listed: Vec<usize> = match cost {
        CostTier::Exact => (0..out.points.len()).collect(),
        CostTier::Analytic => confirm_indices(&out),
    };
    out.exact_order = listed
        .into_iter()
        .filter(|&i| out.points[i].exact.is_some())
        .collect();
    finalize(&mut out);
    Ok(out)
}

/// The indices of the confirmed points of an analytical run: those evaluated
/// exactly in any shard, in point order.
fn confirm_indices(r: &Results) -> Vec<usize> {
    (0..r.points.len())
        .filter(|&i| r.points[i].exact.is_some())
        .collect()
}
