//! Header fields common to all instructions and the reserved-bit rule.

use crate::bits;
use crate::error::DecodeError;
use crate::field::FieldSpec;
use crate::flags::FlagLayout;

/// Byte 0 of every instruction (and SIMD instruction): the opcode.
pub const OPCODE: FieldSpec = FieldSpec::header("opcode", 0, 8, "instruction opcode");
/// Compute instructions: number of SIMD instructions that follow.
pub const SIMD_LEN: FieldSpec = FieldSpec::header(
    "simd_len",
    8,
    8,
    "number of 16-byte SIMD instructions following this one",
);
/// Flag slots of DMA and STOP instructions: 2 per list at bit 8.
pub const DMA_FLAGS: FlagLayout = FlagLayout {
    offset: 8,
    slots: 2,
};
/// Flag slots of compute instructions: 8 per list at bit 32.
pub const COMPUTE_FLAGS: FlagLayout = FlagLayout {
    offset: 32,
    slots: 8,
};

/// Bit ranges `[start, end)` of an instruction of `size` bytes not covered by `specs`.
pub fn reserved_ranges<'a>(
    size: usize,
    specs: impl IntoIterator<Item = &'a FieldSpec>,
) -> Vec<(u32, u32)> {
    let nbits = size as u32 * 8;
    let mut used = vec![false; nbits as usize];
    for s in specs {
        for b in s.offset..(s.offset + s.width).min(nbits) {
            used[b as usize] = true;
        }
    }
    let mut out = Vec::new();
    let mut b = 0;
    while b < nbits {
        if used[b as usize] {
            b += 1;
            continue;
        }
        let start = b;
        while b < nbits && !used[b as usize] {
            b += 1;
        }
        out.push((start, b));
    }
    out
}

/// Errs if any bit of `buf` outside `specs` is set (reserved bits must be zero),
/// naming the first such bit and its reserved range.
pub fn check_reserved<'a>(
    buf: &[u8],
    base: usize,
    mnemonic: &str,
    specs: impl IntoIterator<Item = &'a FieldSpec> + Clone,
) -> Result<(), DecodeError> {
    // The fields' bits as a byte mask: one pass over the instruction's bytes.
    let mut used = [0u8; 256];
    let used = &mut used[..buf.len().min(256)];
    let nbits = used.len() as u32 * 8;
    for f in specs.clone() {
        let (mut b, end) = (f.offset, (f.offset + f.width).min(nbits));
        while b < end {
            // Whole bytes at once, the partial bytes at the ends bit by bit.
            if b.is_multiple_of(8) && b + 8 <= end {
                used[(b / 8) as usize] = 0xff;
                b += 8;
            } else {
                used[(b / 8) as usize] |= 1 << (b % 8);
                b += 1;
            }
        }
    }
    let clean = buf.len() <= 256 && buf.iter().zip(used.iter()).all(|(&v, &m)| v & !m == 0);
    if clean {
        return Ok(());
    }
    for (start, end) in reserved_ranges(buf.len(), specs) {
        for bit in start..end {
            if bits::get(buf, bit, 1) != 0 {
                return Err(DecodeError::new(
                    base + (bit / 8) as usize,
                    format!("{mnemonic}: reserved bit {bit} (in bits {start}..{end}) is not zero"),
                ));
            }
        }
    }
    Ok(())
}
