//! Random instruction and program generators shared by the property tests.
//! Everything is derived from a stream of random u64 words so proptest can shrink.

#![allow(dead_code)]

use nnac_isa::field::{FieldSpec, Fields, Fmt};
use nnac_isa::flags::MAX_FLAGS;
use nnac_isa::*;

/// Deterministic source of values from a vector of random words.
pub struct Src<'a> {
    words: &'a [u64],
    i: usize,
}

impl<'a> Src<'a> {
    pub fn new(words: &'a [u64]) -> Self {
        Src { words, i: 0 }
    }
    pub fn next(&mut self) -> u64 {
        let w = if self.words.is_empty() {
            0
        } else {
            self.words[self.i % self.words.len()]
        };
        self.i += 1;
        // Mix in the position so a short vector still gives varied values.
        w ^ (self.i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    /// A value in `lo..=hi`, biased to the ends.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        match self.below(4) {
            0 => lo,
            1 => hi,
            _ => {
                let span = (hi - lo) as u64 + 1;
                lo + self.below(span) as i64
            }
        }
    }
}

/// A legal value for `spec`.
pub fn field_value(spec: &FieldSpec, src: &mut Src) -> i64 {
    let hi = match spec.fmt {
        Fmt::Enum => spec.names.len() as i64 - 1,
        _ => spec.max,
    };
    src.range(spec.min, hi)
}

pub fn fill(body: &mut dyn Fields, src: &mut Src) {
    for spec in body.specs() {
        let v = field_value(spec, src);
        body.set(spec.name, v).unwrap();
    }
}

pub fn flag_set(src: &mut Src, max_len: u64, limit: u32) -> FlagSet {
    let mut s = FlagSet::EMPTY;
    for _ in 0..src.below(max_len + 1) {
        s.insert(src.below(u64::from(limit)) as u32);
    }
    s
}

pub fn random_simd(src: &mut Src) -> SimdInstr {
    let k = &SimdInstr::KINDS[src.below(SimdInstr::KINDS.len() as u64) as usize];
    let mut s = SimdInstr::from_mnemonic(k.mnemonic).unwrap();
    fill(s.body_mut(), src);
    s
}

/// A random instruction of kind `kind` with flags below `flag_limit`.
pub fn random_instr(kind: &instr::Kind, src: &mut Src, flag_limit: u32) -> Instr {
    let mut ins = Instr::from_mnemonic(kind.mnemonic).unwrap();
    fill(ins.body_mut(), src);
    let slots = u64::from(kind.class.flag_layout().slots);
    for i in 0..4 {
        *ins.flags_mut().list_mut(i) = flag_set(src, slots, flag_limit);
    }
    if let Some(simd) = ins.body_mut().simd_mut() {
        for _ in 0..src.below(5) {
            simd.push(random_simd(src));
        }
    }
    ins
}

fn random_string(src: &mut Src) -> String {
    const ALPHABET: &[char] = &[
        'a', 'Z', '0', ' ', '"', '\\', ';', '=', '\n', '\u{1}', 'é', '猫', '[', ',',
    ];
    (0..src.below(12))
        .map(|_| ALPHABET[src.below(ALPHABET.len() as u64) as usize])
        .collect()
}

fn random_io(src: &mut Src) -> IoDesc {
    let dtype = if src.below(2) == 0 {
        IoDtype::Int8
    } else {
        IoDtype::Uint8
    };
    let (lo, hi) = dtype.zero_range();
    let hwc = src.below(2) == 0;
    let shape: Vec<u32> = if hwc {
        vec![
            1,
            src.below(100) as u32,
            src.below(300) as u32,
            src.below(300) as u32,
        ]
    } else {
        (0..src.below(5)).map(|_| src.next() as u32).collect()
    };
    let mut name = random_string(src);
    name.push('x');
    IoDesc {
        name,
        dir: if src.below(2) == 0 {
            IoDir::Input
        } else {
            IoDir::Output
        },
        dtype,
        shape,
        dram_addr: src.next() >> src.below(64),
        layout: if hwc {
            IoLayout::Hwc {
                row_pitch: src.next() as u32,
                pix_pitch: src.next() as u32,
            }
        } else {
            IoLayout::Dense
        },
        scale: f32::from_bits((src.below(0x7F00_0000) + 1) as u32),
        zero_point: src.range(i64::from(lo), i64::from(hi)) as i32,
    }
}

/// A random host descriptor: any dtype (8-bit types may be HWC), `dir` given.
fn random_host_desc(src: &mut Src, dir: IoDir) -> IoDesc {
    let mut d = random_io(src);
    d.dir = dir;
    if dir == IoDir::Input && src.below(3) == 0 {
        d.dtype = if src.below(2) == 0 {
            IoDtype::Float32
        } else {
            IoDtype::Int64
        };
        d.layout = IoLayout::Dense;
        d.zero_point = 0;
    }
    d
}

/// Random host ops in segment order (segments below `segments`).
fn random_host_ops(src: &mut Src, segments: u64) -> HostOps {
    let mut segs: Vec<u32> = (0..src.below(4))
        .map(|_| src.below(segments) as u32)
        .collect();
    segs.sort_unstable();
    let ops = segs
        .into_iter()
        .map(|segment| {
            let mut name = random_string(src);
            name.push('h');
            let mut op = random_string(src);
            op.push_str("softmax{axis=1}");
            HostOp {
                segment,
                name,
                op,
                inputs: (0..src.below(4))
                    .map(|_| random_host_desc(src, IoDir::Input))
                    .collect(),
                output: random_host_desc(src, IoDir::Output),
            }
        })
        .collect();
    HostOps { ops }
}

/// A random valid program (ends with STOP; flags below the config's flag count).
pub fn random_program(src: &mut Src) -> Program {
    let mut hw = HwConfig::fsd();
    if src.below(2) == 0 {
        hw.flags = src.range(1, i64::from(MAX_FLAGS)) as u32;
        hw.sram_bytes = 1 << src.range(12, 28);
    }
    let mut instrs = Vec::new();
    let kinds: Vec<&instr::Kind> = Instr::KINDS
        .iter()
        .filter(|k| k.mnemonic != "STOP")
        .collect();
    let stop_kind = Instr::KINDS.iter().find(|k| k.mnemonic == "STOP").unwrap();
    for _ in 0..src.below(8) {
        // Now and then a STOP ends a segment in the middle of the program.
        let k = if src.below(6) == 0 {
            stop_kind
        } else {
            kinds[src.below(kinds.len() as u64) as usize]
        };
        instrs.push(random_instr(k, src, hw.flags));
    }
    instrs.push(random_instr(stop_kind, src, hw.flags));
    let segments = instrs
        .iter()
        .filter(|i| matches!(i, Instr::Stop(_)))
        .count() as u64;
    let dram_len = match src.below(3) {
        0 => 0,
        1 => src.below(64),
        _ => src.below(3 * 4096) + 1,
    };
    let dram = DramImage {
        base: src.next() >> 24,
        bytes: (0..dram_len)
            .map(|_| src.next() as u8)
            .collect::<Vec<u8>>()
            .into(),
    };
    let io = (0..src.below(4)).map(|_| random_io(src)).collect();
    let host_ops = (src.below(2) == 0).then(|| random_host_ops(src, segments));
    let layers = (src.below(2) == 0).then(|| {
        let pool: Vec<String> = (0..src.below(4) + 1).map(|_| random_string(src)).collect();
        let per_instr: Vec<Option<String>> = (0..instrs.len())
            .map(|_| pool.get(src.below(pool.len() as u64 + 1) as usize).cloned())
            .collect();
        nnac_isa::LayerTable::from_names(per_instr.iter().map(|n| n.as_deref()))
    });
    let meta = Metadata {
        source_model: random_string(src),
        compiler_version: random_string(src),
        hw,
        ..Default::default()
    };
    // Now and then a prologue: the first segment, when a body follows and no host op
    // runs after it.
    let first_stop = instrs.iter().position(|i| matches!(i, Instr::Stop(_)));
    let body_start = first_stop
        .map(|s| s + 1)
        .filter(|&b| b < instrs.len())
        .filter(|_| {
            host_ops
                .as_ref()
                .is_none_or(|h: &HostOps| h.ops.iter().all(|o| o.segment >= 1))
        })
        .filter(|_| src.below(2) == 0);
    Program {
        instrs,
        dram,
        io,
        host_ops,
        layers,
        meta,
        body_start,
    }
}
