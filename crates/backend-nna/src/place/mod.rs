//! Placement: where every buffer lives and when. SRAM allocation ([`alloc`]), the
//! spill/split plan refined until everything fits ([`plan`]), activations kept in
//! DRAM between layers ([`spill`]), layers run in bands of rows and chunks of weight
//! groups ([`split`], [`split_px`]), weights kept resident across frames
//! ([`resident`]) and parameter loads moved ahead ([`prefetch`], [`prefetch_est`]).
//!
//! **Boundary**: depends on `base` and on `schedule`'s cost model only; the op
//! lowerings (`lower`) call into it, never the other way round.

pub mod alloc;
pub mod plan;
pub mod prefetch;
pub mod prefetch_est;
pub mod resident;
pub mod spill;
pub mod split;
pub mod split_px;
