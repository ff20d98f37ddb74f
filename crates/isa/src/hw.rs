//! The hardware configuration of the target NNA.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// One NNA instance. Every field is an integer so that the canonical TOML text (and
/// the fingerprint over it) is stable. A TOML file may give any subset of the keys;
/// the rest default to [`HwConfig::fsd`]. Unknown keys are an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HwConfig {
    /// MAC array rows: output pixels computed at once (one SIMD lane each).
    pub mac_rows: u32,
    /// MAC array columns: output channels computed at once.
    pub mac_cols: u32,
    /// Accumulator width in bits (values wrap past it).
    pub acc_bits: u32,
    /// SIMD unit lanes (must equal `mac_rows`).
    pub simd_width: u32,
    /// Local SRAM size in bytes.
    pub sram_bytes: u64,
    /// Number of single-ported SRAM banks.
    pub sram_banks: u32,
    /// Bytes of consecutive addresses mapped to one bank before moving to the next.
    pub sram_bank_interleave: u32,
    /// Cycles a bank stays busy after an access (2: not on consecutive cycles).
    pub sram_bank_busy_cycles: u32,
    /// Widths in bytes of the independent SRAM read ports.
    pub sram_read_ports: Vec<u32>,
    /// Width in bytes of the SRAM write path.
    pub sram_write_port: u32,
    /// Activation cache size in bytes.
    pub act_cache_bytes: u32,
    /// Clock in Hz.
    pub clock_hz: u64,
    /// Peak DRAM bandwidth of the whole chip, bytes per second.
    pub dram_peak_bytes_per_s: u64,
    /// Percentage of the chip's DRAM bandwidth this NNA may assume.
    pub dram_share_percent: u32,
    /// Number of dependency flags (F0 .. F(flags-1)).
    pub flags: u32,
    /// Accumulator rows the SIMD unit takes per cycle of its program: 1 on the FSD
    /// chip; more is a what-if (a wider SIMD unit) for `nnac profile --hw`. Written
    /// to the canonical text only when not 1, so that configurations without it keep
    /// their text and fingerprint.
    #[serde(skip_serializing_if = "is_one")]
    pub simd_rows_per_cycle: u32,
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

impl Default for HwConfig {
    fn default() -> Self {
        HwConfig::fsd()
    }
}

/// A configuration file or text that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwConfigError {
    /// The file, if loaded from one.
    pub path: Option<String>,
    pub message: String,
}

impl fmt::Display for HwConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "hardware config {p}: {}", self.message),
            None => write!(f, "hardware config: {}", self.message),
        }
    }
}

impl std::error::Error for HwConfigError {}

fn err(message: impl Into<String>) -> HwConfigError {
    HwConfigError {
        path: None,
        message: message.into(),
    }
}

impl HwConfig {
    /// The FSD NNA: 96x96 MACs, 30-bit accumulators, 32 MiB SRAM in 128 banks,
    /// 256 + 128 B/cycle reads, 128 B/cycle writes, 2 GHz, half of 68 GB/s DRAM, 64 flags.
    pub fn fsd() -> HwConfig {
        HwConfig {
            mac_rows: 96,
            mac_cols: 96,
            acc_bits: 30,
            simd_width: 96,
            sram_bytes: 32 << 20,
            sram_banks: 128,
            sram_bank_interleave: 256,
            sram_bank_busy_cycles: 2,
            sram_read_ports: vec![256, 128],
            sram_write_port: 128,
            act_cache_bytes: 1024,
            clock_hz: 2_000_000_000,
            dram_peak_bytes_per_s: 68_000_000_000,
            dram_share_percent: 50,
            flags: 64,
            simd_rows_per_cycle: 1,
        }
    }

    /// Parses TOML text and validates it.
    pub fn from_toml_str(text: &str) -> Result<HwConfig, HwConfigError> {
        let hw: HwConfig =
            toml::from_str(text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
        hw.validate()?;
        Ok(hw)
    }

    /// Loads and validates a TOML file.
    pub fn from_toml_file(path: &Path) -> Result<HwConfig, HwConfigError> {
        let with_path = |mut e: HwConfigError| {
            e.path = Some(path.display().to_string());
            e
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| with_path(err(format!("cannot read: {e}"))))?;
        Self::from_toml_str(&text).map_err(with_path)
    }

    /// The canonical TOML text (all keys, fixed order). Stored in program containers.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("HwConfig always serializes")
    }

    /// 64-bit FNV-1a hash of [`HwConfig::to_toml`]: equal configs have equal fingerprints.
    pub fn fingerprint(&self) -> u64 {
        fnv1a64(self.to_toml().as_bytes())
    }

    /// DRAM bandwidth available to this NNA in bytes per second.
    pub fn dram_bytes_per_s(&self) -> u64 {
        self.dram_peak_bytes_per_s / 100 * u64::from(self.dram_share_percent)
    }

    /// Checks ranges and cross-field rules.
    pub fn validate(&self) -> Result<(), HwConfigError> {
        let rules: [(bool, &str); 15] = [
            (
                self.mac_rows >= 1 && self.mac_rows <= 1024,
                "mac_rows must be in 1..=1024",
            ),
            (
                self.mac_cols >= 1 && self.mac_cols <= 1024,
                "mac_cols must be in 1..=1024",
            ),
            (
                self.acc_bits >= 16 && self.acc_bits <= 32,
                "acc_bits must be in 16..=32",
            ),
            (
                self.simd_width == self.mac_rows,
                "simd_width must equal mac_rows",
            ),
            (
                self.sram_bytes >= 4096 && self.sram_bytes <= 1 << 28,
                "sram_bytes must be in 4096..=268435456 (28-bit SRAM addresses)",
            ),
            (self.sram_banks >= 1, "sram_banks must be at least 1"),
            (
                self.sram_bank_interleave >= 1 && self.sram_bank_interleave.is_power_of_two(),
                "sram_bank_interleave must be a power of two",
            ),
            (
                self.sram_bank_busy_cycles >= 1,
                "sram_bank_busy_cycles must be at least 1",
            ),
            (
                !self.sram_read_ports.is_empty() && self.sram_read_ports.iter().all(|&p| p >= 1),
                "sram_read_ports must list at least one non-zero width",
            ),
            (
                self.sram_write_port >= 1,
                "sram_write_port must be at least 1",
            ),
            (self.clock_hz >= 1, "clock_hz must be at least 1"),
            (
                self.dram_peak_bytes_per_s >= 1,
                "dram_peak_bytes_per_s must be at least 1",
            ),
            (
                self.dram_share_percent >= 1 && self.dram_share_percent <= 100,
                "dram_share_percent must be in 1..=100",
            ),
            (
                self.flags >= 1 && self.flags <= crate::flags::MAX_FLAGS,
                "flags must be in 1..=127",
            ),
            (
                self.simd_rows_per_cycle >= 1 && self.simd_rows_per_cycle <= self.mac_cols,
                "simd_rows_per_cycle must be in 1..=mac_cols",
            ),
        ];
        match rules.iter().find(|(ok, _)| !ok) {
            Some((_, msg)) => Err(err(*msg)),
            None => Ok(()),
        }
    }
}

/// 64-bit FNV-1a.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsd_round_trips_through_toml() {
        let hw = HwConfig::fsd();
        hw.validate().unwrap();
        assert_eq!(HwConfig::from_toml_str(&hw.to_toml()).unwrap(), hw);
        assert_eq!(hw.dram_bytes_per_s(), 34_000_000_000);
    }

    #[test]
    fn partial_file_defaults_to_fsd() {
        let hw = HwConfig::from_toml_str("flags = 32\nsram_bytes = 16777216\n").unwrap();
        assert_eq!(hw.flags, 32);
        assert_eq!(hw.mac_rows, 96);
        assert_ne!(hw.fingerprint(), HwConfig::fsd().fingerprint());
    }

    #[test]
    fn simd_rows_per_cycle_is_written_only_when_not_one() {
        // The FSD text (and every stored program's fingerprint) predates the key.
        let fsd = HwConfig::fsd();
        assert!(!fsd.to_toml().contains("simd_rows_per_cycle"));
        assert_eq!(
            fsd.fingerprint(),
            0x3f4a_1a8b_7d10_03ed,
            "{:#x}",
            fsd.fingerprint()
        );
        let two = HwConfig::from_toml_str("simd_rows_per_cycle = 2\n").unwrap();
        assert!(two.to_toml().contains("simd_rows_per_cycle = 2"));
        assert_eq!(HwConfig::from_toml_str(&two.to_toml()).unwrap(), two);
        let e = HwConfig::from_toml_str("simd_rows_per_cycle = 0\n").unwrap_err();
        assert!(e.message.contains("simd_rows_per_cycle"), "{e}");
    }

    #[test]
    fn unknown_key_is_named() {
        let e = HwConfig::from_toml_str("mac_rowz = 96\n").unwrap_err();
        assert!(e.message.contains("mac_rowz"), "{e}");
    }

    #[test]
    fn bad_values_are_rejected() {
        let e = HwConfig::from_toml_str("mac_rows = \"many\"\n").unwrap_err();
        assert!(e.message.contains("mac_rows"), "{e}");
        let e = HwConfig::from_toml_str("flags = 500\n").unwrap_err();
        assert!(e.message.contains("flags"), "{e}");
        let e = HwConfig::from_toml_str("mac_rows = 64\n").unwrap_err();
        assert!(e.message.contains("simd_width"), "{e}");
    }

    #[test]
    fn file_errors_name_the_path() {
        let e = HwConfig::from_toml_file(Path::new("/nonexistent/hw.toml")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/hw.toml"));
    }
}
