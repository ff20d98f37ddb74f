//! Converted tile weights shared by the dot-product instructions that read the same
//! weights.
//!
//! A layer split into pixel tiles runs one instruction per tile and output-channel
//! tile, and every pixel tile reads the same weight bytes: ResNet-50's dot products
//! read 58.8 M weight bytes per frame, 25.5 M of them distinct. Each instruction's
//! weights are converted for its kernel ([`super::dot::DotPrep`]; for the pair kernel
//! of an instruction executed once, only located: [`super::weights::CodeLayout`]); a
//! [`WeightCache`]
//! keeps each conversion under what it was made from ([`WeightKey`]) so the next
//! instruction with the same key takes it instead of converting again.
//!
//! **Invariant:** a kept conversion equals what converting the SRAM's bytes would give
//! now. The key holds every input of the conversion except the weight bytes, whose
//! range is kept with it: the engine calls [`WeightCache::note_write`] after every
//! instruction it executes, and a write that meets the range drops the conversion.

use super::dot::TileWeights;
use super::dot_geom::{DotGeom, DotKind};
use std::collections::HashMap;
use std::sync::Arc;

/// Everything a tile's weight conversion reads besides the weight bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WeightKey {
    pub kind: DotKind,
    pub w_addr: u64,
    pub w_pitch: u64,
    pub kh: u64,
    pub kw: u64,
    pub icpg: u64,
    pub ocpg: u64,
    pub oc_start: u64,
    pub oc_count: u64,
    pub mac_cols: u64,
    pub in_signed: bool,
    pub w_signed: bool,
    /// For an instruction kept across frames (whose pair weights are converted; an
    /// instruction executed once reads them in place).
    pub kept: bool,
}

impl WeightKey {
    pub fn of(
        g: &DotGeom,
        w_addr: u32,
        (in_signed, w_signed): (bool, bool),
        kept: bool,
    ) -> WeightKey {
        WeightKey {
            kind: g.kind,
            w_addr: u64::from(w_addr),
            w_pitch: g.w_pitch,
            kh: g.kh,
            kw: g.kw,
            icpg: g.icpg,
            ocpg: g.ocpg,
            oc_start: g.oc_start,
            oc_count: g.oc_count,
            mac_cols: g.mac_cols,
            in_signed,
            w_signed,
            kept,
        }
    }
}

struct Entry {
    /// The SRAM bytes `[lo, hi)` the conversion read.
    range: (u64, u64),
    weights: Arc<TileWeights>,
    /// When it was last asked for (the cache's clock).
    used: u64,
}

/// Conversions kept: the [`WeightCache::CAPACITY`] most recently used, each until a
/// write meets the bytes it was made from.
#[derive(Default)]
pub struct WeightCache {
    entries: HashMap<WeightKey, Entry>,
    /// The hull of every entry's range (a write outside it meets none).
    hull: Option<(u64, u64)>,
    clock: u64,
}

impl WeightCache {
    /// Conversions kept at most: more than the output-channel tiles of any layer
    /// (ResNet-50's widest, 2,048 channels on 96 columns, has 22), so a layer's pixel
    /// tiles share its conversions, while a one-frame run does not keep every layer's.
    pub const CAPACITY: usize = 64;

    /// The conversion kept under `key`, or `convert`'s (kept with the SRAM `range`
    /// it reads, in place of the least recently used one if the cache is full).
    pub fn get_or_convert<E>(
        &mut self,
        key: WeightKey,
        range: (u64, u64),
        convert: impl FnOnce() -> Result<TileWeights, E>,
    ) -> Result<Arc<TileWeights>, E> {
        self.clock += 1;
        if let Some(e) = self.entries.get_mut(&key) {
            e.used = self.clock;
            return Ok(Arc::clone(&e.weights));
        }
        let weights = Arc::new(convert()?);
        if self.entries.len() >= Self::CAPACITY {
            let oldest = self.entries.iter().min_by_key(|(_, e)| e.used);
            if let Some(k) = oldest.map(|(k, _)| *k) {
                self.entries.remove(&k);
            }
        }
        self.entries.insert(
            key,
            Entry {
                range,
                weights: Arc::clone(&weights),
                used: self.clock,
            },
        );
        self.hull = Some(
            self.hull
                .map_or(range, |(lo, hi)| (lo.min(range.0), hi.max(range.1))),
        );
        Ok(weights)
    }

    /// An instruction wrote SRAM within `writes` (the hull of its writes, `None` if it
    /// wrote none): conversions made from any byte of it are dropped.
    pub fn note_write(&mut self, writes: Option<(u64, u64)>) {
        let meets = |(lo, hi): (u64, u64), (a, b): (u64, u64)| a < hi && lo < b;
        let (Some(w), Some(hull)) = (writes, self.hull) else {
            return;
        };
        if !meets(hull, w) {
            return;
        }
        self.entries.retain(|_, e| !meets(e.range, w));
        self.hull = self
            .entries
            .values()
            .map(|e| e.range)
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
    }

    /// How many conversions are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::gemm::PairWeights;

    fn key(w_addr: u64, oc_start: u64) -> WeightKey {
        WeightKey {
            kind: DotKind::Conv,
            w_addr,
            w_pitch: 0,
            kh: 1,
            kw: 1,
            icpg: 8,
            ocpg: 8,
            oc_start,
            oc_count: 8,
            mac_cols: 8,
            in_signed: true,
            w_signed: true,
            kept: true,
        }
    }

    fn weights() -> Result<TileWeights, ()> {
        Ok(TileWeights::Pair(PairWeights::zeroed(8, 8, true)))
    }

    #[test]
    fn a_conversion_is_shared_until_its_bytes_are_written() {
        let mut c = WeightCache::default();
        let a = c.get_or_convert(key(100, 0), (100, 164), weights).unwrap();
        let b = c.get_or_convert(key(300, 0), (300, 364), weights).unwrap();
        let again = c
            .get_or_convert(key(100, 0), (100, 164), || -> Result<TileWeights, ()> {
                panic!("converted twice")
            })
            .unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        assert!(!Arc::ptr_eq(&a, &b));
        c.note_write(Some((164, 300)));
        c.note_write(None);
        assert_eq!(c.len(), 2, "writes beside both ranges keep both");
        c.note_write(Some((163, 164)));
        assert_eq!(c.len(), 1, "a write into the first range drops it");
        let fresh = c.get_or_convert(key(100, 0), (100, 164), weights).unwrap();
        assert!(!Arc::ptr_eq(&a, &fresh));
        // The form for one execution is another conversion than the kept one.
        let once = WeightKey {
            kept: false,
            ..key(100, 0)
        };
        let o = c.get_or_convert(once, (100, 164), weights).unwrap();
        assert!(!Arc::ptr_eq(&o, &fresh));
        assert_eq!(c.len(), 3);
        c.note_write(Some((0, 1000)));
        assert_eq!(c.len(), 0);
        assert!(c
            .get_or_convert(key(100, 8), (100, 164), || Err(()))
            .is_err());
        assert_eq!(c.len(), 0, "a failed conversion keeps nothing");
    }

    fn kept() -> Result<TileWeights, ()> {
        panic!("converted again")
    }

    #[test]
    fn a_full_cache_drops_the_least_recently_used_conversion() {
        let mut c = WeightCache::default();
        let n = WeightCache::CAPACITY as u64;
        for i in 0..n {
            c.get_or_convert(key(1000 + 100 * i, 0), (0, 1), weights)
                .unwrap();
        }
        // The first one used again, then one more: the second one goes.
        c.get_or_convert(key(1000, 0), (0, 1), kept).unwrap();
        c.get_or_convert(key(1000 + 100 * n, 0), (0, 1), weights)
            .unwrap();
        assert_eq!(c.len(), WeightCache::CAPACITY);
        c.get_or_convert(key(1000, 0), (0, 1), kept).unwrap();
        let mut converted = false;
        c.get_or_convert(key(1100, 0), (0, 1), || {
            converted = true;
            weights()
        })
        .unwrap();
        assert!(converted, "the least recently used conversion was dropped");
    }
}
