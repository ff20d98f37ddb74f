//! Instruction emission: jobs with placed buffers become instructions (one per tile),
//! every instruction is checked with `nnac_isa::checks::check_instr`.

use crate::base::act::split_rows;
use crate::base::job::{BufAccess, BufId, DotOpcode, Job, JobKind, Loc, Tile};
use crate::error::{emit_err, BackendError};
use crate::schedule::bands::ReadBands;
use crate::schedule::sync::{sram_footprint, Access};
use nnac_isa::checks::check_instr;
use nnac_isa::{HwConfig, Instr};
use std::collections::BTreeSet;

/// SRAM address of buffer `b` plus `off`, as the 28-bit field type.
fn addr(addrs: &[u64], loc: Loc, off: u64) -> u32 {
    // Placement keeps every buffer below `sram_bytes` <= 2^28, so this fits.
    (addrs[loc.buf.index()] + loc.off + off) as u32
}

fn dot_tile(
    t: &nnac_isa::DotProduct,
    addrs: &[u64],
    bufs: &[Loc; 5],
    (block, w_group0): (u32, u32),
    cols: u32,
    tile: &Tile,
) -> nnac_isa::DotProduct {
    let mut d = t.clone();
    let oc = u64::from(tile.c_start);
    d.in_addr = addr(addrs, bufs[0], 0);
    d.w_addr = if t.w_pitch != 0 {
        // The tile's vectors start at its first channel's byte (`channels_on_rows.rs`).
        addr(addrs, bufs[1], oc)
    } else {
        let group = oc / u64::from(cols) - u64::from(w_group0);
        addr(addrs, bufs[1], group * u64::from(block))
    };
    d.out_addr = addr(addrs, bufs[2], 0);
    // Bias and channel entries of the tile's first channel, or first pixel.
    let entry = if t.params_by_pixel {
        u64::from(tile.pix_start)
    } else {
        oc
    };
    d.bias_addr = addr(addrs, bufs[3], 4 * entry);
    d.chan_addr = addr(addrs, bufs[4], 16 * entry);
    d.pix_start = tile.pix_start;
    d.pix_count = tile.pix_count;
    d.oc_start = tile.c_start;
    d.oc_count = tile.c_count;
    d
}

/// The instructions of one job; a read of a buffer of `read_bands` is one DMA per
/// band of rows (`C` rows each, the channel pitch as both strides).
fn job_instrs(job: &Job, addrs: &[u64], hw: &HwConfig, read_bands: &ReadBands) -> Vec<Instr> {
    match &job.kind {
        JobKind::Read { loc, dma } => {
            let mut d = dma.clone();
            d.sram_addr = addr(addrs, *loc, u64::from(dma.sram_addr));
            let Some((a, rows)) = read_bands.get(&loc.buf) else {
                return split_rows(d).into_iter().map(Instr::DmaRead).collect();
            };
            a.band_dmas(*rows)
                .flat_map(|band| {
                    split_rows(nnac_isa::Dma {
                        dram_addr: d.dram_addr + band.dram_addr,
                        sram_addr: d.sram_addr + band.sram_addr,
                        ..band
                    })
                })
                .map(Instr::DmaRead)
                .collect()
        }
        JobKind::Write { loc, dma } => {
            let mut d = dma.clone();
            d.sram_addr = addr(addrs, *loc, u64::from(dma.sram_addr));
            split_rows(d).into_iter().map(Instr::DmaWrite).collect()
        }
        JobKind::Dot {
            opcode,
            t,
            bufs,
            block,
            w_group0,
            tiles,
        } => tiles
            .iter()
            .map(|tile| {
                let d = dot_tile(t, addrs, bufs, (*block, *w_group0), hw.mac_cols, tile);
                match opcode {
                    DotOpcode::Conv => Instr::Conv(d),
                    DotOpcode::Deconv => Instr::Deconv(d),
                    DotOpcode::Inner => Instr::InnerProduct(d),
                }
            })
            .collect(),
        JobKind::Scale { t, bufs, tiles } => tiles
            .iter()
            .map(|tile| {
                let mut s = t.clone();
                s.in_addr = addr(addrs, bufs[0], 0);
                s.out_addr = addr(addrs, bufs[1], 0);
                s.chan_addr = addr(addrs, bufs[2], 16 * u64::from(tile.c_start));
                (s.pix_start, s.pix_count, s.c_start, s.c_count) =
                    (tile.pix_start, tile.pix_count, tile.c_start, tile.c_count);
                Instr::Scale(s)
            })
            .collect(),
        JobKind::Eltwise { t, bufs, tiles } => tiles
            .iter()
            .map(|tile| {
                let mut e = t.clone();
                e.a_addr = addr(addrs, bufs[0], 0);
                e.b_addr = addr(addrs, bufs[1], 0);
                e.out_addr = addr(addrs, bufs[2], 0);
                e.chan_addr = addr(addrs, bufs[3], 16 * u64::from(tile.c_start));
                (e.pix_start, e.pix_count, e.c_start, e.c_count) =
                    (tile.pix_start, tile.pix_count, tile.c_start, tile.c_count);
                Instr::Eltwise(e)
            })
            .collect(),
        JobKind::Stop => vec![Instr::Stop(Default::default())],
    }
}

/// What [`emit`] produces, one entry per instruction in every vector.
pub(crate) struct Emitted {
    pub instrs: Vec<Instr>,
    /// The buffers each instruction reads and writes.
    pub access: Vec<Access>,
    /// The index of the job (and so the layer) each instruction comes from.
    pub job: Vec<usize>,
}

/// All instructions (without flags and STOP), checked, with the buffers each one
/// reads and writes; an instruction touching a buffer of `banded` (moved by DMA in
/// bands of rows) also gets its exact SRAM bytes ([`Access::bytes`]).
pub(crate) fn emit(
    jobs: &[Job],
    addrs: &[u64],
    hw: &HwConfig,
    banded: &BTreeSet<BufId>,
    read_bands: &ReadBands,
) -> Result<Emitted, BackendError> {
    let mut out = Vec::new();
    let mut access = Vec::new();
    let mut of_job = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        let BufAccess { reads, writes } = job.kind.access();
        let exact = reads.iter().chain(&writes).any(|b| banded.contains(b));
        for ins in job_instrs(job, addrs, hw, read_bands) {
            let bytes = exact.then(|| Box::new(sram_footprint(&ins, hw)));
            access.push(Access {
                reads: reads.clone(),
                writes: writes.clone(),
                bytes,
            });
            check_instr(&ins, hw)
                .map_err(|e| emit_err(&job.node, format!("{}: {e}", ins.mnemonic())))?;
            let mut scratch = Vec::new();
            ins.encode_into(&mut scratch)
                .map_err(|e| emit_err(&job.node, format!("{}: {}", ins.mnemonic(), e.message)))?;
            out.push(ins);
            of_job.push(j);
        }
    }
    Ok(Emitted {
        instrs: out,
        access,
        job: of_job,
    })
}
