//! Simulated annealing: from a random start, each step scores a batch of neighbours
//! (one axis moved by one or two values, or redrawn) and moves to the best of them
//! by the Metropolis rule on the log of the objective; the temperature falls
//! geometrically over the budget, and a step that finds only known neighbours may
//! jump to a random point.

use super::{Scored, Search};
use crate::rng::Rng;
use crate::space::Point;

/// Neighbours per step (fixed, so the search does not depend on `--jobs`).
const NEIGHBOURS: usize = 4;
/// Start and end temperatures on `ln(objective)`.
const T0: f64 = 0.3;
const T1: f64 = 0.003;

fn neighbour(p: &Point, dims: &[usize], rng: &mut Rng) -> Point {
    let mut q = p.clone();
    let movable: Vec<usize> = (0..dims.len()).filter(|&k| dims[k] > 1).collect();
    if movable.is_empty() {
        return q;
    }
    let k = movable[rng.below(movable.len())];
    let d = dims[k] as i64;
    let v = i64::from(q.0[k]);
    let nv = if rng.unit() < 0.15 {
        rng.below(dims[k]) as i64
    } else {
        let step = 1 + rng.below(2) as i64;
        let s = if rng.below(2) == 0 { -step } else { step };
        (v + s).clamp(0, d - 1)
    };
    q.0[k] = nv as u32;
    q
}

pub fn run(search: &mut Search, rng: &mut Rng) {
    let dims = search.space.dims();
    let start = search.random_point(rng);
    let Some(Some(mut cur_s)) = search.ask(std::slice::from_ref(&start)).pop() else {
        return;
    };
    let mut cur = start;
    let budget = search.budget.max(1) as f64;
    let mut stale = 0;
    while !search.done() && stale < 200 {
        let frac = search.evaluated.len() as f64 / budget;
        let t = T0 * (T1 / T0).powf(frac.min(1.0));
        let mut cands: Vec<Point> = Vec::new();
        for _ in 0..NEIGHBOURS * 4 {
            if cands.len() == NEIGHBOURS {
                break;
            }
            let q = neighbour(&cur, &dims, rng);
            if q != cur && !cands.contains(&q) {
                cands.push(q);
            }
        }
        let before = search.evaluated.len();
        let scores = search.ask(&cands);
        if search.evaluated.len() == before {
            stale += 1;
            if stale % 8 == 0 {
                // Every neighbour is known: jump.
                let q = search.random_point(rng);
                if let Some(Some(s)) = search.ask(std::slice::from_ref(&q)).pop() {
                    cur = q;
                    cur_s = s;
                }
            }
        } else {
            stale = 0;
        }
        let best = cands
            .iter()
            .zip(&scores)
            .filter_map(|(p, s)| s.map(|s| (p, s)))
            .min_by(|a, b| a.1.key().total_cmp(&b.1.key()));
        if let Some((p, s)) = best {
            if accept(&cur_s, &s, t, rng) {
                cur = p.clone();
                cur_s = s;
            }
        }
    }
}

fn accept(cur: &Scored, new: &Scored, t: f64, rng: &mut Rng) -> bool {
    let d = new.key() - cur.key();
    d <= 0.0 || rng.unit() < (-d / t).exp()
}
