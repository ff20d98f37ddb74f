//! Property tests: instruction encode/decode, container write/read, and
//! asm(disasm(p)) byte identity.

mod common;

use common::{random_instr, random_program, Src};
use nnac_isa::listing::{assemble, disassemble};
use nnac_isa::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn words() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(any::<u64>(), 1..64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// decode(encode(i)) == i for every instruction kind, over random field values.
    #[test]
    fn every_kind_round_trips(w in words()) {
        let mut src = Src::new(&w);
        for kind in Instr::KINDS {
            let ins = random_instr(kind, &mut src, flags::MAX_FLAGS);
            let bytes = ins.encode().unwrap();
            prop_assert_eq!(bytes.len(), kind.size + 16 * ins.simd().len());
            let (back, size) = Instr::decode(&bytes, 0).unwrap();
            prop_assert_eq!(size, bytes.len());
            prop_assert_eq!(back, ins);
        }
    }

    /// Program::read(write(p)) == p and the bytes are stable; read_owned (the image
    /// left in the buffer) reads the same program.
    #[test]
    fn container_round_trips(w in words()) {
        let p = random_program(&mut Src::new(&w));
        let bytes = p.write().unwrap();
        let back = Program::read(&bytes).unwrap();
        prop_assert_eq!(&back.write().unwrap(), &bytes);
        prop_assert_eq!(&back, &p);
        prop_assert_eq!(Program::read_owned(bytes).unwrap(), p);
    }

    /// asm(disasm(p)) is byte-identical to p, with DRAM inline or in a side file.
    #[test]
    fn asm_of_disasm_is_identical(w in words(), side in any::<bool>()) {
        let p = random_program(&mut Src::new(&w));
        let bytes = p.write().unwrap();
        let dis = disassemble(&p, side.then_some("L.s.dram.bin"));
        let files: BTreeMap<String, Vec<u8>> = dis.side_files.iter().cloned().collect();
        let mut load = |n: &str| files.get(n).cloned().ok_or_else(|| std::io::Error::other("no such file"));
        let q = assemble(&dis.text, &mut load).map_err(|e| TestCaseError::fail(format!("{e}\n{}", dis.text)))?;
        prop_assert_eq!(q.write().unwrap(), bytes);
    }

    /// Arbitrary bytes never make the stream decoder panic.
    #[test]
    fn garbage_streams_error_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode_program(&bytes);
    }
}

#[test]
fn generator_covers_every_kind_and_simd_op() {
    // The round-trip test above iterates Instr::KINDS; make sure each SIMD op is hit too.
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..400u64 {
        let w = [seed, seed.wrapping_mul(31)];
        let mut src = Src::new(&w);
        seen.insert(common::random_simd(&mut src).kind().mnemonic);
    }
    assert_eq!(seen.len(), SimdInstr::KINDS.len(), "{seen:?}");
}
