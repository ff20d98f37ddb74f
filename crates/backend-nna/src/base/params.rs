//! Parameter images in the byte layouts of docs/ISA.md section 4: weight blocks of
//! `mac_cols` output channels (one contiguous `mac_cols`-byte vector per cycle),
//! int32 biases and 16-byte channel-parameter entries.

/// Reorders weights into output-channel groups of `cols`. `weight(oc, t)` returns
/// the code of output channel `oc` at vector index `t = (ic*kh + ky)*kw + kx`.
pub(crate) fn weight_blocks(
    out_c: usize,
    k: usize,
    cols: usize,
    weight: impl Fn(usize, usize) -> i8,
) -> Vec<u8> {
    let groups = out_c.div_ceil(cols);
    let mut out = vec![0u8; groups * k * cols];
    for q in 0..groups {
        for t in 0..k {
            let row = &mut out[(q * k + t) * cols..(q * k + t + 1) * cols];
            for (j, b) in row.iter_mut().enumerate() {
                let oc = q * cols + j;
                if oc < out_c {
                    *b = weight(oc, t) as u8;
                }
            }
        }
    }
    out
}

/// The largest `|bias| + sum |w * x|` over the output channels of a weight-block
/// image (`k` vectors per group of `cols`), for input codes of magnitude <= `xmax`:
/// the worst case the accumulator must hold.
pub(crate) fn acc_bound(
    blocks: &[u8],
    out_c: usize,
    k: usize,
    cols: usize,
    bias: &[i32],
    xmax: i64,
) -> i64 {
    // Per group, the image is read vector by vector (in memory order), summing
    // `|w|` per column; the sums are exact, so the order does not matter.
    let mut sums = vec![0i64; cols];
    (0..out_c.div_ceil(cols.max(1)))
        .filter_map(|q| {
            sums.iter_mut().for_each(|s| *s = 0);
            for t in 0..k {
                let row = &blocks[(q * k + t) * cols..(q * k + t + 1) * cols];
                for (s, &b) in sums.iter_mut().zip(row) {
                    *s += i64::from((b as i8).unsigned_abs());
                }
            }
            (q * cols..((q + 1) * cols).min(out_c))
                .map(|oc| {
                    let b = i64::from(bias.get(oc).copied().unwrap_or(0)).abs();
                    b + sums[oc - q * cols] * xmax
                })
                .max()
        })
        .max()
        .unwrap_or(0)
}

/// Little-endian int32 values.
pub(crate) fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The channel table: one `[C0, C1, C2, C3]` entry per channel.
pub(crate) fn chan_table(entries: &[[i32; 4]]) -> Vec<u8> {
    entries.iter().flat_map(|e| i32_bytes(e)).collect()
}

/// Parameter images of one dot-product layer.
pub(crate) struct DotParams {
    pub weights: Vec<u8>,
    pub bias: Vec<i32>,
    pub entries: Vec<[i32; 4]>,
    /// Bytes of one weight block.
    pub block: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_blocks_pad_and_group() {
        // 3 output channels, K = 2, groups of 2 columns.
        let w = weight_blocks(3, 2, 2, |oc, t| (10 * oc + t) as i8);
        assert_eq!(w, vec![0, 10, 1, 11, 20, 0, 21, 0]);
    }

    #[test]
    fn acc_bound_is_the_worst_channel() {
        let w = weight_blocks(2, 2, 2, |oc, t| if oc == 1 { -100 } else { t as i8 });
        assert_eq!(acc_bound(&w, 2, 2, 2, &[5, -7], 255), 7 + 200 * 255);
    }

    #[test]
    fn tables_are_little_endian() {
        assert_eq!(i32_bytes(&[-2]), vec![0xfe, 0xff, 0xff, 0xff]);
        assert_eq!(chan_table(&[[1, 2, 3, 4]]).len(), 16);
    }
}
