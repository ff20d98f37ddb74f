//! The layer table (section 6, optional): the source layer of every instruction, so
//! that tools (profiler, disassembler) can report by the model's node names.

use super::wire::{Reader, Writer};
use super::ContainerError;
use crate::error::LayerTableError;

const LAYERS_MAGIC: [u8; 4] = *b"LAYR";
const LAYERS_VERSION: u32 = 1;
/// `of_instr` entry of an instruction that belongs to no layer (e.g. STOP).
pub const NO_LAYER: u32 = u32::MAX;

/// Layer names and, per instruction, the index of its layer (or [`NO_LAYER`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LayerTable {
    pub names: Vec<String>,
    /// One entry per instruction of the program, in order.
    pub of_instr: Vec<u32>,
}

impl LayerTable {
    /// Builds the table from the layer name of every instruction (names are
    /// numbered in order of first appearance, so equal inputs give equal tables).
    pub fn from_names<'a>(per_instr: impl IntoIterator<Item = Option<&'a str>>) -> LayerTable {
        let mut t = LayerTable::default();
        let mut index = std::collections::BTreeMap::<&str, u32>::new();
        for name in per_instr {
            let i = match name {
                None => NO_LAYER,
                Some(n) => *index.entry(n).or_insert_with(|| {
                    t.names.push(n.to_string());
                    (t.names.len() - 1) as u32
                }),
            };
            t.of_instr.push(i);
        }
        t
    }

    /// The layer name of instruction `i`, if it has one.
    pub fn name_of(&self, i: usize) -> Option<&str> {
        let k = *self.of_instr.get(i)?;
        self.names.get(k as usize).map(String::as_str)
    }

    /// Checks the table against a program of `instrs` instructions. Only the
    /// canonical form [`LayerTable::from_names`] builds is valid: every name used,
    /// numbered in order of first use (so a listing round-trips byte-identically).
    pub fn validate(&self, instrs: usize) -> Result<(), LayerTableError> {
        if self.of_instr.len() != instrs {
            return Err(LayerTableError::Length {
                table: self.of_instr.len(),
                instrs,
            });
        }
        let mut next = 0u32;
        for (i, &k) in self.of_instr.iter().enumerate() {
            if k == NO_LAYER || k < next {
                continue;
            }
            if k != next || k as usize >= self.names.len() {
                return Err(LayerTableError::Order {
                    index: i,
                    layer: k,
                    next,
                    names: self.names.len(),
                });
            }
            next += 1;
        }
        if next as usize != self.names.len() {
            return Err(LayerTableError::Unused {
                names: self.names.len(),
                used: next,
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = self.names.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(LayerTableError::Duplicate { name: dup.clone() });
        }
        Ok(())
    }

    pub(super) fn write(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.bytes(&LAYERS_MAGIC);
        w.u32(LAYERS_VERSION);
        w.u32(self.names.len() as u32);
        for n in &self.names {
            w.string(n);
        }
        w.u32(self.of_instr.len() as u32);
        for &k in &self.of_instr {
            w.u32(k);
        }
        w.0
    }

    /// Parses the section; `instrs` is the decoded instruction count.
    pub(super) fn read(r: &mut Reader, instrs: usize) -> Result<LayerTable, ContainerError> {
        if r.bytes(4)? != LAYERS_MAGIC {
            return Err(r.error("bad layer-table magic"));
        }
        let v = r.u32()?;
        if v != LAYERS_VERSION {
            return Err(r.error(format!("unsupported layer-table version {v}")));
        }
        let n = r.count(4)?;
        let mut names = Vec::with_capacity(n);
        for _ in 0..n {
            names.push(r.string()?);
        }
        let m = r.count(4)?;
        let mut of_instr = Vec::with_capacity(m);
        for _ in 0..m {
            of_instr.push(r.u32()?);
        }
        let t = LayerTable { names, of_instr };
        t.validate(instrs).map_err(|e| r.error(e))?;
        r.finish()?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_names_is_canonical_and_valid() {
        let t = LayerTable::from_names([Some("b"), Some("a"), None, Some("b"), Some("c")]);
        assert_eq!(t.names, ["b", "a", "c"]);
        assert_eq!(t.of_instr, [0, 1, NO_LAYER, 0, 2]);
        assert_eq!(t.validate(5), Ok(()));
        assert_eq!(t.name_of(2), None);
        assert_eq!(t.name_of(4), Some("c"));
    }

    #[test]
    fn non_canonical_tables_are_refused() {
        let bad = |names: &[&str], of: &[u32]| LayerTable {
            names: names.iter().map(|s| s.to_string()).collect(),
            of_instr: of.to_vec(),
        };
        assert!(bad(&["a"], &[0]).validate(2).is_err(), "length");
        assert!(bad(&["a", "b"], &[1, 0]).validate(2).is_err(), "order");
        assert!(
            bad(&["a", "b"], &[0, 0]).validate(2).is_err(),
            "unused name"
        );
        assert!(bad(&["a"], &[0, 7]).validate(2).is_err(), "out of range");
        assert!(bad(&["a", "a"], &[0, 1]).validate(2).is_err(), "duplicate");
        assert!(bad(&["a"], &[NO_LAYER, 0]).validate(2).is_ok());
    }
}
