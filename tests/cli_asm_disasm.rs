//! End-to-end: `nnac asm` and `nnac disasm` (listing, -o text with side file, --json).

mod common;

use common::tempdir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NNAC: &str = env!("CARGO_BIN_EXE_nnac");

fn nnac(args: &[&str]) -> Output {
    Command::new(NNAC).args(args).output().expect("run nnac")
}

fn sample_listing() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/isa/tests/data/every_op.s")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn asm_disasm_round_trip_is_byte_identical() {
    let tmp = tempdir("cli-asm-rt");
    let d = tmp.path();
    let p1 = d.join("p1.nnab");
    let out = nnac(&["asm", s(&sample_listing()), "-o", s(&p1)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let l = d.join("L.s");
    let out = nnac(&["disasm", s(&p1), "-o", s(&l)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p2 = d.join("p2.nnab");
    let out = nnac(&["asm", s(&l), "-o", s(&p2)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
}

#[test]
fn large_dram_image_uses_a_side_file() {
    let tmp = tempdir("cli-asm-side");
    let d = tmp.path();
    let mut text = std::fs::read_to_string(sample_listing()).unwrap();
    let hex: String = (0..6000u32).map(|i| format!("{:02x}", i % 251)).collect();
    text = text.replace(
        ".dram base=0x10000 hex=\"000102030405060708090a0b0c0d0e0f\"",
        &format!(".dram base=0x10000 hex=\"{hex}\""),
    );
    let src = d.join("big.s");
    std::fs::write(&src, text).unwrap();
    let p1 = d.join("p1.nnab");
    assert!(nnac(&["asm", s(&src), "-o", s(&p1)]).status.success());
    let l = d.join("L.s");
    assert!(nnac(&["disasm", s(&p1), "-o", s(&l)]).status.success());
    assert!(d.join("L.s.dram.bin").exists());
    assert!(std::fs::read_to_string(&l)
        .unwrap()
        .contains("file=\"L.s.dram.bin\""));
    let p2 = d.join("p2.nnab");
    assert!(nnac(&["asm", s(&l), "-o", s(&p2)]).status.success());
    assert_eq!(std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
}

#[test]
fn listing_and_json() {
    let tmp = tempdir("cli-asm-show");
    let d = tmp.path();
    let p = d.join("p.nnab");
    assert!(nnac(&["asm", s(&sample_listing()), "-o", s(&p)])
        .status
        .success());
    let out = nnac(&["disasm", s(&p)]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("DMA_READ") && text.contains("sections:"),
        "{text}"
    );

    let out = nnac(&["disasm", "--json", s(&p)]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 10);
    let last: serde_json::Value = serde_json::from_str(lines[9]).unwrap();
    assert_eq!(last["op"], "STOP");
    assert_eq!(last["index"], 9);
}

#[test]
fn errors_are_user_errors_and_leave_no_output() {
    let tmp = tempdir("cli-asm-err");
    let d = tmp.path();
    let bad = d.join("bad.s");
    std::fs::write(&bad, "DMA_READ rows=1 row_len=4\nFROB\n").unwrap();
    let p = d.join("p.nnab");
    let out = nnac(&["asm", s(&bad), "-o", s(&p)]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2, column 1"), "{err}");
    assert!(!p.exists());

    let junk = d.join("junk.nnab");
    std::fs::write(&junk, b"not a program at all").unwrap();
    let out = nnac(&["disasm", s(&junk)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("magic"));
}

/// A reader that stops early (`nnac disasm P.nnab | head`) ends nnac quietly, as any
/// Unix tool (SIGPIPE), never with a panic on the closed stdout.
#[test]
fn closed_stdout_ends_quietly() {
    let tmp = tempdir("cli-asm-pipe");
    let d = tmp.path();
    // A listing longer than any pipe buffer (64 KiB by default), so nnac still has
    // output to write when it finds the reader gone, however the two are scheduled.
    let mut listing = String::from(".model \"pipe\"\n");
    for k in 0..4000 {
        listing += &format!(
            "    DMA_READ dram_addr={:#x} sram_addr=0x0 rows=1 row_len=64\n",
            k * 64
        );
    }
    listing += "    STOP\n";
    let l = d.join("long.s");
    std::fs::write(&l, listing).unwrap();
    let p = d.join("p.nnab");
    let out = nnac(&["asm", s(&l), "-o", s(&p)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let full = nnac(&["disasm", s(&p)]);
    assert!(full.status.success() && full.stdout.len() > 256 * 1024);
    let mut child = Command::new(NNAC)
        .args(["disasm", s(&p)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn nnac");
    drop(child.stdout.take()); // the reader is gone before nnac writes
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(101), "{err}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc_sigpipe()), "{err}");
    }
}

#[cfg(unix)]
fn libc_sigpipe() -> i32 {
    13 // SIGPIPE on every Unix nnac builds for (Linux, macOS, the BSDs)
}
