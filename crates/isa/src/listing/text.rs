//! Disassembly of a whole program to the text form (`.s`) that [`super::assemble`]
//! reads back byte-identically.

use super::value::{field_pairs, quote, to_hex};
use crate::container::{HostOp, IoDesc, IoDir, IoLayout, Program};
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
    for n in &p.meta.notes {
        out.push_str(&format!(".note {} {}\n", quote(&n.key), quote(&n.value)));
    }
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
            side_files.push((name.to_string(), p.dram.bytes.to_vec()));
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
    if p.host_ops.is_some() {
        out.push_str(".hostops\n");
    }
    if p.layers.is_some() {
        out.push_str(".layers\n");
    }
    let mut offset = 0;
    let mut layer: Option<&str> = None;
    let mut segment = 0usize;
    for (i, ins) in p.instrs.iter().enumerate() {
        if p.body_start == Some(i) {
            out.push_str(
                ".body  ; the prologue above runs once per load, the body below once per frame\n",
            );
        }
        if let Some(t) = &p.layers {
            let now = t.name_of(i);
            if now != layer {
                match now {
                    Some(n) => out.push_str(&format!(".layer {}\n", quote(n))),
                    None => out.push_str(".layer none\n"),
                }
                layer = now;
            }
        }
        let mut words = vec![ins.mnemonic().to_string()];
        words.extend(instr_words(ins));
        out.push_str(&format!("    {}  ; #{i} @{offset}\n", words.join(" ")));
        for s in ins.simd() {
            out.push_str(&format!("        + {}\n", simd_line(s)));
        }
        offset += ins.encoded_size();
        if matches!(ins, Instr::Stop(_)) {
            let k = segment;
            segment += 1;
            for op in p.host_ops.iter().flat_map(|h| h.after(k)) {
                out.push_str(&host_op_lines(op));
            }
        }
    }
    // Ops of a segment the program does not have (an invalid program) stay visible.
    for op in p.host_ops.iter().flat_map(|h| &h.ops) {
        if op.segment as usize >= segment {
            out.push_str(&host_op_lines(op));
        }
    }
    Disassembly {
        text: out,
        side_files,
    }
}

/// The lines of one host op: `.hostop`, then `.hostin` per operand and `.hostout`.
pub fn host_op_lines(op: &HostOp) -> String {
    let mut s = format!(
        ".hostop segment={} name={} op={}\n",
        op.segment,
        quote(&op.name),
        quote(&op.op)
    );
    for d in &op.inputs {
        s.push_str(&format!(".hostin {}\n", io_fields(d)));
    }
    s.push_str(&format!(".hostout {}\n", io_fields(&op.output)));
    s
}

/// `.input name=... dtype=... ...` for one descriptor.
pub fn io_line(d: &IoDesc) -> String {
    let dir = match d.dir {
        IoDir::Input => ".input",
        IoDir::Output => ".output",
    };
    format!("{dir} {}", io_fields(d))
}

/// `name=... dtype=... shape=... dram=... layout=... scale=... zero_point=...`.
pub fn io_fields(d: &IoDesc) -> String {
    let shape: Vec<String> = d.shape.iter().map(u32::to_string).collect();
    let layout = match d.layout {
        IoLayout::Dense => "layout=dense".to_string(),
        IoLayout::Hwc {
            row_pitch,
            pix_pitch,
        } => format!("layout=hwc row_pitch={row_pitch} pix_pitch={pix_pitch}"),
    };
    format!(
        "name={} dtype={} shape=[{}] dram={:#x} {layout} scale={:?} zero_point={}",
        quote(&d.name),
        d.dtype.name(),
        shape.join(","),
        d.dram_addr,
        d.scale,
        d.zero_point
    )
}
