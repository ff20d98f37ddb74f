//! The SRAM weight layout of dot-product instructions (docs/ISA.md section 4) and its
//! conversion into the kernel's i16 rows.
//!
//! Output channels are split into groups of `cols = mac_cols` aligned at channel 0:
//! group `q` holds channels `q*cols .. q*cols + cols`. Group `q` is a block of `K`
//! vectors of `cols` bytes; vector `t = (ic*kernel_h + ky)*kernel_w + kx` holds at byte
//! `j` the weight of channel `q*cols + j`. `w_addr` is the block of group
//! `q0 = oc_start / cols`; group `q` is at `w_addr + (q - q0)*K*cols`.

use super::dot_geom::DotGeom;
use rayon::prelude::*;

/// Byte offset from `w_addr` of the weight of output channel `oc` (absolute) for
/// term `t`.
pub fn weight_offset(oc: u64, t: u64, k_terms: u64, oc_start: u64, cols: u64) -> u64 {
    let (q, q0) = (oc / cols, oc_start / cols);
    (q - q0) * k_terms * cols + t * cols + oc % cols
}

/// Bytes of the weight blocks a tile reads: every group from `oc_start`'s to the last
/// channel's, whole.
pub fn block_bytes(k_terms: u64, oc_start: u64, oc_count: u64, cols: u64) -> u64 {
    let (q0, q1) = (oc_start / cols, (oc_start + oc_count - 1) / cols);
    (q1 - q0 + 1) * k_terms * cols
}

/// Output channels converted together (one parallel task).
const ROWS_PER_TASK: u64 = 24;

/// One row of `kpad` i16 per tile output channel, in the patch term order
/// `(ky, kx, ic)`, zero-padded. Each task converts a run of channels of one weight
/// group, reading each 96-byte vector contiguously.
pub fn convert_weights(g: &DotGeom, bytes: &[u8], signed: bool, kpad: usize) -> Vec<i16> {
    let k = g.k_terms() as usize;
    let (icpg, taps) = (g.icpg as usize, (g.kh * g.kw) as usize);
    let cols = g.mac_cols;
    let mut out = vec![0i16; g.oc_count as usize * kpad];
    // (block offset, first byte in each vector, rows)
    let mut parts: Vec<(usize, usize, &mut [i16])> = Vec::new();
    let mut rest: &mut [i16] = &mut out;
    let (mut oc, end) = (g.oc_start, g.oc_start + g.oc_count);
    while oc < end {
        let hi = ((oc / cols + 1) * cols).min(end).min(oc + ROWS_PER_TASK);
        let (rows, tail) = std::mem::take(&mut rest).split_at_mut((hi - oc) as usize * kpad);
        let block =
            weight_offset(oc, 0, k as u64, g.oc_start, cols) as usize - (oc % cols) as usize;
        parts.push((block, (oc % cols) as usize, rows));
        rest = tail;
        oc = hi;
    }
    let cols = cols as usize;
    parts.into_par_iter().for_each(|(block, j0, rows)| {
        let n = rows.len() / kpad;
        // Tap outer, channel inner: each row is written sequentially.
        for tap in 0..taps {
            for ic in 0..icpg {
                let t = ic * taps + tap;
                let v = &bytes[block + t * cols + j0..block + t * cols + j0 + n];
                let kk = tap * icpg + ic;
                for (j, &b) in v.iter().enumerate() {
                    rows[j * kpad + kk] = if signed {
                        i16::from(b as i8)
                    } else {
                        i16::from(b)
                    };
                }
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_aligned_to_absolute_channel_groups() {
        let (k, cols) = (5, 4);
        // Tile of channels 6..11: groups 1 and 2 of 4 channels each.
        assert_eq!(block_bytes(k, 6, 5, cols), 2 * 5 * 4);
        let mut seen = vec![0u32; block_bytes(k, 6, 5, cols) as usize];
        for oc in 6..11 {
            for t in 0..k {
                seen[weight_offset(oc, t, k, 6, cols) as usize] += 1;
            }
        }
        assert_eq!(seen.iter().filter(|&&n| n == 1).count(), 25);
        assert!(seen.iter().all(|&n| n <= 1));
        // Channel 9 = group 2, byte 1; term 3.
        assert_eq!(weight_offset(9, 3, k, 6, cols), 20 + 3 * 4 + 1);
    }
}
