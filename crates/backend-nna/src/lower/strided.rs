//! Strided slice (`Op::StridedSlice` of a `[1, C, H, W]` activation: every `sc`-th
//! channel, `sh`-th row and `sw`-th column from `(c0, y0, x0)`; the Focus stem's
//! `x[..., ::2, ::2]` and its three shifted siblings): one SCALE copy running the
//! identity program that reads the input through strided pitches.
//!
//! The copy reads the input at `c0 * CP + y0 * RP + x0 * PP` with pitches
//! `sc * CP`, `sh * RP`, `sw * PP` and writes the output with its own layout. The
//! strided read selects elements of a legal (nested) layout, so its pitches stay
//! nested (docs/ISA.md 4). As for the upsampling, the SCALE reads the codes with
//! `in_zero = 0` and outputs them unchanged (`FUSED_RELU` by `2^30 >> 30`): the
//! quantized reference interpreter's copy exactly (the quantizer gives the output
//! the input's quantization). A slice the copy cannot make (the input not in SRAM,
//! a pitch overflowing its field, another rank) runs on the host.

use crate::base::act::Act;
use crate::base::job::{tiles, Loc};
use crate::base::spill_state::Src;
use crate::base::walk::Walk;
use crate::error::Refusal;
use crate::lower::copy::{copy_instr, push_copies};
use crate::lower::host::host_op;
use crate::place::spill;
use nnac_ir::{NodeId, Op};

/// Start and step of one axis of the slice (`[c, h, w]` order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AxisCut {
    start: u32,
    step: u32,
}

/// Per axis of `[C, H, W]` its start and step, when the slice is of a 4-D tensor
/// and cuts only those axes (the importer drops whole axes of step 1).
fn cuts(op: &Op, rank: usize) -> Option<[AxisCut; 3]> {
    let Op::StridedSlice {
        axes,
        starts,
        steps,
        ..
    } = op
    else {
        return None;
    };
    if rank != 4 {
        return None;
    }
    let mut c = [AxisCut { start: 0, step: 1 }; 3];
    for ((&a, &s), &st) in axes.iter().zip(starts).zip(steps) {
        let k = a.checked_sub(1).filter(|&k| k < 3)?;
        c[k] = AxisCut {
            start: u32::try_from(s).ok()?,
            step: u32::try_from(st).ok().filter(|&st| st > 0)?,
        };
    }
    Some(c)
}

pub(crate) fn strided_slice(walk: &mut Walk<'_>, id: NodeId) -> Result<(), Refusal> {
    let op = walk.g.node(id).op.clone();
    let x_v = walk.g.node_inputs(id)[0];
    let (a, b) = (walk.g.value_type(x_v), &walk.g.node(id).outputs[0]);
    if a.quant != b.quant || a.dtype != b.dtype {
        return Err(Refusal::QuantizationChange {
            op: "strided slice",
        });
    }
    let rank = a.shape.len();
    let Some([c, h, w]) = cuts(&op, rank) else {
        return host_op(walk, id, &op);
    };
    let Some(Src::Sram(x)) = spill::source(walk, x_v) else {
        return host_op(walk, id, &op);
    };
    let xa = x.act.clone();
    let in_pitches = (
        xa.row_pitch.checked_mul(h.step),
        xa.pix_pitch.checked_mul(w.step),
        xa.chan_pitch.checked_mul(c.step),
    );
    let (Some(rp), Some(pp), Some(cp)) = in_pitches else {
        return host_op(walk, id, &op);
    };
    let phase = u64::from(c.start) * u64::from(xa.chan_pitch)
        + u64::from(h.start) * u64::from(xa.row_pitch)
        + u64::from(w.start) * u64::from(xa.pix_pitch);
    let o = walk.define(id).map_err(Refusal::from)?;
    let oa = o.act.clone();
    // The copy walks the output's elements; it reads them through the strided pitches.
    let read = Act {
        h: oa.h,
        w: oa.w,
        c: oa.c,
        row_pitch: rp,
        pix_pitch: pp,
        chan_pitch: cp,
        ..xa
    };
    let t = copy_instr(
        &read,
        (oa.row_pitch, oa.pix_pitch, oa.chan_pitch),
        oa.signed,
    );
    let tl = tiles(oa.pixels(), oa.c, walk.tile_pixels, walk.hw.mac_cols);
    let name = walk.g.node(id).name.clone();
    let bufs = [Loc::new(x.buf, x.off + phase), o.loc(), x.loc()];
    push_copies(walk, &name, &t, &tl, [bufs]);
    Ok(())
}
