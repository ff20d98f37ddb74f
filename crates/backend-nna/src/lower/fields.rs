//! The fields of a DotProduct instruction from the layouts and attributes of a
//! layer: input/output geometry, convolution and deconvolution windows, the pooling
//! stage. Each field is checked against its range.

use crate::base::act::Act;
use crate::error::{wide, Limit, Refusal};
use nnac_ir::{PoolKind as IrPool, PoolStage};
use nnac_isa::{DotProduct, PoolKind, SimdInstr};

/// The stored (pooled) output of `t` must be the IR output `a`.
pub(crate) fn check_stored(t: &DotProduct, a: &Act) -> Result<(), Refusal> {
    if t.stored_hw() != Some((a.h, a.w)) {
        return Err(Refusal::StoredOutput {
            stored: t.stored_hw(),
            h: a.h,
            w: a.w,
        });
    }
    Ok(())
}

/// The output layout fields of `t` for output activation `a`.
pub(crate) fn out_fields(t: &mut DotProduct, a: &Act) -> Result<(), Refusal> {
    t.out_row_pitch = a.row_pitch;
    t.out_pix_pitch = a.pix_pitch;
    t.out_chan_pitch = a.chan_pitch;
    t.out_signed = a.signed;
    t.out_zero = i16_of(a.zero_point, "output zero point")?;
    Ok(())
}

pub(crate) fn conv_geometry(t: &mut DotProduct, a: &nnac_ir::ConvAttrs) -> Result<(), Refusal> {
    let two = |v: &[usize], what: &str| -> Result<[u32; 2], Refusal> {
        match v {
            [p, q] => Ok([u32_of(*p, what)?, u32_of(*q, what)?]),
            _ => Err(Refusal::NotTwoD {
                what: what.to_string(),
                value: v.to_vec(),
            }),
        }
    };
    [t.kernel_h, t.kernel_w] = two(&a.kernel, "kernel")?;
    [t.stride_h, t.stride_w] = two(&a.strides, "strides")?;
    [t.dil_h, t.dil_w] = two(&a.dilations, "dilations")?;
    let [pt, pl] = two(a.pads.get(..2).unwrap_or(&[]), "pads")?;
    let [pb, pr] = two(a.pads.get(2..).unwrap_or(&[]), "pads")?;
    (t.pad_top, t.pad_left, t.pad_bottom, t.pad_right) = (pt, pl, pb, pr);
    t.groups = u32_of(a.group, "group")?;
    let geometry = [
        ("kernel_h", t.kernel_h),
        ("kernel_w", t.kernel_w),
        ("stride_h", t.stride_h),
        ("stride_w", t.stride_w),
        ("dil_h", t.dil_h),
        ("dil_w", t.dil_w),
        ("pad_top", t.pad_top),
        ("pad_left", t.pad_left),
        ("pad_bottom", t.pad_bottom),
        ("pad_right", t.pad_right),
    ];
    geometry.iter().try_for_each(|&(f, v)| in_field(f, v))
}

/// Whether `v` fits the dot-product instructions' field `name` (docs/ISA.md's range):
/// a kernel, stride, dilation or pad beyond it is a layer the NNA cannot run.
pub(crate) fn in_field(name: &str, v: u32) -> Result<(), Refusal> {
    let spec = DotProduct::FIELDS
        .iter()
        .find(|f| f.name == name)
        .expect("a dot-product field");
    if (spec.min..=spec.max).contains(&i64::from(v)) {
        Ok(())
    } else {
        Err(Refusal::range(
            name,
            v,
            Limit::Field {
                min: spec.min,
                max: spec.max,
            },
        ))
    }
}

/// Transposed convolution: `output_padding` is folded into the bottom/right pads
/// (docs/ISA.md's DECONV output size has no output padding of its own).
pub(crate) fn deconv_geometry(
    t: &mut DotProduct,
    a: &nnac_ir::ConvTransposeAttrs,
) -> Result<(), Refusal> {
    let c = nnac_ir::ConvAttrs {
        kernel: a.kernel.clone(),
        strides: a.strides.clone(),
        pads: a.pads.clone(),
        dilations: a.dilations.clone(),
        group: a.group,
    };
    conv_geometry(t, &c)?;
    let op = |i: usize| a.output_padding.get(i).copied().unwrap_or(0) as u32;
    t.pad_bottom = t
        .pad_bottom
        .checked_sub(op(0))
        .ok_or(Refusal::OutputPadding { side: "bottom" })?;
    t.pad_right = t
        .pad_right
        .checked_sub(op(1))
        .ok_or(Refusal::OutputPadding { side: "right" })?;
    Ok(())
}

/// Maps the IR pool stage to the pooling unit's fields (square window, equal strides;
/// ceil mode only where it needs no extra padding, or for max pooling one extra row
/// / column of padding, which max pooling ignores).
pub(crate) fn pool_fields(t: &mut DotProduct, p: &PoolStage) -> Result<(), Refusal> {
    if p.kernel[0] != p.kernel[1] || p.strides[0] != p.strides[1] {
        return Err(Refusal::PoolNotSquare {
            kernel: p.kernel.to_vec(),
            strides: p.strides.to_vec(),
        });
    }
    t.pool = match p.kind {
        IrPool::Max => PoolKind::Max,
        IrPool::Avg => PoolKind::Avg,
    };
    t.pool_win = u32_of(p.kernel[0], "pool window")?;
    t.pool_stride = u32_of(p.strides[0], "pool stride")?;
    t.pool_count_pad = p.count_include_pad;
    t.pool_pad_top = u32_of(p.pads[0], "pool pad")?;
    t.pool_pad_left = u32_of(p.pads[1], "pool pad")?;
    t.pool_pad_bottom = u32_of(p.pads[2], "pool pad")?;
    t.pool_pad_right = u32_of(p.pads[3], "pool pad")?;
    let want = p
        .out_hw(t.out_h as usize, t.out_w as usize)
        .ok_or(Refusal::PoolWindow)?;
    let (h, w) = t.stored_hw().ok_or(Refusal::PoolWindow)?;
    if (h as usize, w as usize) != (want[0], want[1]) {
        if p.kind != IrPool::Max {
            return Err(Refusal::CeilModeAverage);
        }
        let extra = |want: usize, got: u32| {
            want.checked_sub(got as usize)
                .map(|e| e as u32)
                .ok_or(Refusal::PoolOutput)
        };
        t.pool_pad_bottom += extra(want[0], h)?;
        t.pool_pad_right += extra(want[1], w)?;
    }
    if t.pool_pad_bottom > 2 || t.pool_pad_right > 2 || t.pool_pad_top > 2 || t.pool_pad_left > 2 {
        return Err(Refusal::PoolPadding);
    }
    Ok(())
}

/// The fields every dot-product instruction over activation `x` shares: its input
/// tensor, int8 weights, int32 bias, the input zero point, the SIMD program, and
/// unit stride, dilation and groups (callers override what differs).
pub(crate) fn dot_base(x: &Act, simd: Vec<SimdInstr>) -> Result<DotProduct, Refusal> {
    Ok(DotProduct {
        in_h: x.h,
        in_w: x.w,
        in_c: x.c,
        in_row_pitch: x.row_pitch,
        in_pix_pitch: x.pix_pitch,
        in_chan_pitch: x.chan_pitch,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        in_signed: x.signed,
        w_signed: true,
        bias_en: true,
        in_zero: i16_of(x.zero_point, "input zero point")?,
        simd,
        ..DotProduct::default()
    })
}

pub(crate) fn u32_of(v: usize, what: &str) -> Result<u32, Refusal> {
    u32::try_from(v).map_err(|_| Refusal::range(what, wide(v), Limit::TooLarge))
}

pub(crate) fn i16_of(v: i32, what: &str) -> Result<i16, Refusal> {
    i16::try_from(v).map_err(|_| Refusal::range(what, v, Limit::Int16))
}
