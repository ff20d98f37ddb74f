//! Corrupted, truncated and wrong-version containers give errors, never panics.

mod common;

use common::{random_program, Src};
use nnac_isa::container::FORMAT_VERSION;
use nnac_isa::crc32::crc32;
use nnac_isa::*;

fn sample() -> Vec<u8> {
    // A program with every section present and a few instructions.
    for seed in 0u64.. {
        let w = [seed, !seed, seed.rotate_left(17)];
        let p = random_program(&mut Src::new(&w));
        if p.instrs.len() >= 4
            && p.host_ops.is_some()
            && !p.io.is_empty()
            && !p.dram.bytes.is_empty()
        {
            return p.write().unwrap();
        }
    }
    unreachable!()
}

/// Recomputes the trailing CRC so corruption reaches the section parsers.
fn fix_crc(b: &mut [u8]) {
    if b.len() >= 4 {
        let n = b.len() - 4;
        let c = crc32(&b[..n]);
        b[n..].copy_from_slice(&c.to_le_bytes());
    }
}

/// xorshift64* for the seeded corruption loop.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn reading_a_taken_buffer_gives_the_same_program() {
    let bytes = sample();
    let p = Program::read_owned(bytes.clone()).unwrap();
    assert_eq!(p, Program::read(&bytes).unwrap());
    assert_eq!(p.write().unwrap(), bytes);
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample();
    for n in 0..bytes.len() {
        assert!(
            Program::read(&bytes[..n]).is_err(),
            "truncated to {n} bytes was accepted"
        );
        let mut t = bytes[..n].to_vec();
        fix_crc(&mut t);
        let _ = Program::read(&t); // must not panic
    }
}

#[test]
fn random_corruptions_never_panic() {
    let bytes = sample();
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let (mut rejected, mut caught_by_crc) = (0, 0);
    for i in 0..20_000 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.below(4) {
            match rng.below(4) {
                0 => {
                    let p = rng.below(b.len());
                    b[p] ^= 1 << rng.below(8);
                }
                1 => {
                    let p = rng.below(b.len());
                    b[p] = rng.next() as u8;
                }
                2 => {
                    let n = rng.below(b.len());
                    b.truncate(n.max(1));
                }
                _ => {
                    let p = rng.below(b.len());
                    b.insert(p, rng.next() as u8);
                }
            }
        }
        if b == bytes {
            continue;
        }
        let plain = Program::read(&b);
        if plain.is_err() {
            caught_by_crc += 1;
        }
        if i % 2 == 0 {
            fix_crc(&mut b);
        }
        // Taking the buffer reads the same program, or fails the same way.
        assert_eq!(
            format!("{:?}", Program::read_owned(b.clone())),
            format!("{:?}", Program::read(&b))
        );
        if let Ok(p) = Program::read(&b) {
            // Anything accepted must re-serialize to exactly the accepted bytes.
            assert_eq!(p.write().unwrap(), b, "accepted a non-canonical file");
        } else {
            rejected += 1;
        }
    }
    assert!(caught_by_crc > 19_000, "{caught_by_crc}");
    assert!(rejected > 15_000, "{rejected}");
}

#[test]
fn specific_errors_are_clear() {
    let bytes = sample();
    let mut v = bytes.clone();
    v[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let e = Program::read(&v).unwrap_err().to_string();
    assert!(e.contains("version 2"), "{e}");

    let mut m = bytes.clone();
    m[0] = b'X';
    assert!(Program::read(&m).unwrap_err().to_string().contains("magic"));

    let mut c = bytes.clone();
    let last = c.len() - 10;
    c[last] ^= 0xFF;
    assert!(Program::read(&c)
        .unwrap_err()
        .to_string()
        .contains("checksum"));

    assert!(Program::read(&[])
        .unwrap_err()
        .to_string()
        .contains("too short"));
}

#[test]
fn bad_instruction_in_container_names_file_offset() {
    let p = Program::new(HwConfig::fsd());
    let mut b = p.write().unwrap();
    // The instruction section is the first payload: header 16 + 4 entries * 24.
    let code_at = 16 + 4 * 24;
    b[code_at] = 0x7E;
    fix_crc(&mut b);
    let e = Program::read(&b).unwrap_err();
    assert_eq!(e.offset, Some(code_at));
    assert!(e.to_string().contains("unknown opcode 0x7e"), "{e}");
}

#[test]
fn large_containers_check_the_checksum_beside_the_parse() {
    // A DRAM image of 2 MB puts the container past the size from which its checksum
    // is computed on a second thread while the sections are parsed.
    let mut p = Program::new(HwConfig::fsd());
    p.dram.bytes = (0..2usize << 20)
        .map(|i| (i * 7 % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    let good = p.write().unwrap();
    assert!(good.len() > 2 << 20);
    assert_eq!(Program::read(&good).unwrap(), p);
    assert_eq!(Program::read_owned(good.clone()).unwrap(), p);
    let code_at = 16 + 4 * 24;
    // A bad opcode with the stored checksum left as it was: the checksum error, not
    // the parse error, as when the checksum was checked first.
    let mut b = good.clone();
    b[code_at] = 0x7E;
    let e = Program::read(&b).unwrap_err().to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
    // The same with the checksum fixed: the parse error, naming the byte.
    fix_crc(&mut b);
    let e = Program::read(&b).unwrap_err();
    assert_eq!(e.offset, Some(code_at));
    assert!(e.to_string().contains("unknown opcode 0x7e"), "{e}");
    // A flipped byte in the image: only the checksum can tell.
    let mut c = good.clone();
    c[good.len() / 2] ^= 1;
    let e = Program::read(&c).unwrap_err().to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
}
