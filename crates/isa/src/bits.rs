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

/// Writes the low `width` bits of `value` at bit `offset` of `buf`.
/// Bits of `value` above `width` are ignored; the caller range-checks first.
pub fn put(buf: &mut [u8], offset: u32, width: u32, value: u64) {
    for i in 0..width {
        let bit = offset + i;
        let byte = &mut buf[(bit / 8) as usize];
        let mask = 1u8 << (bit % 8);
        if (value >> i) & 1 == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// Reads `width` bits at bit `offset` of `buf` (zero-extended).
pub fn get(buf: &[u8], offset: u32, width: u32) -> u64 {
    let mut v = 0u64;
    for i in 0..width {
        let bit = offset + i;
        if (buf[(bit / 8) as usize] >> (bit % 8)) & 1 == 1 {
            v |= 1 << i;
        }
    }
    v
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
