//! The human-readable listing: one row per instruction with flag columns, then a
//! summary of the sections.

use super::text::{io_fields, io_line, simd_line};
use super::value::field_pairs;
use crate::container::HostOp;
use crate::container::Program;
use crate::instr::{Class, Instr};

/// Rows of (index, offset, mnemonic, wait_set, wait_clear, set, clear, fields).
fn rows(p: &Program) -> Vec<[String; 8]> {
    let mut out = Vec::new();
    let mut offset = 0;
    for (i, ins) in p.instrs.iter().enumerate() {
        let f = ins.flags();
        let col = |s: crate::flags::FlagSet| {
            if s.is_empty() {
                "-".to_string()
            } else {
                s.to_text()
            }
        };
        out.push([
            i.to_string(),
            offset.to_string(),
            ins.mnemonic().to_string(),
            col(f.wait_set),
            col(f.wait_clear),
            col(f.set),
            col(f.clear),
            field_pairs(ins.body(), false).join(" "),
        ]);
        offset += ins.encoded_size();
    }
    out
}

/// The full human listing of a program.
pub fn listing(p: &Program) -> String {
    let header = [
        "idx",
        "offset",
        "op",
        "wait_set",
        "wait_clear",
        "set",
        "clear",
        "fields",
    ]
    .map(String::from);
    let rows = rows(p);
    let mut widths = header.clone().map(|h| h.len());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let fmt_row = |r: &[String; 8]| {
        let mut s = format!(
            "{:>w0$}  {:>w1$}  ",
            r[0],
            r[1],
            w0 = widths[0],
            w1 = widths[1]
        );
        for (c, w) in r[2..7].iter().zip(&widths[2..7]) {
            s.push_str(&format!("{c:<w$}  "));
        }
        s.push_str(&r[7]);
        s.trim_end().to_string() + "\n"
    };
    let mut out = fmt_row(&header);
    let indent = " ".repeat(widths[0] + widths[1] + 4);
    let mut layer = None;
    let mut segment = 0usize;
    for (i, (r, ins)) in rows.iter().zip(&p.instrs).enumerate() {
        if i == 0 && p.body_start.is_some() {
            out.push_str("; prologue: runs once when the program is loaded\n");
        }
        if p.body_start == Some(i) {
            out.push_str("; body: runs once per frame\n");
            layer = None;
        }
        if let Some(now) = p.layers.as_ref().and_then(|t| t.name_of(i)) {
            if layer != Some(now) {
                out.push_str(&format!("; layer {now}\n"));
            }
            layer = Some(now);
        }
        out.push_str(&fmt_row(r));
        for s in ins.simd() {
            out.push_str(&format!("{indent}+ {}\n", simd_line(s)));
        }
        if matches!(ins, Instr::Stop(_)) {
            for op in p.host_ops.iter().flat_map(|h| h.after(segment)) {
                out.push_str(&host_op_summary(op));
            }
            segment += 1;
        }
    }
    out.push('\n');
    out.push_str(&summary(p));
    out
}

/// `; host op after segment k: name = op` plus one line per tensor.
fn host_op_summary(op: &HostOp) -> String {
    let mut s = format!(
        "; host op after segment {}: {} = {}\n",
        op.segment, op.name, op.op
    );
    for d in &op.inputs {
        s.push_str(&format!(";     in  {}\n", io_fields(d)));
    }
    s.push_str(&format!(";     out {}\n", io_fields(&op.output)));
    s
}

/// Summary of the sections.
pub fn summary(p: &Program) -> String {
    let count = |c: Class| p.instrs.iter().filter(|i| i.class() == c).count();
    let simd: usize = p.instrs.iter().map(|i| i.simd().len()).sum();
    let mut s = String::from("sections:\n");
    s.push_str(&format!(
        "  instructions  {} instructions, {} bytes ({} dma, {} compute, {} simd, {} control)\n",
        p.instrs.len(),
        p.code_size(),
        count(Class::Dma),
        count(Class::Compute),
        simd,
        count(Class::Control)
    ));
    s.push_str(&format!(
        "  dram          {} bytes at {:#x}\n",
        p.dram.bytes.len(),
        p.dram.base
    ));
    s.push_str(&format!("  io            {} descriptors\n", p.io.len()));
    for d in &p.io {
        s.push_str(&format!("                {}\n", io_line(d)));
    }
    match &p.host_ops {
        None => s.push_str("  hostops       absent\n"),
        Some(h) => {
            let segments = crate::instr::segments(&p.instrs).len();
            s.push_str(&format!(
                "  hostops       {} ops between {segments} segments\n",
                h.ops.len()
            ));
        }
    }
    match &p.layers {
        None => s.push_str("  layers        absent\n"),
        Some(t) => s.push_str(&format!("  layers        {} layer names\n", t.names.len())),
    }
    match p.body_start {
        None => s.push_str("  prologue      absent (the whole program runs every frame)\n"),
        Some(b) => s.push_str(&format!(
            "  prologue      instructions 0..{b} ({} segment(s)) once per load; body {b}..{} per frame\n",
            p.prologue_segments(),
            p.instrs.len()
        )),
    }
    s.push_str(&format!(
        "  metadata      model {:?}, compiler {:?}, hw {}x{} MACs, {} B SRAM, {} flags (fingerprint {:#018x})\n",
        p.meta.source_model,
        p.meta.compiler_version,
        p.meta.hw.mac_rows,
        p.meta.hw.mac_cols,
        p.meta.hw.sram_bytes,
        p.meta.hw.flags,
        p.meta.hw.fingerprint()
    ));
    s
}

/// Mnemonic column width helper for callers that print one instruction.
pub fn one_line(ins: &Instr) -> String {
    let mut w = vec![ins.mnemonic().to_string()];
    w.extend(super::text::instr_words(ins));
    w.join(" ")
}
