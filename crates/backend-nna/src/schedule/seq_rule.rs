//! The address sequencer's activation-packet rule (docs/ISA.md section 4.1).
//!
//! Every cycle the MAC array takes one activation packet: the input element of the
//! same dot-product term (input channel, kernel tap) for `mac_rows` (96) consecutive
//! output pixels of the tile. The sequencer cuts a packet into 12 slices of 8
//! consecutive output pixels and serves each slice with one SRAM load, so the
//! lowest and highest address a slice reads must lie less than [`LOAD_BYTES`] apart.
//! Padded positions (`in_zero`) are not loaded. The channel of the term adds the same
//! offset to every element, so only the tap decides the span.
//!
//! [`widest_slice`] computes the exact widest slice of one dot-product instruction
//! from its fields alone.

use nnac_isa::checks::DotKind;
use nnac_isa::{DotProduct, Instr};
use std::fmt;

/// Bytes one load can span (the wider SRAM read port): a slice's first and last
/// element must lie less than this apart.
pub const LOAD_BYTES: u64 = 256;

/// Slices per activation packet.
pub const SLICES_PER_PACKET: u32 = 12;

/// The widest slice of an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceSpan {
    /// First output pixel of the slice (flattened, `oy * out_w + ox`).
    pub pix_start: u32,
    /// Output pixels in the slice.
    pub pix_count: u32,
    /// The kernel tap that reads the widest set of addresses.
    pub tap: (u32, u32),
    /// Highest minus lowest byte offset the slice reads.
    pub span: u64,
}

impl SliceSpan {
    /// Whether one load serves the slice.
    pub fn fits(&self) -> bool {
        self.span < LOAD_BYTES
    }
}

/// A dot-product instruction whose widest slice needs more than one load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceViolation {
    pub layer: String,
    /// Index of the instruction in the program.
    pub instr: usize,
    pub stride: (u32, u32),
    pub pix_pitch: u32,
    pub row_pitch: u32,
    pub widest: SliceSpan,
}

impl fmt::Display for SliceViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.widest;
        write!(
            f,
            "layer {}: instruction {} (stride {}x{}, input pixel pitch {}, row pitch {}): \
             the slice of output pixels {}..{} at kernel tap ({}, {}) reads bytes {} apart, \
             one load reaches less than {LOAD_BYTES} (docs/ISA.md 4.1)",
            self.layer,
            self.instr,
            self.stride.0,
            self.stride.1,
            self.pix_pitch,
            self.row_pitch,
            w.pix_start,
            w.pix_start + w.pix_count,
            w.tap.0,
            w.tap.1,
            w.span
        )
    }
}

/// Pixels per slice for an array of `mac_rows` rows.
pub fn slice_pixels(mac_rows: u32) -> u32 {
    (mac_rows / SLICES_PER_PACKET).max(1)
}

/// The input row (or column) that output coordinate `o` reads at tap `k`, if any:
/// CONV / INNER_PRODUCT `o*stride - pad + k*dil`; DECONV `(o + pad - k*dil) / stride`
/// when that divides exactly (docs/ISA.md section 5).
fn input_coord(
    kind: DotKind,
    o: u32,
    k: u32,
    stride: u32,
    pad: u32,
    dil: u32,
    n: u32,
) -> Option<u32> {
    let (o, k, s, p, d) = (
        i64::from(o),
        i64::from(k),
        i64::from(stride.max(1)),
        i64::from(pad),
        i64::from(dil),
    );
    let i = match kind {
        DotKind::Deconv => {
            let t = o + p - k * d;
            if t < 0 || t % s != 0 {
                return None;
            }
            t / s
        }
        _ => o * s - p + k * d,
    };
    u32::try_from(i).ok().filter(|&i| i < n)
}

/// The widest slice of `d` (its tile `pix_start..+pix_count`, slices of
/// [`slice_pixels`]`(mac_rows)` from `pix_start`), or `None` if it reads nothing.
pub fn widest_slice(d: &DotProduct, kind: DotKind, mac_rows: u32) -> Option<SliceSpan> {
    let sp = slice_pixels(mac_rows);
    let ow = d.out_w.max(1);
    let end = d.pix_start.saturating_add(d.pix_count);
    let mut best: Option<SliceSpan> = None;
    let mut start = d.pix_start;
    while start < end {
        let count = sp.min(end - start);
        for ky in 0..d.kernel_h {
            for kx in 0..d.kernel_w {
                let mut lo_hi: Option<(u64, u64)> = None;
                for p in start..start + count {
                    let (oy, ox) = (p / ow, p % ow);
                    let iy = input_coord(kind, oy, ky, d.stride_h, d.pad_top, d.dil_h, d.in_h);
                    let ix = input_coord(kind, ox, kx, d.stride_w, d.pad_left, d.dil_w, d.in_w);
                    let (Some(iy), Some(ix)) = (iy, ix) else {
                        continue;
                    };
                    let a = u64::from(iy) * u64::from(d.in_row_pitch)
                        + u64::from(ix) * u64::from(d.in_pix_pitch);
                    lo_hi = Some(lo_hi.map_or((a, a), |(l, h)| (l.min(a), h.max(a))));
                }
                if let Some((l, h)) = lo_hi {
                    if best.is_none_or(|b| h - l > b.span) {
                        best = Some(SliceSpan {
                            pix_start: start,
                            pix_count: count,
                            tap: (ky, kx),
                            span: h - l,
                        });
                    }
                }
            }
        }
        start += count;
    }
    best
}

/// The slice-rule violations of a program: for every layer with a dot-product
/// instruction whose widest slice needs more than one load, its widest such slice
/// (layers in program order). `layer(i)` names the layer of instruction `i`.
pub fn violations<'a>(
    instrs: &[Instr],
    layer: impl Fn(usize) -> &'a str,
    mac_rows: u32,
) -> Vec<SliceViolation> {
    let mut out: Vec<SliceViolation> = Vec::new();
    let mut last: Option<(&str, [u32; 18])> = None;
    for (i, ins) in instrs.iter().enumerate() {
        let (d, kind) = match ins {
            Instr::Conv(d) => (d, DotKind::Conv),
            Instr::Deconv(d) => (d, DotKind::Deconv),
            Instr::InnerProduct(d) => (d, DotKind::InnerProduct),
            _ => continue,
        };
        let name = layer(i);
        // The channel groups of one pixel tile read the same addresses: consecutive
        // instructions with the same geometry have the same widest slice.
        let key = (name, geometry(d));
        if last == Some(key) {
            continue;
        }
        last = Some(key);
        let Some(w) = widest_slice(d, kind, mac_rows).filter(|w| !w.fits()) else {
            continue;
        };
        let v = SliceViolation {
            layer: name.to_string(),
            instr: i,
            stride: (d.stride_h, d.stride_w),
            pix_pitch: d.in_pix_pitch,
            row_pitch: d.in_row_pitch,
            widest: w,
        };
        match out.iter_mut().find(|o| o.layer == name) {
            Some(o) if o.widest.span < w.span => *o = v,
            Some(_) => {}
            None => out.push(v),
        }
    }
    out
}

/// Every field [`widest_slice`] reads.
fn geometry(d: &DotProduct) -> [u32; 18] {
    [
        d.pix_start,
        d.pix_count,
        d.out_w,
        d.in_h,
        d.in_w,
        d.in_row_pitch,
        d.in_pix_pitch,
        d.kernel_h,
        d.kernel_w,
        d.stride_h,
        d.stride_w,
        d.dil_h,
        d.dil_w,
        d.pad_top,
        d.pad_left,
        d.pad_bottom,
        d.pad_right,
        d.out_h,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3x3 same-padded CONV over an `h x w x c` HWC tensor with the backend's
    /// default pitches (`PP = C` rounded up to 8, `RP = W * PP`), whole output.
    fn conv(h: u32, w: u32, c: u32, stride: u32) -> DotProduct {
        let pp = c.div_ceil(8) * 8;
        let o = |n: u32| (n + 2 - 3) / stride + 1;
        DotProduct {
            in_h: h,
            in_w: w,
            in_c: c,
            in_pix_pitch: pp,
            in_row_pitch: w * pp,
            out_h: o(h),
            out_w: o(w),
            out_c: 8,
            kernel_h: 3,
            kernel_w: 3,
            stride_h: stride,
            stride_w: stride,
            dil_h: 1,
            dil_w: 1,
            pad_top: 1,
            pad_left: 1,
            pad_bottom: 1,
            pad_right: 1,
            groups: 1,
            pix_start: 0,
            pix_count: o(h) * o(w),
            ..DotProduct::default()
        }
    }

    #[test]
    fn within_a_row_the_span_is_seven_strides_of_the_pixel_pitch() {
        // 16 output columns: no slice crosses a row.
        for (c, stride) in [(8, 1), (32, 1), (64, 1), (8, 2), (16, 2), (24, 2)] {
            let d = conv(16 * stride, 16 * stride, c, stride);
            let w = widest_slice(&d, DotKind::Conv, 96).unwrap();
            assert_eq!(w.span, u64::from(7 * stride * c), "C={c} stride {stride}");
        }
    }

    #[test]
    fn hwc_fits_only_narrow_tensors() {
        // PP <= 36 for stride 1, PP <= 18 for stride 2 (7 * s * PP < 256).
        assert!(widest_slice(&conv(16, 16, 32, 1), DotKind::Conv, 96)
            .unwrap()
            .fits());
        assert!(!widest_slice(&conv(16, 16, 40, 1), DotKind::Conv, 96)
            .unwrap()
            .fits());
        assert!(widest_slice(&conv(32, 32, 16, 2), DotKind::Conv, 96)
            .unwrap()
            .fits());
        assert!(!widest_slice(&conv(32, 32, 24, 2), DotKind::Conv, 96)
            .unwrap()
            .fits());
    }

    #[test]
    fn stride_one_same_padding_crosses_rows_without_a_gap() {
        // 10 output columns: slices cross rows; with RP = W * PP the input address is
        // linear in the flattened pixel index, so the span stays 7 * PP.
        let w = widest_slice(&conv(10, 10, 8, 1), DotKind::Conv, 96).unwrap();
        assert_eq!(w.span, 7 * 8);
    }

    #[test]
    fn stride_two_row_crossing_jumps_an_input_row() {
        // 20x20x8 input (PP 8, RP 160), stride 2: 10 output columns. Slice 8..16 holds
        // output columns 8, 9 of row 0 and 0..5 of row 1; the centre tap reads input
        // row 0 columns 16, 18 (bytes 128, 144) and row 2 columns 0..10 (bytes
        // 320..400): 272 bytes, though 7 * 2 * PP is only 112.
        let d = conv(20, 20, 8, 2);
        let w = widest_slice(&d, DotKind::Conv, 96).unwrap();
        assert_eq!(w.span, 272, "{w:?}");
        assert!(!w.fits());
    }

    #[test]
    fn deconv_reads_every_stride_th_pixel() {
        // 2x2 kernel, stride 2, 8x8 -> 16x16: each output pixel reads one tap; along a
        // row of 8 outputs a tap reads 4 input pixels: span 3 * PP.
        let d = DotProduct {
            in_h: 8,
            in_w: 8,
            in_c: 16,
            in_pix_pitch: 16,
            in_row_pitch: 128,
            out_h: 16,
            out_w: 16,
            out_c: 4,
            kernel_h: 2,
            kernel_w: 2,
            stride_h: 2,
            stride_w: 2,
            dil_h: 1,
            dil_w: 1,
            groups: 1,
            pix_start: 0,
            pix_count: 256,
            ..DotProduct::default()
        };
        let w = widest_slice(&d, DotKind::Deconv, 96).unwrap();
        assert_eq!(w.span, 3 * 16);
    }

    #[test]
    fn violations_keep_the_widest_slice_per_layer() {
        // Two instructions of one layer over the same pixels (e.g. two row bands):
        // only the second one's geometry breaks the rule, and it must not be skipped
        // as a repeat of the first.
        let fits = conv(16, 16, 8, 1);
        let mut wide = fits.clone();
        wide.in_pix_pitch = 64;
        wide.in_row_pitch = 16 * 64;
        let prog = [
            Instr::Conv(fits.clone()),
            Instr::Conv(fits),
            Instr::Conv(wide),
        ];
        let v = violations(&prog, |_| "band", 96);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].instr, v[0].widest.span), (2, 7 * 64));
        assert!(v[0].to_string().contains("layer band"), "{}", v[0]);
    }

    #[test]
    fn a_tile_starting_mid_row_uses_its_own_slices() {
        let mut d = conv(16, 16, 8, 1);
        d.pix_start = 4;
        d.pix_count = 8;
        let w = widest_slice(&d, DotKind::Conv, 96).unwrap();
        assert_eq!((w.pix_start, w.pix_count), (4, 8));
    }
}
