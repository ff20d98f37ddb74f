//! Depth-to-space (`NnaOp::DepthToSpace { block: b, crd }`): output `(c, y*b + dy,
//! x*b + dx)` is input channel `k(dy, dx, c)` at `(y, x)`, done by `b * b` SCALE
//! copies running the identity program (no DRAM round trip to the host).
//!
//! Copy `(dy, dx)` reads the `C / b^2` input channels of its phase: in mode DCR
//! channels `(dy*b + dx) * C/b^2 ..` (input at `(dy*b + dx) * C/b^2 * CP`, channel
//! pitch `CP`), in mode CRD channels `dy*b + dx, dy*b + dx + b^2, ..` (input at
//! `(dy*b + dx) * CP`, channel pitch `b^2 * CP`); it writes output pixel `(y*b + dy,
//! x*b + dx)` for every input pixel, as the upsampling's phases do (`upsample.rs`):
//! output at `dy * RP_out + dx * PP_out`, row pitch `b * RP_out`, pixel pitch
//! `b * PP_out`. Strided reads and writes of legal layouts stay nested (docs/ISA.md 4),
//! and the `b^2` copies write disjoint bytes that cover the output. Each SCALE reads
//! the codes with `in_zero = 0` and outputs them unchanged (`FUSED_RELU` by
//! `2^30 >> 30`): the quantized reference interpreter's move exactly.
//!
//! It is not split in bands: a spilled input comes into SRAM whole before it
//! (`place::spill::prepare`) and a spilled output goes back whole after it
//! (`place::spill::settle`).

use crate::base::act::Act;
use crate::base::job::{tiles, Loc};
use crate::base::walk::Walk;
use crate::error::{wide, Limit, Refusal};
use crate::lower::copy::{
    check_copies, copy_instr, in_and_out, phase_offset, phase_pitches, push_copies,
};
use crate::place::spill;
use nnac_ir::NodeId;

pub(crate) fn depth_to_space(
    walk: &mut Walk<'_>,
    id: NodeId,
    block: usize,
    crd: bool,
) -> Result<(), Refusal> {
    let ins = walk.g.node_inputs(id);
    let name = walk.g.node(id).name.clone();
    let xs = spill::source(walk, ins[0]).ok_or(Refusal::NotActivation { operand: "input" })?;
    let xa = xs.act().clone();
    let b = u32::try_from(block)
        .ok()
        .filter(|&b| b >= 1)
        .ok_or_else(|| Refusal::range("block", wide(block), Limit::TooLarge))?;
    let phases = b
        .checked_mul(b)
        .ok_or_else(|| Refusal::range("block", wide(block), Limit::TooLarge))?;
    check_copies(u64::from(phases))?;
    let (x, o) = in_and_out(
        walk,
        id,
        xs,
        "a depth-to-space (prepare brings it in whole)",
    )?;
    let oa = o.act.clone();
    // The input channels of one phase, read through the input's pitches (mode CRD:
    // every `b^2`-th channel).
    let in_chan_pitch = if crd {
        xa.chan_pitch
            .checked_mul(phases)
            .ok_or(Refusal::PitchOverflow {
                pitch: xa.chan_pitch,
                factor: phases,
            })?
    } else {
        xa.chan_pitch
    };
    let read = Act {
        c: oa.c,
        chan_pitch: in_chan_pitch,
        ..xa.clone()
    };
    let t = copy_instr(&read, phase_pitches(&oa, b, b)?, oa.signed);
    let Loc { buf: ob, off: oo } = o.loc();
    let tl = tiles(xa.pixels(), oa.c, walk.tile_pixels, walk.hw.mac_cols);
    let copies = (0..b)
        .flat_map(|dy| (0..b).map(move |dx| (dy, dx)))
        .map(|(dy, dx)| {
            let k = u64::from(dy * b + dx);
            let first_chan = if crd { k } else { k * u64::from(oa.c) };
            let in_phase = first_chan * u64::from(xa.chan_pitch);
            [
                Loc::new(x.buf, x.off + in_phase),
                Loc::new(ob, oo + phase_offset(&oa, dy, dx)),
                x.loc(),
            ]
        });
    push_copies(walk, &name, &t, &tl, copies);
    Ok(())
}
