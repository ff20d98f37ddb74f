//! The schedule floor: the fewest cycles any order of a program's instructions
//! could take, segment by segment, under this timing model.
//!
//! Each unit of a segment works through a fixed amount of work whatever the order:
//! the DMA queue runs its instructions one after another (each its latency plus its
//! bytes at the DRAM bandwidth); the SIMD unit unloads every pass and runs every
//! SCALE and ELTWISE program; the compute queue runs every pass of every dot product
//! and, while a SCALE or ELTWISE runs, holds the MAC array for all of it (the array
//! idles, docs/PERFORMANCE.md 1.5). A pass's accumulators are copied out only once
//! the pass before has unloaded (one shift register, 1.3), so in the compute queue a
//! pass takes its MAC cycles or, when longer, the unload of the pass before it. No
//! order does better than pairing the longest unloads with the longest passes (the
//! sum of `max(a_i, b_j)` over a pairing is least when both are sorted alike), less
//! one unload for the segment's first pass; nor better than the MAC cycles alone.
//! A segment ends when every unit is done, so it takes at least the busiest unit's
//! work, and a frame at least the sum over its segments. What a profile spends above
//! that floor is lost to the order and the waits (flags, DMA arriving late), not to
//! the amount of work: the part a better schedule of the same instructions could
//! win. Unlike the shape bound (`shape.rs`) the floor takes the instructions as they
//! are: their tiling, their transfers (a host op's operand and result included) and
//! their SRAM-port stalls.

use super::cost::InstrCost;
use super::timeline::Timeline;

/// The work of one segment per unit, in cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentFloor {
    /// DMA queue: the sum of its instructions' latencies and transfers.
    pub dma: u64,
    /// Compute queue: every pass at its MAC cycles or the unload before it (see the
    /// module doc), and every SCALE / ELTWISE whole.
    pub mac: u64,
    /// SIMD unit: every pass's unload and every SCALE / ELTWISE program.
    pub simd: u64,
}

impl SegmentFloor {
    /// The fewest cycles the segment can take: its busiest unit.
    pub fn cycles(&self) -> u64 {
        self.dma.max(self.mac).max(self.simd)
    }

    /// The unit that sets the floor: `"DMA"`, `"MAC"` or `"SIMD"` (DMA on a tie,
    /// then MAC).
    pub fn limit(&self) -> &'static str {
        let c = self.cycles();
        if self.dma == c {
            "DMA"
        } else if self.mac == c {
            "MAC"
        } else {
            "SIMD"
        }
    }
}

/// One segment's work as it is gathered: the DMA and SIMD totals, and the compute
/// queue's steps as (cycles, count) and the unload each leaves behind.
#[derive(Default)]
struct Work {
    dma: u64,
    simd: u64,
    steps: Vec<(u64, u64)>,
    unloads: Vec<(u64, u64)>,
}

impl Work {
    fn add(&mut self, cost: &InstrCost) {
        match cost {
            InstrCost::Dma(d) => self.dma += d.cycles,
            InstrCost::Dot(d) => {
                for &(p, n) in &d.passes.0 {
                    self.steps.push((p.mac, n));
                    self.unloads.push((p.unload, n));
                    self.simd += p.unload * n;
                }
            }
            // It waits for the unload before it, runs, and leaves none behind.
            InstrCost::Simd(s) => {
                self.steps.push((s.cycles(), 1));
                self.unloads.push((0, 1));
                self.simd += s.cycles();
            }
            InstrCost::Stop => {}
        }
    }

    fn floor(mut self) -> SegmentFloor {
        let plain: u64 = self.steps.iter().map(|&(c, n)| c * n).sum();
        let longest = self.unloads.iter().map(|&(u, _)| u).max().unwrap_or(0);
        self.steps.sort_unstable();
        self.unloads.sort_unstable();
        let paired = sorted_pairing(&self.steps, &self.unloads);
        SegmentFloor {
            dma: self.dma,
            mac: plain.max(paired.saturating_sub(longest)),
            simd: self.simd,
        }
    }
}

/// The sum of `max(a, b)` over the pairing of two sorted multisets of equal size,
/// given as (value, count): the `k`-th smallest of one with the `k`-th smallest of
/// the other.
fn sorted_pairing(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j) = (0, 0);
    let (mut left_a, mut left_b) = (a.first().map_or(0, |x| x.1), b.first().map_or(0, |x| x.1));
    let mut sum = 0;
    while i < a.len() && j < b.len() {
        let k = left_a.min(left_b);
        sum += k * a[i].0.max(b[j].0);
        left_a -= k;
        left_b -= k;
        if left_a == 0 {
            i += 1;
            left_a = a.get(i).map_or(0, |x| x.1);
        }
        if left_b == 0 {
            j += 1;
            left_b = b.get(j).map_or(0, |x| x.1);
        }
    }
    sum
}

/// The floor of every segment of `tl` (in its order), from the instructions' costs.
pub fn segment_floors(costs: &[InstrCost], tl: &Timeline) -> Vec<SegmentFloor> {
    let mut work: Vec<Work> = (0..tl.segments.len()).map(|_| Work::default()).collect();
    for (t, cost) in tl.instrs.iter().zip(costs) {
        if let Some(w) = work.get_mut(t.segment) {
            w.add(cost);
        }
    }
    work.into_iter().map(Work::floor).collect()
}

#[cfg(test)]
mod tests {
    use super::super::cost::DmaCost;
    use super::super::dot_cost::{DotCost, DotShape, Pass, Passes};
    use super::super::simd_cost::SimdCost;
    use super::super::timeline::{InstrTiming, SegmentTiming, Unit};
    use super::*;

    fn timing(index: usize, segment: usize) -> InstrTiming {
        InstrTiming {
            index,
            unit: Unit::Compute,
            segment,
            start: 0,
            release: 0,
            end: 0,
            charge: Default::default(),
        }
    }

    fn dot(passes: &[(u64, u64, u64)]) -> InstrCost {
        InstrCost::Dot(Box::new(DotCost {
            macs: 0,
            passes: Passes(
                passes
                    .iter()
                    .map(|&(mac, unload, n)| {
                        let terms = mac;
                        (Pass { mac, terms, unload }, n)
                    })
                    .collect(),
            ),
            broken_slices: 0,
            shape: DotShape {
                kind: 0,
                out_h: 1,
                out_w: 1,
                out_c: 1,
                terms: 1,
                groups: 1,
            },
            pix: (0, 1),
            chans: (0, 1),
            simd_row: 1,
        }))
    }

    fn dma(cycles: u64) -> InstrCost {
        InstrCost::Dma(DmaCost {
            cycles,
            dram_read: 0,
            dram_written: 0,
        })
    }

    #[test]
    fn each_segment_is_floored_by_its_busiest_unit() {
        let scale = InstrCost::Simd(SimdCost {
            rows: 10,
            work: 10,
            port_stall: 2,
        });
        // Segment 0: 1,000 DMA cycles against 3 x 64 MAC (3 x 96 unload): DMA.
        // Segment 1: a 576-term pass x 4 and a SCALE: the MAC array, 2,304 + 12.
        // Segment 2: 32-term passes x 10 with 96-row unloads: the SIMD unit.
        let costs = vec![
            dma(600),
            dot(&[(64, 96, 3)]),
            dma(400),
            InstrCost::Stop,
            dot(&[(576, 96, 4)]),
            scale,
            dma(50),
            InstrCost::Stop,
            dot(&[(32, 96, 10)]),
            InstrCost::Stop,
        ];
        let seg = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2];
        let tl = Timeline {
            instrs: seg.iter().enumerate().map(|(i, &s)| timing(i, s)).collect(),
            segments: vec![SegmentTiming::default(); 3],
        };
        let f = segment_floors(&costs, &tl);
        assert_eq!(
            f[0],
            SegmentFloor {
                dma: 1000,
                mac: 192,
                simd: 288
            }
        );
        assert_eq!((f[0].cycles(), f[0].limit()), (1000, "DMA"));
        assert_eq!((f[1].cycles(), f[1].limit()), (2316, "MAC"));
        assert_eq!(f[1].simd, 384 + 12);
        assert_eq!((f[2].cycles(), f[2].limit()), (960, "SIMD"));
        assert_eq!(
            f[2].mac,
            9 * 96,
            "each pass after the first waits for the unload before it"
        );
    }

    #[test]
    fn short_passes_wait_for_the_unload_before_them_in_any_order() {
        // Three 16-term and three 144-term passes, 64 rows each (SqueezeNet's expand
        // 1x1 and 3x3): a 16-term pass takes 64 cycles after any pass, so the best
        // order (a short pass first) takes 16 + 2 x 64 + 3 x 144 = 576; the floor is
        // 3 x 64 + 3 x 144 - 64 = 560, above both the MAC (480) and SIMD (384) sums.
        let costs = vec![dot(&[(16, 64, 3)]), dot(&[(144, 64, 3)]), InstrCost::Stop];
        let tl = Timeline {
            instrs: (0..3).map(|i| timing(i, 0)).collect(),
            segments: vec![SegmentTiming::default()],
        };
        let f = segment_floors(&costs, &tl)[0];
        assert_eq!((f.mac, f.simd, f.limit()), (560, 384, "MAC"));
    }

    #[test]
    fn sorted_pairing_counts_multiplicities() {
        // {1, 5, 5} with {2, 2, 9}: max(1,2) + max(5,2) + max(5,9).
        assert_eq!(
            sorted_pairing(&[(1, 1), (5, 2)], &[(2, 2), (9, 1)]),
            2 + 5 + 9
        );
        assert_eq!(sorted_pairing(&[], &[]), 0);
    }
}
