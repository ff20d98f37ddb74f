//! Byte-address sets as sorted, disjoint half-open ranges.

/// Most ranges one set keeps; a larger set is coarsened (neighbouring ranges are
/// replaced by their hull), which only ever adds bytes, so checks stay sound.
pub const MAX_RANGES: usize = 1 << 14;

/// A set of byte addresses: sorted, disjoint, non-adjacent ranges `[lo, hi)`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Intervals(Vec<(u64, u64)>);

impl Intervals {
    /// The union of `ranges` (empty ranges are dropped), coarsened to [`MAX_RANGES`].
    pub fn from_ranges(mut ranges: Vec<(u64, u64)>) -> Intervals {
        ranges.retain(|&(lo, hi)| lo < hi);
        // Stable sort: footprints arrive as a few already sorted runs (one per tensor),
        // which it merges in near-linear time; equal ranges are indistinguishable.
        ranges.sort();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match out.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        Intervals(coarsen(out))
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Smallest range holding every byte of the set.
    pub fn hull(&self) -> Option<(u64, u64)> {
        Some((self.0.first()?.0, self.0.last()?.1))
    }

    /// The bytes both sets hold.
    pub fn intersect(&self, other: &Intervals) -> Intervals {
        let (mut a, mut b) = (0, 0);
        let mut out = Vec::new();
        while a < self.0.len() && b < other.0.len() {
            let (x, y) = (self.0[a], other.0[b]);
            let (lo, hi) = (x.0.max(y.0), x.1.min(y.1));
            if lo < hi {
                out.push((lo, hi));
            }
            if x.1 <= y.1 {
                a += 1;
            } else {
                b += 1;
            }
        }
        Intervals::from_ranges(out)
    }

    /// The lowest-addressed range of bytes both sets hold, if any.
    pub fn first_overlap(&self, other: &Intervals) -> Option<(u64, u64)> {
        match (self.hull(), other.hull()) {
            (Some(x), Some(y)) if x.0 < y.1 && y.0 < x.1 => {}
            _ => return None,
        }
        let (small, large) = if self.0.len() <= other.0.len() {
            (&self.0, &other.0)
        } else {
            (&other.0, &self.0)
        };
        small.iter().find_map(|&(lo, hi)| {
            let k = large.partition_point(|&(_, h)| h <= lo);
            let &(blo, bhi) = large.get(k)?;
            (blo < hi).then(|| (lo.max(blo), hi.min(bhi)))
        })
    }
}

/// Merges groups of neighbouring ranges into their hulls until at most
/// [`MAX_RANGES`] remain.
fn coarsen(v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    if v.len() <= MAX_RANGES {
        return v;
    }
    let group = v.len().div_ceil(MAX_RANGES);
    v.chunks(group)
        .map(|c| (c[0].0, c[c.len() - 1].1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_overlapping_and_adjacent_ranges() {
        let s = Intervals::from_ranges(vec![(10, 20), (0, 5), (5, 8), (15, 30), (40, 40)]);
        assert_eq!(s.ranges(), &[(0, 8), (10, 30)]);
        assert_eq!(s.hull(), Some((0, 30)));
    }

    #[test]
    fn first_overlap_finds_the_lowest_common_bytes() {
        let a = Intervals::from_ranges(vec![(0, 4), (10, 14), (20, 24)]);
        let b = Intervals::from_ranges(vec![(4, 10), (13, 21)]);
        assert_eq!(a.first_overlap(&b), Some((13, 14)));
        assert_eq!(b.first_overlap(&a), Some((13, 14)));
        let c = Intervals::from_ranges(vec![(4, 10), (14, 20)]);
        assert_eq!(a.first_overlap(&c), None);
        assert_eq!(a.first_overlap(&Intervals::default()), None);
    }

    #[test]
    fn large_sets_are_coarsened_soundly() {
        let n = MAX_RANGES as u64 * 3;
        let s = Intervals::from_ranges((0..n).map(|i| (i * 4, i * 4 + 1)).collect());
        assert!(s.ranges().len() <= MAX_RANGES);
        // Every original byte is still covered.
        let probe = Intervals::from_ranges(vec![((n - 1) * 4, (n - 1) * 4 + 1)]);
        assert!(s.first_overlap(&probe).is_some());
    }
}
