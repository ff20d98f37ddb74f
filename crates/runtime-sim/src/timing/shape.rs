//! The shape bound: the best MAC utilization any schedule could reach for a layer
//! given only the 96x96 slicing of its output. A layer's output of `P` pixels and `C`
//! channels (per dot-product shape, `T` terms per output value) needs at least
//! `ceil(P / rows) * ceil(C / cols) * T` cycles of the MAC array, so its utilization
//! cannot exceed `MACs / (that * rows * cols)` (at most 1).

use super::dot_cost::{DotCost, DotShape};
use super::hw_bound::{dot_work, pass_load, PassLoad, UnitWork};
use super::params::TimingParams;
use std::collections::BTreeMap;

/// The pixels and channels a layer's instructions cover, per dot-product shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    shapes: BTreeMap<DotShape, Ranges>,
}

/// Pixel ranges and channel ranges of a shape's tiles, and the shortest SIMD program
/// (cycles per accumulator row) among them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Ranges {
    pix: Vec<(u64, u64)>,
    chans: Vec<(u64, u64)>,
    simd_row: Option<u64>,
}

/// Number of integers in the union of half-open ranges.
fn union_len(ranges: &[(u64, u64)]) -> u64 {
    let mut v = ranges.to_vec();
    v.sort_unstable();
    let (mut total, mut reach) = (0, 0);
    for (lo, hi) in v {
        let lo = lo.max(reach);
        if hi > lo {
            total += hi - lo;
            reach = hi;
        }
    }
    total
}

impl Coverage {
    pub fn add(&mut self, d: &DotCost) {
        let e = self.shapes.entry(d.shape).or_default();
        e.pix.push(d.pix);
        e.chans.push(d.chans);
        e.simd_row = Some(e.simd_row.map_or(d.simd_row, |r| r.min(d.simd_row)));
    }

    /// The least work of the covered outputs on each unit (`hw_bound.rs`).
    pub fn work(&self, prm: &TimingParams) -> UnitWork {
        let mut w = UnitWork::default();
        for (s, r) in &self.shapes {
            let (pix, chans) = (union_len(&r.pix), union_len(&r.chans));
            w.add(&dot_work(s, pix, chans, r.simd_row.unwrap_or(1), prm));
        }
        w
    }

    /// The covered outputs' passes as the shift register sees them, per shape.
    pub fn pass_loads(&self, prm: &TimingParams) -> Vec<PassLoad> {
        self.shapes
            .iter()
            .map(|(s, r)| {
                let (pix, chans) = (union_len(&r.pix), union_len(&r.chans));
                pass_load(s, pix, chans, r.simd_row.unwrap_or(1), prm)
            })
            .collect()
    }

    /// Fewest MAC-array cycles any schedule needs for the covered outputs.
    pub fn min_cycles(&self, rows: u64, cols: u64) -> u64 {
        self.shapes
            .iter()
            .map(|(s, r)| {
                union_len(&r.pix).div_ceil(rows) * union_len(&r.chans).div_ceil(cols) * s.terms
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    /// The shape bound for `macs` multiply-accumulates; `None` without dot products.
    pub fn bound(&self, macs: u64, rows: u64, cols: u64) -> Option<f64> {
        let min = self.min_cycles(rows, cols);
        (!self.is_empty() && min > 0)
            .then(|| (macs as f64 / (min as f64 * (rows * cols) as f64)).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::super::dot_cost::Passes;
    use super::*;

    fn tile(pix: (u64, u64), chans: (u64, u64), out_c: u64, terms: u64) -> DotCost {
        DotCost {
            macs: (pix.1 - pix.0) * (chans.1 - chans.0) * terms,
            passes: Passes::default(),
            broken_slices: 0,
            shape: DotShape {
                kind: 0,
                out_h: 10,
                out_w: 10,
                out_c,
                terms,
                groups: 1,
            },
            pix,
            chans,
            simd_row: 1,
        }
    }

    #[test]
    fn a_layer_of_100_pixels_and_100_channels() {
        // 100 x 100 outputs: 2 x 2 slices; bound = 10000 / (4 * 9216).
        let mut c = Coverage::default();
        let tiles = [
            tile((0, 96), (0, 96), 100, 9),
            tile((0, 96), (96, 100), 100, 9),
            tile((96, 100), (0, 96), 100, 9),
            tile((96, 100), (96, 100), 100, 9),
        ];
        tiles.iter().for_each(|t| c.add(t));
        let macs: u64 = tiles.iter().map(|t| t.macs).sum();
        assert_eq!(macs, 100 * 100 * 9);
        assert_eq!(c.min_cycles(96, 96), 4 * 9);
        let b = c.bound(macs, 96, 96).unwrap();
        assert!((b - 10000.0 / 36864.0).abs() < 1e-12, "{b}");
    }

    #[test]
    fn full_slices_bound_is_one() {
        let mut c = Coverage::default();
        let t = tile((0, 192), (0, 96), 96, 64);
        c.add(&t);
        assert_eq!(c.bound(t.macs, 96, 96), Some(1.0));
        assert_eq!(Coverage::default().bound(0, 96, 96), None);
    }

    #[test]
    fn union_counts_overlaps_once() {
        assert_eq!(union_len(&[(0, 10), (5, 15), (20, 25)]), 20);
        assert_eq!(union_len(&[]), 0);
    }
}
