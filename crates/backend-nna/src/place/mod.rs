//! Placement: where every buffer lives and when. SRAM allocation ([`alloc`]), the
//! spill/split plan refined until everything fits ([`plan`]), activations kept in
//! DRAM between layers ([`spill`]), layers run in bands of rows and chunks of weight
//! groups ([`split`], [`split_px`]), weights kept resident across frames
//! ([`resident`]) and parameter loads moved ahead ([`prefetch`], [`prefetch_est`]).
//!
//! **Boundary**: depends on `base` and on `schedule`'s cost model only; the op
//! lowerings (`lower`) call into it, never the other way round.

pub(crate) mod alloc;
pub(crate) mod plan;
pub(crate) mod prefetch;
pub(crate) mod prefetch_est;
pub(crate) mod resident;
pub(crate) mod spill;
pub(crate) mod split;
pub(crate) mod split_px;
