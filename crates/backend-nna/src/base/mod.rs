//! The leaf of the backend: the types every stage shares (activation layouts, jobs,
//! parameter tables) and the walk's small core ([`walk::Walk`]: buffers, values, DRAM
//! image parts, steps).
//!
//! **Invariant**: nothing here imports from `lower`, `place` or `schedule`; they all
//! import from here.

pub mod act;
pub mod buffer;
pub mod host_state;
pub mod job;
pub mod params;
pub mod plan;
pub mod spill_state;
pub mod walk;
