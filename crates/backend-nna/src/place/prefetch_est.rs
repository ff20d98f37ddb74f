//! The estimated timeline `prefetch.rs` weighs a load's position with.
//!
//! The program is seen at the granularity of steps: every step's compute jobs take
//! their estimated cycles (`bands::tile_cycles`) one step after the other on the
//! compute queue, and every DMA job (`bands::dma_cycles`) runs in its position's
//! order on the DMA queue. A read may start once the compute of the step before its
//! position's step is done (that is what its flags wait for: the last user of its
//! SRAM range, at the latest the previous step); a step's compute starts once the
//! previous step's is done and every read it needs (the reads its own layer emitted,
//! wherever they were moved) has arrived; a write starts after its own step's
//! compute. The makespan is when both
//! queues are done. It is rough (no SRAM ports, no unload, no bands) but it sees
//! the one thing the load order decides: whether the DMA queue idles while the
//! MAC array works, and whether a load brought forward delays one needed sooner.

use crate::base::job::{Job, JobKind};
use crate::base::spill_state::SpillState;
use crate::schedule::bands::{dma_cycles, tile_cycles};
use nnac_isa::HwConfig;

/// A DMA job on the timeline.
#[derive(Debug, Clone, Copy)]
struct Item {
    /// The job (its index in the original order).
    job: usize,
    cycles: f64,
    /// The step index whose compute needs it done (reads), if any.
    need: Option<usize>,
    /// Whether it waits for its own position's step to compute first (writes).
    after_compute: bool,
}

/// The fixed part of the estimate: per step its compute cycles, per DMA job its
/// cycles and the step that needs it.
pub(crate) struct Estimate {
    /// Compute cycles of each step index (steps as in `SpillState::step_start`).
    compute: Vec<f64>,
    items: Vec<Item>,
    /// The step index of every job (by its original index).
    step: Vec<usize>,
    /// The first original job index of every step index.
    starts: Vec<usize>,
}

impl Estimate {
    /// The estimate of `jobs` (in their original order, as `sp.step_start` counts them).
    pub(crate) fn new(jobs: &[Job], sp: &SpillState, hw: &HwConfig) -> Estimate {
        let starts: Vec<usize> = sp.step_start.iter().map(|st| st.job.index()).collect();
        let step_idx = |j: usize| starts.partition_point(|&s| s <= j).saturating_sub(1);
        let mut compute = vec![0.0; starts.len().max(1)];
        let mut items = Vec::new();
        let mut step = Vec::with_capacity(jobs.len());
        for (j, job) in jobs.iter().enumerate() {
            let s = step_idx(j);
            step.push(s);
            match &job.kind {
                JobKind::Read { dma, .. } | JobKind::Write { dma, .. } => items.push(Item {
                    job: j,
                    cycles: dma_cycles(hw, u64::from(dma.rows) * u64::from(dma.row_len)),
                    need: matches!(job.kind, JobKind::Read { .. }).then_some(s),
                    after_compute: matches!(job.kind, JobKind::Write { .. }),
                }),
                kind => {
                    compute[s] += kind
                        .tiles()
                        .iter()
                        .map(|t| tile_cycles(kind, t, hw.mac_rows))
                        .sum::<f64>();
                }
            }
        }
        Estimate {
            compute,
            items,
            step,
            starts,
        }
    }

    /// The estimated makespan when every job `j` sits at sort key `keys[j]` (the
    /// position keys of `prefetch::lookahead`: `(position, moved-before-fixed,
    /// original index)`).
    pub(crate) fn makespan(&self, keys: &[(usize, u8, usize)]) -> f64 {
        let mut order: Vec<(usize, u8, usize, usize)> = self
            .items
            .iter()
            .enumerate()
            .map(|(i, it)| {
                let k = keys[it.job];
                (k.0, k.1, k.2, i)
            })
            .collect();
        order.sort_unstable();
        let n = self.compute.len();
        let mut end = vec![0.0f64; n];
        let mut need_done = vec![0.0f64; n];
        let (mut dma_t, mut next) = (0.0f64, 0usize);
        for s in 0..n {
            // Run the queue up to the first job positioned after this step's compute
            // or waiting for it (a write of this step).
            while let Some(&(pos, _, _, i)) = order.get(next) {
                let it = &self.items[i];
                // A position is an original job index (writes never move).
                let ps = self.step_of(pos);
                if ps > s || (it.after_compute && ps == s) {
                    break;
                }
                let release = if it.after_compute {
                    end[ps]
                } else if ps == 0 {
                    0.0
                } else {
                    end[ps - 1]
                };
                dma_t = dma_t.max(release) + it.cycles;
                if let Some(k) = it.need {
                    need_done[k] = need_done[k].max(dma_t);
                }
                next += 1;
            }
            let prev = if s == 0 { 0.0 } else { end[s - 1] };
            end[s] = prev.max(need_done[s]) + self.compute[s];
        }
        // What is left on the DMA queue (writes of the last step and after).
        for &(pos, _, _, i) in &order[next..] {
            dma_t = dma_t.max(end[self.step_of(pos)]) + self.items[i].cycles;
        }
        dma_t.max(end[n - 1])
    }

    /// The step index of original job `j` (the last step past the end).
    pub(crate) fn step_of(&self, j: usize) -> usize {
        self.step.get(j).copied().unwrap_or(self.compute.len() - 1)
    }

    /// The first original job index of step index `s` (`jobs` past the end).
    pub(crate) fn step_start(&self, s: usize, jobs: usize) -> usize {
        self.starts.get(s).copied().unwrap_or(jobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::job::{BufId, Loc};
    use crate::base::spill_state::StepStart;

    fn starts(v: &[(usize, usize)]) -> Vec<StepStart> {
        v.iter()
            .map(|&(step, job)| StepStart {
                step,
                job: crate::base::job::JobId::new(job),
            })
            .collect()
    }
    use crate::base::job::Tile;
    use nnac_isa::{Dma, Scale};

    fn read(bytes: u32) -> Job {
        let dma = Dma {
            rows: 1,
            row_len: bytes,
            ..Dma::default()
        };
        Job {
            node: String::new(),
            kind: JobKind::Read {
                loc: Loc::start(BufId::new(0)),
                dma,
            },
        }
    }

    /// A SCALE of `rows` channels: `rows` estimated cycles.
    fn compute(rows: u32) -> Job {
        let tile = Tile {
            pix_start: 0,
            pix_count: 96,
            c_start: 0,
            c_count: rows,
        };
        Job {
            node: String::new(),
            kind: JobKind::Scale {
                t: Scale::default(),
                bufs: [Loc::start(BufId::new(0)); 3],
                tiles: vec![tile],
            },
        }
    }

    #[test]
    fn a_load_in_the_dma_idle_time_shortens_the_program() {
        let hw = HwConfig::fsd();
        // Step 0: a long compute; step 1: a small load and a compute; step 2: a
        // big load (job 4) and a compute that needs it.
        let jobs = vec![
            compute(100_000),
            read(1 << 10),
            compute(100),
            read(1 << 20),
            compute(100),
        ];
        let sp = SpillState {
            step_start: starts(&[(0, 0), (1, 1), (2, 3)]),
            ..SpillState::default()
        };
        let est = Estimate::new(&jobs, &sp, &hw);
        let mut keys: Vec<(usize, u8, usize)> = (0..jobs.len()).map(|j| (j, 1, j)).collect();
        let in_order = est.makespan(&keys);
        // The big load waits for step 1, then holds up step 2's compute.
        let big = dma_cycles(&hw, 1 << 20);
        assert!(in_order > 100_000.0 + big, "{in_order}");
        // Brought to the start, it runs under step 0's compute.
        keys[3] = (0, 0, 3);
        let ahead = est.makespan(&keys);
        assert!(
            ahead < in_order && ahead < 101_000.0,
            "{ahead} vs {in_order}"
        );
        // Ahead of a load that step 1 needs at once, with no compute to hide under,
        // it delays that load and the whole program.
        let jobs = vec![read(1 << 10), compute(100), read(1 << 20), compute(100)];
        let sp = SpillState {
            step_start: starts(&[(0, 0), (1, 2)]),
            ..SpillState::default()
        };
        let est = Estimate::new(&jobs, &sp, &hw);
        let keys: Vec<(usize, u8, usize)> = (0..jobs.len()).map(|j| (j, 1, j)).collect();
        let mut early = keys.clone();
        early[2] = (0, 0, 2);
        assert!(est.makespan(&early) >= est.makespan(&keys));
    }
}
