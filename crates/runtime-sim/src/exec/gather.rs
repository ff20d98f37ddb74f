//! The patch gather of the byte kernel ([`super::quad`]): for every output pixel of a
//! block and every kernel tap, the input channels of one convolution group, as patch
//! bytes (`code ^ xor`: biased for int8 inputs), in term order (ky, kx, ic).
//!
//! A planar input (channels a plane apart) makes each pixel's channels a strided
//! byte gather. Where eight consecutive pixels of the block all read inside the input
//! for a tap (every 1x1 convolution, the interior of larger kernels, at any stride,
//! across rows), eight channels x eight pixels are loaded as eight words (one load
//! each where the eight bytes are consecutive, stride 1 along a row), transposed in
//! registers and stored as eight words; channels past the last multiple of eight (the
//! three of an image) are copied byte by byte for the eight pixels. Positions in the
//! padding are gathered pixel by pixel.

use super::dot_geom::DotGeom;
use super::tensor::Strided;
use crate::error::ExecError;
use crate::memory::Memory;

/// Patch bytes (`code ^ xor`) of consecutive channels.
#[inline]
pub fn fill_bytes(dst: &mut [u8], src: &Strided<'_>, xor: u8) {
    match src.contiguous() {
        Some(b) => dst.iter_mut().zip(b).for_each(|(o, &v)| *o = v ^ xor),
        None => dst
            .iter_mut()
            .zip(src.iter())
            .for_each(|(o, &v)| *o = v ^ xor),
    }
}

/// Transposes an 8 x 8 byte matrix held as eight little-endian words (row `r` =
/// word `r`, column `j` = byte `j`): afterwards byte `j` of word `r` is what byte `r`
/// of word `j` was.
#[inline]
pub fn transpose8(a: &mut [u64; 8]) {
    for i in 0..4 {
        let t = ((a[i] >> 32) ^ a[i + 4]) & 0x0000_0000_FFFF_FFFF;
        a[i] ^= t << 32;
        a[i + 4] ^= t;
    }
    for i in [0, 1, 4, 5] {
        let t = ((a[i] >> 16) ^ a[i + 2]) & 0x0000_FFFF_0000_FFFF;
        a[i] ^= t << 16;
        a[i + 2] ^= t;
    }
    for i in [0, 2, 4, 6] {
        let t = ((a[i] >> 8) ^ a[i + 1]) & 0x00FF_00FF_00FF_00FF;
        a[i] ^= t << 8;
        a[i + 1] ^= t;
    }
}

/// Eight pixels' addresses of a tap, all inside the input: the lowest and each
/// pixel's distance from it.
struct Group8 {
    a0: u64,
    delta: [usize; 8],
}

impl Group8 {
    /// The group if all eight addresses are inside the input.
    fn of(offs: &[Option<u64>]) -> Option<Group8> {
        let mut a = [0u64; 8];
        for (d, o) in a.iter_mut().zip(offs) {
            *d = (*o)?;
        }
        let a0 = *a.iter().min()?;
        Some(Group8 {
            a0,
            delta: std::array::from_fn(|q| (a[q] - a0) as usize),
        })
    }

    /// True if the pixels read consecutive bytes (one word load per channel).
    fn consecutive(&self) -> bool {
        self.delta.iter().enumerate().all(|(q, &d)| d == q)
    }
}

/// Where the patch of a block goes: `rows` of `kpad` bytes.
struct Patch<'d> {
    dst: &'d mut [u8],
    kpad: usize,
}

impl Patch<'_> {
    /// Channels `0..icpg` of pixels `p..p+8` for the tap at term `t`, whose channel 0
    /// is at `g.a0 + g.delta[q]` for pixel `p + q`, channels `cp` bytes apart.
    fn transposed(
        &mut self,
        sram: &Memory,
        (g, cp): (&Group8, u64),
        icpg: usize,
        (p, t): (usize, usize),
        xor: u8,
    ) -> Result<(), ExecError> {
        let span = g.delta.iter().max().copied().unwrap_or(0) as u64;
        let src = sram.slice(g.a0, (icpg as u64 - 1) * cp + span.max(7) + 1)?;
        let cp = cp as usize;
        let (consecutive, delta) = (g.consecutive(), g.delta);
        let x = u64::from_ne_bytes([xor; 8]);
        let full = icpg / 8 * 8;
        for cb in (0..full).step_by(8) {
            let mut a = [0u64; 8];
            for (r, w) in a.iter_mut().enumerate() {
                let o = (cb + r) * cp;
                *w = match consecutive {
                    true => u64::from_le_bytes(src[o..o + 8].try_into().expect("8 bytes")),
                    false => u64::from_le_bytes(std::array::from_fn(|q| src[o + delta[q]])),
                };
            }
            transpose8(&mut a);
            for (q, w) in a.iter().enumerate() {
                let at = (p + q) * self.kpad + t + cb;
                self.dst[at..at + 8].copy_from_slice(&(w ^ x).to_le_bytes());
            }
        }
        for c in full..icpg {
            for q in 0..8 {
                self.dst[(p + q) * self.kpad + t + c] = src[c * cp + delta[q]] ^ xor;
            }
        }
        Ok(())
    }
}

/// Gathers the patch bytes of `pixels` for convolution group `group` into `dst`
/// (`pixels.len()` rows of `kpad`); `pad` is the byte of a position outside the
/// input (the input zero point's), terms past K are 0.
#[allow(clippy::too_many_arguments)]
pub fn gather_bytes(
    g: &DotGeom,
    sram: &Memory,
    pixels: std::ops::Range<u64>,
    group: u64,
    kpad: usize,
    pad: u8,
    xor: u8,
    dst: &mut [u8],
) -> Result<(), ExecError> {
    let icpg = g.icpg as usize;
    let c0 = group * g.icpg;
    let cp = g.input.chan_pitch;
    let yx: Vec<(u64, u64)> = pixels.map(|p| g.pix.yx(p)).collect();
    let n = yx.len();
    let mut offs: Vec<Option<u64>> = vec![None; n];
    let mut patch = Patch { dst, kpad };
    let mut t = 0;
    for ky in 0..g.kh {
        for kx in 0..g.kw {
            for (o, &(oy, ox)) in offs.iter_mut().zip(&yx) {
                *o = match (g.in_row(oy, ky), g.in_col(ox, kx)) {
                    (Some(iy), Some(ix)) => Some(g.input.at(iy, ix, c0)),
                    _ => None,
                };
            }
            let mut p = 0;
            while p < n {
                if let Some(g8) = (cp > 1 && p + 8 <= n)
                    .then(|| Group8::of(&offs[p..p + 8]))
                    .flatten()
                {
                    patch.transposed(sram, (&g8, cp), icpg, (p, t), xor)?;
                    p += 8;
                    continue;
                }
                let seg = &mut patch.dst[p * kpad + t..p * kpad + t + icpg];
                match offs[p] {
                    Some(a) => fill_bytes(seg, &g.input.chans_at(sram, a, g.icpg)?, xor),
                    None => seg.fill(pad),
                }
                p += 1;
            }
            t += icpg;
        }
    }
    for row in patch.dst.chunks_exact_mut(kpad) {
        row[t..].fill(0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_moves_every_byte() {
        let mut a = [0u64; 8];
        for (r, w) in a.iter_mut().enumerate() {
            *w = u64::from_le_bytes(std::array::from_fn(|j| (r * 8 + j) as u8));
        }
        let orig = a;
        transpose8(&mut a);
        for (r, w) in a.iter().enumerate() {
            for (j, o) in orig.iter().enumerate() {
                assert_eq!(w.to_le_bytes()[j], o.to_le_bytes()[r]);
            }
        }
    }
}
