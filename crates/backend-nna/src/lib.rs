//! nnac-backend-nna: lowers a quantized nnac graph (the output of `nnac-passes`) to an
//! NNA program ([`nnac_isa::Program`]).
//!
//! Entry: [`lower`]. Stages, one file each: [`lower`](crate::lower) walks the graph
//! into SRAM buffers, DRAM image parts and jobs ([`job`]); [`alloc`] places the
//! buffers in SRAM (liveness-based first fit); [`emit`] turns jobs into checked
//! instructions (one per tile); [`sync`] adds the dependency flags.
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
pub fn lower(graph: &Graph, hw: &HwConfig, opts: &BackendOptions) -> Result<(Program, BackendReport), BackendError> {
    check_graph(graph)?;
    hw.validate().map_err(|e| BackendError::Emit {
        node: graph.name.clone(),
        detail: format!("hardware configuration: {e}"),
    })?;
    let tp = if opts.tile_pixels == 0 { hw.mac_rows } else { opts.tile_pixels };
    let low = lower::Walk::new(graph, hw, tp).run()?;
    let placed = alloc::place(&low.bufs, hw.sram_bytes, SRAM_ALIGN).map_err(|e| BackendError::SramFull {
        node: e.owner,
        needed: e.needed,
        sram: hw.sram_bytes,
    })?;
    let mut instrs = emit::emit(&low.jobs, &placed.addrs, hw)?;
    sync::serialise(&mut instrs);
    instrs.push(Instr::Stop(Default::default()));
    if sync::FLAGS_USED > hw.flags {
        return Err(BackendError::Emit {
            node: graph.name.clone(),
            detail: format!("needs {} flags, the hardware has {}", sync::FLAGS_USED, hw.flags),
        });
    }
    let dma = instrs.iter().filter(|i| i.class() == nnac_isa::Class::Dma).count();
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
        flags_used: sync::FLAGS_USED,
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
    Ok((program, report))
}
