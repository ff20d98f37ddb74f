//! Per-layer aggregation: every instruction belongs to a layer (by the program's
//! layer table, or, without one, to a group of consecutive compute instructions of
//! one shape and the DMA instructions that precede them).

use super::cost::InstrCost;
use super::hw_bound::{as_utilization, coupled_cycles, dma_work, PassLoad, UnitWork};
use super::params::TimingParams;
use super::shape::Coverage;
use super::timeline::{Charge, Timeline, Unit};
use nnac_isa::{Instr, LayerTable};
use std::collections::BTreeMap;

/// Layer name of instructions the layer table attributes to no layer.
pub const PROGRAM_LAYER: &str = "(program)";

/// What one layer cost.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerProfile {
    pub name: String,
    /// Compute mnemonics of the layer, in order of first use (e.g. `["CONV"]`).
    pub ops: Vec<&'static str>,
    /// First and last instruction index.
    pub first: usize,
    pub last: usize,
    pub instructions: usize,
    pub macs: u64,
    /// Cycles of the timeline charged to the layer (sum of its instructions').
    pub cycles: u64,
    pub charge: Charge,
    pub dram_read: u64,
    pub dram_written: u64,
    /// Activation slices breaking the 256-byte rule.
    pub broken_slices: u64,
    /// Shape bound (see `shape.rs`); `None` for layers without dot products.
    pub shape_bound: Option<f64>,
    /// Fewest MAC-array cycles its output slicing allows (the shape bound's divisor).
    pub min_cycles: u64,
    /// The least work of the layer on each unit (`hw_bound.rs`).
    pub hw_work: UnitWork,
    /// Its dot products' passes as the shift register sees them, per shape.
    pub pass_loads: Vec<PassLoad>,
    /// The hardware bound: MACs over [`LayerProfile::hw_min_cycles`] x rows x cols;
    /// `None` for layers without dot products.
    pub hardware_bound: Option<f64>,
}

impl LayerProfile {
    fn new(name: String, first: usize) -> LayerProfile {
        LayerProfile {
            name,
            ops: Vec::new(),
            first,
            last: first,
            instructions: 0,
            macs: 0,
            cycles: 0,
            charge: Charge::default(),
            dram_read: 0,
            dram_written: 0,
            broken_slices: 0,
            shape_bound: None,
            min_cycles: 0,
            hw_work: UnitWork::default(),
            pass_loads: Vec::new(),
            hardware_bound: None,
        }
    }

    /// The fewest cycles the layer's work takes alone: its busiest unit, or the
    /// shift register's pairing of its passes (`hw_bound.rs`), whichever is more.
    pub fn hw_min_cycles(&self) -> u64 {
        self.hw_work.cycles().max(self.coupled_cycles())
    }

    /// The fewest cycles the shift register allows for the layer's passes alone.
    pub fn coupled_cycles(&self) -> u64 {
        coupled_cycles(&self.pass_loads, &self.hw_work)
    }

    /// What sets [`LayerProfile::hw_min_cycles`] ([`UnitWork::limit_with`]).
    pub fn hw_limit(&self) -> &'static str {
        self.hw_work
            .limit_with(self.coupled_cycles(), &self.pass_loads)
    }

    /// Achieved MAC utilization: MACs / (cycles x rows x cols).
    pub fn utilization(&self, rows: u64, cols: u64) -> f64 {
        if self.cycles == 0 {
            return 0.0;
        }
        self.macs as f64 / (self.cycles as f64 * (rows * cols) as f64)
    }
}

/// A layer key per instruction: the layer table's names, or groups of consecutive
/// compute instructions of one kind and output tensor (DMA instructions join the
/// group of the next compute instruction).
pub fn layer_names(instrs: &[Instr], table: Option<&LayerTable>) -> Vec<String> {
    if let Some(t) = table.filter(|t| t.of_instr.len() == instrs.len()) {
        return (0..instrs.len())
            .map(|i| t.name_of(i).unwrap_or(PROGRAM_LAYER).to_string())
            .collect();
    }
    fallback_names(instrs)
}

fn group_key(i: &Instr) -> Option<(&'static str, u32)> {
    let out = match i {
        Instr::Conv(d) | Instr::Deconv(d) | Instr::InnerProduct(d) => d.out_addr,
        Instr::Scale(s) => s.out_addr,
        Instr::Eltwise(e) => e.out_addr,
        _ => return None,
    };
    Some((i.mnemonic(), out))
}

fn fallback_names(instrs: &[Instr]) -> Vec<String> {
    // Runs of compute instructions with one key: (first index, last index, mnemonic).
    let mut runs: Vec<(usize, usize, (&'static str, u32))> = Vec::new();
    let mut run_of = vec![None; instrs.len()];
    for (i, ins) in instrs.iter().enumerate() {
        let Some(k) = group_key(ins) else { continue };
        match runs.last_mut() {
            Some(r) if r.2 == k => r.1 = i,
            _ => runs.push((i, i, k)),
        }
        run_of[i] = Some(runs.len() - 1);
    }
    let name = |r: usize| format!("#{}-{} {}", runs[r].0, runs[r].1, runs[r].2 .0);
    let mut next = None;
    let mut out = vec![String::new(); instrs.len()];
    for i in (0..instrs.len()).rev() {
        if run_of[i].is_some() {
            next = run_of[i];
        }
        out[i] = match (instrs[i].class(), run_of[i].or(next), runs.len()) {
            (nnac_isa::Class::Control, _, _) | (_, None, 0) => PROGRAM_LAYER.to_string(),
            (_, Some(r), _) => name(r),
            (_, None, n) => name(n - 1),
        };
    }
    out
}

/// The program facts [`aggregate`] sums over: its instructions, their costs and
/// layer names, and the DRAM ranges of the network's inputs and outputs.
pub struct Program<'a> {
    pub instrs: &'a [Instr],
    pub costs: &'a [InstrCost],
    pub names: &'a [String],
    pub io: &'a [(u64, u64)],
}

/// Sums the timeline per layer over the instructions from `from` on (the body of a
/// program with a prologue, docs/PERFORMANCE.md 1.1), in order of each layer's
/// first instruction.
pub fn aggregate(p: &Program, tl: &Timeline, from: usize, prm: &TimingParams) -> Vec<LayerProfile> {
    let Program {
        instrs,
        costs,
        names,
        io,
    } = *p;
    let (rows, cols) = (prm.rows, prm.cols);
    let mut by_name: BTreeMap<&str, (LayerProfile, Coverage)> = BTreeMap::new();
    for (i, ins) in instrs.iter().enumerate().skip(from) {
        let (l, cov) = by_name
            .entry(names[i].as_str())
            .or_insert_with(|| (LayerProfile::new(names[i].clone(), i), Coverage::default()));
        l.last = i;
        l.instructions += 1;
        l.charge.add(&tl.instrs[i].charge);
        l.broken_slices += costs[i].broken_slices();
        if tl.instrs[i].unit == Unit::Compute && !l.ops.contains(&ins.mnemonic()) {
            l.ops.push(ins.mnemonic());
        }
        match &costs[i] {
            InstrCost::Dot(d) => {
                l.macs += d.macs;
                cov.add(d);
            }
            InstrCost::Dma(d) => {
                l.dram_read += d.dram_read;
                l.dram_written += d.dram_written;
                l.hw_work.dram += dma_work(ins, &costs[i], io, prm);
            }
            InstrCost::Simd(s) => l.hw_work.simd_only += s.work,
            InstrCost::Stop => {}
        }
    }
    let mut out: Vec<LayerProfile> = by_name
        .into_values()
        .map(|(mut l, cov)| {
            l.cycles = l.charge.total();
            l.shape_bound = cov.bound(l.macs, rows, cols);
            l.min_cycles = cov.min_cycles(rows, cols);
            l.hw_work.add(&cov.work(prm));
            l.pass_loads = cov.pass_loads(prm);
            l.hardware_bound = as_utilization(l.macs, l.hw_min_cycles(), prm);
            l
        })
        .collect();
    out.sort_by_key(|l| l.first);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::{Dma, DotProduct, Scale, Stop};

    #[test]
    fn fallback_groups_runs_and_gives_dma_to_the_next_group() {
        let conv = |out| {
            Instr::Conv(DotProduct {
                out_addr: out,
                ..DotProduct::default()
            })
        };
        let instrs = vec![
            Instr::DmaRead(Dma::default()),
            conv(0x100),
            conv(0x100),
            Instr::DmaRead(Dma::default()),
            Instr::Scale(Scale::default()),
            Instr::DmaWrite(Dma::default()),
            Instr::Stop(Stop::default()),
        ];
        let n = fallback_names(&instrs);
        assert_eq!(n[0], "#1-2 CONV");
        assert_eq!(n[1], "#1-2 CONV");
        assert_eq!(n[3], "#4-4 SCALE");
        assert_eq!(n[5], "#4-4 SCALE");
        assert_eq!(n[6], PROGRAM_LAYER);
    }

    #[test]
    fn layer_table_names_are_used() {
        let instrs = vec![Instr::DmaRead(Dma::default()), Instr::Stop(Stop::default())];
        let t = LayerTable::from_names([Some("conv1"), None]);
        assert_eq!(layer_names(&instrs, Some(&t)), vec!["conv1", PROGRAM_LAYER]);
    }
}
