//! The two cost-model tiers as functions of a design: [`analytic()`] (the roofline of
//! `analytic.rs`, microseconds) and [`ExactModel::evaluate`] (the backend's lowering
//! of each model's quantized IR for the design, then the cycle model of `nnac
//! profile`, seconds).

use crate::analytic::{self, Estimate, Machine};
use crate::costs::{Activity, CostModel};
use crate::error::EvalError;
use crate::objective::{mix, Metrics, ModelMetrics};
use crate::space::Design;
use crate::workload::Workload;
use nnac_backend_nna::{BackendOptions, ResidentWeights};
use nnac_ir::Graph;

fn util(macs: u64, cycles: u64, design: &Design) -> f64 {
    let cells = u64::from(design.hw.mac_rows) * u64::from(design.hw.mac_cols);
    if cycles == 0 {
        0.0
    } else {
        macs as f64 / (cycles as f64 * cells as f64)
    }
}

/// The analytical estimate of every model on `design`.
pub fn estimates(workloads: &[Workload], design: &Design) -> Vec<Estimate> {
    let m = Machine::new(&design.hw);
    workloads
        .iter()
        .map(|w| analytic::estimate(w, &m, design.knobs))
        .collect()
}

/// The analytical metrics of the mix on `design`.
pub fn analytic(workloads: &[Workload], costs: &CostModel, design: &Design) -> Metrics {
    let area = costs.area_mm2(&design.hw);
    let models = workloads
        .iter()
        .zip(estimates(workloads, design))
        .map(|(w, e)| {
            let act = Activity {
                macs: e.macs,
                sram_bytes: e.sram_read + e.sram_written,
                dram_bytes: e.dram_bytes,
                seconds: e.seconds,
            };
            ModelMetrics {
                name: w.name.clone(),
                cycles: e.cycles,
                seconds: e.seconds,
                energy_j: costs.energy_j(&act, area),
                utilization: util(e.macs, e.cycles, design),
                dram_bytes: e.dram_bytes,
                channels_on_rows: Vec::new(),
            }
        })
        .collect();
    let weights: Vec<f64> = workloads.iter().map(|w| w.weight).collect();
    mix(models, &weights, area, design.hw.sram_bytes)
}

/// One model compiled as far as the hardware allows: its quantized IR (calibration
/// and quantization do not depend on the hardware, so they run once per model).
pub struct CompiledModel {
    pub workload: Workload,
    pub graph: Graph,
}

/// The exact tier: the models' quantized graphs, lowered per design.
pub struct ExactModel {
    pub models: Vec<CompiledModel>,
}

impl ExactModel {
    /// Lowers every model for `design` and times it with the cycle model. `Err`: the
    /// design cannot run a model (e.g. a layer that does not fit its SRAM), naming it.
    pub fn evaluate(&self, costs: &CostModel, design: &Design) -> Result<Metrics, EvalError> {
        let area = costs.area_mm2(&design.hw);
        let opts = BackendOptions {
            resident_weights: if design.knobs.resident_weights {
                ResidentWeights::Auto
            } else {
                ResidentWeights::Off
            },
            // The design's programs are timed, never run: the hazard proof of every
            // program is the compiler's own test suite's job, not the tuner's.
            skip_hazard_check: true,
            ..Default::default()
        };
        let workloads: Vec<Workload> = self.models.iter().map(|m| m.workload.clone()).collect();
        let est = estimates(&workloads, design);
        let mut models = Vec::new();
        for (m, e) in self.models.iter().zip(est) {
            let name = &m.workload.name;
            // The mapping knob: the layers the analytical model turns channels-on-rows.
            let opts = BackendOptions {
                channels_on_rows: if design.knobs.mapping {
                    crate::mapping::changes(std::slice::from_ref(&m.workload), &design.hw)
                        .into_iter()
                        .map(|c| c.layer)
                        .collect()
                } else {
                    Default::default()
                },
                ..opts.clone()
            };
            let (program, report) =
                nnac_backend_nna::lower(&m.graph, &design.hw, &opts).map_err(|error| {
                    EvalError::Lower {
                        model: name.clone(),
                        error,
                    }
                })?;
            let p = nnac_runtime_sim::timing::analyze(&program, None).map_err(|error| {
                EvalError::Timing {
                    model: name.clone(),
                    error,
                }
            })?;
            let seconds = p.seconds();
            let dram = p.dram_read + p.dram_written;
            let act = Activity {
                macs: e.macs,
                sram_bytes: e.sram_read + e.sram_written,
                dram_bytes: dram,
                seconds,
            };
            models.push(ModelMetrics {
                name: name.clone(),
                cycles: p.total_cycles,
                seconds,
                energy_j: costs.energy_j(&act, area),
                utilization: p.mac_utilization(),
                dram_bytes: dram,
                channels_on_rows: report.channels_on_rows,
            });
        }
        let weights: Vec<f64> = self.models.iter().map(|m| m.workload.weight).collect();
        Ok(mix(models, &weights, area, design.hw.sram_bytes))
    }
}
