//! Markdown field tables generated from the instruction tables. docs/ISA.md contains
//! them verbatim; a test fails if the two drift apart.

use crate::encoding::reserved_ranges;
use crate::field::FieldSpec;
use crate::instr::{Class, Instr};
use crate::simd::{SimdInstr, SIMD_SIZE};

fn row(s: &FieldSpec) -> String {
    format!(
        "| {} | {} | {} | {} | {} |",
        s.name,
        s.offset,
        s.width,
        s.range_text(),
        s.doc.trim()
    )
}

fn table(title: &str, size: usize, specs: &[FieldSpec]) -> String {
    let mut specs = specs.to_vec();
    specs.sort_by_key(|s| s.offset);
    let mut out = format!(
        "#### {title}\n\n| field | bit | width | range | meaning |\n|---|---|---|---|---|\n"
    );
    for s in &specs {
        out.push_str(&row(s));
        out.push('\n');
    }
    let reserved: Vec<String> = reserved_ranges(size, &specs)
        .iter()
        .map(|(a, b)| format!("{a}..{b}"))
        .collect();
    out.push_str(&format!(
        "\nReserved (must be zero): bits {}.\n",
        reserved.join(", ")
    ));
    out
}

/// One markdown table per instruction layout, then one per SIMD layout.
pub fn field_tables() -> String {
    let mut out = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for k in Instr::KINDS {
        if seen.contains(&k.layout) {
            continue;
        }
        seen.push(k.layout);
        let users: Vec<&str> = Instr::KINDS
            .iter()
            .filter(|o| o.layout == k.layout)
            .map(|o| o.mnemonic)
            .collect();
        let mut specs = k.class.header_specs();
        specs.extend_from_slice(k.fields);
        let size_note = if k.class == Class::Compute {
            " + SIMD program"
        } else {
            ""
        };
        let title = format!(
            "{} ({}; {} bytes{size_note})",
            k.layout,
            users.join(", "),
            k.size
        );
        out.push_str(&table(&title, k.size, &specs));
        out.push('\n');
    }
    let mut seen: Vec<&str> = Vec::new();
    for k in SimdInstr::KINDS {
        if seen.contains(&k.layout) {
            continue;
        }
        seen.push(k.layout);
        let mut specs = vec![crate::encoding::OPCODE];
        specs.extend_from_slice(k.fields);
        let title = format!("SIMD {} ({} bytes)", k.layout, SIMD_SIZE);
        out.push_str(&table(&title, SIMD_SIZE, &specs));
        out.push('\n');
    }
    out
}

/// The opcode tables.
pub fn opcode_tables() -> String {
    let mut out = String::from("| opcode | mnemonic | layout | class |\n|---|---|---|---|\n");
    for k in Instr::KINDS {
        out.push_str(&format!(
            "| {:#04x} | {} | {} | {:?} |\n",
            k.opcode, k.mnemonic, k.layout, k.class
        ));
    }
    out.push_str("\n| SIMD opcode | mnemonic | layout | operation |\n|---|---|---|---|\n");
    for k in SimdInstr::KINDS {
        out.push_str(&format!(
            "| {:#04x} | {} | {} | {} |\n",
            k.opcode, k.mnemonic, k.layout, k.doc
        ));
    }
    out
}
