//! The one place where instruction bits are packed and unpacked.
//!
//! Bit `n` of an instruction is bit `n % 8` of byte `n / 8` (little-endian bit and
//! byte order), so a field at bit offset `o` of width `w` holds bits `o .. o + w`.

/// Mask of the low `width` bits (`width` <= 64).
#[inline]
pub const fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The bytes `first ..= last` holding bits `offset .. offset + width` (`width` >= 1;
/// at most 9 bytes, as `width` <= 64).
fn byte_span(offset: u32, width: u32) -> (usize, usize) {
    ((offset / 8) as usize, ((offset + width - 1) / 8) as usize)
}

/// Writes the low `width` bits of `value` at bit `offset` of `buf`.
/// Bits of `value` above `width` are ignored; the caller range-checks first.
pub fn put(buf: &mut [u8], offset: u32, width: u32, value: u64) {
    if width == 0 {
        return;
    }
    let (first, last) = byte_span(offset, width);
    let shift = offset % 8;
    let mask = u128::from(low_mask(width)) << shift;
    let bits = u128::from(value & low_mask(width)) << shift;
    for (k, byte) in buf[first..=last].iter_mut().enumerate() {
        let (m, v) = ((mask >> (8 * k)) as u8, (bits >> (8 * k)) as u8);
        *byte = (*byte & !m) | v;
    }
}

/// Reads `width` bits at bit `offset` of `buf` (zero-extended).
pub fn get(buf: &[u8], offset: u32, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let (first, last) = byte_span(offset, width);
    let word = buf[first..=last]
        .iter()
        .enumerate()
        .fold(0u128, |w, (k, &b)| w | u128::from(b) << (8 * k));
    (word >> (offset % 8)) as u64 & low_mask(width)
}

/// Two's-complement sign extension of a `width`-bit value.
#[inline]
pub const fn sign_extend(raw: u64, width: u32) -> i64 {
    let shift = 64 - width;
    ((raw << shift) as i64) >> shift
}

/// Wraps `v` to a `bits`-bit two's-complement integer (`bits` in 1..=63).
#[inline]
pub const fn wrap_signed(v: i64, bits: u32) -> i64 {
    sign_extend(v as u64 & low_mask(bits), bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_round_trip_across_bytes() {
        let mut buf = [0u8; 16];
        put(&mut buf, 5, 40, 0xAB_CDEF_1234);
        assert_eq!(get(&buf, 5, 40), 0xAB_CDEF_1234);
        assert_eq!(get(&buf, 0, 5), 0);
        assert_eq!(get(&buf, 45, 64), 0);
        put(&mut buf, 5, 40, 0);
        assert_eq!(buf, [0u8; 16]);
    }

    #[test]
    fn put_and_get_are_the_bit_by_bit_definition() {
        // Bit n is bit n % 8 of byte n / 8: every offset and width, against the
        // definition written one bit at a time.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for offset in 0..80 {
            for width in 0..=64 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let mut buf = [0u8; 20];
                buf.iter_mut()
                    .enumerate()
                    .for_each(|(i, b)| *b = (state >> (i % 8 * 8)) as u8 ^ i as u8);
                let mut want = buf;
                for i in 0..width {
                    let bit = offset + i;
                    let m = 1u8 << (bit % 8);
                    let on = (state.rotate_left(7) >> i) & 1 == 1;
                    want[(bit / 8) as usize] =
                        (want[(bit / 8) as usize] & !m) | if on { m } else { 0 };
                }
                let read: u64 = (0..width)
                    .filter(|i| (buf[((offset + i) / 8) as usize] >> ((offset + i) % 8)) & 1 == 1)
                    .map(|i| 1u64 << i)
                    .sum();
                assert_eq!(get(&buf, offset, width), read, "get {offset} {width}");
                put(&mut buf, offset, width, state.rotate_left(7));
                assert_eq!(buf, want, "put {offset} {width}");
            }
        }
    }

    #[test]
    fn little_endian_layout() {
        let mut buf = [0u8; 4];
        put(&mut buf, 8, 16, 0x1234);
        assert_eq!(buf, [0, 0x34, 0x12, 0]);
    }

    #[test]
    fn sign_extension_and_wrap() {
        assert_eq!(sign_extend(0x1FF, 9), -1);
        assert_eq!(sign_extend(0x0FF, 9), 255);
        assert_eq!(wrap_signed(1 << 29, 30), -(1 << 29));
        assert_eq!(wrap_signed((1 << 29) - 1, 30), (1 << 29) - 1);
        assert_eq!(wrap_signed(-(1 << 29) - 1, 30), (1 << 29) - 1);
    }
}
