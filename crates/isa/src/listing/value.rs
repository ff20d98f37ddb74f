//! Text forms of field values, strings and byte blobs shared by listing and assembler.

use crate::error::ValueError;
use crate::field::{FieldSpec, Fields, Fmt};

/// Formats one field value. `float_op` selects float-literal immediates.
pub fn format_value(spec: &FieldSpec, v: i64, float_op: bool) -> String {
    match spec.fmt {
        Fmt::Dec | Fmt::Bool | Fmt::Flags => v.to_string(),
        Fmt::Hex if v >= 0 => format!("{v:#x}"),
        Fmt::Hex => v.to_string(),
        Fmt::Reg => format!("r{v}"),
        Fmt::Enum => spec
            .names
            .get(v as usize)
            .map_or_else(|| v.to_string(), |n| n.to_string()),
        Fmt::Imm => format_imm(v as i32, float_op),
    }
}

fn format_imm(v: i32, float_op: bool) -> String {
    let f = f32::from_bits(v as u32);
    if float_op && f.is_finite() {
        format!("{f:?}f")
    } else if float_op {
        format!("{:#x}", v as u32)
    } else {
        v.to_string()
    }
}

/// Parses a decimal or `0x` hexadecimal integer, optionally negative.
pub fn parse_int(text: &str) -> Option<i64> {
    parse_wide(text).and_then(|v| i64::try_from(v).ok())
}

/// [`parse_int`] with room for every u64 and i64 value.
pub fn parse_wide(text: &str) -> Option<i128> {
    let (neg, t) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text),
    };
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) if !h.is_empty() && !h.starts_with(['+', '-']) => {
            i128::from_str_radix(h, 16).ok()?
        }
        Some(_) => return None,
        None if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t.parse::<i128>().ok()?,
        None => return None,
    };
    Some(if neg { -v } else { v })
}

/// Parses one field value in any of the forms [`format_value`] produces (enum names,
/// `rN`, integers, `1.5f` float immediates, `0x` bit patterns for immediates).
pub fn parse_value(spec: &FieldSpec, text: &str) -> Result<i64, ValueError> {
    let bad = || ValueError::Field {
        field: spec.name,
        text: text.to_string(),
        expected: &[],
    };
    match spec.fmt {
        Fmt::Enum => spec
            .names
            .iter()
            .position(|n| *n == text)
            .map(|p| p as i64)
            .ok_or_else(|| ValueError::Field {
                field: spec.name,
                text: text.to_string(),
                expected: spec.names,
            }),
        Fmt::Reg => text
            .strip_prefix('r')
            .and_then(|d| d.parse::<i64>().ok())
            .ok_or_else(bad),
        Fmt::Bool => match text {
            "0" | "false" => Ok(0),
            "1" | "true" => Ok(1),
            _ => Err(bad()),
        },
        Fmt::Imm => parse_imm(text).ok_or_else(bad),
        Fmt::Dec | Fmt::Hex | Fmt::Flags => parse_int(text).ok_or_else(bad),
    }
}

fn parse_imm(text: &str) -> Option<i64> {
    if let Some(v) = parse_int(text) {
        // A hex bit pattern above i32::MAX means the same 32 bits.
        return Some(
            if (i64::from(i32::MAX) + 1..=i64::from(u32::MAX)).contains(&v) {
                i64::from(v as u32 as i32)
            } else {
                v
            },
        );
    }
    let f: f32 = text.strip_suffix('f')?.parse().ok()?;
    Some(i64::from(f.to_bits() as i32))
}

/// `name=value` pairs of the non-zero fields (zero is every field's default), plus
/// the main register operands `dst`, `src` and `a` even when they are r0.
pub fn field_pairs(body: &dyn Fields, float_op: bool) -> Vec<String> {
    body.specs()
        .iter()
        .zip(body.values())
        .filter(|(s, v)| *v != 0 || (s.fmt == Fmt::Reg && s.name != "b"))
        .map(|(s, v)| format!("{}={}", s.name, format_value(s, v, float_op)))
        .collect()
}

/// A double-quoted string with `\\`, `\"`, `\n`, `\t`, `\r` and `\u{..}` escapes.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Inverse of [`quote`]; `s` includes the quotes.
pub fn unquote(s: &str) -> Result<String, ValueError> {
    let inner = s
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|_| s.len() >= 2)
        .ok_or(ValueError::NotQuoted)?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let rest: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let code = rest
                    .strip_prefix('{')
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .and_then(char::from_u32)
                    .ok_or(ValueError::BadUnicodeEscape)?;
                out.push(code);
            }
            _ => return Err(ValueError::BadEscape),
        }
    }
    Ok(out)
}

/// Lower-case hex.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Inverse of [`to_hex`] (either case).
pub fn from_hex(s: &str) -> Result<Vec<u8>, ValueError> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return Err(ValueError::OddHex);
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| ValueError::BadHexByte {
                text: s[i..i + 2].to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip() {
        for s in ["", "a b", "q\"uo\\te", "line\nnext\u{1}\u{7f}", "ünï"] {
            assert_eq!(unquote(&quote(s)).unwrap(), s);
        }
        assert!(unquote("\"abc").is_err());
        assert!(unquote("\"").is_err());
        assert!(unquote("\"\\q\"").is_err());
    }

    #[test]
    fn ints() {
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_int("-12"), Some(-12));
        assert_eq!(parse_int("-0x10"), Some(-16));
        assert_eq!(parse_int("0x"), None);
        assert_eq!(parse_int("1.5"), None);
        assert_eq!(parse_int(""), None);
    }

    #[test]
    fn imm_forms() {
        assert_eq!(parse_imm("1.0f"), Some(0x3f80_0000));
        assert_eq!(
            parse_imm("0xffc00000"),
            Some(i64::from(0xffc0_0000u32 as i32))
        );
        assert_eq!(parse_imm("0x3f"), Some(0x3f));
        assert_eq!(format_imm(0x3f80_0000, true), "1.0f");
        assert_eq!(format_imm(0x7fc0_0000, true), "0x7fc00000");
        assert_eq!(format_imm(-5, false), "-5");
    }

    #[test]
    fn hex_round_trip() {
        assert_eq!(from_hex(&to_hex(&[0, 1, 255])).unwrap(), vec![0, 1, 255]);
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
    }
}
