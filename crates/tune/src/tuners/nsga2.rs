//! NSGA-II (Deb et al. 2002) on latency, area and energy, seeded with a Latin
//! hypercube: binary tournaments on (front rank, crowding distance), uniform
//! crossover, per-axis mutation, elitist selection of the next population from
//! parents and children. Infeasible points rank after every feasible one, by
//! violation (constrained domination).

use super::{Scored, Search};
use crate::pareto::{crowding, sort_fronts};
use crate::rng::Rng;
use crate::space::Point;

/// A Latin hypercube of `n` points: each axis cut into `n` strata, one point per
/// stratum, the strata paired at random across axes.
pub fn latin_hypercube(dims: &[usize], n: usize, rng: &mut Rng) -> Vec<Point> {
    let mut cols: Vec<Vec<u32>> = Vec::new();
    for &d in dims {
        let mut strata: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut strata);
        cols.push(
            strata
                .iter()
                .map(|&s| {
                    (((s as f64 + rng.unit()) / n as f64 * d as f64) as usize).min(d - 1) as u32
                })
                .collect(),
        );
    }
    (0..n)
        .map(|i| Point(cols.iter().map(|c| c[i]).collect()))
        .collect()
}

/// Rank and crowding of every member: feasible points by non-dominated fronts,
/// infeasible ones after them by violation.
fn rank(pop: &[(Point, Scored)]) -> Vec<(usize, f64)> {
    let feasible: Vec<usize> = (0..pop.len()).filter(|&i| pop[i].1.feasible()).collect();
    let objs: Vec<Vec<f64>> = feasible
        .iter()
        .map(|&i| pop[i].1.objectives.to_vec())
        .collect();
    let mut out = vec![(usize::MAX, 0.0); pop.len()];
    let fronts = sort_fronts(&objs);
    for (r, f) in fronts.iter().enumerate() {
        let c = crowding(&objs, f);
        for (k, &m) in f.iter().enumerate() {
            out[feasible[m]] = (r, c[k]);
        }
    }
    let mut infeasible: Vec<usize> = (0..pop.len()).filter(|&i| !pop[i].1.feasible()).collect();
    infeasible.sort_by(|&a, &b| {
        pop[a]
            .1
            .violation
            .total_cmp(&pop[b].1.violation)
            .then(a.cmp(&b))
    });
    for (k, &i) in infeasible.iter().enumerate() {
        out[i] = (fronts.len() + k, 0.0);
    }
    out
}

fn better(a: (usize, f64), b: (usize, f64)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 > b.1)
}

fn tournament(ranks: &[(usize, f64)], rng: &mut Rng) -> usize {
    let (a, b) = (rng.below(ranks.len()), rng.below(ranks.len()));
    if better(ranks[b], ranks[a]) {
        b
    } else {
        a
    }
}

fn child(a: &Point, b: &Point, dims: &[usize], rng: &mut Rng) -> Point {
    let pm = 1.0 / dims.len().max(1) as f64;
    Point(
        (0..dims.len())
            .map(|k| {
                let mut v = if rng.below(2) == 0 { a.0[k] } else { b.0[k] };
                if rng.unit() < pm {
                    v = if rng.unit() < 0.5 {
                        rng.below(dims[k]) as u32
                    } else {
                        let s = if rng.below(2) == 0 { -1 } else { 1 };
                        (i64::from(v) + s).clamp(0, dims[k] as i64 - 1) as u32
                    };
                }
                v
            })
            .collect(),
    )
}

/// Population size for a budget: an eighth of it, between 8 and 64, even.
pub fn population(budget: usize) -> usize {
    ((budget / 8).clamp(8, 64) / 2) * 2
}

pub fn run(search: &mut Search, rng: &mut Rng) {
    let dims = search.space.dims();
    let n = population(search.budget);
    let init = latin_hypercube(&dims, n, rng);
    let scores = search.ask(&init);
    let mut pop: Vec<(Point, Scored)> = Vec::new();
    for (p, s) in init.into_iter().zip(scores) {
        if let Some(s) = s {
            if !pop.iter().any(|(q, _)| *q == p) {
                pop.push((p, s));
            }
        }
    }
    let mut idle = 0;
    while !search.done() && idle < 50 && !pop.is_empty() {
        let ranks = rank(&pop);
        let mut kids: Vec<Point> = Vec::new();
        for _ in 0..n * 4 {
            if kids.len() == n {
                break;
            }
            let (a, b) = (tournament(&ranks, rng), tournament(&ranks, rng));
            let c = child(&pop[a].0, &pop[b].0, &dims, rng);
            if !kids.contains(&c) && !pop.iter().any(|(q, _)| *q == c) {
                kids.push(c);
            }
        }
        let before = search.evaluated.len();
        let scores = search.ask(&kids);
        idle = if search.evaluated.len() == before {
            idle + 1
        } else {
            0
        };
        if idle > 0 && idle % 5 == 0 {
            // Stuck on known points: bring in fresh random ones.
            let fresh: Vec<Point> = (0..n / 2).map(|_| search.random_point(rng)).collect();
            let s = search.ask(&fresh);
            kids.extend(fresh);
            let mut all = scores.clone();
            all.extend(s);
            merge(&mut pop, kids, all, n);
            continue;
        }
        merge(&mut pop, kids, scores, n);
    }
}

/// Elitist selection: the best `n` of parents and children by rank, then crowding.
fn merge(pop: &mut Vec<(Point, Scored)>, kids: Vec<Point>, scores: Vec<Option<Scored>>, n: usize) {
    for (p, s) in kids.into_iter().zip(scores) {
        if let Some(s) = s {
            if !pop.iter().any(|(q, _)| *q == p) {
                pop.push((p, s));
            }
        }
    }
    let ranks = rank(pop);
    let mut order: Vec<usize> = (0..pop.len()).collect();
    order.sort_by(|&a, &b| {
        ranks[a]
            .0
            .cmp(&ranks[b].0)
            .then(ranks[b].1.total_cmp(&ranks[a].1))
            .then(a.cmp(&b))
    });
    order.truncate(n);
    order.sort_unstable();
    *pop = order.into_iter().map(|i| pop[i].clone()).collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_hypercube_covers_every_stratum() {
        let mut rng = Rng::new(9, 0);
        let pts = latin_hypercube(&[10, 10], 10, &mut rng);
        for k in 0..2 {
            let mut vals: Vec<u32> = pts.iter().map(|p| p.0[k]).collect();
            vals.sort_unstable();
            assert_eq!(vals, (0..10).collect::<Vec<u32>>());
        }
    }
}
