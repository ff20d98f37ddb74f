//! Gathered input patches kept from one dot-product instruction for the next ones
//! that read the same input pixels.
//!
//! A layer with more output channels than the MAC array has columns runs as one
//! instruction per output-channel tile, each reading the same input pixels: ResNet-50's
//! dot products gather 52 M patch entries per frame, of which 22 M are not a repeat of
//! the previous instruction's. A [`PatchCache`] keeps the patches of the last
//! instruction's pixel blocks with what they were gathered from ([`GatherKey`]); the
//! next instruction with the same key and blocks uses them instead of gathering again.
//!
//! **Invariant:** a kept patch equals what a fresh gather would give now. The key holds
//! every input of the gather except the SRAM bytes; those are covered by the hull of
//! the input tensor it reads ([`GatherKey::input_hull`]): the engine calls
//! [`PatchCache::note_write`] after every instruction it executes, and a write that
//! meets the hull drops the patches; a gather that fails keeps nothing.

use super::dot_geom::{DotGeom, DotKind};
use super::tensor::ActView;

/// Everything a patch gather reads besides the SRAM bytes (`gather::gather_bytes`
/// and the widening after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatherKey {
    pub kind: DotKind,
    pub in_h: u64,
    pub in_w: u64,
    pub kh: u64,
    pub kw: u64,
    pub pad_top: i64,
    pub pad_left: i64,
    pub sh: u64,
    pub sw: u64,
    pub dh: u64,
    pub dw: u64,
    /// Input channels per group, and the group.
    pub icpg: u64,
    pub group: u64,
    /// Width of the output pixel grid the flattened pixels index.
    pub out_w: u64,
    pub input: ActView,
    /// Patch row length, padding byte, the byte every code is XORed with, and the
    /// patch form.
    pub kpad: usize,
    pub pad: u8,
    pub xor: u8,
    pub form: PatchForm,
}

/// What a patch row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchForm {
    /// Code bytes (the VNNI byte kernel's).
    Bytes,
    /// Values as i16, from codes of this signedness (the i16 kernels').
    Words { signed: bool },
}

impl GatherKey {
    /// The key of a gather of `g`'s input for `group`.
    pub fn of(g: &DotGeom, group: u64, kpad: usize, pad: u8, xor: u8, form: PatchForm) -> Self {
        GatherKey {
            kind: g.kind,
            in_h: g.in_h,
            in_w: g.in_w,
            kh: g.kh,
            kw: g.kw,
            pad_top: g.pad_top,
            pad_left: g.pad_left,
            sh: g.sh,
            sw: g.sw,
            dh: g.dh,
            dw: g.dw,
            icpg: g.icpg,
            group,
            out_w: g.pix.width,
            input: g.input,
            kpad,
            pad,
            xor,
            form,
        }
    }

    /// The smallest byte range holding every byte the gather can read: every pixel
    /// of the group's channels (`None` if the end does not fit in u64).
    pub fn input_hull(&self) -> Option<(u64, u64)> {
        let last_channel = (self.group + 1).checked_mul(self.icpg)?.checked_sub(1)?;
        let last = (self.in_h.checked_sub(1)?)
            .checked_mul(self.input.row_pitch)?
            .checked_add(
                self.in_w
                    .checked_sub(1)?
                    .checked_mul(self.input.pix_pitch)?,
            )?
            .checked_add(last_channel.checked_mul(self.input.chan_pitch)?)?;
        Some((
            self.input.addr,
            self.input.addr.checked_add(last)?.checked_add(1)?,
        ))
    }
}

/// The patch of one pixel block, in the form its key names.
#[derive(Debug, Default)]
pub struct BlockPatch {
    pub pixels: std::ops::Range<u64>,
    pub bytes: Vec<u8>,
    pub words: Vec<i16>,
}

/// The patches of the last instruction whose blocks were gathered through the cache.
#[derive(Debug, Default)]
pub struct PatchCache {
    key: Option<GatherKey>,
    /// The SRAM bytes the kept patches were gathered from.
    hull: (u64, u64),
    blocks: Vec<BlockPatch>,
}

impl PatchCache {
    /// Slots for the `n` pixel blocks of a gather with `key`, and whether they hold
    /// that gather's patches (each slot also names its block's pixels, which the
    /// caller compares with its own). On a miss the cache forgets its patches; once
    /// the caller has filled every slot it calls [`Self::keep`].
    pub fn slots(&mut self, key: &GatherKey, n: usize) -> (&mut [BlockPatch], bool) {
        let hit = self.key.as_ref() == Some(key) && self.blocks.len() == n;
        if !hit {
            self.key = None;
            self.blocks.resize_with(n, BlockPatch::default);
        }
        (&mut self.blocks[..n], hit)
    }

    /// The slots now hold the patches of a gather with `key` (kept unless its input
    /// hull cannot be computed).
    pub fn keep(&mut self, key: GatherKey) {
        if let Some(hull) = key.input_hull() {
            self.key = Some(key);
            self.hull = hull;
        }
    }

    /// Forgets the patches (their memory is kept for the next ones).
    pub fn clear(&mut self) {
        self.key = None;
    }

    /// An instruction wrote SRAM within `writes` (the hull of its writes, `None` if it
    /// wrote none): patches gathered from any byte of it are dropped.
    pub fn note_write(&mut self, writes: Option<(u64, u64)>) {
        let (lo, hi) = self.hull;
        if writes.is_some_and(|(a, b)| a < hi && lo < b) {
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(addr: u64, group: u64) -> GatherKey {
        GatherKey {
            kind: DotKind::Conv,
            in_h: 4,
            in_w: 5,
            kh: 3,
            kw: 3,
            pad_top: 1,
            pad_left: 1,
            sh: 1,
            sw: 1,
            dh: 1,
            dw: 1,
            icpg: 2,
            group,
            out_w: 5,
            input: ActView {
                addr,
                row_pitch: 5,
                pix_pitch: 1,
                chan_pitch: 20,
            },
            kpad: 20,
            pad: 0,
            xor: 0,
            form: PatchForm::Words { signed: true },
        }
    }

    #[test]
    fn the_hull_holds_every_byte_of_the_groups_channels() {
        // Group 1: channels 2 and 3 of a 4 x 5 planar tensor at 1000.
        assert_eq!(key(1000, 1).input_hull(), Some((1000, 1080)));
        assert_eq!(key(1000, 0).input_hull(), Some((1000, 1040)));
    }

    #[test]
    fn a_write_into_the_input_drops_the_patches() {
        let mut c = PatchCache::default();
        assert!(!c.slots(&key(1000, 0), 2).1);
        assert!(!c.slots(&key(1000, 0), 2).1, "nothing kept until `keep`");
        c.keep(key(1000, 0));
        assert!(c.slots(&key(1000, 0), 2).1, "same key, same blocks");
        assert!(!c.slots(&key(1000, 0), 3).1, "other blocks");
        c.keep(key(1000, 0));
        c.note_write(Some((1040, 2000)));
        c.note_write(None);
        assert!(
            c.slots(&key(1000, 0), 3).1,
            "a write beside the hull keeps them"
        );
        c.note_write(Some((0, 1001)));
        assert!(
            !c.slots(&key(1000, 0), 3).1,
            "a write into the hull drops them"
        );
        c.keep(key(1000, 0));
        assert!(!c.slots(&key(2000, 0), 3).1, "another input");
        assert!(!c.slots(&key(1000, 1), 3).1, "another group");
    }
}
