//! Programs of several segments (docs/ISA.md 2.1): a STOP is a full barrier that
//! clears every flag, the hazard checker checks each segment on its own, and the
//! container keeps the host ops that run between segments. Programs split into a
//! prologue (run once per load) and a body (run per frame), docs/ISA.md 2.2.

use nnac_isa::hazard;
use nnac_isa::{
    Dma, DotProduct, FlagOps, HostOp, HostOps, HwConfig, Instr, IoDesc, IoDir, IoDtype, IoLayout,
    Program, Stop,
};

fn dma(read: bool, sram: u32, len: u32, dram: u64, flags: FlagOps) -> Instr {
    let d = Dma {
        flags,
        dram_addr: dram,
        sram_addr: sram,
        rows: 1,
        row_len: len,
        ..Dma::default()
    };
    if read {
        Instr::DmaRead(d)
    } else {
        Instr::DmaWrite(d)
    }
}

/// 1x1 conv, 4x4x8 -> 4x4x8 (128 bytes in and out), weights at 0.
fn conv(input: u32, output: u32, flags: FlagOps) -> Instr {
    Instr::Conv(DotProduct {
        flags,
        in_addr: input,
        out_addr: output,
        in_h: 4,
        in_w: 4,
        in_c: 8,
        out_h: 4,
        out_w: 4,
        out_c: 8,
        in_row_pitch: 32,
        in_pix_pitch: 8,
        out_row_pitch: 32,
        out_pix_pitch: 8,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        pix_count: 16,
        oc_count: 8,
        kernel_h: 1,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        ..DotProduct::default()
    })
}

fn stop() -> Instr {
    Instr::Stop(Stop::default())
}

fn f() -> FlagOps {
    FlagOps::new()
}

fn program(instrs: Vec<Instr>) -> Program {
    let mut p = Program::new(HwConfig::fsd());
    p.instrs = instrs;
    p
}

const IN: u32 = 0x1000;
const OUT: u32 = 0x2000;

/// Segment 0: load weights and input, conv, write out. Segment 1: load the host's
/// result into the same input buffer, conv again into the same output, write out.
/// Segment 1 has no flag ordering it after segment 0: only the STOP does that.
fn two_segments(flags_in_second: bool) -> Program {
    let w = |fl: FlagOps| if flags_in_second { fl } else { f() };
    program(vec![
        dma(true, 0, 768, 0x20000, f().set(1)),
        dma(true, IN, 128, 0x10000, f().set(0)),
        conv(IN, OUT, f().wait(0).wait(1).clear(0).clear(1).set(2)),
        dma(false, OUT, 128, 0x30000, f().wait(2).clear(2)),
        stop(),
        dma(true, 0, 768, 0x20000, w(f().set(1))),
        dma(true, IN, 128, 0x30000, w(f().set(0))),
        conv(IN, OUT, w(f().wait(0).wait(1).clear(0).clear(1).set(2))),
        dma(false, OUT, 128, 0x40000, w(f().wait(2).clear(2))),
        stop(),
    ])
}

#[test]
fn segments_reuse_flags_and_buffers_without_races() {
    let r = hazard::check_program(&two_segments(true)).unwrap();
    assert!(r.is_clean(), "{}", r.lines().join("\n"));
    assert_eq!((r.dma_instrs, r.compute_instrs), (6, 2));
}

#[test]
fn a_race_within_a_segment_is_still_found() {
    let r = hazard::check_program(&two_segments(false)).unwrap();
    assert!(!r.races.is_empty(), "{}", r.lines().join("\n"));
    // Every race lies in segment 1 (instructions 5..9), never across the STOP.
    for race in &r.races {
        assert!(race.dma.index > 4 && race.compute.index > 4, "{race}");
        // Progress counts the 4 DMA / 1 compute instructions of segment 0.
        assert!(race.at.dma_done >= 3 && race.at.compute_done >= 1, "{race}");
    }
}

#[test]
fn flags_are_clear_at_the_start_of_a_segment() {
    // Segment 0 leaves F5 set; segment 1 waits for it: a deadlock (the STOP cleared
    // it), and a clear of F5 in segment 1 would be a flag error.
    let p = program(vec![
        dma(true, IN, 128, 0x10000, f().set(5)),
        stop(),
        dma(true, OUT, 128, 0x10000, f().wait(5).clear(5)),
        stop(),
    ]);
    let r = hazard::check_program(&p).unwrap();
    assert_eq!(r.deadlocks.len(), 1, "{}", r.lines().join("\n"));
    assert_eq!(r.deadlocks[0].at.dma_done, 1);
    assert_eq!(r.deadlocks[0].blocked[0].instr.index, 2);
}

#[test]
fn a_segment_that_cannot_reach_its_stop_deadlocks() {
    let p = program(vec![stop(), Instr::Stop(Stop { flags: f().wait(3) })]);
    let r = hazard::check_program(&p).unwrap();
    assert_eq!(r.deadlocks.len(), 1);
    assert_eq!(r.deadlocks[0].blocked[0].instr.index, 1);
}

fn desc(name: &str, dir: IoDir, dtype: IoDtype, shape: &[u32], addr: u64) -> IoDesc {
    IoDesc {
        name: name.into(),
        dir,
        dtype,
        shape: shape.to_vec(),
        dram_addr: addr,
        layout: IoLayout::Dense,
        scale: if dtype.is_code() { 0.05 } else { 1.0 },
        zero_point: if dtype == IoDtype::Int8 { -3 } else { 0 },
    }
}

fn with_host_ops() -> Program {
    let mut p = two_segments(true);
    let mut x = desc("conv", IoDir::Input, IoDtype::Uint8, &[1, 8, 4, 4], 0x30000);
    x.layout = IoLayout::Hwc {
        row_pitch: 32,
        pix_pitch: 8,
    };
    p.host_ops = Some(HostOps {
        ops: vec![
            HostOp {
                segment: 0,
                name: "softmax".into(),
                op: "softmax{axis=1}".into(),
                inputs: vec![x],
                output: desc(
                    "softmax",
                    IoDir::Output,
                    IoDtype::Int8,
                    &[1, 8, 4, 4],
                    0x50000,
                ),
            },
            HostOp {
                segment: 1,
                name: "scaled".into(),
                op: "mul".into(),
                inputs: vec![
                    desc(
                        "softmax",
                        IoDir::Input,
                        IoDtype::Int8,
                        &[1, 8, 4, 4],
                        0x50000,
                    ),
                    desc("k", IoDir::Input, IoDtype::Float32, &[1], 0x100),
                    desc("n", IoDir::Input, IoDtype::Int64, &[2], 0x140),
                ],
                output: desc(
                    "scaled",
                    IoDir::Output,
                    IoDtype::Uint8,
                    &[1, 8, 4, 4],
                    0x60000,
                ),
            },
        ],
    });
    p
}

#[test]
fn host_ops_round_trip_through_the_container_and_the_listing() {
    let p = with_host_ops();
    let bytes = p.write().unwrap();
    let q = Program::read(&bytes).unwrap();
    assert_eq!(q, p);
    let d = nnac_isa::listing::disassemble(&p, None);
    assert!(
        d.text
            .contains(".hostop segment=1 name=\"scaled\" op=\"mul\""),
        "{}",
        d.text
    );
    let mut load =
        |_: &str| -> std::io::Result<Vec<u8>> { Err(std::io::Error::other("no side files")) };
    let back = nnac_isa::listing::assemble(&d.text, &mut load).unwrap();
    assert_eq!(back.write().unwrap(), bytes);
    let table = nnac_isa::listing::table::listing(&p);
    assert!(
        table.contains("; host op after segment 0: softmax = softmax{axis=1}"),
        "{table}"
    );
    let json = nnac_isa::listing::json::json_lines(&p);
    assert!(json[4].contains("\"host_ops\":[{"), "{}", json[4]);
}

/// Offset of the first byte of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle present")
}

fn fix_crc(b: &mut [u8]) {
    let n = b.len() - 4;
    let c = nnac_isa::crc32::crc32(&b[..n]);
    b[n..].copy_from_slice(&c.to_le_bytes());
}

#[test]
fn malformed_host_op_records_are_errors_with_offsets() {
    let p = with_host_ops();
    let bytes = p.write().unwrap();
    let hops = find(&bytes, b"HOPS");
    // Record 0's segment word follows magic, version and count.
    let seg0 = hops + 12;
    let mut b = bytes.clone();
    b[seg0] = 7;
    fix_crc(&mut b);
    let e = Program::read(&b).unwrap_err();
    assert_eq!(e.section, Some("hostops"));
    assert_eq!(e.offset, Some(seg0), "{e}");
    assert!(e.message.contains("2 segments"), "{e}");

    // Segments out of order: record 0 after segment 1.
    let mut b = bytes.clone();
    b[seg0] = 1;
    let mut q = p.clone();
    q.host_ops.as_mut().unwrap().ops[0].segment = 1;
    q.host_ops.as_mut().unwrap().ops[1].segment = 0;
    assert!(q.write().unwrap_err().message.contains("execution order"));
    fix_crc(&mut b);
    assert!(Program::read(&b).is_ok(), "1 then 1 is in order");

    // A float32 output, an unknown dtype, a wrong version.
    let mut b = bytes.clone();
    // Output descriptor of record 0: dir 1, dtype int8, layout dense, rank 4, name.
    let out_dtype = find(&bytes, b"\x01\x00\x00\x04\x07\x00\x00\x00softmax") + 1;
    assert_eq!(b[out_dtype - 1], 1, "dir byte of the output descriptor");
    b[out_dtype] = 2;
    fix_crc(&mut b);
    let e = Program::read(&b).unwrap_err();
    assert!(e.message.contains("float32"), "{e}");
    b[out_dtype] = 9;
    fix_crc(&mut b);
    let e = Program::read(&b).unwrap_err();
    assert!(e.message.contains("bad dtype 9"), "{e}");
    assert_eq!(e.offset, Some(out_dtype + 1));
    let mut b = bytes.clone();
    b[hops + 4] = 1;
    fix_crc(&mut b);
    let e = Program::read(&b).unwrap_err();
    assert!(e.message.contains("version 1"), "{e}");

    // Every byte of the section, flipped: an error or a valid program, never a panic.
    let end = bytes.len() - 4;
    for i in hops..end {
        for bit in [1u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            fix_crc(&mut b);
            if let Ok(q) = Program::read(&b) {
                q.write().expect("what is read can be written");
            }
        }
    }
}

#[test]
fn program_io_must_be_8_bit() {
    let mut p = two_segments(true);
    p.io.push(desc("x", IoDir::Input, IoDtype::Float32, &[4], 0x100));
    let e = p.write().unwrap_err();
    assert!(e.message.contains("int8 or uint8"), "{e}");
}

// Prologue and body (docs/ISA.md 2.2): the container section, the listing
// directive, the JSON lines, and the proof that the body never overwrites resident
// data.

/// Prologue: the weights to SRAM 0..768. Body: input, conv, output; `body_dma`
/// replaces the input load's SRAM address (an overwrite of the weights when < 768).
fn resident(body_in: u32) -> Program {
    let mut p = program(vec![
        dma(true, 0, 768, 0x20000, f()),
        stop(),
        dma(true, body_in, 128, 0x10000, f().set(0)),
        conv(IN, OUT, f().wait(0).clear(0).set(2)),
        dma(false, OUT, 128, 0x30000, f().wait(2).clear(2)),
        stop(),
    ]);
    p.body_start = Some(2);
    p
}

#[test]
fn a_resident_program_is_clean_and_round_trips() {
    let p = resident(IN);
    let r = hazard::check_program(&p).unwrap();
    assert!(r.is_clean(), "{}", r.lines().join("\n"));
    assert_eq!(p.prologue_segments(), 1);
    let bytes = p.write().unwrap();
    let q = Program::read(&bytes).unwrap();
    assert_eq!(q, p);
    assert_eq!(q.write().unwrap(), bytes);

    let d = nnac_isa::listing::disassemble(&p, None);
    assert!(d.text.contains("STOP  ; #1 @32\n.body"), "{}", d.text);
    let mut load =
        |_: &str| -> std::io::Result<Vec<u8>> { Err(std::io::Error::other("no side files")) };
    let back = nnac_isa::listing::assemble(&d.text, &mut load).unwrap();
    assert_eq!(back.write().unwrap(), bytes);

    let table = nnac_isa::listing::table::listing(&p);
    assert!(table.contains("; body: runs once per frame"), "{table}");
    assert!(table.contains("prologue      instructions 0..2"), "{table}");
    let json = nnac_isa::listing::json::json_lines(&p);
    assert!(json[1].contains("\"part\":\"prologue\""), "{}", json[1]);
    assert!(json[2].contains("\"part\":\"body\""), "{}", json[2]);
    // Without a prologue there is no `part` key and no `.body` line.
    let mut whole = p.clone();
    whole.body_start = None;
    assert!(!nnac_isa::listing::json::json_lines(&whole)[0].contains("part"));
    assert!(!nnac_isa::listing::disassemble(&whole, None)
        .text
        .contains(".body"));
}

#[test]
fn a_body_overwriting_a_resident_byte_is_rejected() {
    // The body's input DMA lands on weight bytes 0x100..0x180, which the conv reads.
    let p = resident(0x100);
    let r = hazard::check_program(&p).unwrap();
    assert!(!r.is_clean());
    assert_eq!(r.resident_writes.len(), 1, "{}", r.lines().join("\n"));
    let w = &r.resident_writes[0];
    assert_eq!(w.instr.index, 2);
    assert_eq!(w.bytes, (0x100, 0x180));
    let line = w.to_string();
    assert!(
        line.contains("#2 DMA_READ") && line.contains("resident"),
        "{line}"
    );
    // The same program without the split only races within a frame: no resident
    // finding (the conv's weights are loaded in the same segment).
    let mut whole = p.clone();
    whole.body_start = None;
    assert!(hazard::check_program(&whole)
        .unwrap()
        .resident_writes
        .is_empty());
}

#[test]
fn a_compute_write_over_resident_data_is_rejected_too() {
    let mut p = resident(IN);
    // The conv's output overwrites weight bytes (0x200.. lies inside 0..768).
    p.instrs[3] = conv(IN, 0x200, f().wait(0).clear(0).set(2));
    p.instrs[4] = dma(false, 0x200, 128, 0x30000, f().wait(2).clear(2));
    let r = hazard::check_program(&p).unwrap();
    assert_eq!(r.resident_writes.len(), 1, "{}", r.lines().join("\n"));
    assert_eq!(r.resident_writes[0].instr.index, 3);
}

#[test]
fn bad_splits_are_errors_never_panics() {
    let bad = |b: usize| {
        let mut p = resident(IN);
        p.body_start = Some(b);
        p
    };
    for b in [0, 1, 3, 6, 99] {
        let e = bad(b).write().unwrap_err();
        assert!(e.message.contains("body_start"), "{b}: {e}");
        assert!(hazard::check_program(&bad(b)).is_err(), "{b}");
    }
    // A host op after the prologue's STOP is refused.
    let mut p = resident(IN);
    p.host_ops = Some(nnac_isa::HostOps {
        ops: vec![nnac_isa::HostOp {
            segment: 0,
            name: "h".into(),
            op: "relu".into(),
            inputs: vec![],
            output: nnac_isa::IoDesc {
                name: "o".into(),
                dir: nnac_isa::IoDir::Output,
                dtype: nnac_isa::IoDtype::Int8,
                shape: vec![1],
                dram_addr: 0x40000,
                layout: nnac_isa::IoLayout::Dense,
                scale: 1.0,
                zero_point: 0,
            },
        }],
    });
    let e = p.write().unwrap_err();
    assert!(e.message.contains("prologue"), "{e}");
}

#[test]
fn malformed_prologue_sections_name_the_offset() {
    let bytes = resident(IN).write().unwrap();
    let at = bytes
        .windows(4)
        .position(|w| w == b"PROL")
        .expect("prologue section");
    let field = at + 8;
    for (v, what) in [(3u8, "not the STOP"), (0, "body_start 0"), (9, "1..6")] {
        let mut b = bytes.clone();
        b[field] = v;
        fix_crc(&mut b);
        let e = Program::read(&b).unwrap_err();
        assert_eq!(e.section, Some("prologue"), "{e}");
        assert_eq!(e.offset, Some(field), "{e}");
        assert!(e.message.contains(what), "{v}: {e}");
    }
    let mut b = bytes.clone();
    b[at] = b'X';
    fix_crc(&mut b);
    let e = Program::read(&b).unwrap_err();
    assert_eq!((e.section, e.offset), (Some("prologue"), Some(at)), "{e}");
    let mut b = bytes.clone();
    b[at + 4] = 2;
    fix_crc(&mut b);
    assert!(Program::read(&b).unwrap_err().message.contains("version 2"));
}

#[test]
fn listing_errors_name_the_body_line() {
    let d = nnac_isa::listing::disassemble(&resident(IN), None).text;
    let mut load =
        |_: &str| -> std::io::Result<Vec<u8>> { Err(std::io::Error::other("no side files")) };
    // `.body` twice.
    let twice = d.replace(".body", ".body\n.body");
    let e = nnac_isa::listing::assemble(&twice, &mut load).unwrap_err();
    assert!(e.message.contains("given twice"), "{e}");
    // `.body` not after a STOP: moved one instruction down.
    let lines: Vec<&str> = d.lines().collect();
    let k = lines.iter().position(|l| l.starts_with(".body")).unwrap();
    let mut moved: Vec<&str> = lines.clone();
    moved.swap(k, k + 1);
    let mut load =
        |_: &str| -> std::io::Result<Vec<u8>> { Err(std::io::Error::other("no side files")) };
    let e = nnac_isa::listing::assemble(&moved.join("\n"), &mut load).unwrap_err();
    assert_eq!(e.line, k + 2, "{e}");
    assert!(e.message.contains(".body"), "{e}");
}
