//! Spatial attributes shared by Conv, ConvTranspose and the pooling ops: reading
//! `kernel_shape`/`strides`/`dilations`/`pads`, and resolving `auto_pad`.

use super::ctx::{invalid, unsupported, NResult, NodeCx};
use super::limits::attr_size;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoPad {
    NotSet,
    SameUpper,
    SameLower,
    Valid,
}

pub fn auto_pad(cx: &NodeCx) -> NResult<AutoPad> {
    match cx.attrs.string_or("auto_pad", "NOTSET")?.as_str() {
        "NOTSET" | "" => Ok(AutoPad::NotSet),
        "SAME_UPPER" => Ok(AutoPad::SameUpper),
        "SAME_LOWER" => Ok(AutoPad::SameLower),
        "VALID" => Ok(AutoPad::Valid),
        other => Err(unsupported(format!("auto_pad '{other}'"))),
    }
}

/// An ints attribute with one entry per spatial axis, each `>= min`, or `default`.
pub fn spatial_attr(
    cx: &NodeCx,
    name: &str,
    n: usize,
    min: i64,
    default: usize,
) -> NResult<Vec<usize>> {
    match cx.attrs.ints(name)? {
        None => Ok(vec![default; n]),
        Some(v) if v.len() != n => Err(invalid(format!(
            "attribute '{name}' has {} entries for {n} spatial axes",
            v.len()
        ))),
        Some(v) => v
            .iter()
            .map(|&x| attr_size(x, min, name).map_err(invalid))
            .collect(),
    }
}

/// The explicit `pads` attribute (`2n` entries, begins then ends), zeros if absent.
pub fn pads_attr(cx: &NodeCx, n: usize) -> NResult<Vec<usize>> {
    match cx.attrs.ints("pads")? {
        None => Ok(vec![0; 2 * n]),
        Some(v) if v.len() != 2 * n => Err(invalid(format!(
            "attribute 'pads' has {} entries for {n} spatial axes",
            v.len()
        ))),
        Some(v) => v
            .iter()
            .map(|&x| {
                if x < 0 {
                    Err(unsupported(format!("negative pads {v:?}")))
                } else {
                    attr_size(x, 0, "pad").map_err(invalid)
                }
            })
            .collect(),
    }
}

/// Pads for `SAME_UPPER`/`SAME_LOWER` so that `out = ceil(in / stride)`; the odd
/// unit goes to the end (upper) or the beginning (lower).
pub fn same_pads(
    input: &[usize],
    kernel: &[usize],
    strides: &[usize],
    dilations: &[usize],
    lower: bool,
) -> Vec<usize> {
    let n = input.len();
    let mut pads = vec![0; 2 * n];
    for i in 0..n {
        let out = input[i].div_ceil(strides[i]);
        let eff = dilations[i] * (kernel[i] - 1) + 1;
        let total = ((out.max(1) - 1) * strides[i] + eff).saturating_sub(input[i]);
        let small = total / 2;
        let (begin, end) = if lower {
            (total - small, small)
        } else {
            (small, total - small)
        };
        pads[i] = begin;
        pads[n + i] = end;
    }
    pads
}

/// Resolves `auto_pad` and `pads` for Conv and the pooling ops.
pub fn resolve_pads(
    cx: &NodeCx,
    input: &[usize],
    kernel: &[usize],
    strides: &[usize],
    dilations: &[usize],
) -> NResult<Vec<usize>> {
    let n = input.len();
    match auto_pad(cx)? {
        AutoPad::NotSet => pads_attr(cx, n),
        AutoPad::Valid => Ok(vec![0; 2 * n]),
        AutoPad::SameUpper => Ok(same_pads(input, kernel, strides, dilations, false)),
        AutoPad::SameLower => Ok(same_pads(input, kernel, strides, dilations, true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_padding_splits_odd_totals() {
        // in 5, k 3, s 2: out 3, total = 2*2 + 3 - 5 = 2.
        assert_eq!(same_pads(&[5], &[3], &[2], &[1], false), vec![1, 1]);
        // in 4, k 3, s 2: out 2, total = 2 + 3 - 4 = 1.
        assert_eq!(same_pads(&[4], &[3], &[2], &[1], false), vec![0, 1]);
        assert_eq!(same_pads(&[4], &[3], &[2], &[1], true), vec![1, 0]);
        // dilation 2: effective kernel 5; in 7 s 1: total 4.
        assert_eq!(same_pads(&[7], &[3], &[1], &[2], false), vec![2, 2]);
    }
}
