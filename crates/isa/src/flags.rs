//! Dependency flags: the sets an instruction waits on, sets and clears.
//!
//! Semantics (docs/ISA.md, "Dependency flags"): an instruction starts when every flag
//! in `wait_set` is set and every flag in `wait_clear` is clear; when it completes it
//! clears the flags in `clear` and then sets the flags in `set`, atomically.
//!
//! Encoding: each of the four lists is `slots` 7-bit slots holding `flag + 1`
//! (0 = empty), strictly ascending, empty slots last. DMA and STOP instructions have
//! 2 slots per list, compute instructions 8.

use crate::bits;
use crate::error::{DecodeError, EncodeError, FlagError};
use crate::field::FieldSpec;

/// Bits per flag slot.
pub const SLOT_BITS: u32 = 7;
/// Largest number of flags the encoding can name (flags 0..=126).
pub const MAX_FLAGS: u32 = 127;

/// A set of flag indices (0..=126).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct FlagSet(u128);

impl FlagSet {
    pub const EMPTY: FlagSet = FlagSet(0);

    /// The set holding `flags`. Panics on an index >= MAX_FLAGS (a program bug).
    pub fn of(flags: &[u32]) -> Self {
        let mut s = FlagSet::EMPTY;
        for &f in flags {
            s.insert(f);
        }
        s
    }
    /// Adds `flag`; panics if `flag >= MAX_FLAGS` (use [`FlagSet::try_insert`] for input).
    pub fn insert(&mut self, flag: u32) {
        self.try_insert(flag).expect("flag index out of range");
    }
    /// Adds `flag`, or errs if it is not encodable.
    pub fn try_insert(&mut self, flag: u32) -> Result<(), FlagError> {
        if flag >= MAX_FLAGS {
            return Err(FlagError::OutOfRange { flag });
        }
        self.0 |= 1u128 << flag;
        Ok(())
    }
    pub fn remove(&mut self, flag: u32) {
        if flag < MAX_FLAGS {
            self.0 &= !(1u128 << flag);
        }
    }
    pub fn contains(&self, flag: u32) -> bool {
        flag < MAX_FLAGS && (self.0 >> flag) & 1 == 1
    }
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }
    pub fn len(&self) -> usize {
        self.0.count_ones() as usize
    }
    /// Flag indices in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..MAX_FLAGS).filter(|&f| self.contains(f))
    }
    pub fn union(self, other: FlagSet) -> FlagSet {
        FlagSet(self.0 | other.0)
    }
    pub fn intersection(self, other: FlagSet) -> FlagSet {
        FlagSet(self.0 & other.0)
    }
    /// Highest flag index in the set.
    pub fn highest(&self) -> Option<u32> {
        (self.0 != 0).then(|| 127 - self.0.leading_zeros())
    }
    /// `F0,F3` (empty string for the empty set).
    pub fn to_text(&self) -> String {
        self.iter()
            .map(|f| format!("F{f}"))
            .collect::<Vec<_>>()
            .join(",")
    }
    /// Parses `F0,F3` (or `-` / empty for the empty set).
    pub fn parse(text: &str) -> Result<FlagSet, FlagError> {
        let mut s = FlagSet::EMPTY;
        if text.is_empty() || text == "-" {
            return Ok(s);
        }
        for part in text.split(',') {
            let n = part
                .strip_prefix('F')
                .or_else(|| part.strip_prefix('f'))
                .and_then(|d| d.parse::<u32>().ok())
                .ok_or_else(|| FlagError::Syntax {
                    part: part.to_string(),
                })?;
            s.try_insert(n)?;
        }
        Ok(s)
    }
}

/// Names of the four flag lists, in encoding order.
pub const LIST_NAMES: [&str; 4] = ["wait_set", "wait_clear", "set", "clear"];

/// The flag operations of one instruction (shared by the DMA and compute queues).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlagOps {
    /// Start only when all of these are set.
    pub wait_set: FlagSet,
    /// Start only when all of these are clear.
    pub wait_clear: FlagSet,
    /// Set on completion.
    pub set: FlagSet,
    /// Cleared on completion (before `set` is applied).
    pub clear: FlagSet,
}

impl FlagOps {
    pub fn new() -> Self {
        Self::default()
    }
    /// Builder: wait until `flag` is set.
    pub fn wait(mut self, flag: u32) -> Self {
        self.wait_set.insert(flag);
        self
    }
    /// Builder: wait until `flag` is clear.
    pub fn wait_clear(mut self, flag: u32) -> Self {
        self.wait_clear.insert(flag);
        self
    }
    /// Builder: set `flag` on completion.
    pub fn set(mut self, flag: u32) -> Self {
        self.set.insert(flag);
        self
    }
    /// Builder: clear `flag` on completion.
    pub fn clear(mut self, flag: u32) -> Self {
        self.clear.insert(flag);
        self
    }
    /// The lists in encoding order.
    pub fn lists(&self) -> [FlagSet; 4] {
        [self.wait_set, self.wait_clear, self.set, self.clear]
    }
    pub fn list_mut(&mut self, i: usize) -> &mut FlagSet {
        match i {
            0 => &mut self.wait_set,
            1 => &mut self.wait_clear,
            2 => &mut self.set,
            _ => &mut self.clear,
        }
    }
    /// Every flag named anywhere.
    pub fn all(&self) -> FlagSet {
        self.lists()
            .into_iter()
            .fold(FlagSet::EMPTY, FlagSet::union)
    }
    /// Flags after this instruction completes, given the flags before.
    pub fn apply(&self, before: FlagSet) -> FlagSet {
        FlagSet(before.0 & !self.clear.0).union(self.set)
    }
    /// True if the instruction may start with flag state `state`.
    pub fn ready(&self, state: FlagSet) -> bool {
        state.intersection(self.wait_set) == self.wait_set
            && state.intersection(self.wait_clear).is_empty()
    }
}

/// Where the flag slots of an instruction class live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagLayout {
    /// Bit offset of the first slot of `wait_set`.
    pub offset: u32,
    /// Slots per list.
    pub slots: u32,
}

impl FlagLayout {
    /// Field specs for the four lists (for docs and the reserved-bit map).
    pub const fn specs(&self) -> [FieldSpec; 4] {
        let w = self.slots * SLOT_BITS;
        [
            FieldSpec::header(
                "wait_set",
                self.offset,
                w,
                "flags that must be set before start",
            )
            .flag_list(),
            FieldSpec::header(
                "wait_clear",
                self.offset + w,
                w,
                "flags that must be clear before start",
            )
            .flag_list(),
            FieldSpec::header("set", self.offset + 2 * w, w, "flags set on completion").flag_list(),
            FieldSpec::header(
                "clear",
                self.offset + 3 * w,
                w,
                "flags cleared on completion",
            )
            .flag_list(),
        ]
    }

    pub fn pack(
        &self,
        ops: &FlagOps,
        buf: &mut [u8],
        mnemonic: &'static str,
    ) -> Result<(), EncodeError> {
        for (li, (list, spec)) in ops.lists().iter().zip(self.specs()).enumerate() {
            if list.len() > self.slots as usize {
                return Err(EncodeError::new(
                    mnemonic,
                    format!(
                        "{} names {} flags but has only {} slots",
                        LIST_NAMES[li],
                        list.len(),
                        self.slots
                    ),
                ));
            }
            let mut slots = [0u64; 8];
            for (slot, f) in slots.iter_mut().zip(list.iter()) {
                *slot = u64::from(f) + 1;
            }
            for (i, &v) in slots.iter().take(self.slots as usize).enumerate() {
                bits::put(buf, spec.offset + i as u32 * SLOT_BITS, SLOT_BITS, v);
            }
        }
        Ok(())
    }

    pub fn unpack(&self, buf: &[u8], base: usize, mnemonic: &str) -> Result<FlagOps, DecodeError> {
        let mut ops = FlagOps::default();
        for (li, spec) in self.specs().iter().enumerate() {
            let mut prev = 0u64;
            for i in 0..self.slots {
                let bit = spec.offset + i * SLOT_BITS;
                let v = bits::get(buf, bit, SLOT_BITS);
                let err = |m: &str| {
                    DecodeError::new(
                        base + (bit / 8) as usize,
                        format!("{mnemonic}: flag list {}: {m}", LIST_NAMES[li]),
                    )
                };
                if v == 0 {
                    prev = u64::MAX;
                    continue;
                }
                if prev == u64::MAX {
                    return Err(err("non-empty slot after an empty slot"));
                }
                if v <= prev {
                    return Err(err("slots are not strictly ascending"));
                }
                prev = v;
                ops.list_mut(li)
                    .try_insert((v - 1) as u32)
                    .map_err(|m| err(&m.to_string()))?;
            }
        }
        Ok(ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip() {
        let s = FlagSet::of(&[0, 5, 126]);
        assert_eq!(s.to_text(), "F0,F5,F126");
        assert_eq!(FlagSet::parse("F0,F5,F126").unwrap(), s);
        assert!(FlagSet::parse("F127").is_err());
        assert!(FlagSet::parse("G1").is_err());
        assert_eq!(s.highest(), Some(126));
    }

    #[test]
    fn apply_clears_then_sets() {
        let ops = FlagOps::new().wait(1).clear(1).set(1).set(2);
        let after = ops.apply(FlagSet::of(&[1, 3]));
        assert_eq!(after, FlagSet::of(&[1, 2, 3]));
        assert!(ops.ready(FlagSet::of(&[1])));
        assert!(!ops.ready(FlagSet::EMPTY));
        let w = FlagOps::new().wait_clear(4);
        assert!(!w.ready(FlagSet::of(&[4])));
    }

    #[test]
    fn slot_encoding_is_canonical() {
        let layout = FlagLayout {
            offset: 8,
            slots: 2,
        };
        let mut buf = [0u8; 32];
        let ops = FlagOps::new().wait(3).wait(1).set(9);
        layout.pack(&ops, &mut buf, "T").unwrap();
        assert_eq!(layout.unpack(&buf, 0, "T").unwrap(), ops);
        let too_many = FlagOps::new().set(1).set(2).set(3);
        assert!(layout.pack(&too_many, &mut buf, "T").is_err());
        // Swap the two wait_set slots: decoding must refuse the non-canonical order.
        let mut bad = [0u8; 32];
        bits::put(&mut bad, 8, 7, 4);
        bits::put(&mut bad, 15, 7, 2);
        assert!(layout.unpack(&bad, 0, "T").is_err());
        let mut gap = [0u8; 32];
        bits::put(&mut gap, 15, 7, 2);
        assert!(layout.unpack(&gap, 0, "T").is_err());
    }
}
