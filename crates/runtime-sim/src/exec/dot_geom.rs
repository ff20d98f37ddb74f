//! Validated geometry of a CONV / DECONV / INNER_PRODUCT instruction.

use super::pool::PoolGeom;
use super::tensor::{ActView, PixRange};
use crate::error::ExecError;
use nnac_isa::{DotProduct, HwConfig, PoolKind};

/// Which dot-product instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DotKind {
    Conv,
    Deconv,
    InnerProduct,
}

/// Everything the executor and the footprint computation need, checked once.
#[derive(Debug, Clone)]
pub struct DotGeom {
    pub kind: DotKind,
    pub in_h: u64,
    pub in_w: u64,
    pub in_c: u64,
    pub out_h: u64,
    pub out_w: u64,
    pub kh: u64,
    pub kw: u64,
    pub pad_top: i64,
    pub pad_left: i64,
    pub sh: u64,
    pub sw: u64,
    pub dh: u64,
    pub dw: u64,
    /// Input channels per group.
    pub icpg: u64,
    /// Output channels per group.
    pub ocpg: u64,
    pub pix: PixRange,
    pub oc_start: u64,
    pub oc_count: u64,
    /// MAC array columns: output channels per weight group.
    pub mac_cols: u64,
    /// Bytes between the tile's weight vectors (`w_pitch`; 0: the dense blocks).
    pub w_pitch: u64,
    pub input: ActView,
    pub output: ActView,
    pub pool: Option<PoolGeom>,
}

fn check(ok: bool, err: impl FnOnce() -> ExecError) -> Result<(), ExecError> {
    if ok {
        Ok(())
    } else {
        Err(err())
    }
}

/// The layout rule of docs/ISA.md section 4 (no two elements share a byte).
pub fn check_layout(
    what: &'static str,
    layout: nnac_isa::checks::ActLayout,
) -> Result<(), ExecError> {
    Ok(layout.check(what)?)
}

/// The error for an output size the input geometry does not give (`want`: the
/// height and width it gives).
fn geometry_error(
    transposed: bool,
    (expected_h, expected_w): (Option<u64>, Option<u64>),
    d: &DotProduct,
) -> ExecError {
    ExecError::DotGeometry {
        transposed,
        expected_h,
        expected_w,
        dot: Box::new(d.clone()),
    }
}

/// Output extent of a convolution along one axis, or `None` if the kernel does not fit.
fn conv_out(inp: u64, pad: u64, k: u64, s: u64, d: u64) -> Option<u64> {
    let span = d * (k - 1) + 1;
    (inp + pad >= span).then(|| (inp + pad - span) / s + 1)
}

/// Output extent of a transposed convolution.
fn deconv_out(inp: u64, pad: u64, k: u64, s: u64, d: u64) -> Option<u64> {
    ((inp - 1) * s + d * (k - 1) + 1).checked_sub(pad)
}

impl DotGeom {
    pub fn new(d: &DotProduct, kind: DotKind, hw: &HwConfig) -> Result<DotGeom, ExecError> {
        let u = u64::from;
        let g = u(d.groups);
        check(
            d.in_c.is_multiple_of(d.groups) && d.out_c.is_multiple_of(d.groups),
            || ExecError::Groups {
                groups: d.groups,
                in_c: d.in_c,
                out_c: d.out_c,
            },
        )?;
        check(u(d.oc_start) + u(d.oc_count) <= u(d.out_c), || {
            ExecError::Channels {
                start: u(d.oc_start),
                end: u(d.oc_start) + u(d.oc_count),
                limit_name: "out_c",
                limit: u(d.out_c),
            }
        })?;
        let npix = u(d.out_h) * u(d.out_w);
        check(u(d.pix_start) + u(d.pix_count) <= npix, || {
            ExecError::Pixels {
                start: u(d.pix_start),
                end: u(d.pix_start) + u(d.pix_count),
                limit_name: "out_h*out_w",
                limit: npix,
            }
        })?;
        let (ph, pw) = (
            u(d.pad_top) + u(d.pad_bottom),
            u(d.pad_left) + u(d.pad_right),
        );
        let (kh, kw, sh, sw, dh, dw) = (
            u(d.kernel_h),
            u(d.kernel_w),
            u(d.stride_h),
            u(d.stride_w),
            u(d.dil_h),
            u(d.dil_w),
        );
        let (ih, iw) = (u(d.in_h), u(d.in_w));
        match kind {
            DotKind::Conv | DotKind::InnerProduct => {
                let want = (conv_out(ih, ph, kh, sh, dh), conv_out(iw, pw, kw, sw, dw));
                check(want == (Some(u(d.out_h)), Some(u(d.out_w))), || {
                    geometry_error(false, want, d)
                })?;
            }
            DotKind::Deconv => {
                let want = (
                    deconv_out(ih, ph, kh, sh, dh),
                    deconv_out(iw, pw, kw, sw, dw),
                );
                check(want == (Some(u(d.out_h)), Some(u(d.out_w))), || {
                    geometry_error(true, want, d)
                })?;
            }
        }
        let pool = match d.pool {
            PoolKind::None => {
                check(d.pool_win == 0 && d.pool_stride == 0, || {
                    ExecError::PoolFieldsWithoutPool
                })?;
                None
            }
            kind => Some(PoolGeom::new(kind, d)?),
        };
        let [inp, out] = d.act_layouts()?;
        check_layout("input", inp)?;
        check_layout("output", out)?;
        Ok(DotGeom {
            kind,
            in_h: ih,
            in_w: iw,
            in_c: u(d.in_c),
            out_h: u(d.out_h),
            out_w: u(d.out_w),
            kh,
            kw,
            pad_top: i64::from(d.pad_top),
            pad_left: i64::from(d.pad_left),
            sh,
            sw,
            dh,
            dw,
            icpg: u(d.in_c) / g,
            ocpg: u(d.out_c) / g,
            pix: PixRange {
                start: u(d.pix_start),
                count: u(d.pix_count),
                width: u(d.out_w),
            },
            oc_start: u(d.oc_start),
            oc_count: u(d.oc_count),
            mac_cols: u(hw.mac_cols),
            w_pitch: u(d.w_pitch),
            input: ActView::new(d.in_addr, d.in_row_pitch, d.in_pix_pitch, d.in_chan_pitch),
            output: ActView::new(
                d.out_addr,
                d.out_row_pitch,
                d.out_pix_pitch,
                d.out_chan_pitch,
            ),
            pool,
        })
    }

    /// Dot-product length: terms per output value.
    pub fn k_terms(&self) -> u64 {
        self.icpg * self.kh * self.kw
    }

    /// Conv group of output channel `oc` (absolute).
    pub fn group_of(&self, oc: u64) -> u64 {
        oc / self.ocpg
    }

    /// Input row feeding output row `oy` through kernel row `ky`, if any.
    pub fn in_row(&self, oy: u64, ky: u64) -> Option<u64> {
        map_axis(self.kind, oy, ky, self.pad_top, self.sh, self.dh, self.in_h)
    }

    /// Input column feeding output column `ox` through kernel column `kx`, if any.
    pub fn in_col(&self, ox: u64, kx: u64) -> Option<u64> {
        map_axis(
            self.kind,
            ox,
            kx,
            self.pad_left,
            self.sw,
            self.dw,
            self.in_w,
        )
    }
}

/// Maps output coordinate `o` and kernel tap `k` to the input coordinate it reads.
/// CONV and INNER_PRODUCT: `i = o*s - pad + k*d`. DECONV (gather form of the
/// transposed convolution): `i = (o + pad - k*d) / s` when divisible. Out-of-range
/// positions (padding, and the holes between DECONV input pixels) read the input
/// zero point.
pub fn map_axis(
    kind: DotKind,
    o: u64,
    k: u64,
    pad: i64,
    s: u64,
    d: u64,
    extent: u64,
) -> Option<u64> {
    let (o, k, s, d) = (o as i64, k as i64, s as i64, d as i64);
    let i = match kind {
        DotKind::Conv | DotKind::InnerProduct => o * s - pad + k * d,
        DotKind::Deconv => {
            let n = o + pad - k * d;
            if n < 0 || n % s != 0 {
                return None;
            }
            n / s
        }
    };
    (i >= 0 && (i as u64) < extent).then_some(i as u64)
}
