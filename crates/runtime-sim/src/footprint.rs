//! The SRAM bytes each instruction reads and writes, for run-time race detection.
//!
//! The footprints are the isa crate's (`nnac_isa::hazard::footprint`, the same ones
//! the static hazard checker uses), so a program the static checker proves race-free
//! is never reported by the simulator because of a footprint difference. Before that
//! every instruction is checked here: the isa crate's semantic rules
//! (`nnac_isa::checks`), the simulator's own geometry validation, and every byte of
//! the footprint inside SRAM.

use crate::error::ExecError;
use crate::exec::dma::{self, Dir};
use crate::exec::dot_geom::{DotGeom, DotKind};
use crate::exec::simd_ops::{eltwise_tile, scale_tile};
pub use nnac_isa::hazard::{Footprint, Intervals};
use nnac_isa::{HwConfig, Instr};

/// Checks `instr` and returns its footprint, or an error naming what is wrong.
pub fn footprint(instr: &Instr, hw: &HwConfig) -> Result<Footprint, ExecError> {
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
    let fp = nnac_isa::hazard::footprint(instr, hw);
    for (what, set) in [("reads", &fp.sram_reads), ("writes", &fp.sram_writes)] {
        if let Some((lo, hi)) = set.hull() {
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
    Ok(fp)
}
