//! The mapping knob: per matrix-product layer (a 1x1, stride-1, unpadded, ungrouped,
//! unpooled convolution), lay the output channels on the array's rows and the pixels
//! on its columns instead of the other way round, when that takes fewer cycles. It is
//! the patent's "reshape a low-utilization layer" transformation in the form this
//! array admits: a late 1x1 layer of 7 x 7 = 49 pixels fills 49 of 192 rows, but
//! its 2048 channels fill all of them (the compiler already runs a global pool this
//! way, `gap.rs`). The analytical model picks the layers; the exact tier compiles
//! them turned (`BackendOptions::channels_on_rows`, the backend's
//! `lower/channels_on_rows.rs`), and `nnac compile --channels-on-rows` does the same.

use crate::analytic::{best_orientation, Machine, Orientation};
use crate::workload::Workload;
use nnac_isa::HwConfig;
use serde::{Deserialize, Serialize};

/// A layer the knob changes on one design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappingChange {
    pub model: String,
    pub layer: String,
    pub orientation: Orientation,
    /// Analytical cycles in the compiler's orientation and in the chosen one.
    pub cycles_before: u64,
    pub cycles_after: u64,
    /// MAC utilization of the layer before and after.
    pub util_before: f64,
    pub util_after: f64,
}

/// Every layer of `workloads` whose orientation the knob changes on `hw`.
pub fn changes(workloads: &[Workload], hw: &HwConfig) -> Vec<MappingChange> {
    let m = Machine::new(hw);
    let cells = (m.prm.rows * m.prm.cols) as f64;
    let mut out = Vec::new();
    for w in workloads {
        for l in &w.layers {
            let (o, after) = best_orientation(&l.shape, &m, true);
            let (o_before, before) = best_orientation(&l.shape, &m, false);
            // A global pool runs channels-as-pixels with the knob off too.
            if o == o_before {
                continue;
            }
            let u = |c: u64| l.shape.macs() as f64 / (c.max(1) as f64 * cells);
            out.push(MappingChange {
                model: w.name.clone(),
                layer: l.name.clone(),
                orientation: o,
                cycles_before: before.cycles,
                cycles_after: after.cycles,
                util_before: u(before.cycles),
                util_after: u(after.cycles),
            });
        }
    }
    out
}
