//! The search space: a TOML file of values per `HwConfig` key and per compiler knob.
//!
//! ```toml
//! [base]                      # optional: any HwConfig key, fixed for every point
//! dram_share_percent = 50
//! [hw]                        # the axes: a list, or a range
//! mac_rows = [96, 192]
//! mac_cols = { min = 64, max = 192, step = 32 }
//! sram_bytes = { min = 8388608, max = 67108864, factor = 2 }
//! sram_read_ports = [[256, 128], [384, 192]]
//! [compiler]
//! resident_weights = ["auto", "off"]
//! mapping = ["off", "auto"]
//! ```
//!
//! `mac_rows` sets `simd_width` too (the ISA ties them). Every value is checked by
//! `HwConfig::validate` on the base configuration; errors name the key.

use crate::error::{AxisValueError, TuneError};
use nnac_isa::HwConfig;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Most values one range may expand to.
pub const MAX_AXIS_VALUES: usize = 4096;

/// The hardware keys a space may vary.
pub const HW_KEYS: [&str; 8] = [
    "mac_rows",
    "mac_cols",
    "sram_bytes",
    "sram_read_ports",
    "sram_write_port",
    "dram_peak_bytes_per_s",
    "clock_hz",
    "flags",
];

/// The compiler knobs a space may vary.
pub const COMPILER_KEYS: [&str; 2] = ["resident_weights", "mapping"];

/// One value of one axis.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Int(u64),
    Ports(Vec<u32>),
    Word(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Ports(p) => write!(f, "{p:?}"),
            Value::Word(w) => f.write_str(w),
        }
    }
}

/// One dimension of the space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// `mac_rows`, ..., `resident_weights`, `mapping`.
    pub key: String,
    pub values: Vec<Value>,
}

/// A design point: one value index per axis (the space's axis order).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Point(pub Vec<u32>);

/// The compiler knobs of a design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Knobs {
    /// `--resident-weights auto` (true) or `off`.
    pub resident_weights: bool,
    /// Per-layer mapping choice on (`mapping = "auto"`, `mapping.rs`).
    pub mapping: bool,
}

/// What one point means: the hardware and the compiler knobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    pub hw: HwConfig,
    pub knobs: Knobs,
}

/// The search space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Space {
    /// Every key not on an axis takes its value from here.
    pub base: HwConfig,
    pub axes: Vec<Axis>,
}

/// Sets `key` of `hw` / `knobs` to `v`; `Err` names what is wrong with the value.
fn apply(hw: &mut HwConfig, knobs: &mut Knobs, key: &str, v: &Value) -> Result<(), AxisValueError> {
    let int = |v: &Value| match v {
        Value::Int(i) => Ok(*i),
        other => Err(AxisValueError::NotInteger {
            got: other.to_string(),
        }),
    };
    let int32 = |v: &Value| {
        int(v).and_then(|i| u32::try_from(i).map_err(|_| AxisValueError::Not32Bits { value: i }))
    };
    let auto_off = |v: &Value| match v {
        Value::Word(w) if w == "auto" => Ok(true),
        Value::Word(w) if w == "off" => Ok(false),
        other => Err(AxisValueError::NotAutoOff {
            got: other.to_string(),
        }),
    };
    match key {
        "mac_rows" => {
            hw.mac_rows = int32(v)?;
            hw.simd_width = hw.mac_rows;
        }
        "mac_cols" => hw.mac_cols = int32(v)?,
        "sram_bytes" => hw.sram_bytes = int(v)?,
        "sram_write_port" => hw.sram_write_port = int32(v)?,
        "dram_peak_bytes_per_s" => hw.dram_peak_bytes_per_s = int(v)?,
        "clock_hz" => hw.clock_hz = int(v)?,
        "flags" => hw.flags = int32(v)?,
        "sram_read_ports" => match v {
            Value::Ports(p) => hw.sram_read_ports = p.clone(),
            other => {
                return Err(AxisValueError::NotPorts {
                    got: other.to_string(),
                })
            }
        },
        "resident_weights" => knobs.resident_weights = auto_off(v)?,
        "mapping" => knobs.mapping = auto_off(v)?,
        _ => return Err(AxisValueError::UnknownKey),
    }
    Ok(())
}

fn int_of(key: &str, v: &toml::Value) -> Result<u64, TuneError> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        other => Err(TuneError::space(
            key,
            format!("expected a non-negative integer, got {other}"),
        )),
    }
}

fn value_of(key: &str, v: &toml::Value) -> Result<Value, TuneError> {
    match v {
        toml::Value::Integer(_) => Ok(Value::Int(int_of(key, v)?)),
        toml::Value::String(s) => Ok(Value::Word(s.clone())),
        toml::Value::Array(a) => {
            let ports = a
                .iter()
                .map(|p| {
                    int_of(key, p).and_then(|i| {
                        u32::try_from(i).map_err(|_| {
                            TuneError::space(key, format!("port width {i} does not fit 32 bits"))
                        })
                    })
                })
                .collect::<Result<Vec<u32>, TuneError>>()?;
            Ok(Value::Ports(ports))
        }
        other => Err(TuneError::space(key, format!("unsupported value {other}"))),
    }
}

/// The values of a range table `{ min, max, step }` or `{ min, max, factor }`.
fn range_values(key: &str, t: &toml::Table) -> Result<Vec<Value>, TuneError> {
    for k in t.keys() {
        if !["min", "max", "step", "factor"].contains(&k.as_str()) {
            return Err(TuneError::space(
                key,
                format!("unknown range field `{k}` (expected min, max and step or factor)"),
            ));
        }
    }
    let field = |f: &str| {
        t.get(f)
            .map(|v| int_of(&format!("{key}.{f}"), v))
            .transpose()
    };
    let (min, max) = match (field("min")?, field("max")?) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(TuneError::space(key, "a range needs both `min` and `max`")),
    };
    if min > max {
        return Err(TuneError::space(
            key,
            format!("min {min} is above max {max}: the range is empty"),
        ));
    }
    let mut out = Vec::new();
    match (field("step")?, field("factor")?) {
        (Some(step), None) if step >= 1 => {
            let mut v = min;
            while v <= max {
                out.push(Value::Int(v));
                if out.len() > MAX_AXIS_VALUES {
                    break;
                }
                v = match v.checked_add(step) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
        (None, Some(factor)) if factor >= 2 && min >= 1 => {
            let mut v = min;
            while v <= max {
                out.push(Value::Int(v));
                v = match v.checked_mul(factor) {
                    Some(n) => n,
                    None => break,
                };
            }
        }
        (None, Some(_)) => {
            return Err(TuneError::space(
                key,
                "`factor` must be at least 2 and `min` at least 1",
            ))
        }
        (Some(_), None) => return Err(TuneError::space(key, "`step` must be at least 1")),
        _ => {
            return Err(TuneError::space(
                key,
                "a range needs exactly one of `step` or `factor`",
            ))
        }
    }
    if out.len() > MAX_AXIS_VALUES {
        return Err(TuneError::space(
            key,
            format!("the range has more than {MAX_AXIS_VALUES} values"),
        ));
    }
    Ok(out)
}

fn axis_values(key: &str, v: &toml::Value) -> Result<Vec<Value>, TuneError> {
    match v {
        toml::Value::Table(t) => range_values(key, t),
        toml::Value::Array(a) if key == "sram_read_ports" => {
            // A list of port lists; a flat list of integers is one value.
            if a.iter().all(|x| matches!(x, toml::Value::Array(_))) {
                a.iter().map(|x| value_of(key, x)).collect()
            } else {
                Ok(vec![value_of(key, v)?])
            }
        }
        toml::Value::Array(a) => a.iter().map(|x| value_of(key, x)).collect(),
        scalar => Ok(vec![value_of(key, scalar)?]),
    }
}

impl Space {
    /// Parses and validates a space file's text.
    pub fn from_toml_str(text: &str) -> Result<Space, TuneError> {
        let doc: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| TuneError::space("(file)", e.to_string().trim_end()))?;
        for k in doc.keys() {
            if !["base", "hw", "compiler"].contains(&k.as_str()) {
                return Err(TuneError::space(
                    k,
                    "unknown table (expected [base], [hw] and [compiler])",
                ));
            }
        }
        let base = match doc.get("base") {
            None => HwConfig::fsd(),
            Some(toml::Value::Table(t)) => {
                let text =
                    toml::to_string(t).map_err(|e| TuneError::space("base", e.to_string()))?;
                HwConfig::from_toml_str(&text).map_err(|e| TuneError::space("base", e.message))?
            }
            Some(_) => return Err(TuneError::space("base", "expected a table")),
        };
        let mut axes = Vec::new();
        for (table, keys) in [("hw", &HW_KEYS[..]), ("compiler", &COMPILER_KEYS[..])] {
            let t = match doc.get(table) {
                None => continue,
                Some(toml::Value::Table(t)) => t,
                Some(_) => return Err(TuneError::space(table, "expected a table")),
            };
            if let Some(k) = t.keys().find(|k| !keys.contains(&k.as_str())) {
                return Err(TuneError::space(
                    &format!("{table}.{k}"),
                    format!("not a tunable key; [{table}] takes {}", keys.join(", ")),
                ));
            }
            // Axes in the canonical key order, whatever the file's order.
            for k in keys {
                if let Some(v) = t.get(*k) {
                    let values = axis_values(&format!("{table}.{k}"), v)?;
                    axes.push(Axis {
                        key: k.to_string(),
                        values,
                    });
                }
            }
        }
        let space = Space { base, axes };
        space.validate()?;
        Ok(space)
    }

    /// Loads a space file.
    pub fn from_file(path: &std::path::Path) -> Result<Space, TuneError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            TuneError::space("(file)", format!("cannot read {}: {e}", path.display()))
        })?;
        Self::from_toml_str(&text)
    }

    /// Every axis non-empty, without duplicates, every value valid on the base.
    pub fn validate(&self) -> Result<(), TuneError> {
        let q = |k: &str| {
            if COMPILER_KEYS.contains(&k) {
                format!("compiler.{k}")
            } else {
                format!("hw.{k}")
            }
        };
        if self.axes.is_empty() {
            return Err(TuneError::space(
                "hw",
                "the space is empty: give at least one key in [hw] or [compiler]",
            ));
        }
        for a in &self.axes {
            if a.values.is_empty() {
                return Err(TuneError::space(
                    &q(&a.key),
                    "no values: the space is empty",
                ));
            }
            for (i, v) in a.values.iter().enumerate() {
                if a.values[..i].contains(v) {
                    return Err(TuneError::space(
                        &q(&a.key),
                        format!("value {v} is listed twice"),
                    ));
                }
                let mut hw = self.base.clone();
                let mut knobs = Knobs::default();
                apply(&mut hw, &mut knobs, &a.key, v)
                    .map_err(|m| TuneError::space(&q(&a.key), format!("value {v}: {m}")))?;
                hw.validate().map_err(|e| {
                    TuneError::space(&q(&a.key), format!("value {v}: {}", e.message))
                })?;
            }
            if self.axes.iter().filter(|b| b.key == a.key).count() > 1 {
                return Err(TuneError::space(&q(&a.key), "given twice"));
            }
        }
        Ok(())
    }

    /// Number of points (saturating).
    pub fn size(&self) -> u128 {
        self.axes
            .iter()
            .fold(1u128, |n, a| n.saturating_mul(a.values.len() as u128))
    }

    /// Number of values of each axis.
    pub fn dims(&self) -> Vec<usize> {
        self.axes.iter().map(|a| a.values.len()).collect()
    }

    /// The design of a point (the point's indices must be in range).
    pub fn design(&self, p: &Point) -> Design {
        let mut hw = self.base.clone();
        let mut knobs = Knobs::default();
        for (a, &i) in self.axes.iter().zip(&p.0) {
            // Every value was applied and validated in `validate`.
            let _ = apply(&mut hw, &mut knobs, &a.key, &a.values[i as usize]);
        }
        Design { hw, knobs }
    }

    /// The point whose values equal `design`'s, if the space has it (e.g. the FSD
    /// default).
    pub fn point_of(&self, hw: &HwConfig, knobs: Knobs) -> Option<Point> {
        let mut idx = Vec::with_capacity(self.axes.len());
        for a in &self.axes {
            let i = a.values.iter().position(|v| {
                let mut h = hw.clone();
                let mut k = knobs;
                apply(&mut h, &mut k, &a.key, v).is_ok() && h == *hw && k == knobs
            })?;
            idx.push(i as u32);
        }
        let p = Point(idx);
        (self.design(&p).hw == *hw).then_some(p)
    }

    /// The `i`-th point in mixed-radix order (last axis fastest).
    pub fn nth(&self, mut i: u128) -> Point {
        let dims = self.dims();
        let mut idx = vec![0u32; dims.len()];
        for (k, &d) in dims.iter().enumerate().rev() {
            idx[k] = (i % d as u128) as u32;
            i /= d as u128;
        }
        Point(idx)
    }

    /// A short text of a point's values, e.g. `mac_rows=192 mac_cols=96`.
    pub fn describe(&self, p: &Point) -> String {
        self.axes
            .iter()
            .zip(&p.0)
            .map(|(a, &i)| format!("{}={}", a.key, a.values[i as usize]))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Default for Knobs {
    fn default() -> Knobs {
        Knobs {
            resident_weights: true,
            mapping: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_axis_values_are_typed_errors() {
        let (mut hw, mut k) = (HwConfig::default(), Knobs::default());
        let mut set = |key: &str, v: Value| apply(&mut hw, &mut k, key, &v);
        assert_eq!(set("nope", Value::Int(1)), Err(AxisValueError::UnknownKey));
        assert_eq!(
            set("flags", Value::Int(1 << 40)),
            Err(AxisValueError::Not32Bits { value: 1 << 40 })
        );
        let e = set("mapping", Value::Int(3)).unwrap_err();
        assert_eq!(e, AxisValueError::NotAutoOff { got: "3".into() });
        assert_eq!(e.to_string(), "expected \"auto\" or \"off\", got 3");
        assert_eq!(set("mapping", Value::Word("off".into())), Ok(()));
    }

    #[test]
    fn lists_and_ranges() {
        let s = Space::from_toml_str(
            "[hw]\nmac_rows = [96, 192]\nmac_cols = { min = 32, max = 128, step = 32 }\nsram_bytes = { min = 8388608, max = 33554432, factor = 2 }\nsram_read_ports = [[256, 128], [512]]\n[compiler]\nresident_weights = [\"auto\", \"off\"]\n",
        )
        .unwrap();
        assert_eq!(s.dims(), vec![2, 4, 3, 2, 2]);
        assert_eq!(s.size(), 96);
        let d = s.design(&s.nth(95));
        assert_eq!(
            (d.hw.mac_rows, d.hw.simd_width, d.hw.mac_cols),
            (192, 192, 128)
        );
        assert_eq!(d.hw.sram_read_ports, vec![512]);
        assert!(!d.knobs.resident_weights);
        let fsd = s.point_of(&HwConfig::fsd(), Knobs::default()).unwrap();
        assert_eq!(s.design(&fsd).hw, HwConfig::fsd());
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            ("[hw]\nmac_rows = [96, 4096]\n", "hw.mac_rows"),
            ("[hw]\nmac_rowz = [96]\n", "hw.mac_rowz"),
            ("[hw]\nmac_cols = []\n", "mac_cols"),
            (
                "[hw]\nsram_bytes = { min = 10, max = 5, step = 1 }\n",
                "hw.sram_bytes",
            ),
            ("[hw]\nflags = [500]\n", "flags"),
            ("[compiler]\nmapping = [\"sometimes\"]\n", "mapping"),
            ("[hw]\nclock_hz = { min = 1, max = 5 }\n", "hw.clock_hz"),
            ("", "hw"),
            ("[base]\nmac_rowz = 3\n", "base"),
        ];
        for (text, key) in cases {
            let e = Space::from_toml_str(text).unwrap_err();
            assert!(e.to_string().contains(key), "{text:?}: {e}");
        }
    }
}
