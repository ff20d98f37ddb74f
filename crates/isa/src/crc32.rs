//! CRC-32 (IEEE 802.3: reflected polynomial 0xEDB88320, init and final XOR 0xFFFFFFFF).

#[cfg(test)]
const fn make_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

/// CRC-32 of `bytes` (crc32fast: carry-less multiply where the CPU has it, the same
/// polynomial, init and final XOR; the tests hold it to the bytewise definition).
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn check_value() {
        // The standard CRC-32 check value.
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(super::crc32(b""), 0);
    }

    #[test]
    fn fast_crc_equals_one_byte_at_a_time() {
        let table = super::make_table();
        let bytewise = |bytes: &[u8]| {
            let mut c = 0xFFFF_FFFFu32;
            for &b in bytes {
                c = table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
            }
            c ^ 0xFFFF_FFFF
        };
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7919 % 251) as u8).collect();
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 100, 1000] {
            assert_eq!(super::crc32(&data[..len]), bytewise(&data[..len]), "{len}");
        }
    }
}
