//! End-to-end: `nnac verify` on programs assembled with the isa listing API.

mod common;

use common::tempdir;
use nnac_isa::listing::assemble;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NNAC: &str = env!("CARGO_BIN_EXE_nnac");

const CONV: &str = "in_addr=0x1000 w_addr=0x0 out_addr=0x3000 in_h=4 in_w=4 in_c=8 \
    out_h=4 out_w=4 out_c=8 in_row_pitch=4 in_pix_pitch=1 in_chan_pitch=16 out_row_pitch=4 out_pix_pitch=1 \
    out_chan_pitch=16 \
    pix_count=16 oc_count=8 kernel_h=1 kernel_w=1 stride_h=1 stride_w=1 dil_h=1 dil_w=1 groups=1";

/// Weights (F1), input (F0), a 1x1 conv waiting for both (sets F2), output DMA.
fn listing(conv_waits: &str) -> String {
    format!(
        "DMA_READ set=F1 dram_addr=0x20000 sram_addr=0x0 rows=1 row_len=768\n\
         DMA_READ set=F0 dram_addr=0x10000 sram_addr=0x1000 rows=1 row_len=128\n\
         CONV {conv_waits} clear=F0,F1 set=F2 {CONV}\n\
         DMA_WRITE wait_set=F2 clear=F2 dram_addr=0x30000 sram_addr=0x3000 rows=1 row_len=128\n\
         STOP\n"
    )
}

/// Assembles `text` into `dir/NAME.nnab`.
fn write_program(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = assemble(text, &mut |f: &str| {
        Err(std::io::Error::other(format!("no side file {f}")))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let path = dir.join(format!("{name}.nnab"));
    std::fs::write(&path, p.write().unwrap()).unwrap();
    path
}

fn verify(args: &[&str]) -> Output {
    Command::new(NNAC)
        .arg("verify")
        .args(args)
        .output()
        .expect("run nnac")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn clean_program_verifies() {
    let tmp = tempdir("verify");
    let p = write_program(tmp.path(), "clean", &listing("wait_set=F0,F1"));
    let out = verify(&[p.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "OK: 5 instructions (3 DMA, 1 compute), no race, no deadlock, no flag error\n"
    );
}

#[test]
fn missing_wait_is_reported_as_a_race() {
    let tmp = tempdir("verify");
    let p = write_program(tmp.path(), "race", &listing("wait_set=F1"));
    let out = verify(&[p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("race (RAW)"), "{stdout}");
    assert!(stdout.contains("#1 DMA_READ (offset 0x20)"), "{stdout}");
    assert!(stdout.contains("#2 CONV (offset 0x40)"), "{stdout}");
    assert!(stdout.contains("#2 should wait_set F0"), "{stdout}");
    assert!(text(&out.stderr).contains("verification failed"));
}

/// The weights loaded once by a prologue; the body loads its input to `in_addr`.
fn resident_listing(in_addr: &str) -> String {
    format!(
        "DMA_READ dram_addr=0x20000 sram_addr=0x0 rows=1 row_len=768\n\
         STOP\n\
         .body\n\
         DMA_READ set=F0 dram_addr=0x10000 sram_addr={in_addr} rows=1 row_len=128\n\
         CONV wait_set=F0 clear=F0 set=F2 {CONV}\n\
         DMA_WRITE wait_set=F2 clear=F2 dram_addr=0x30000 sram_addr=0x3000 rows=1 row_len=128\n\
         STOP\n"
    )
}

#[test]
fn a_body_overwriting_resident_weights_is_rejected() {
    let tmp = tempdir("verify");
    let p = write_program(tmp.path(), "resident", &resident_listing("0x1000"));
    let out = verify(&[p.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("no resident overwrite"),
        "{}",
        text(&out.stdout)
    );
    // The body's input DMA lands on weight bytes 0x100..0x180 the conv reads.
    let p = write_program(tmp.path(), "overwrite", &resident_listing("0x100"));
    let out = verify(&[p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "resident overwrite: #2 DMA_READ (offset 0x40) (body) writes SRAM [0x100, 0x180)"
        ),
        "{stdout}"
    );
}

#[test]
fn unsatisfiable_wait_is_reported_as_a_deadlock() {
    let tmp = tempdir("verify");
    let p = write_program(tmp.path(), "deadlock", &listing("wait_set=F0,F1,F7"));
    let out = verify(&[p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("deadlock"), "{stdout}");
    assert!(
        stdout.contains("#2 CONV (offset 0x40) waits for F7 set"),
        "{stdout}"
    );
}

#[test]
fn bad_instruction_geometry_is_named() {
    let bad = listing("wait_set=F0,F1").replace("out_h=4", "out_h=3");
    let tmp = tempdir("verify");
    let p = write_program(tmp.path(), "geometry", &bad);
    let out = verify(&[p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("instruction #2 CONV (offset 0x40)"),
        "{stdout}"
    );
    assert!(stdout.contains("geometry"), "{stdout}");
}

#[test]
fn corrupt_file_and_other_hardware_are_user_errors() {
    let tmp = tempdir("verify");
    let p = write_program(tmp.path(), "corrupt", &listing("wait_set=F0,F1"));
    let mut bytes = std::fs::read(&p).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    std::fs::write(&p, bytes).unwrap();
    let out = verify(&[p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("checksum"),
        "{}",
        text(&out.stderr)
    );

    let p = write_program(tmp.path(), "hw", &listing("wait_set=F0,F1"));
    let hw = tmp.path().join("hw.toml");
    std::fs::write(&hw, "flags = 8\n").unwrap();
    let out = verify(&[p.to_str().unwrap(), "--hw", hw.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("different hardware configuration"),
        "{}",
        text(&out.stderr)
    );
}
