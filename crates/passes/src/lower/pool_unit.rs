//! What the pooling unit can do: 2x2 or 3x3 max/avg windows, stride 1 or 2, no
//! dilation, on 4-D activations.

use nnac_ir::{PoolAttrs, PoolStage};

/// The pooling-unit stage for `p`, if the unit can run it.
pub fn pool_stage(p: &PoolAttrs, in_shape: &[usize]) -> Option<PoolStage> {
    let ok_k = |k: usize| k == 2 || k == 3;
    let ok_s = |s: usize| s == 1 || s == 2;
    if in_shape.len() != 4
        || p.kernel.len() != 2
        || !p.kernel.iter().all(|&k| ok_k(k))
        || !p.strides.iter().all(|&s| ok_s(s))
    {
        return None;
    }
    if p.dilations.iter().any(|&d| d != 1) {
        return None;
    }
    Some(PoolStage {
        kind: p.kind,
        kernel: [p.kernel[0], p.kernel[1]],
        strides: [p.strides[0], p.strides[1]],
        pads: [p.pads[0], p.pads[1], p.pads[2], p.pads[3]],
        ceil_mode: p.ceil_mode,
        count_include_pad: p.count_include_pad,
    })
}
