//! Depthwise dot products (one input and one output channel per group), computed
//! directly: for every tile channel, its input plane is checked against SRAM once and
//! every output pixel sums its kernel taps from it, instead of a one-channel patch
//! per pixel, tap and group. The sums are exact (i64), as every other path's are.

use super::dot_geom::{DotGeom, DotKind};
use super::gemm::PairWeights;
use crate::error::ExecError;
use crate::memory::Memory;
use nnac_isa::arith::code_value;
use nnac_isa::checks;
use nnac_isa::hazard::geometry::dot_input;
use nnac_isa::DotProduct;

/// True if every group of the instruction has one input and one output channel.
pub fn is_depthwise(g: &DotGeom) -> bool {
    g.icpg == 1 && g.ocpg == 1
}

/// Exact dot products of `pixels` for every tile channel: `acc[p * oc_count + c]`.
pub fn block(
    g: &DotGeom,
    d: &DotProduct,
    sram: &Memory,
    wt: &PairWeights,
    pixels: std::ops::Range<u64>,
    acc: &mut [i64],
) -> Result<(), ExecError> {
    let oc_count = g.oc_count as usize;
    let (rp, pp) = (g.input.row_pitch as usize, g.input.pix_pitch as usize);
    let zero = i64::from(d.in_zero);
    let taps = (g.kh * g.kw) as usize;
    let kind = match g.kind {
        DotKind::Conv => checks::DotKind::Conv,
        DotKind::Deconv => checks::DotKind::Deconv,
        DotKind::InnerProduct => checks::DotKind::InnerProduct,
    };
    // The bounding box of the instruction's kernel windows, clipped to the input:
    // inside its SRAM footprint, which the simulator checked at load.
    let rect = dot_input(d, kind).map(|i| i.rect);
    for c in 0..oc_count {
        // Input channel = group = absolute output channel.
        let ch = g.oc_start + c as u64;
        let (plane, (y0, x0)) = match rect {
            Some(r) if r.rows > 0 && r.x1 > r.x0 => {
                let lo = g.input.at(r.y0, r.x0, ch);
                let hi = g.input.at(r.y0 + r.rows - 1, r.x1 - 1, ch) + 1;
                (sram.slice(lo, hi - lo)?, (r.y0, r.x0))
            }
            _ => (&[][..], (0, 0)),
        };
        let w: Vec<i64> = (0..taps).map(|t| i64::from(wt.at(t, c))).collect();
        for (q, p) in pixels.clone().enumerate() {
            let (oy, ox) = g.pix.yx(p);
            let mut s = 0i64;
            let mut t = 0;
            for ky in 0..g.kh {
                let iy = g.in_row(oy, ky);
                for kx in 0..g.kw {
                    let v = match (iy, g.in_col(ox, kx)) {
                        (Some(iy), Some(ix)) => {
                            let b = iy
                                .checked_sub(y0)
                                .zip(ix.checked_sub(x0))
                                .and_then(|(y, x)| plane.get(y as usize * rp + x as usize * pp))
                                .ok_or(ExecError::OutsideInputBox {
                                    y: iy,
                                    x: ix,
                                    channel: ch,
                                })?;
                            i64::from(code_value(*b, d.in_signed))
                        }
                        _ => zero,
                    };
                    s += v * w[t];
                    t += 1;
                }
            }
            acc[q * oc_count + c] = s;
        }
    }
    Ok(())
}
