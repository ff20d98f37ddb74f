//! The SRAM weight layout of dot-product instructions (docs/ISA.md section 4) and its
//! conversion into the kernel's interleaved i16 term pairs.
//!
//! Output channels are split into groups of `cols = mac_cols` aligned at channel 0:
//! group `q` holds channels `q*cols .. q*cols + cols`. Group `q` is a block of `K`
//! vectors of `cols` bytes; vector `t = (ic*kernel_h + ky)*kernel_w + kx` holds at byte
//! `j` the weight of channel `q*cols + j`. `w_addr` is the block of group
//! `q0 = oc_start / cols`; group `q` is at `w_addr + (q - q0)*K*cols`. With a
//! `w_pitch` the tile's weights are instead `K` vectors `w_pitch` bytes apart from
//! `w_addr`, byte `j` of vector `t` the weight of channel `oc_start + j`.

use super::dot_geom::DotGeom;
use super::gemm::{pack_pair, PairWeights};
use nnac_isa::arith::code_value;
use rayon::prelude::*;

/// Byte offset from `w_addr` of the weight of output channel `oc` (absolute) for
/// term `t`.
pub fn weight_offset(oc: u64, t: u64, k_terms: u64, oc_start: u64, cols: u64) -> u64 {
    let (q, q0) = (oc / cols, oc_start / cols);
    (q - q0) * k_terms * cols + t * cols + oc % cols
}

/// A run of tile channels inside one weight group: for every term, their weights are
/// one contiguous byte vector in SRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeightRun {
    /// Byte offset from `w_addr` of term 0 of the run's first channel.
    pub off: usize,
    /// First tile channel (relative to `oc_start`).
    pub c0: usize,
    /// Channels in the run.
    pub n: usize,
    /// Bytes from one term's vector to the next (`mac_cols`, or `w_pitch`).
    pub cols: usize,
}

/// The tile's channels as runs, one per weight group it touches (one run of all of
/// them with a `w_pitch`).
pub fn weight_runs(g: &DotGeom) -> Vec<WeightRun> {
    if g.w_pitch != 0 {
        return vec![WeightRun {
            off: 0,
            c0: 0,
            n: g.oc_count as usize,
            cols: g.w_pitch as usize,
        }];
    }
    let k = g.k_terms();
    let cols = g.mac_cols;
    let mut runs = Vec::new();
    let (mut oc, end) = (g.oc_start, g.oc_start + g.oc_count);
    while oc < end {
        let hi = ((oc / cols + 1) * cols).min(end);
        runs.push(WeightRun {
            off: weight_offset(oc, 0, k, g.oc_start, cols) as usize,
            c0: (oc - g.oc_start) as usize,
            n: (hi - oc) as usize,
            cols: cols as usize,
        });
        oc = hi;
    }
    runs
}

/// The SRAM term (`t = (ic * kernel_h + ky) * kernel_w + kx`, ic-major) of patch term
/// `kk = (ky * kernel_w + kx) * icpg + ic`, for `kk` below K.
pub fn sram_term(g: &DotGeom) -> impl Fn(usize) -> usize {
    let (icpg, taps) = (g.icpg as usize, (g.kh * g.kw) as usize);
    move |kk| (kk % icpg) * taps + kk / icpg
}

/// Where a tile's weight codes lie in SRAM, for the pair kernel to read them there,
/// unconverted: the code of tile channel `c` for patch term `kk` is the byte at
/// `term[kk] + chan[c]` from `w_addr`; a term past K (`term[kk]` is `None`) has code
/// 0. Made by [`CodeLayout::new`], which derives `span`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeLayout {
    /// One entry per patch term (`kpad` of them).
    pub term: Vec<Option<usize>>,
    pub chan: Vec<usize>,
    /// The codes are int8 (else uint8).
    pub signed: bool,
    /// One past the largest offset: the least length of the weight bytes.
    pub span: usize,
}

impl CodeLayout {
    /// The layout of the given term and channel offsets.
    pub fn new(term: Vec<Option<usize>>, chan: Vec<usize>, signed: bool) -> CodeLayout {
        let span = match (term.iter().flatten().max(), chan.iter().max()) {
            (Some(t), Some(c)) => t + c + 1,
            _ => 0,
        };
        CodeLayout {
            term,
            chan,
            signed,
            span,
        }
    }

    /// The layout of `g`'s weights with patch rows of `kpad >= K` terms.
    pub fn of(g: &DotGeom, signed: bool, kpad: usize) -> CodeLayout {
        let k = g.k_terms() as usize;
        let runs = weight_runs(g);
        // Every run's vectors are the same stride apart (`mac_cols`, or `w_pitch`).
        let stride = runs.first().map_or(0, |r| r.cols);
        let to_sram = sram_term(g);
        let term = (0..kpad)
            .map(|kk| (kk < k).then(|| to_sram(kk) * stride))
            .collect();
        let mut chan = vec![0; g.oc_count as usize];
        for r in &runs {
            for (j, c) in chan[r.c0..r.c0 + r.n].iter_mut().enumerate() {
                *c = r.off + j;
            }
        }
        CodeLayout::new(term, chan, signed)
    }

    /// Patch terms (padded).
    pub fn kpad(&self) -> usize {
        self.term.len()
    }

    /// The value of the code of channel `c` for term `kk` in `bytes` (at least
    /// `span` long).
    #[inline]
    pub fn value(&self, bytes: &[u8], kk: usize, c: usize) -> i16 {
        self.term[kk].map_or(0, |t| {
            code_value(bytes[t + self.chan[c]], self.signed) as i16
        })
    }
}

/// The tile's weights as interleaved term pairs ([`PairWeights`]) in the patch term
/// order `kk = (ky * kernel_w + kx) * icpg + ic`. Every term's weights of a run of
/// channels in one weight group are one contiguous byte vector in SRAM; two such
/// vectors (terms `2*k2`, `2*k2 + 1`) are interleaved into one pair row.
pub fn pair_weights(g: &DotGeom, bytes: &[u8], signed: bool, kpad: usize) -> PairWeights {
    let k = g.k_terms() as usize;
    let runs = weight_runs(g);
    // Where each term's run of codes starts (terms past K read as zero).
    let at = CodeLayout::of(g, signed, kpad);
    let zeros = vec![0u8; g.oc_count as usize];
    let mut w = PairWeights::zeroed(g.oc_count as usize, kpad, signed);
    let fill = |(k2, row): (usize, &mut [u16])| {
        for r in &runs {
            let vec_of = |t: Option<usize>| match t {
                Some(t) => &bytes[t + at.chan[r.c0]..t + at.chan[r.c0] + r.n],
                None => &zeros[..r.n],
            };
            let (lo, hi) = (vec_of(at.term[2 * k2]), vec_of(at.term[2 * k2 + 1]));
            pack_row(&mut row[r.c0..r.c0 + r.n], lo, hi);
        }
    };
    let (ld, pairs) = (w.ld, k.div_ceil(2));
    // The rows are independent: a large tile's (a program's first frame converts
    // every instruction's weights) are packed on every thread.
    if k as u64 * g.oc_count >= PAR_MIN_WEIGHTS {
        w.data
            .par_chunks_mut(ld)
            .take(pairs)
            .enumerate()
            .for_each(fill);
    } else {
        w.data.chunks_mut(ld).take(pairs).enumerate().for_each(fill);
    }
    w
}

/// Weights (terms x channels) from which a tile's conversion runs in parallel.
pub const PAR_MIN_WEIGHTS: u64 = 1 << 15;

/// `dst[j] = pack_pair(lo[j], hi[j])`: the codes of two terms interleaved (a loop the
/// compiler vectorises).
fn pack_row(dst: &mut [u16], lo: &[u8], hi: &[u8]) {
    for (d, (&a, &b)) in dst.iter_mut().zip(lo.iter().zip(hi)) {
        *d = pack_pair(a, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_aligned_to_absolute_channel_groups() {
        let (k, cols) = (5, 4);
        // Tile of channels 6..11: groups 1 and 2 of 4 channels each, two blocks of
        // K vectors of 4 bytes.
        let mut seen = [0u32; 2 * 5 * 4];
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
