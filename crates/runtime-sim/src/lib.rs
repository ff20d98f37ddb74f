//! nnac-runtime-sim: the functional, bit-exact simulator of `.nnab` programs.
//!
//! It executes every instruction exactly as docs/ISA.md defines it (DMA moves, dot
//! products in `acc_bits`-bit accumulators, the SIMD program through the isa crate's
//! shared executor, fused pooling, SCALE, ELTWISE), interleaves the DMA and compute
//! queues under a chosen [`Schedule`] synchronized only by dependency flags, and stops
//! with a [`SimError`] on races the flags do not prevent, deadlocks, flag errors,
//! out-of-range addresses and malformed instructions. A program is a sequence of
//! segments ending with STOP; after each STOP the host ops attached to it run on DRAM
//! (`host.rs`, semantics from `nnac_interp::host`).
//!
//! Entry points: [`run`] (one frame) and [`Simulator`] (prepare once; a
//! [`Session`] runs the prologue once, then the body per frame, SRAM and DRAM kept
//! between frames); inputs and outputs are raw codes in each descriptor's logical order.
//! [`timing::analyze`] is the cycle-approximate timing model (docs/PERFORMANCE.md).

// The module docs are the crate's code map: they link private items, so read them
// with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod awake;
mod engine;
mod error;
pub mod exec;
mod footprint;
mod host;
mod io;
mod memory;
pub mod pages;
pub mod rng;
mod sim;
mod stats;
pub mod timing;

pub use engine::Schedule;
pub use error::{flags_text, ExecError, Hazard, HazardKind, InstrRef, IoError, MemError, SimError};
pub use footprint::{footprint, Footprint, Intervals};
pub use io::numel;
pub use sim::{run, Output, RunOptions, RunResult, Session, Simulator};
pub use stats::{OverflowSite, RunStats};
