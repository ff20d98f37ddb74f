//! The area and energy models: plain data in a TOML file the user can replace
//! (`data/costs.toml` is the default; docs/TUNE.md cites every constant).

use crate::error::TuneError;
use nnac_isa::HwConfig;
use serde::{Deserialize, Serialize};

/// The default model's text (compiled in).
pub const DEFAULT_COSTS: &str = include_str!("../data/costs.toml");

/// Area constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AreaModel {
    pub mac_um2_45nm: f64,
    pub shift_reg_um2_45nm: f64,
    pub tech_area_scale: f64,
    pub sram_mm2_per_mib: f64,
    pub simd_lane_mm2: f64,
    pub port_mm2_per_byte: f64,
    pub fixed_mm2: f64,
}

/// Energy constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnergyModel {
    pub mac_pj_45nm: f64,
    pub sram_pj_per_byte_45nm: f64,
    pub tech_energy_scale: f64,
    pub dram_pj_per_byte: f64,
    pub leakage_mw_per_mm2: f64,
}

/// Both models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostModel {
    pub area: AreaModel,
    pub energy: EnergyModel,
}

/// What one frame did, for the energy model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Activity {
    pub macs: u64,
    pub sram_bytes: u64,
    pub dram_bytes: u64,
    pub seconds: f64,
}

impl CostModel {
    /// Parses and checks a model (every constant finite and non-negative).
    pub fn from_toml_str(text: &str) -> Result<CostModel, TuneError> {
        let m: CostModel = toml::from_str(text).map_err(|e| TuneError::CostModel {
            key: "(file)".into(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let table = toml::Value::try_from(&m).map_err(|e| TuneError::Internal(e.to_string()))?;
        for (section, t) in table.as_table().into_iter().flatten() {
            for (k, v) in t.as_table().into_iter().flatten() {
                let x = v.as_float().unwrap_or(f64::NAN);
                if !(x.is_finite() && x >= 0.0) {
                    return Err(TuneError::CostModel {
                        key: format!("{section}.{k}"),
                        message: format!("{v} is not a finite non-negative number"),
                    });
                }
            }
        }
        Ok(m)
    }

    /// The compiled-in default model.
    pub fn default_model() -> CostModel {
        Self::from_toml_str(DEFAULT_COSTS).expect("data/costs.toml is valid")
    }

    /// Area of one NNA in mm^2.
    pub fn area_mm2(&self, hw: &HwConfig) -> f64 {
        let a = &self.area;
        let cells = f64::from(hw.mac_rows) * f64::from(hw.mac_cols);
        let array = cells * (a.mac_um2_45nm + a.shift_reg_um2_45nm) * a.tech_area_scale * 1e-6;
        let sram = hw.sram_bytes as f64 / f64::from(1u32 << 20) * a.sram_mm2_per_mib;
        let simd = f64::from(hw.simd_width) * a.simd_lane_mm2;
        let port_bytes: u64 = hw
            .sram_read_ports
            .iter()
            .map(|&p| u64::from(p))
            .sum::<u64>()
            + u64::from(hw.sram_write_port);
        array + sram + simd + port_bytes as f64 * a.port_mm2_per_byte + a.fixed_mm2
    }

    /// Energy of one frame in joules: dynamic (MACs, SRAM, DRAM) plus leakage of
    /// `area_mm2` for the frame's time.
    pub fn energy_j(&self, act: &Activity, area_mm2: f64) -> f64 {
        let e = &self.energy;
        let dynamic_pj = act.macs as f64 * e.mac_pj_45nm * e.tech_energy_scale
            + act.sram_bytes as f64 * e.sram_pj_per_byte_45nm * e.tech_energy_scale
            + act.dram_bytes as f64 * e.dram_pj_per_byte;
        dynamic_pj * 1e-12 + e.leakage_mw_per_mm2 * 1e-3 * area_mm2 * act.seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_model_prices_the_fsd() {
        let m = CostModel::default_model();
        let a = m.area_mm2(&HwConfig::fsd());
        // SRAM dominates: 32 MiB x 0.895 = 28.6 mm^2 of ~ 34 mm^2.
        assert!(a > 30.0 && a < 40.0, "{a}");
        let big = HwConfig {
            mac_rows: 192,
            simd_width: 192,
            ..HwConfig::fsd()
        };
        assert!(m.area_mm2(&big) > a);
        let e = m.energy_j(
            &Activity {
                macs: 4_000_000_000,
                sram_bytes: 1_000_000_000,
                dram_bytes: 10_000_000,
                seconds: 0.001,
            },
            a,
        );
        assert!(e > 0.0 && e < 1.0, "{e}");
    }

    #[test]
    fn bad_constants_name_the_key() {
        let text = DEFAULT_COSTS.replace("fixed_mm2 = 2.0", "fixed_mm2 = -1.0");
        let e = CostModel::from_toml_str(&text).unwrap_err();
        assert!(e.to_string().contains("area.fixed_mm2"), "{e}");
        let e = CostModel::from_toml_str("[area]\n").unwrap_err();
        assert!(e.to_string().contains("missing field"), "{e}");
    }
}
