//! Decode errors name the byte offset; the instruction tables are well formed.

use nnac_isa::encoding::reserved_ranges;
use nnac_isa::error::ProgramError;
use nnac_isa::instr::Class;
use nnac_isa::*;

fn dma() -> Instr {
    Instr::DmaRead(Dma {
        flags: FlagOps::new().wait_clear(0).set(0),
        dram_addr: 0x1000,
        sram_addr: 0x40,
        rows: 2,
        row_len: 64,
        dram_stride: 128,
        sram_stride: 64,
    })
}

fn stream() -> Vec<u8> {
    encode_program(&[dma(), Instr::Stop(Stop::default())]).unwrap()
}

/// The smallest valid CONV: one pixel, one channel, a 1x1 kernel.
fn one_pixel_conv() -> DotProduct {
    DotProduct {
        in_h: 1,
        in_w: 1,
        in_c: 1,
        out_h: 1,
        out_w: 1,
        out_c: 1,
        pix_count: 1,
        oc_count: 1,
        kernel_h: 1,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        ..Default::default()
    }
}

#[test]
fn sizes_are_fixed() {
    assert_eq!(dma().encode().unwrap().len(), 32);
    assert_eq!(Instr::Stop(Stop::default()).encode().unwrap().len(), 32);
    let mut c = one_pixel_conv();
    assert_eq!(Instr::Conv(c.clone()).encode().unwrap().len(), 256);
    c.simd.push(SimdInstr::FusedRelu(Requant::default()));
    c.simd.push(SimdInstr::Mov(Alu::default()));
    assert_eq!(Instr::Conv(c).encode().unwrap().len(), 256 + 2 * 16);
}

#[test]
fn decodes_with_offsets() {
    let prog = decode_program(&stream()).unwrap();
    assert_eq!(prog.len(), 2);
    assert_eq!(prog[1].offset, 32);
    assert_eq!(prog[0].instr, dma());
}

#[test]
fn unknown_opcode_names_offset() {
    let mut s = stream();
    s[32] = 0x55;
    let e = decode_program(&s).unwrap_err();
    assert_eq!(e.offset, 32);
    assert!(e.message.contains("unknown opcode 0x55"), "{e}");
}

#[test]
fn reserved_bits_must_be_zero() {
    let mut s = stream();
    s[31] = 0x80; // bit 255 of the DMA instruction is reserved
    let e = decode_program(&s).unwrap_err();
    assert_eq!(e.offset, 31);
    assert!(e.message.contains("reserved bit 255"), "{e}");
}

/// A set bit deep in a long reserved range (a CONV's bits 896..2048, checked a zero
/// byte at a time) is named exactly, as is the first of two.
#[test]
fn reserved_bits_of_long_ranges_are_named_exactly() {
    let conv = Instr::Conv(one_pixel_conv());
    let mut s = conv.encode().unwrap();
    s[1003 / 8] |= 1 << (1003 % 8);
    s[2047 / 8] |= 0x80;
    let e = decode_program(&s).unwrap_err();
    assert_eq!(e.offset, 1003 / 8);
    assert!(
        e.message.contains("reserved bit 1003 (in bits 896..2048)"),
        "{e}"
    );
}

#[test]
fn out_of_range_field_is_an_error() {
    let mut s = stream();
    // rows is bits 132..148: bytes 16.5 .. 18.5; zero it (rows must be >= 1).
    nnac_isa::bits::put(&mut s, 132, 16, 0);
    let e = decode_program(&s).unwrap_err();
    assert_eq!(e.offset, 16);
    assert!(e.message.contains("rows = 0"), "{e}");
}

#[test]
fn bad_enum_value_is_an_error() {
    let spec = Eltwise::FIELDS.iter().find(|s| s.name == "op").unwrap();
    // Build a minimal legal ELTWISE by hand (every field at its minimum).
    let mut b = vec![0u8; 256];
    b[0] = 0x85;
    for s in Eltwise::FIELDS {
        if s.min > 0 {
            nnac_isa::bits::put(&mut b, s.offset, s.width, s.min as u64);
        }
    }
    assert!(Instr::decode(&b, 0).is_ok());
    nnac_isa::bits::put(&mut b, spec.offset, spec.width, 3);
    let e = Instr::decode(&b, 0).unwrap_err();
    assert!(e.message.contains("op"), "{e}");
}

#[test]
fn truncation_is_an_error() {
    let s = stream();
    for n in 1..s.len() {
        assert!(decode_program(&s[..n]).is_err(), "{n}");
    }
    let e = decode_program(&s[..40]).unwrap_err();
    assert_eq!(e.offset, 32);
    assert!(e.message.contains("truncated STOP"), "{e}");
}

#[test]
fn stop_must_end_the_stream() {
    let no_stop = encode_program(&[dma()]).unwrap();
    assert!(decode_program(&no_stop)
        .unwrap_err()
        .message
        .contains("STOP"));
    // A segment after the last STOP must end with its own STOP.
    let mut two = stream();
    two.extend(dma().encode().unwrap());
    let e = decode_program(&two).unwrap_err();
    assert_eq!(e.offset, 96);
    assert!(e.message.contains("does not end with STOP"), "{e}");
    two.extend(Instr::Stop(Stop::default()).encode().unwrap());
    let segs = decode_program(&two).unwrap();
    assert_eq!(segs.len(), 4);
    let instrs: Vec<Instr> = segs.into_iter().map(|l| l.instr).collect();
    assert_eq!(nnac_isa::instr::segments(&instrs), vec![0..2, 2..4]);
}

#[test]
fn encode_rejects_out_of_range_and_too_many_flags() {
    let mut d = dma();
    if let Instr::DmaRead(x) = &mut d {
        x.sram_addr = 1 << 28;
    }
    assert!(d.encode().unwrap_err().message.contains("sram_addr"));
    let mut d = dma();
    *d.flags_mut() = FlagOps::new().set(1).set(2).set(3);
    assert!(d.encode().unwrap_err().message.contains("slots"));
    let e = encode_program(&[dma(), d]).unwrap_err();
    assert_eq!(e.index, Some(1));
}

#[test]
fn tables_are_well_formed() {
    for k in Instr::KINDS {
        let mut specs = k.class.header_specs();
        specs.extend_from_slice(k.fields);
        check_layout(k.mnemonic, k.size, &specs);
        let expect = match k.class {
            Class::Compute => 256,
            Class::Dma | Class::Control => 32,
        };
        assert_eq!(k.size, expect, "{}", k.mnemonic);
    }
    for k in SimdInstr::KINDS {
        let mut specs = vec![nnac_isa::encoding::OPCODE];
        specs.extend_from_slice(k.fields);
        check_layout(k.mnemonic, nnac_isa::simd::SIMD_SIZE, &specs);
    }
    let mut ops: Vec<u8> = Instr::KINDS.iter().map(|k| k.opcode).collect();
    ops.sort();
    ops.dedup();
    assert_eq!(ops.len(), Instr::KINDS.len(), "duplicate opcode");
}

fn check_layout(name: &str, size: usize, specs: &[field::FieldSpec]) {
    let mut used = vec![false; size * 8];
    for s in specs {
        assert!(s.width >= 1 && s.width <= 63, "{name}.{}", s.name);
        assert!(
            s.offset + s.width <= size as u32 * 8,
            "{name}.{} overruns",
            s.name
        );
        assert!(s.min <= s.max, "{name}.{}", s.name);
        for b in s.offset..s.offset + s.width {
            assert!(!used[b as usize], "{name}.{} overlaps at bit {b}", s.name);
            used[b as usize] = true;
        }
    }
    let reserved: u32 = reserved_ranges(size, specs)
        .iter()
        .map(|(a, b)| b - a)
        .sum();
    assert_eq!(reserved as usize, used.iter().filter(|u| !**u).count());
}

#[test]
fn located_matches_the_decoder_and_hw_is_checked() {
    let mut p = Program::new(HwConfig::fsd());
    p.instrs.insert(0, dma());
    let bytes = encode_program(&p.instrs).unwrap();
    assert_eq!(p.located(), decode_program(&bytes).unwrap());
    assert!(p.require_hw(&HwConfig::fsd()).is_ok());
    let other = HwConfig {
        flags: 32,
        ..HwConfig::fsd()
    };
    let e = p.require_hw(&other).unwrap_err();
    assert_eq!(
        e,
        ProgramError::HwMismatch {
            program: HwConfig::fsd().fingerprint(),
            target: other.fingerprint(),
        }
    );
    assert!(e.to_string().contains("different hardware"), "{e}");
    *p.instrs[0].flags_mut() = FlagOps::new().set(40);
    p.meta.hw = other;
    let e = p.check_hw().unwrap_err();
    assert_eq!(
        e,
        ProgramError::Flag {
            index: 0,
            mnemonic: p.instrs[0].mnemonic(),
            flag: 40,
            hw_flags: 32,
        }
    );
    assert!(
        e.to_string().contains("instruction 0") && e.to_string().contains("F40"),
        "{e}"
    );
}
