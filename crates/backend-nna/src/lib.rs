//! nnac-backend-nna: lowers a quantized nnac graph (the output of `nnac-passes`) to an
//! NNA program ([`nnac_isa::Program`]).
//!
//! Entry: [`lower()`]. Stages, one file each: `lower.rs` / `lower_ops.rs` walk the
//! graph into SRAM buffers, DRAM image parts and jobs ([`job`]); [`alloc`] places the
//! buffers in SRAM (liveness-based first fit; a layer's parameters are live from the
//! previous step so their DMA can overlap the previous layer); `emit.rs` turns jobs
//! into instructions (one per tile), each checked with `check_instr`; [`sync`] adds
//! the dependency flags (conflict-based, falling back to full serialisation).
//!
//! Not yet: fp32 SIMD epilogues (`Requant::Float`), host ops, concatenation other
//! than in-place on axis 1, spilling layers that do not fit in SRAM.
//!
//! Layouts (docs/ISA.md section 4): activations HWC with `PP = C` rounded up to 8 and
//! `RP = W*PP`; weights in groups of `mac_cols` output channels, one contiguous
//! `mac_cols`-byte vector per (ic, ky, kx); int32 bias; 16-byte channel entries
//! `[multiplier, shift, scale, bias]`.

pub mod act;
pub mod alloc;
mod emit;
mod error;
pub mod job;
mod lower;
mod lower_ops;
pub mod params;
mod simd;
pub mod sync;

pub use error::BackendError;

use nnac_ir::{Graph, Op};
use nnac_isa::{DramImage, HwConfig, Instr, Metadata, Program};

/// SRAM buffer alignment in bytes.
pub const SRAM_ALIGN: u64 = 64;

/// Backend options.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BackendOptions {
    /// Output pixels per tile of unpooled layers; 0 = `mac_rows` (one 96-pixel slice).
    pub tile_pixels: u32,
    /// Run the queues strictly in program order (two hand-over flags) instead of
    /// ordering only conflicting instructions.
    pub serialise: bool,
    /// Skip the static hazard check (`nnac_isa::hazard`) of the emitted program.
    pub skip_hazard_check: bool,
    /// Recorded in the program metadata.
    pub source_model: String,
    /// Recorded in the program metadata.
    pub compiler_version: String,
}

/// One lowered layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerReport {
    pub name: String,
    pub instr: String,
    pub tiles: usize,
}

/// What the backend did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BackendReport {
    pub layers: Vec<LayerReport>,
    pub dma_instrs: usize,
    pub compute_instrs: usize,
    /// Highest SRAM byte used + 1.
    pub sram_peak: u64,
    /// Largest total size of simultaneously live buffers (lower bound of the peak).
    pub sram_lower_bound: u64,
    pub dram_image_bytes: u64,
    pub flags_used: u32,
    /// Dot-product layers whose accumulator could overflow for *some* 8-bit input
    /// (worst case over all codes, not over calibrated ranges): the passes' bound
    /// should keep this empty; listed, not refused.
    pub acc_overflow_risk: Vec<String>,
}

fn check_graph(g: &Graph) -> Result<(), BackendError> {
    nnac_ir::verify(g)
        .map_err(|v| BackendError::Invalid(v.iter().map(|e| e.to_string()).collect()))?;
    for id in g.node_ids() {
        let n = g.node(id);
        if matches!(n.op, Op::Constant(_)) {
            continue;
        }
        for t in &n.outputs {
            if t.quant.is_none() {
                return Err(BackendError::NotQuantized {
                    node: n.name.clone(),
                    detail: format!("output {t} has no quantization"),
                });
            }
        }
    }
    Ok(())
}

/// Lowers a quantized graph to a program for `hw`. Refuses a graph that fails
/// verification or is not quantized; lists every unsupported node at once.
pub fn lower(
    graph: &Graph,
    hw: &HwConfig,
    opts: &BackendOptions,
) -> Result<(Program, BackendReport), BackendError> {
    check_graph(graph)?;
    hw.validate().map_err(|e| BackendError::Emit {
        node: graph.name.clone(),
        detail: format!("hardware configuration: {e}"),
    })?;
    let tp = if opts.tile_pixels == 0 {
        hw.mac_rows
    } else {
        opts.tile_pixels
    };
    let low = lower::Walk::new(graph, hw, tp).run()?;
    let placed =
        alloc::place(&low.bufs, hw.sram_bytes, SRAM_ALIGN).map_err(|e| BackendError::SramFull {
            node: e.owner,
            needed: e.needed,
            sram: hw.sram_bytes,
        })?;
    let (mut instrs, access) = emit::emit(&low.jobs, &placed.addrs, hw)?;
    let span = |b: usize| (placed.addrs[b], placed.addrs[b] + low.bufs[b].size);
    let assigned = if opts.serialise {
        None
    } else {
        let mut trial = instrs.clone();
        let n = sync::assign(&mut trial, &access, &span, hw.flags);
        if n.is_some() {
            instrs = trial;
        }
        n
    };
    let flags_used = match assigned {
        Some(n) => n,
        None if sync::FLAGS_USED <= hw.flags => {
            sync::serialise(&mut instrs);
            sync::FLAGS_USED
        }
        None => {
            return Err(BackendError::Emit {
                node: graph.name.clone(),
                detail: format!(
                    "needs {} flags, the hardware has {}",
                    sync::FLAGS_USED,
                    hw.flags
                ),
            })
        }
    };
    instrs.push(Instr::Stop(Default::default()));
    let dma = instrs
        .iter()
        .filter(|i| i.class() == nnac_isa::Class::Dma)
        .count();
    let report = BackendReport {
        layers: low
            .layers
            .iter()
            .map(|(n, i, t)| LayerReport {
                name: n.clone(),
                instr: i.clone(),
                tiles: *t,
            })
            .collect(),
        dma_instrs: dma,
        compute_instrs: instrs.len() - 1 - dma,
        sram_peak: placed.peak,
        sram_lower_bound: placed.lower_bound,
        dram_image_bytes: low.dram.len() as u64,
        flags_used,
        acc_overflow_risk: low.acc_risk.clone(),
    };
    let program = Program {
        instrs,
        dram: DramImage {
            base: 0,
            bytes: low.dram,
        },
        io: low.io,
        host_ops: None,
        meta: Metadata {
            source_model: opts.source_model.clone(),
            compiler_version: opts.compiler_version.clone(),
            hw: hw.clone(),
        },
    };
    if !opts.skip_hazard_check {
        hazard_check(&program, &graph.name)?;
    }
    Ok((program, report))
}

/// Proves the emitted flags race- and deadlock-free (docs/ISA.md 3.3); a finding is
/// a backend bug.
fn hazard_check(p: &Program, graph: &str) -> Result<(), BackendError> {
    let bug = |detail: String| BackendError::Emit {
        node: graph.to_string(),
        detail: format!("static hazard check failed (backend bug): {detail}"),
    };
    let report = nnac_isa::hazard::check_program(p).map_err(|e| bug(e.to_string()))?;
    if report.is_clean() {
        Ok(())
    } else {
        Err(bug(report.lines().join("; ")))
    }
}
