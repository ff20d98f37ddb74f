//! The roofline's figures: the configured hardware's ceilings and, per layer of one
//! frame, its operations, attained throughput and intensities (docs/PERFORMANCE.md,
//! "Pictures").

use crate::work::{kind, work, Kind, Work};
use nnac_isa::Program;
use nnac_runtime_sim::timing::cost::instr_cost;
use nnac_runtime_sim::timing::params::SLICE_ELEMS;
use nnac_runtime_sim::timing::{Profile, TimingParams};
use std::collections::BTreeMap;

/// The ceilings of the configured hardware.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ceilings {
    /// MAC peak: `2 x rows x cols x clock` operations per second.
    pub mac_ops_per_s: f64,
    /// SIMD peak: one operation per lane (`rows` lanes) per cycle.
    pub simd_ops_per_s: f64,
    /// DRAM bandwidth of this NNA: `dram_peak_bytes_per_s x dram_share_percent`.
    pub dram_bytes_per_s: f64,
    /// SRAM read ports for the packet loads: one packet (`loads_per_cycle` slices of
    /// `SLICE_ELEMS` bytes) per cycle on the wide port, plus the weight port's width
    /// when weights have a port of their own.
    pub sram_bytes_per_s: f64,
}

impl Ceilings {
    /// The ceilings of timing parameters `p`.
    pub fn of(p: &TimingParams) -> Ceilings {
        let clock = p.clock_hz as f64;
        let packet = p.loads_per_cycle * SLICE_ELEMS;
        let weights = if p.separate_weight_port {
            p.weight_port
        } else {
            0
        };
        Ceilings {
            mac_ops_per_s: 2.0 * (p.rows * p.cols) as f64 * clock,
            simd_ops_per_s: p.rows as f64 * clock,
            dram_bytes_per_s: p.dram_bytes_per_s as f64,
            sram_bytes_per_s: (packet + weights) as f64 * clock,
        }
    }
}

/// One layer's point on the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerPoint {
    pub name: String,
    pub kind: Kind,
    /// Operations of one frame (`2 x MACs` for dot products; `work.rs`).
    pub ops: u64,
    pub macs: u64,
    /// Cycles charged to the layer (as `nnac profile` reports them).
    pub cycles: u64,
    /// DRAM bytes read and written by its DMA instructions.
    pub dram_bytes: u64,
    /// SRAM bytes its compute instructions read.
    pub sram_bytes: u64,
    /// MAC utilization the shape bound allows (dot products only).
    pub shape_bound: Option<f64>,
    /// MAC utilization the hardware bound allows, when the report has one.
    pub hardware_bound: Option<f64>,
}

impl LayerPoint {
    /// Attained throughput: operations per second over its cycles at `clock_hz`.
    pub fn attained(&self, clock_hz: u64) -> f64 {
        if self.cycles == 0 {
            return 0.0;
        }
        self.ops as f64 * clock_hz as f64 / self.cycles as f64
    }
    /// Operations per DRAM byte (`None`: the layer moves no DRAM byte).
    pub fn dram_intensity(&self) -> Option<f64> {
        (self.dram_bytes > 0).then(|| self.ops as f64 / self.dram_bytes as f64)
    }
    /// Operations per SRAM byte read (`None`: none read).
    pub fn sram_intensity(&self) -> Option<f64> {
        (self.sram_bytes > 0).then(|| self.ops as f64 / self.sram_bytes as f64)
    }
}

/// Everything a roofline draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Roofline {
    pub title: String,
    pub clock_hz: u64,
    pub ceilings: Ceilings,
    /// Layers with operations, in program order.
    pub points: Vec<LayerPoint>,
    /// Layers without compute (DMA only), not drawn.
    pub without_compute: Vec<String>,
}

/// The roofline of one frame of `program` as profiled in `prof` (the body when the
/// program has a prologue). `hardware_bound(name)` gives a layer's hardware bound
/// when the report has one.
pub fn roofline(
    title: &str,
    program: &Program,
    prof: &Profile,
    hardware_bound: impl Fn(&str) -> Option<f64>,
) -> Roofline {
    let from = prof.prologue.map_or(0, |q| q.instructions);
    let prm = &prof.params;
    let index: BTreeMap<&str, usize> = prof
        .layers
        .iter()
        .enumerate()
        .map(|(k, l)| (l.name.as_str(), k))
        .collect();
    let mut sums = vec![(Work::default(), None::<Kind>); prof.layers.len()];
    for (i, ins) in program.instrs.iter().enumerate().skip(from) {
        let Some(&k) = prof.layer_of.get(i).and_then(|n| index.get(n.as_str())) else {
            continue;
        };
        let w = work(ins, &instr_cost(ins, prm), prm);
        let s = &mut sums[k];
        s.0.ops += w.ops;
        s.0.sram_read += w.sram_read;
        s.1 = s.1.into_iter().chain(kind(ins)).min();
    }
    let mut points = Vec::new();
    let mut without_compute = Vec::new();
    for (l, (sum, k)) in prof.layers.iter().zip(sums) {
        match k {
            Some(kind) if sum.ops > 0 => points.push(LayerPoint {
                name: l.name.clone(),
                kind,
                ops: sum.ops,
                macs: l.macs,
                cycles: l.cycles,
                dram_bytes: l.dram_read + l.dram_written,
                sram_bytes: sum.sram_read,
                shape_bound: l.shape_bound,
                hardware_bound: hardware_bound(&l.name),
            }),
            _ => without_compute.push(l.name.clone()),
        }
    }
    Roofline {
        title: title.to_string(),
        clock_hz: prm.clock_hz,
        ceilings: Ceilings::of(prm),
        points,
        without_compute,
    }
}
