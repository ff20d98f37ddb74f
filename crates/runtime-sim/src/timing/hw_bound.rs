//! The hardware bound: the fewest cycles any program of this ISA could take for a
//! layer's work on this configuration (docs/PERFORMANCE.md 3.1).
//!
//! The shape bound (`shape.rs`) counts only the 96x96 slicing of a layer's output.
//! The hardware bound counts every unit the work must pass through, each at the rate
//! the ISA and `HwConfig` allow:
//!
//! - **MAC array**: a pass holds at most `rows` output pixels and the channels of one
//!   conv group within `cols` columns (the columns share one activation vector), and
//!   takes at least one cycle per term. A shape of `P` pixels, `C` channels in conv
//!   groups of `cg` channels and `T` terms needs at least
//!   `ceil(P / rows) * ceil(C / min(cols, cg)) * T` cycles: a depthwise layer one pass
//!   per channel.
//! - **Unload path**: every output value leaves the accumulators as part of a row of at
//!   most `rows` pixels of one channel, one row per cycle at best, and one cycle per
//!   instruction of its SIMD program (the epilogue computes the layer's activation;
//!   the fewest instructions the program carries); the write path takes at most
//!   `sram_write_port` bytes per cycle: `max(ceil(P / rows) * C * max(1, simd_len),
//!   ceil(P * C / write_port))` cycles of the SIMD unit (with the what-if
//!   `simd_rows_per_cycle = k`, `ceil(ceil(P / rows) * C / k)` runs of the program).
//! - **SIMD-only work** (SCALE, ELTWISE): `rows x max(1, simd_len)` cycles of the SIMD
//!   unit, during which the compute queue, in order, issues nothing else.
//! - **DRAM**: the bytes of the network's inputs and outputs the layer moves (nothing
//!   else has to cross DRAM when the weights are resident) at the DRAM bandwidth.
//!
//! A layer alone takes at least its busiest unit's work. A frame takes at least the
//! busiest unit's work summed over all layers (units run concurrently, so one layer's
//! unloads may hide under another's passes). Only the frame's bound holds for every
//! program; a layer whose unloads overlap its neighbours' passes may be charged fewer
//! cycles than its own bound.
//!
//! - **Shift register** (`PassLoad`): the two units do not overlap freely. Each cell
//!   has one shift register, so a pass computes only while the previous pass unloads:
//!   a frame is a chain of slots, each `max(u, m)` for the unload `u` of one pass and
//!   the MAC cycles `m` of the next (`pipeline.rs`). For any threshold `θ`,
//!   `max(u, m) >= (u - θ)+ + min(m, θ)`, and each pass's unload and MAC work lie in
//!   one slot each, so a frame takes at least the sum over passes of
//!   `(u - θ)+ + min(m, θ)`, plus its SIMD-only work. Per shape, the least of that
//!   sum over every tiling is [`PassLoad::charge`]; the bound takes the best `θ`.
//!   At `θ = 0` it is the unload work, as `θ` grows it tends to the MAC work: it is
//!   never below the two units' separate sums, and it is above them when MAC-heavy
//!   passes (a 5x5 depthwise: 25 terms, one row) and SIMD-heavy ones (an expansion
//!   with a SiLU: 16 terms, 96 rows of 9 cycles) cannot pair up.
//!
//! The program's hardware bound is the largest of these.

use super::cost::{DmaCost, InstrCost};
use super::dot_cost::DotShape;
use super::params::TimingParams;
use nnac_isa::{Instr, IoDesc};

/// The least work one layer (or a whole frame) puts on each unit, in cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitWork {
    /// MAC-array cycles: one per term of every pass the slicing needs.
    pub mac: u64,
    /// SIMD cycles unloading the dot products' accumulators.
    pub unload: u64,
    /// SIMD cycles of SCALE / ELTWISE programs (the compute queue waits for them).
    pub simd_only: u64,
    /// DMA cycles of the network's inputs and outputs.
    pub dram: u64,
}

impl UnitWork {
    /// The fewest cycles: the busiest of the compute queue (passes and SIMD-only
    /// work), the SIMD unit (unloads and SIMD-only work) and the DMA queue.
    pub fn cycles(&self) -> u64 {
        (self.mac + self.simd_only)
            .max(self.unload + self.simd_only)
            .max(self.dram)
    }

    pub fn add(&mut self, o: &UnitWork) {
        self.mac += o.mac;
        self.unload += o.unload;
        self.simd_only += o.simd_only;
        self.dram += o.dram;
    }

    /// What sets the bound of this work when the shift register allows no fewer than
    /// `coupled` cycles ([`coupled_cycles`] of `loads`): `"shift register"` (MAC and
    /// SIMD work that cannot pair up pass by pass) when that is more than every unit
    /// alone by more than a chain's two ends (its first MAC and last unload, which
    /// every chain adds), else [`UnitWork::limit`].
    pub fn limit_with(&self, coupled: u64, loads: &[PassLoad]) -> &'static str {
        let ends = loads.iter().map(|l| l.terms).max().unwrap_or(0)
            + loads.iter().map(|l| l.row_cycles).max().unwrap_or(0);
        if coupled > self.cycles() + ends {
            "shift register"
        } else {
            self.limit()
        }
    }

    /// The unit that sets [`UnitWork::cycles`]: `"MAC"`, `"SIMD"` or `"DMA"`.
    pub fn limit(&self) -> &'static str {
        let c = self.cycles();
        if self.mac + self.simd_only == c {
            "MAC"
        } else if self.unload + self.simd_only == c {
            "SIMD"
        } else {
            "DMA"
        }
    }
}

/// Fewest MAC-array passes for `pix` pixels and `chans` channels of `shape`.
fn min_passes(shape: &DotShape, pix: u64, chans: u64, prm: &TimingParams) -> u64 {
    let per_group = (shape.out_c / shape.groups.max(1)).max(1);
    pix.div_ceil(prm.rows) * chans.div_ceil(prm.cols.min(per_group).max(1))
}

/// The least MAC and unload work of `pix` x `chans` outputs of `shape` whose
/// instructions' SIMD programs are at least `simd_row` instructions long.
pub fn dot_work(
    shape: &DotShape,
    pix: u64,
    chans: u64,
    simd_row: u64,
    prm: &TimingParams,
) -> UnitWork {
    let l = pass_load(shape, pix, chans, simd_row, prm);
    UnitWork {
        mac: l.min_passes * l.terms,
        // `l.rows` counts groups of `simd_rows` rows, one program run each.
        unload: (l.rows * l.row_cycles).max((pix * chans).div_ceil(prm.write_port)),
        ..UnitWork::default()
    }
}

/// The passes of `pix` x `chans` outputs of `shape` as the shift register sees them.
pub fn pass_load(
    shape: &DotShape,
    pix: u64,
    chans: u64,
    simd_row: u64,
    prm: &TimingParams,
) -> PassLoad {
    PassLoad {
        rows: (pix.div_ceil(prm.rows) * chans).div_ceil(prm.simd_rows),
        min_passes: min_passes(shape, pix, chans, prm),
        terms: shape.terms,
        row_cycles: simd_row.max(1),
    }
}

/// One dot-product shape's passes as the shift register sees them: whatever the
/// tiling, at least `min_passes` passes of at least `terms` MAC cycles each, and
/// `rows` runs of the SIMD program (accumulator rows, `simd_rows_per_cycle` at a
/// time) of at least `row_cycles` cycles each, every pass unloading at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassLoad {
    pub rows: u64,
    pub min_passes: u64,
    pub terms: u64,
    pub row_cycles: u64,
}

impl PassLoad {
    /// The least of `sum over passes of (u - θ)+ + min(m, θ)` over every tiling.
    /// With `n` passes (real `n >= min_passes` relaxes the integer count) the unload
    /// part is at least `(rows * s - n θ)+` (it is convex in each pass's rows) and
    /// at least `n (s - θ)+` (a pass unloads a row), the MAC part `n min(T, θ)`; the
    /// sum is convex in `n`, so its least value is at `min_passes` or at a kink.
    pub fn charge(&self, theta: f64) -> f64 {
        let (r, s, t) = (
            self.rows as f64,
            self.row_cycles.max(1) as f64,
            self.terms as f64,
        );
        let n0 = self.min_passes as f64;
        let at =
            |n: f64| n * t.min(theta) + (r * s - n * theta).max(0.0).max(n * (s - theta).max(0.0));
        let mut best = at(n0);
        for n in [r, if theta > 0.0 { r * s / theta } else { n0 }] {
            if n > n0 {
                best = best.min(at(n));
            }
        }
        best
    }
}

/// The thresholds worth trying for [`coupled_cycles`]: each shape's terms, row
/// cycles and mean unload per pass (where its charge bends).
fn thresholds<'a>(loads: impl Iterator<Item = &'a PassLoad>) -> Vec<f64> {
    let mut v: Vec<f64> = loads
        .flat_map(|l| {
            let mean = (l.rows * l.row_cycles.max(1)) as f64 / l.min_passes.max(1) as f64;
            [l.terms as f64, l.row_cycles.max(1) as f64, mean]
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// The fewest cycles the shift register allows for the passes `loads` of `work`
/// (whose SCALE / ELTWISE work holds both units): the best threshold's charge,
/// rounded down (a program takes whole cycles), and never below the MAC or the
/// unload work alone.
pub fn coupled_cycles(loads: &[PassLoad], work: &UnitWork) -> u64 {
    // The chain starts with a pass's MAC alone and ends with a pass's unload alone:
    // those two slots hold `(m - θ)+` and `min(u, θ)` more than their charge.
    let first_mac = loads.iter().map(|l| l.terms).min().unwrap_or(0) as f64;
    let last_unload = loads.iter().map(|l| l.row_cycles.max(1)).min().unwrap_or(0) as f64;
    let best = thresholds(loads.iter())
        .into_iter()
        .map(|th| {
            let ends = (first_mac - th).max(0.0) + last_unload.min(th);
            ends + loads.iter().map(|l| l.charge(th)).sum::<f64>()
        })
        .fold(0.0, f64::max);
    (best.floor() as u64).max(work.mac).max(work.unload) + work.simd_only
}

/// DRAM ranges `[start, end)` of the network's inputs and outputs.
pub fn io_ranges(io: &[IoDesc]) -> Vec<(u64, u64)> {
    io.iter()
        .map(|d| {
            let bytes = crate::io::numel(d) * d.dtype.size();
            (d.dram_addr, d.dram_addr.saturating_add(bytes))
        })
        .collect()
}

/// The least DRAM work of one instruction: its bytes if it moves a network input or
/// output (its DRAM rows inside one of `io`), else none.
pub fn dma_work(ins: &Instr, cost: &InstrCost, io: &[(u64, u64)], prm: &TimingParams) -> u64 {
    let (
        Instr::DmaRead(d) | Instr::DmaWrite(d),
        InstrCost::Dma(DmaCost {
            dram_read,
            dram_written,
            ..
        }),
    ) = (ins, cost)
    else {
        return 0;
    };
    let rows = u64::from(d.rows);
    let end = rows
        .saturating_sub(1)
        .saturating_mul(d.dram_stride)
        .saturating_add(d.dram_addr)
        .saturating_add(u64::from(d.row_len));
    let inside = io.iter().any(|&(lo, hi)| d.dram_addr >= lo && end <= hi);
    if inside && rows > 0 {
        prm.dram_cycles(dram_read + dram_written)
    } else {
        0
    }
}

/// The fraction of the MAC array `macs` could use in `cycles`: the hardware bound as
/// a utilization (`None` without MACs or cycles), at most 1.
pub fn as_utilization(macs: u64, cycles: u64, prm: &TimingParams) -> Option<f64> {
    (macs > 0 && cycles > 0)
        .then(|| (macs as f64 / (cycles as f64 * (prm.rows * prm.cols) as f64)).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::HwConfig;

    fn shape(out_c: u64, groups: u64, terms: u64) -> DotShape {
        DotShape {
            kind: 0,
            out_h: 112,
            out_w: 112,
            out_c,
            terms,
            groups,
        }
    }

    #[test]
    fn a_depthwise_layer_runs_one_pass_per_channel() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // 32 channels of 112 x 112, 3x3 depthwise: 131 pixel groups x 32 passes x 9.
        let w = dot_work(&shape(32, 32, 9), 112 * 112, 32, 1, &prm);
        assert_eq!(w.mac, 131 * 32 * 9);
        assert_eq!(w.unload, 131 * 32);
        assert_eq!(w.cycles(), w.mac);
        assert_eq!(w.limit(), "MAC");
    }

    #[test]
    fn a_pointwise_layer_with_few_terms_is_bound_by_its_unloads() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // 16 -> 96 channels 1x1: 16 terms per pass, 96 rows to unload.
        let w = dot_work(&shape(96, 1, 16), 112 * 112, 96, 1, &prm);
        assert_eq!(w.mac, 131 * 16);
        assert_eq!(w.unload, 131 * 96);
        assert_eq!(w.limit(), "SIMD");
        // A 9-instruction SiLU epilogue: nine cycles per row.
        assert_eq!(
            dot_work(&shape(96, 1, 16), 112 * 112, 96, 9, &prm).unload,
            131 * 96 * 9
        );
    }

    /// The fewest cycles of a chain of passes `(m, u)` in the best order: slots of
    /// `max(u of one pass, m of the next)` (`pipeline.rs`), by dynamic programming
    /// over the subsets of passes.
    fn best_order(passes: &[(u64, u64)]) -> u64 {
        let n = passes.len();
        let mut dp = vec![vec![u64::MAX; n]; 1 << n];
        for (i, &(m, _)) in passes.iter().enumerate() {
            dp[1 << i][i] = m;
        }
        for mask in 1..1usize << n {
            for last in 0..n {
                let t = dp[mask][last];
                if t == u64::MAX {
                    continue;
                }
                for (j, &(m, _)) in passes.iter().enumerate() {
                    if mask & 1 << j == 0 {
                        let v = &mut dp[mask | 1 << j][j];
                        *v = (*v).min(t + m.max(passes[last].1));
                    }
                }
            }
        }
        (0..n)
            .map(|l| dp[(1 << n) - 1][l] + passes[l].1)
            .min()
            .unwrap()
    }

    /// Every split of `rows` into passes of at most `kmax` rows (as sorted parts).
    fn splits(rows: u64, kmax: u64, max_part: u64) -> Vec<Vec<u64>> {
        if rows == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for k in 1..=kmax.min(max_part).min(rows) {
            for mut rest in splits(rows - k, kmax, k) {
                rest.push(k);
                out.push(rest);
            }
        }
        out
    }

    #[test]
    fn no_tiling_and_no_order_beats_the_shift_register_bound() {
        // Small random layers (rows, widest pass, terms, SIMD cycles per row): every
        // tiling of every layer into passes, every order of all passes, against the
        // bound computed from the layers alone.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let (mut tight, mut loose) = (0, 0);
        for case in 0..600 {
            let layers: Vec<(u64, u64, u64, u64)> = (0..1 + next(3))
                .map(|_| (1 + next(4), 1 + next(3), 1 + next(30), 1 + next(9)))
                .collect();
            let loads: Vec<PassLoad> = layers
                .iter()
                .map(|&(rows, kmax, terms, s)| PassLoad {
                    rows,
                    min_passes: rows.div_ceil(kmax),
                    terms,
                    row_cycles: s,
                })
                .collect();
            let mut work = UnitWork::default();
            for l in &loads {
                work.mac += l.min_passes * l.terms;
                work.unload += l.rows * l.row_cycles;
            }
            let bound = coupled_cycles(&loads, &work);
            // Every combination of the layers' tilings.
            let mut best = u64::MAX;
            let mut combos: Vec<Vec<(u64, u64)>> = vec![vec![]];
            for &(rows, kmax, terms, s) in &layers {
                let mut grown = Vec::new();
                for c in &combos {
                    for sp in splits(rows, kmax, kmax) {
                        let mut c = c.clone();
                        c.extend(sp.iter().map(|&k| (terms, k * s)));
                        grown.push(c);
                    }
                }
                combos = grown;
            }
            for c in combos.iter().filter(|c| c.len() <= 9) {
                best = best.min(best_order(c));
            }
            assert!(
                bound <= best,
                "case {case} {layers:?}: bound {bound} > best {best}"
            );
            tight += usize::from(bound == best);
            loose += usize::from(bound > work.cycles());
        }
        // The bound is often exact on such small problems, and above both units'
        // work alone in many.
        assert!(
            tight > 200 && loose > 200,
            "exact in {tight}, above the units in {loose}"
        );
    }

    /// Cycles of a chain of passes `(m, u)` in the given order.
    fn chain(passes: &[(u64, u64)]) -> u64 {
        let mut prev_u = 0;
        let mut t = 0;
        for &(m, u) in passes {
            t += m.max(prev_u);
            prev_u = u;
        }
        t + prev_u
    }

    #[test]
    fn depthwise_and_expansion_passes_pair_up_only_pass_by_pass() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // A 5x5 depthwise layer (96 channels of 96 pixels: 96 passes of 25 terms, one
        // row of a 9-cycle SiLU each) and a 16 -> 96 expansion with the same SiLU (at
        // least one pass of 16 terms, 96 rows). The units alone: 96 * 25 + 16 = 2416
        // MAC and 96 * 9 * 2 = 1728 SIMD cycles.
        let dw = pass_load(&shape(96, 96, 25), 96, 96, 9, &prm);
        let ex = pass_load(&shape(96, 1, 16), 96, 96, 9, &prm);
        assert_eq!(
            (dw.min_passes, dw.rows, ex.min_passes, ex.rows),
            (96, 96, 1, 96)
        );
        let mut work = dot_work(&shape(96, 96, 25), 96, 96, 9, &prm);
        work.add(&dot_work(&shape(96, 1, 16), 96, 96, 9, &prm));
        assert_eq!((work.mac, work.unload, work.cycles()), (2416, 1728, 2416));
        // One expansion pass: only one depthwise pass computes under its 864-cycle
        // unload, the other 95 leave the SIMD unit idle 16 of their 25 cycles.
        let mut one = vec![(16, 864)];
        one.extend(std::iter::repeat_n((25, 9), 96));
        assert_eq!(chain(&one), 16 + 864 + 95 * 25 + 9);
        // 32 passes of 3 rows (27 cycles) each unload under one depthwise pass.
        let mut split: Vec<(u64, u64)> = (0..32).flat_map(|_| [(16, 27), (25, 9)]).collect();
        split.extend(std::iter::repeat_n((25, 9), 64));
        assert_eq!(chain(&split), 16 + 31 * (27 + 16) + 27 + 64 * 25 + 9);
        let c = coupled_cycles(&[dw, ex], &work);
        assert!(
            c > work.cycles() && c <= chain(&split),
            "{c} {}",
            chain(&split)
        );
        assert!(chain(&split) < chain(&one));
        assert_eq!(work.limit_with(c, &[dw, ex]), "shift register");
    }

    #[test]
    fn simd_only_work_occupies_both_queues() {
        let w = UnitWork {
            mac: 10,
            unload: 5,
            simd_only: 7,
            dram: 0,
        };
        assert_eq!(w.cycles(), 17);
        let d = UnitWork { dram: 30, ..w };
        assert_eq!((d.cycles(), d.limit()), (30, "DMA"));
    }
}
