//! Loads of one activation packet by the 256-byte rule (nna-hardware.md, "Memory"):
//! a packet of up to `rows` elements is split into slices of 8 consecutive elements;
//! one load reads a window of `load_window` bytes and serves every slice lying wholly
//! inside it. A packet whose slices all obey the rule takes 1 to 12 loads; a slice
//! spanning `load_window` bytes or more breaks the rule and costs one load per window
//! its elements need.

use super::params::SLICE_ELEMS;

/// What the address sequencer issues for one packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketLoads {
    /// Loads (windows read).
    pub loads: u64,
    /// Slices whose first and last element lie `load_window` bytes apart or more.
    pub broken_slices: u64,
}

/// The loads of a packet whose elements are at `addrs` in packet order (`None`: a
/// padded position, which reads the zero point and needs no load).
pub fn packet_loads(addrs: &[Option<u64>], load_window: u64) -> PacketLoads {
    let mut out = PacketLoads::default();
    // Start of the window the previous load read.
    let mut window: Option<u64> = None;
    let mut buf: Vec<u64> = Vec::with_capacity(SLICE_ELEMS as usize);
    for slice in addrs.chunks(SLICE_ELEMS as usize) {
        buf.clear();
        buf.extend(slice.iter().flatten());
        let (Some(&lo), Some(&hi)) = (buf.iter().min(), buf.iter().max()) else {
            continue;
        };
        if window.is_some_and(|w| lo >= w && hi < w + load_window) {
            continue;
        }
        if hi - lo < load_window {
            out.loads += 1;
            window = Some(lo);
            continue;
        }
        out.broken_slices += 1;
        buf.sort_unstable();
        let mut start = buf[0];
        out.loads += 1;
        for &a in &buf[1..] {
            if a >= start + load_window {
                start = a;
                out.loads += 1;
            }
        }
        window = Some(start);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strided(n: u64, base: u64, pitch: u64) -> Vec<Option<u64>> {
        (0..n).map(|i| Some(base + i * pitch)).collect()
    }

    #[test]
    fn contiguous_packet_is_one_load() {
        // 96 elements 1 byte apart span 95 bytes: one window.
        let p = packet_loads(&strided(96, 1000, 1), 256);
        assert_eq!(
            p,
            PacketLoads {
                loads: 1,
                broken_slices: 0
            }
        );
    }

    #[test]
    fn stride_two_packet_fits_one_window() {
        // 96 elements 2 bytes apart span 190 bytes.
        assert_eq!(packet_loads(&strided(96, 0, 2), 256).loads, 1);
        // 3 bytes apart span 285 bytes: slices 0..9 (elements 0..79, last at 237)
        // fit the first window, slices 10 and 11 need a second.
        assert_eq!(packet_loads(&strided(96, 0, 3), 256).loads, 2);
    }

    #[test]
    fn each_slice_in_its_own_window_is_twelve_loads() {
        // Pixel pitch 32: a slice spans 7*32 = 224 < 256 bytes, the next slice starts
        // 256 bytes later.
        let p = packet_loads(&strided(96, 0, 32), 256);
        assert_eq!(
            p,
            PacketLoads {
                loads: 12,
                broken_slices: 0
            }
        );
    }

    #[test]
    fn broken_slices_cost_one_load_per_window() {
        // Pixel pitch 64: a slice spans 448 bytes; elements 0..3 share a window,
        // 4..7 another: 2 loads per slice, 24 per packet.
        let p = packet_loads(&strided(96, 0, 64), 256);
        assert_eq!(
            p,
            PacketLoads {
                loads: 24,
                broken_slices: 12
            }
        );
    }

    #[test]
    fn padding_needs_no_load() {
        let mut a = strided(16, 0, 1);
        for e in a.iter_mut().take(8) {
            *e = None;
        }
        assert_eq!(packet_loads(&a, 256).loads, 1);
        assert_eq!(packet_loads(&[None; 96], 256).loads, 0);
    }

    #[test]
    fn partial_packet() {
        // 49 pixels (a 7x7 output) contiguous: one load.
        assert_eq!(packet_loads(&strided(49, 0, 1), 256).loads, 1);
    }
}
