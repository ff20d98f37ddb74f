//! The listing of a hand-written program (insta snapshot), JSON lines, and
//! assembler error positions.

use nnac_isa::listing::{assemble, disassemble, json, table};
use nnac_isa::*;
use std::collections::BTreeSet;

fn every_op() -> Program {
    let text = include_str!("data/every_op.s");
    let mut no_files = |n: &str| Err(std::io::Error::other(format!("unexpected side file {n}")));
    assemble(text, &mut no_files).unwrap_or_else(|e| panic!("every_op.s: {e}"))
}

fn asm_err(text: &str) -> listing::AsmError {
    let mut no_files = |_: &str| Err(std::io::Error::other("no files"));
    assemble(text, &mut no_files).unwrap_err()
}

#[test]
fn hand_written_program_uses_every_op() {
    let p = every_op();
    let kinds: BTreeSet<&str> = p.instrs.iter().map(|i| i.mnemonic()).collect();
    assert_eq!(kinds.len(), Instr::KINDS.len(), "{kinds:?}");
    let simd: BTreeSet<&str> = p
        .instrs
        .iter()
        .flat_map(|i| i.simd())
        .map(|s| s.kind().mnemonic)
        .collect();
    assert_eq!(simd.len(), SimdInstr::KINDS.len(), "{simd:?}");
}

#[test]
fn listing_snapshot() {
    insta::assert_snapshot!("every_op_listing", table::listing(&every_op()));
}

#[test]
fn json_snapshot() {
    let lines = json::json_lines(&every_op());
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        for key in [
            "index",
            "offset",
            "size",
            "op",
            "wait_set",
            "wait_clear",
            "set",
            "clear",
        ] {
            assert!(v.get(key).is_some(), "missing {key} in {l}");
        }
    }
    insta::assert_snapshot!("every_op_json", lines.join("\n"));
}

#[test]
fn json_offsets_and_sizes_match_the_encoding() {
    let p = every_op();
    let code = encode_program(&p.instrs).unwrap();
    let decoded = decode_program(&code).unwrap();
    for (l, d) in json::json_lines(&p).iter().zip(&decoded) {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["offset"], d.offset);
        assert_eq!(v["size"], d.size);
    }
}

#[test]
fn disassembly_reassembles_identically() {
    let p = every_op();
    let bytes = p.write().unwrap();
    let dis = disassemble(&p, None);
    let mut no_files = |_: &str| Err(std::io::Error::other("no files"));
    let q = assemble(&dis.text, &mut no_files).unwrap();
    assert_eq!(q.write().unwrap(), bytes);
}

#[test]
fn large_dram_goes_to_a_side_file() {
    let mut p = every_op();
    p.dram.bytes = (0..10_000u32).map(|i| i as u8).collect::<Vec<u8>>().into();
    let dis = disassemble(&p, Some("L.s.dram.bin"));
    assert_eq!(dis.side_files.len(), 1);
    assert!(dis.text.contains("file=\"L.s.dram.bin\""));
    let data = dis.side_files[0].1.clone();
    let mut load = |n: &str| {
        assert_eq!(n, "L.s.dram.bin");
        Ok(data.clone())
    };
    let q = assemble(&dis.text, &mut load).unwrap();
    assert_eq!(q.write().unwrap(), p.write().unwrap());
    // A damaged side file is detected.
    let mut bad = |_: &str| Ok(vec![0u8; 10_000]);
    let e = assemble(&dis.text, &mut bad).unwrap_err();
    assert!(e.message.contains("CRC"), "{e}");
}

#[test]
fn errors_name_line_and_column() {
    let e = asm_err("STOP\nFROB x=1\n");
    assert_eq!((e.line, e.col), (2, 1));
    assert!(e.message.contains("unknown instruction 'FROB'"));

    let e = asm_err("  DMA_READ rows=1 row_len=0 \nSTOP\n");
    assert_eq!((e.line, e.col), (1, 27));
    assert!(e.message.contains("row_len"), "{e}");

    let e = asm_err("DMA_READ rows=1 row_len=4 bogus=3\nSTOP\n");
    assert_eq!((e.line, e.col), (1, 27));
    assert!(e.message.contains("unknown field 'bogus'"), "{e}");

    let e = asm_err("DMA_READ rows=1 row_len=4 set=F1,F2,F3\nSTOP\n");
    assert_eq!(e.line, 1);
    assert!(e.message.contains("slots"), "{e}");

    let e = asm_err("DMA_READ rows=1 row_len=4 wait_set=X1\nSTOP\n");
    assert_eq!((e.line, e.col), (1, 36));

    let e = asm_err("STOP\n+ MOV dst=r1\n");
    assert_eq!((e.line, e.col), (2, 1));
    assert!(e.message.contains("compute"), "{e}");

    let e = asm_err("DMA_READ rows=1 row_len=4\n");
    assert!(e.message.contains("STOP"), "{e}");

    let e = asm_err(".hw flags = 1000\nSTOP\n");
    assert_eq!(e.line, 1);
    assert!(e.message.contains("flags"), "{e}");

    let e = asm_err(
        ".input name=\"x\" dtype=int9 shape=[1] dram=0 layout=dense scale=1 zero_point=0\nSTOP\n",
    );
    assert_eq!((e.line, e.col), (1, 23));

    let e = asm_err(".model \"unterminated\nSTOP\n");
    assert_eq!((e.line, e.col), (1, 8));

    let e = asm_err("SCALE h=1 w=1 c=1 pix_count=1 c_count=1\n + FUSED_RELU dst=r16\nSTOP\n");
    assert_eq!((e.line, e.col), (2, 19));
}

#[test]
fn hand_written_program_passes_the_semantic_checks() {
    let p = every_op();
    for (i, ins) in p.instrs.iter().enumerate() {
        checks::check_instr(ins, &p.meta.hw).unwrap_or_else(|e| panic!("instruction {i}: {e}"));
    }
}

#[test]
fn hand_written_defaults_are_the_fsd() {
    let p = every_op();
    assert_eq!(p.meta.hw, HwConfig::fsd());
    assert_eq!(p.meta.source_model, "hand/every_op");
    assert!(p.check_hw().is_ok());
}

#[test]
fn layer_table_shows_in_every_listing_and_round_trips() {
    let mut p = every_op();
    let n = p.instrs.len();
    let names: Vec<Option<&str>> = (0..n)
        .map(|i| match i {
            _ if i + 1 == n => None,
            _ if i < n / 2 => Some("conv1"),
            _ => Some("fc \"2\""),
        })
        .collect();
    p.layers = Some(nnac_isa::LayerTable::from_names(names));
    let t = table::listing(&p);
    assert!(t.contains("; layer conv1\n"), "{t}");
    assert!(t.contains("  layers        2 layer names\n"), "{t}");
    let lines = json::json_lines(&p);
    let first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(first["layer"], "conv1");
    let last: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert!(last["layer"].is_null());
    let text = nnac_isa::listing::disassemble(&p, None).text;
    assert!(text.contains(".layers\n.layer \"conv1\"\n"), "{text}");
    let mut load =
        |_: &str| -> std::io::Result<Vec<u8>> { Err(std::io::Error::other("no side files")) };
    let back = nnac_isa::listing::assemble(&text, &mut load).unwrap();
    assert_eq!(back.write().unwrap(), p.write().unwrap());
    let bytes = p.write().unwrap();
    assert_eq!(nnac_isa::Program::read(&bytes).unwrap().layers, p.layers);
}
