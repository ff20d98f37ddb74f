//! What a point scores: the metrics of the workload mix on one design, the objective
//! to minimise and the constraints a design must meet.

use serde::{Deserialize, Serialize};

/// The quantity the single-objective tuners minimise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// Seconds per frame of the mix (weighted mean over the models).
    Latency,
    /// Frames per second of the mix (maximised: minimises seconds per frame; at
    /// batch 1 on one NNA it ranks designs as latency does, but reports frames/s).
    Throughput,
    /// Joules per frame of the mix.
    Energy,
    /// Energy x delay per frame.
    Edp,
}

impl Objective {
    /// Parses `latency|throughput|energy|edp`.
    pub fn parse(s: &str) -> Option<Objective> {
        match s {
            "latency" => Some(Objective::Latency),
            "throughput" => Some(Objective::Throughput),
            "energy" => Some(Objective::Energy),
            "edp" => Some(Objective::Edp),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Objective::Latency => "latency",
            Objective::Throughput => "throughput",
            Objective::Energy => "energy",
            Objective::Edp => "edp",
        }
    }
}

/// Limits a design must meet (all optional).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Constraints {
    pub max_area_mm2: Option<f64>,
    /// Every model of the mix at least this many frames per second.
    pub min_fps: Option<f64>,
    pub max_sram_bytes: Option<u64>,
}

/// One model's figures on one design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMetrics {
    pub name: String,
    pub cycles: u64,
    pub seconds: f64,
    pub energy_j: f64,
    /// Useful MACs / (cycles x rows x cols).
    pub utilization: f64,
    pub dram_bytes: u64,
    /// Layers the exact tier compiled with their channels on the rows (the mapping
    /// knob; `nnac compile --channels-on-rows`). Empty for analytical figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels_on_rows: Vec<String>,
}

/// The figures of the mix on one design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Weighted mean seconds per frame.
    pub latency_s: f64,
    /// `1 / latency_s`.
    pub fps: f64,
    /// Weighted mean joules per frame.
    pub energy_j: f64,
    pub area_mm2: f64,
    /// `energy_j * latency_s`.
    pub edp: f64,
    pub sram_bytes: u64,
    pub models: Vec<ModelMetrics>,
}

impl Metrics {
    /// The value the objective minimises.
    pub fn value(&self, o: Objective) -> f64 {
        match o {
            Objective::Latency | Objective::Throughput => self.latency_s,
            Objective::Energy => self.energy_j,
            Objective::Edp => self.edp,
        }
    }

    /// The objective as reported (frames/s for throughput).
    pub fn reported(&self, o: Objective) -> f64 {
        match o {
            Objective::Throughput => self.fps,
            _ => self.value(o),
        }
    }

    /// How far the design misses the constraints: 0 when it meets them all, else the
    /// sum of the relative excesses.
    pub fn violation(&self, c: &Constraints) -> f64 {
        let mut v = 0.0;
        if let Some(a) = c.max_area_mm2 {
            v += ((self.area_mm2 - a) / a.max(1e-9)).max(0.0);
        }
        if let Some(f) = c.min_fps {
            for m in &self.models {
                let fps = if m.seconds > 0.0 {
                    1.0 / m.seconds
                } else {
                    f64::INFINITY
                };
                v += ((f - fps) / f.max(1e-9)).max(0.0);
            }
        }
        if let Some(s) = c.max_sram_bytes {
            v += (self.sram_bytes.saturating_sub(s)) as f64 / s.max(1) as f64;
        }
        v
    }

    /// The three objectives of the Pareto front: latency, area, energy.
    pub fn front_objectives(&self) -> [f64; 3] {
        [self.latency_s, self.area_mm2, self.energy_j]
    }
}

/// Mixes per-model figures: weighted means of seconds and joules.
pub fn mix(models: Vec<ModelMetrics>, weights: &[f64], area_mm2: f64, sram_bytes: u64) -> Metrics {
    let total: f64 = weights.iter().sum::<f64>().max(1e-300);
    let latency_s = models
        .iter()
        .zip(weights)
        .map(|(m, w)| m.seconds * w)
        .sum::<f64>()
        / total;
    let energy_j = models
        .iter()
        .zip(weights)
        .map(|(m, w)| m.energy_j * w)
        .sum::<f64>()
        / total;
    Metrics {
        latency_s,
        fps: if latency_s > 0.0 {
            1.0 / latency_s
        } else {
            0.0
        },
        energy_j,
        area_mm2,
        edp: energy_j * latency_s,
        sram_bytes,
        models,
    }
}
