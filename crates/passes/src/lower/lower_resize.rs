//! Recognizes a Resize that repeats pixels by whole factors (nearest-neighbour
//! upsampling by 2, 4, 8 ... in the FPN of detectors such as PP-OCR's and YOLO's) and
//! replaces it by `NnaOp::Upsample { factors }`, which the backend runs as SCALE
//! copies instead of a STOP and a DRAM round trip to the host.
//!
//! The test is exact and independent of the attribute spelling: the Resize is 4-D,
//! keeps N and C, its output H and W are whole multiples `fh`, `fw` of the input's,
//! and the source index table of its nearest mode (`nnac_interp::kernels::
//! nearest_sources`, the very table the float interpreter uses) maps every output
//! row `y` to `y / fh` and column `x` to `x / fw`. So `asymmetric` + `floor` qualifies,
//! as do the other coordinate / rounding combinations that pick the same pixels for
//! these sizes; linear modes and fractional factors stay host ops.

use crate::{PassCtx, PassError};
use nnac_interp::kernels::nearest_sources;
use nnac_ir::{Graph, NnaOp, Op, ResizeAttrs};

pub fn lower_resize(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        let Op::Resize(a) = &g.node(id).op else {
            continue;
        };
        let x = g.node_inputs(id)[0];
        let Some(factors) = upsample_factors(a, &g.value_type(x).shape) else {
            continue;
        };
        g.node_mut(id).op = Op::Nna(NnaOp::Upsample { factors });
        let name = g.node(id).name.clone();
        ctx.note(
            &name,
            format!(
                "resize -> nearest upsample by {} x {}",
                factors[0], factors[1]
            ),
        );
    }
    Ok(())
}

/// `[fh, fw]` when resize `a` of an input of shape `shape` is a whole-factor
/// nearest-neighbour upsampling (see the module doc).
pub fn upsample_factors(a: &ResizeAttrs, shape: &[usize]) -> Option<[usize; 2]> {
    let &[n, c, h, w] = shape else {
        return None;
    };
    if a.sizes.len() != 4 || a.sizes[0] != n || a.sizes[1] != c {
        return None;
    }
    let same = |axis: usize, len: usize| {
        nearest_sources(a, axis, len).is_some_and(|t| t.iter().copied().eq(0..len))
    };
    if !same(0, n) || !same(1, c) {
        return None;
    }
    let factor = |axis: usize, len: usize| -> Option<usize> {
        let out = a.sizes[axis];
        let f = (len > 0 && out.is_multiple_of(len)).then(|| out / len)?;
        let t = nearest_sources(a, axis, len)?;
        t.iter().copied().eq((0..out).map(|i| i / f)).then_some(f)
    };
    Some([factor(2, h)?, factor(3, w)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_ir::{CoordTransform as C, NearestMode as N, ResizeMode};

    fn resize(mode: ResizeMode, coord: C, hw: [usize; 2], f: [f32; 2]) -> ResizeAttrs {
        ResizeAttrs {
            mode,
            coord,
            sizes: vec![
                1,
                3,
                (hw[0] as f32 * f[0]) as usize,
                (hw[1] as f32 * f[1]) as usize,
            ],
            scales: vec![1.0, 1.0, f[0], f[1]],
        }
    }

    #[test]
    fn whole_factor_nearest_resizes_are_upsamples() {
        let shape = [1, 3, 4, 5];
        let up = |mode, coord, f| upsample_factors(&resize(mode, coord, [4, 5], f), &shape);
        let nearest = ResizeMode::Nearest;
        assert_eq!(
            up(nearest(N::Floor), C::Asymmetric, [2.0, 2.0]),
            Some([2, 2])
        );
        assert_eq!(
            up(nearest(N::Floor), C::Asymmetric, [8.0, 3.0]),
            Some([8, 3])
        );
        // Ties of x / 2 round down: the same pixels.
        assert_eq!(
            up(nearest(N::RoundPreferFloor), C::Asymmetric, [2.0, 2.0]),
            Some([2, 2])
        );
        // Half-pixel centres with rounding pick the same pixels for a factor of 2 ...
        assert_eq!(
            up(nearest(N::RoundPreferCeil), C::HalfPixel, [2.0, 2.0]),
            Some([2, 2])
        );
        // ... but not with floor (output 2 reads input 0), nor ties rounded up.
        assert_eq!(up(nearest(N::Floor), C::HalfPixel, [2.0, 2.0]), None);
        assert_eq!(
            up(nearest(N::RoundPreferCeil), C::Asymmetric, [2.0, 2.0]),
            None
        );
        assert_eq!(up(nearest(N::Floor), C::AlignCorners, [2.0, 2.0]), None);
        // Linear interpolation, fractional and shrinking factors stay host ops.
        assert_eq!(up(ResizeMode::Linear, C::Asymmetric, [2.0, 2.0]), None);
        assert_eq!(up(nearest(N::Floor), C::Asymmetric, [1.5, 2.0]), None);
        assert_eq!(up(nearest(N::Floor), C::Asymmetric, [0.5, 1.0]), None);
        // Only H and W may change, of a 4-D tensor.
        let mut chans = resize(nearest(N::Floor), C::Asymmetric, [4, 5], [2.0, 2.0]);
        chans.sizes[1] = 6;
        chans.scales[1] = 2.0;
        assert_eq!(upsample_factors(&chans, &shape), None);
        assert_eq!(
            upsample_factors(
                &resize(nearest(N::Floor), C::Asymmetric, [4, 5], [2.0, 2.0]),
                &[3, 4, 5]
            ),
            None
        );
    }
}
