//! Disassembly of a whole program to the text form (`.s`) that [`super::assemble`]
//! reads back byte-identically.

use super::value::{field_pairs, quote, to_hex};
use crate::container::{IoDesc, IoDir, IoLayout, Program};
use crate::crc32::crc32;
use crate::flags::LIST_NAMES;
use crate::instr::Instr;
use crate::simd::SimdInstr;

/// DRAM images larger than this go to a side file (when a side-file name is given).
pub const INLINE_LIMIT: usize = 4096;

/// The text of a listing plus the side files it names (name relative to the listing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disassembly {
    pub text: String,
    pub side_files: Vec<(String, Vec<u8>)>,
}

/// Flag columns and fields of an instruction as `key=value` words.
pub fn instr_words(ins: &Instr) -> Vec<String> {
    let mut words = Vec::new();
    for (name, set) in LIST_NAMES.iter().zip(ins.flags().lists()) {
        if !set.is_empty() {
            words.push(format!("{name}={}", set.to_text()));
        }
    }
    words.extend(field_pairs(ins.body(), false));
    words
}

/// A SIMD instruction as `MNEMONIC key=value ...`.
pub fn simd_line(s: &SimdInstr) -> String {
    let k = s.kind();
    let mut words = vec![k.mnemonic.to_string()];
    words.extend(field_pairs(s.body(), k.float));
    words.join(" ")
}

/// Disassembles `p`. `dram_side_file`: name of the side file for a large DRAM image
/// (`None` keeps all data inline).
pub fn disassemble(p: &Program, dram_side_file: Option<&str>) -> Disassembly {
    let mut out = String::from("; nnac program listing: `nnac asm` turns it back into an .nnab\n");
    let mut side_files = Vec::new();
    out.push_str(&format!(".model {}\n", quote(&p.meta.source_model)));
    out.push_str(&format!(".compiler {}\n", quote(&p.meta.compiler_version)));
    for line in p.meta.hw.to_toml().lines() {
        out.push_str(&format!(".hw {line}\n"));
    }
    match dram_side_file {
        Some(name) if p.dram.bytes.len() > INLINE_LIMIT => {
            out.push_str(&format!(
                ".dram base={:#x} size={} crc={:#010x} file={}\n",
                p.dram.base,
                p.dram.bytes.len(),
                crc32(&p.dram.bytes),
                quote(name)
            ));
            side_files.push((name.to_string(), p.dram.bytes.clone()));
        }
        _ => out.push_str(&format!(
            ".dram base={:#x} hex=\"{}\"\n",
            p.dram.base,
            to_hex(&p.dram.bytes)
        )),
    }
    for d in &p.io {
        out.push_str(&io_line(d));
        out.push('\n');
    }
    if let Some(h) = &p.host_ops {
        out.push_str(".hostops\n");
        for op in &h.ops {
            out.push_str(&format!(
                ".hostop kind={} hex=\"{}\"\n",
                op.kind,
                to_hex(&op.payload)
            ));
        }
    }
    let mut offset = 0;
    for (i, ins) in p.instrs.iter().enumerate() {
        let mut words = vec![ins.mnemonic().to_string()];
        words.extend(instr_words(ins));
        out.push_str(&format!("    {}  ; #{i} @{offset}\n", words.join(" ")));
        for s in ins.simd() {
            out.push_str(&format!("        + {}\n", simd_line(s)));
        }
        offset += ins.encoded_size();
    }
    Disassembly {
        text: out,
        side_files,
    }
}

/// `.input name=... dtype=... ...` for one descriptor.
pub fn io_line(d: &IoDesc) -> String {
    let dir = match d.dir {
        IoDir::Input => ".input",
        IoDir::Output => ".output",
    };
    let shape: Vec<String> = d.shape.iter().map(u32::to_string).collect();
    let layout = match d.layout {
        IoLayout::Dense => "layout=dense".to_string(),
        IoLayout::Hwc {
            row_pitch,
            pix_pitch,
        } => format!("layout=hwc row_pitch={row_pitch} pix_pitch={pix_pitch}"),
    };
    format!(
        "{dir} name={} dtype={} shape=[{}] dram={:#x} {layout} scale={:?} zero_point={}",
        quote(&d.name),
        d.dtype.name(),
        shape.join(","),
        d.dram_addr,
        d.scale,
        d.zero_point
    )
}
