//! Random: uniformly drawn points, each evaluated once.

use super::Search;
use crate::rng::Rng;

/// Points per batch.
const BATCH: usize = 32;

pub fn run(search: &mut Search, rng: &mut Rng) {
    let mut idle = 0;
    while !search.done() && idle < 64 {
        let mut pts = Vec::with_capacity(BATCH);
        for _ in 0..BATCH * 8 {
            if pts.len() == BATCH.min(search.remaining()) {
                break;
            }
            let p = search.random_point(rng);
            if !search.seen(&p) && !pts.contains(&p) {
                pts.push(p);
            }
        }
        if pts.is_empty() {
            idle += 1;
            continue;
        }
        search.ask(&pts);
    }
}
