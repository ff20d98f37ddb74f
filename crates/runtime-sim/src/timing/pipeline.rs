//! The compute side across instructions: MAC array, accumulators, shift register and
//! SIMD unit. At the end of a pass the accumulators are copied into the shift
//! register (cleared for the next pass) as soon as the shift register has finished
//! unloading the previous pass; the MAC array waits for that copy. So the next pass
//! (of the same or the next instruction) computes while the previous one unloads.

use super::dot_cost::Passes;
use super::simd_cost::SimdCost;

/// Where the compute unit's time went for one instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitRun {
    /// When the MAC array (or, for SIMD-only work, the SIMD unit) began.
    pub start: u64,
    /// When the MAC array is free for the next instruction (last accumulator copy).
    pub release: u64,
    /// When the last result has been written (completion).
    pub end: u64,
    /// MAC-array cycles spent on dot-product terms.
    pub mac_busy: u64,
    /// Cycles of SIMD-only work (SCALE / ELTWISE).
    pub simd_work: u64,
    /// MAC-array cycles beyond one per term: SRAM reads slower than the array.
    pub port_stall: u64,
    /// Cycles the MAC array waited for the shift register (SIMD unload).
    pub unload_stall: u64,
}

/// The state carried from one compute instruction to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ComputeUnit {
    /// When the shift register and SIMD unit are free.
    pub simd_free: u64,
}

impl ComputeUnit {
    pub fn new(t: u64) -> ComputeUnit {
        ComputeUnit { simd_free: t }
    }

    /// Runs the passes of a dot-product instruction whose MAC work may begin at `start`.
    pub fn run_dot(&mut self, start: u64, passes: &Passes) -> UnitRun {
        let mut r = UnitRun {
            start,
            ..UnitRun::default()
        };
        let mut t = start;
        for p in passes.iter() {
            let mac_end = t + p.mac;
            r.mac_busy += p.terms;
            r.port_stall += p.mac - p.terms;
            let copy = mac_end.max(self.simd_free);
            r.unload_stall += copy - mac_end;
            self.simd_free = copy + p.unload;
            t = copy;
        }
        r.release = t;
        r.end = self.simd_free;
        r
    }

    /// Runs a SCALE / ELTWISE instruction starting at `start` (the SIMD unit must be
    /// free by then). The MAC array stays idle until it completes.
    pub fn run_simd(&mut self, start: u64, c: &SimdCost) -> UnitRun {
        let begin = start.max(self.simd_free);
        let end = begin + c.cycles();
        self.simd_free = end;
        UnitRun {
            start,
            release: end,
            end,
            simd_work: c.work,
            port_stall: c.port_stall,
            unload_stall: begin - start,
            mac_busy: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::dot_cost::Pass;
    use super::*;

    fn passes(v: &[(u64, u64, u64, u64)]) -> Passes {
        Passes(
            v.iter()
                .map(|&(mac, terms, unload, n)| (Pass { mac, terms, unload }, n))
                .collect(),
        )
    }

    #[test]
    fn long_dot_products_hide_the_unload() {
        // 3 passes of 576 terms (3x3x64), 96-row unload: only the last unload shows.
        let mut u = ComputeUnit::new(0);
        let r = u.run_dot(0, &passes(&[(576, 576, 96, 3)]));
        assert_eq!(
            (r.release, r.end, r.mac_busy, r.unload_stall),
            (1728, 1824, 1728, 0)
        );
    }

    #[test]
    fn short_dot_products_wait_for_the_unload() {
        // 1x1 conv with 32 input channels: 32 MAC cycles, 96 unload cycles per pass.
        // Pass 1 copies at 32, pass 2 ends MAC at 64 but copies at 128, pass 3 ends
        // MAC at 160, copies at 224; last unload ends at 320.
        let mut u = ComputeUnit::new(0);
        let r = u.run_dot(0, &passes(&[(32, 32, 96, 3)]));
        assert_eq!(r.release, 224);
        assert_eq!(r.end, 320);
        assert_eq!(r.unload_stall, 64 + 64);
        assert_eq!(r.mac_busy, 96);
        // The next instruction overlaps the previous unload the same way.
        let r2 = u.run_dot(r.release, &passes(&[(32, 32, 96, 1)]));
        assert_eq!((r2.release, r2.end, r2.unload_stall), (320, 416, 64));
    }

    #[test]
    fn port_stalls_are_separated_from_terms() {
        let mut u = ComputeUnit::new(10);
        let r = u.run_dot(10, &passes(&[(128, 64, 96, 1)]));
        assert_eq!(
            (r.release, r.end, r.port_stall, r.mac_busy),
            (138, 234, 64, 64)
        );
    }

    #[test]
    fn simd_work_waits_for_the_simd_unit() {
        let mut u = ComputeUnit::new(0);
        u.simd_free = 50;
        let c = SimdCost {
            rows: 64,
            work: 64,
            port_stall: 64,
        };
        let r = u.run_simd(20, &c);
        assert_eq!((r.release, r.end, r.unload_stall), (178, 178, 30));
        assert_eq!(u.simd_free, 178);
    }
}
