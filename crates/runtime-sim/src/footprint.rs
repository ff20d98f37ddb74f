//! The SRAM bytes each instruction reads and writes, for run-time race detection.
//!
//! The footprints are the isa crate's (`nnac_isa::hazard::footprint`, the same ones
//! the static hazard checker uses), so a program the static checker proves race-free
//! is never reported by the simulator because of a footprint difference.
//!
//! Every instruction is checked when a program is loaded ([`check`]): the isa
//! crate's semantic rules (`nnac_isa::checks`), the simulator's own geometry
//! validation, and every byte it touches inside SRAM (from the hulls of its reads
//! and writes, computed without the interval sets). The footprints themselves are
//! computed only when asked for ([`Footprints`]): the race check needs those of the
//! instructions that run while the other queue has one in flight, a few of a
//! program's thousands under the eager schedule.

use crate::error::ExecError;
use crate::exec::dma::{self, Dir};
use crate::exec::dot_geom::{DotGeom, DotKind};
use crate::exec::simd_ops::{eltwise_tile, scale_tile};
pub use nnac_isa::hazard::footprint::SramHulls;
pub use nnac_isa::hazard::{Footprint, Intervals};
use nnac_isa::{HwConfig, Instr};
use std::sync::OnceLock;

/// Checks `instr` (see the module docs), or returns an error naming what is wrong.
/// An instruction that passes has a well-defined [`Footprint`] inside SRAM, whose
/// hulls it returns.
pub fn check(instr: &Instr, hw: &HwConfig) -> Result<SramHulls, ExecError> {
    nnac_isa::checks::check_instr(instr, hw)?;
    match instr {
        Instr::DmaRead(d) => dma::check(d, Dir::Read),
        Instr::DmaWrite(d) => dma::check(d, Dir::Write),
        Instr::Conv(d) => DotGeom::new(d, DotKind::Conv, hw).map(|_| ()),
        Instr::Deconv(d) => DotGeom::new(d, DotKind::Deconv, hw).map(|_| ()),
        Instr::InnerProduct(d) => DotGeom::new(d, DotKind::InnerProduct, hw).map(|_| ()),
        Instr::Scale(s) => scale_tile(s).map(|_| ()),
        Instr::Eltwise(e) => eltwise_tile(e).map(|_| ()),
        Instr::Stop(_) => Ok(()),
    }?;
    let hulls = nnac_isa::hazard::footprint::sram_hulls(instr, hw);
    for (what, hull) in [("reads", hulls.reads), ("writes", hulls.writes)] {
        if let Some((lo, hi)) = hull {
            if hi > hw.sram_bytes {
                return Err(ExecError::BeyondSram {
                    access: what,
                    lo,
                    hi,
                    sram_bytes: hw.sram_bytes,
                });
            }
        }
    }
    Ok(hulls)
}

/// Checks `instr` and returns its footprint, or an error naming what is wrong.
pub fn footprint(instr: &Instr, hw: &HwConfig) -> Result<Footprint, ExecError> {
    check(instr, hw)?;
    Ok(nnac_isa::hazard::footprint(instr, hw))
}

/// The footprints of a program's instructions, each computed the first time it is
/// asked for and then kept (shared by every session of a simulator).
pub struct Footprints<'p> {
    instrs: &'p [Instr],
    hw: &'p HwConfig,
    cells: Vec<OnceLock<Footprint>>,
    /// The hull of each instruction's SRAM writes ([`check`] computed it).
    write_hulls: Vec<Option<(u64, u64)>>,
}

impl<'p> Footprints<'p> {
    /// Every instruction of `instrs` must have passed [`check`], which returned
    /// `hulls` (one per instruction).
    pub fn new(instrs: &'p [Instr], hw: &'p HwConfig, hulls: &[SramHulls]) -> Footprints<'p> {
        assert_eq!(hulls.len(), instrs.len());
        Footprints {
            instrs,
            hw,
            cells: std::iter::repeat_with(OnceLock::new)
                .take(instrs.len())
                .collect(),
            write_hulls: hulls.iter().map(|h| h.writes).collect(),
        }
    }

    /// The hull of instruction `i`'s SRAM writes (`None`: it writes none).
    pub fn write_hull(&self, i: usize) -> Option<(u64, u64)> {
        self.write_hulls[i]
    }

    /// The footprint of instruction `i`.
    pub fn get(&self, i: usize) -> &Footprint {
        self.cells[i].get_or_init(|| nnac_isa::hazard::footprint(&self.instrs[i], self.hw))
    }
}
