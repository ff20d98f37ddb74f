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

/// [`crc32`] of `bytes` computed in `pieces` parts on scoped threads (their states
/// combined: the same value) while `beside` runs on this thread; returns both.
pub fn crc32_beside<R>(bytes: &[u8], pieces: usize, beside: impl FnOnce() -> R) -> (u32, R) {
    let len = bytes.len().div_ceil(pieces.max(1)).max(1);
    let state = |part: &[u8]| {
        let mut h = crc32fast::Hasher::new();
        h.update(part);
        h
    };
    std::thread::scope(|scope| {
        let parts: Vec<_> = bytes
            .chunks(len)
            .map(|part| {
                // A thread the system refuses leaves its piece to this thread.
                let t = std::thread::Builder::new().spawn_scoped(scope, move || state(part));
                (part, t.ok())
            })
            .collect();
        let r = beside();
        let mut crc = crc32fast::Hasher::new();
        for (part, t) in parts {
            // Hashing a slice cannot panic; if a thread somehow did, hash here.
            let h = match t.map(|t| t.join()) {
                Some(Ok(h)) => h,
                _ => state(part),
            };
            crc.combine(&h);
        }
        (crc.finalize(), r)
    })
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

    #[test]
    fn crc_in_pieces_is_the_crc() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        for len in [0, 1, 2, 3, 999, 100_000] {
            for pieces in [0, 1, 2, 3, 7] {
                let (crc, r) = super::crc32_beside(&data[..len], pieces, || len * 2);
                assert_eq!(
                    (crc, r),
                    (super::crc32(&data[..len]), len * 2),
                    "{len} {pieces}"
                );
            }
        }
    }
}
