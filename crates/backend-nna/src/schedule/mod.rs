//! Scheduling: jobs become instructions ([`emit`], one per tile, each checked), the
//! reads of DRAM tensors in bands of rows ([`bands`], with the cycle estimates the
//! placement uses), the cascade that overlaps consecutive layers ([`cascade`]), the
//! sequencer's slice rule ([`seq_rule`], [`seq_tiles`]) and the dependency flags
//! ([`sync`]).
//!
//! **Boundary**: depends on `base` only.

pub(crate) mod bands;
pub(crate) mod cascade;
pub(crate) mod emit;
pub mod seq_rule;
pub(crate) mod seq_tiles;
pub(crate) mod sync;
