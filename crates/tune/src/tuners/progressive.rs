//! Progressive: a coarse grid (each axis's first, middle and last value), then
//! refinement around the best point: every axis moved by its step both ways, the
//! steps halved when no move improves, until they are all one value; then again
//! from the best unrefined grid point or a random one.

use super::Search;
use crate::rng::Rng;
use crate::space::Point;

fn levels(d: usize) -> Vec<u32> {
    let mut v = vec![0, (d / 2) as u32, (d - 1) as u32];
    v.dedup();
    v.sort_unstable();
    v.dedup();
    v
}

fn grid(dims: &[usize], cap: usize) -> Vec<Point> {
    let lv: Vec<Vec<u32>> = dims.iter().map(|&d| levels(d)).collect();
    let mut out = vec![Point(Vec::new())];
    for l in &lv {
        out = out
            .iter()
            .flat_map(|p| {
                l.iter().map(move |&v| {
                    let mut q = p.clone();
                    q.0.push(v);
                    q
                })
            })
            .collect();
        if out.len() > cap * 4 {
            break;
        }
    }
    out.retain(|p| p.0.len() == dims.len());
    out
}

pub fn run(search: &mut Search, rng: &mut Rng) {
    let dims = search.space.dims();
    // Spend at most half the budget on the grid; a grid too large is sampled.
    let mut coarse = grid(&dims, search.budget / 2);
    if coarse.is_empty() || coarse.len() > search.budget / 2 {
        coarse.clear();
        for _ in 0..(search.budget / 4).max(1) {
            coarse.push(search.random_point(rng));
        }
    }
    search.ask(&coarse);
    let mut starts: Vec<Point> = Vec::new();
    while !search.done() {
        let center = match search.best() {
            Some((p, _)) if !starts.contains(&p) => p,
            _ => search.random_point(rng),
        };
        starts.push(center.clone());
        refine(search, center, &dims);
        if starts.len() > 64 && search.evaluated.len() as u128 >= search.space.size() {
            break;
        }
        if starts.len() > 10_000 {
            break;
        }
    }
}

fn refine(search: &mut Search, mut center: Point, dims: &[usize]) {
    let mut steps: Vec<i64> = dims.iter().map(|&d| (d as i64 / 4).max(1)).collect();
    let Some(Some(mut best)) = search.ask(std::slice::from_ref(&center)).pop() else {
        return;
    };
    loop {
        if search.done() {
            return;
        }
        let mut cands = Vec::new();
        for k in 0..dims.len() {
            for s in [-steps[k], steps[k]] {
                let v = (i64::from(center.0[k]) + s).clamp(0, dims[k] as i64 - 1) as u32;
                if v != center.0[k] {
                    let mut q = center.clone();
                    q.0[k] = v;
                    cands.push(q);
                }
            }
        }
        let scores = search.ask(&cands);
        let better = cands
            .iter()
            .zip(&scores)
            .filter_map(|(p, s)| s.map(|s| (p, s)))
            .filter(|(_, s)| s.key() < best.key())
            .min_by(|a, b| a.1.key().total_cmp(&b.1.key()));
        match better {
            Some((p, s)) => {
                center = p.clone();
                best = s;
            }
            None if steps.iter().all(|&s| s == 1) => return,
            None => steps.iter_mut().for_each(|s| *s = (*s / 2).max(1)),
        }
    }
}
