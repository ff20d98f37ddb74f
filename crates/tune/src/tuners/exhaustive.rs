//! Exhaustive: every point of the space in mixed-radix order, for spaces within the
//! budget.

use super::Search;
use crate::error::TuneError;

/// Points per batch.
const BATCH: u128 = 256;

pub fn run(search: &mut Search) -> Result<(), TuneError> {
    let size = search.space.size();
    if size > search.budget as u128 {
        return Err(TuneError::options(
            "--budget",
            format!(
                "the exhaustive tuner evaluates every point: the space has {size} points, more than --budget {}; raise the budget or pick another tuner",
                search.budget
            ),
        ));
    }
    let mut i = 0u128;
    while i < size && !search.done() {
        let pts: Vec<_> = (i..(i + BATCH).min(size))
            .map(|k| search.space.nth(k))
            .collect();
        search.ask(&pts);
        i += BATCH;
    }
    Ok(())
}
