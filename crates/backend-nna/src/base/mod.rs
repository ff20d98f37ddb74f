//! The leaf of the backend: the types every stage shares (activation layouts, jobs,
//! parameter tables) and the walk's small core ([`walk::Walk`]: buffers, values, DRAM
//! image parts, steps).
//!
//! **Invariant**: nothing here imports from `lower`, `place` or `schedule`; they all
//! import from here.

pub(crate) mod act;
pub(crate) mod buffer;
pub(crate) mod host_state;
pub(crate) mod job;
pub(crate) mod params;
pub(crate) mod plan;
pub(crate) mod spill_state;
pub(crate) mod walk;
