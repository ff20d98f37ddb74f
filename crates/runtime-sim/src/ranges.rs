//! Sets of byte ranges: sorted, disjoint, non-adjacent `[start, end)` intervals.

/// A set of SRAM byte addresses stored as merged intervals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    spans: Vec<(u64, u64)>,
}

impl RangeSet {
    /// Builds the set from arbitrary (possibly overlapping, unsorted) ranges.
    pub fn from_ranges(mut ranges: Vec<(u64, u64)>) -> RangeSet {
        ranges.retain(|r| r.0 < r.1);
        ranges.sort_unstable();
        let mut spans: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for (s, e) in ranges {
            match spans.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => spans.push((s, e)),
            }
        }
        RangeSet { spans }
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub fn spans(&self) -> &[(u64, u64)] {
        &self.spans
    }

    /// `[lowest, highest)` address, if any.
    pub fn bounds(&self) -> Option<(u64, u64)> {
        Some((self.spans.first()?.0, self.spans.last()?.1))
    }

    /// The first overlapping range of the two sets, if they intersect.
    pub fn first_overlap(&self, other: &RangeSet) -> Option<(u64, u64)> {
        let (a0, a1) = self.bounds()?;
        let (b0, b1) = other.bounds()?;
        if a1 <= b0 || b1 <= a0 {
            return None;
        }
        let (mut i, mut j) = (0, 0);
        while i < self.spans.len() && j < other.spans.len() {
            let (s, t) = (self.spans[i], other.spans[j]);
            let lo = s.0.max(t.0);
            let hi = s.1.min(t.1);
            if lo < hi {
                return Some((lo, hi));
            }
            if s.1 <= t.1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_intersects() {
        let a = RangeSet::from_ranges(vec![(10, 20), (0, 5), (5, 8), (15, 25), (30, 30)]);
        assert_eq!(a.spans(), &[(0, 8), (10, 25)]);
        let b = RangeSet::from_ranges(vec![(8, 10), (26, 40)]);
        assert_eq!(a.first_overlap(&b), None);
        let c = RangeSet::from_ranges(vec![(8, 10), (24, 40)]);
        assert_eq!(a.first_overlap(&c), Some((24, 25)));
        assert_eq!(c.first_overlap(&a), Some((24, 25)));
        assert_eq!(RangeSet::default().first_overlap(&a), None);
    }
}
