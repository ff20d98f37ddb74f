//! The schedule floor: the fewest cycles any order of a program's instructions
//! could take, segment by segment, under this timing model.
//!
//! Each unit of a segment works through a fixed amount of work whatever the order:
//! the DMA queue runs its instructions one after another (each its latency plus its
//! bytes at the DRAM bandwidth); the compute queue holds the MAC array for every
//! pass of every dot product and, while a SCALE or ELTWISE runs, for all of it (the
//! array idles, docs/PERFORMANCE.md 1.5); the SIMD unit unloads every pass and runs
//! every SCALE and ELTWISE program. A segment ends when all three are done, so it
//! takes at least the most of the three busy times, and a frame at least the sum
//! over its segments. What a profile spends above that floor is lost to the order
//! and the waits (flags, DMA arriving late), not to the amount of work: the part a
//! better schedule of the same instructions could win. Unlike the shape bound
//! (`shape.rs`) the floor takes the instructions as they are: their tiling, their
//! transfers (a host op's operand and result included) and their SRAM-port stalls.

use super::cost::InstrCost;
use super::timeline::Timeline;

/// The work of one segment per unit, in cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentFloor {
    /// DMA queue: the sum of its instructions' latencies and transfers.
    pub dma: u64,
    /// Compute queue (the MAC array): every pass's MAC cycles, and every SCALE /
    /// ELTWISE whole.
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

    fn add(&mut self, cost: &InstrCost) {
        match cost {
            InstrCost::Dma(d) => self.dma += d.cycles,
            InstrCost::Dot(d) => {
                for (p, n) in &d.passes.0 {
                    self.mac += p.mac * n;
                    self.simd += p.unload * n;
                }
            }
            InstrCost::Simd(s) => {
                self.mac += s.cycles();
                self.simd += s.cycles();
            }
            InstrCost::Stop => {}
        }
    }
}

/// The floor of every segment of `tl` (in its order), from the instructions' costs.
pub fn segment_floors(costs: &[InstrCost], tl: &Timeline) -> Vec<SegmentFloor> {
    let mut out = vec![SegmentFloor::default(); tl.segments.len()];
    for (t, cost) in tl.instrs.iter().zip(costs) {
        if let Some(f) = out.get_mut(t.segment) {
            f.add(cost);
        }
    }
    out
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
    }
}
