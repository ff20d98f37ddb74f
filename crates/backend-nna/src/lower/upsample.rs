//! Nearest-neighbour upsampling (`NnaOp::Upsample { factors: [fh, fw] }`): output
//! `(y, x)` is input `(y / fh, x / fw)`, done by `fh * fw` SCALE copies of the whole
//! input running the identity program (no DRAM round trip to the host).
//!
//! Copy `(dy, dx)` reads the input with its own pitches and writes output pixel
//! `(y * fh + dy, x * fw + dx)` for every input pixel `(y, x)`: output at
//! `dy * RP_out + dx * PP_out` with row pitch `fh * RP_out` and pixel pitch
//! `fw * PP_out` (the channel pitch unchanged). Those strided outputs are legal
//! layouts (docs/ISA.md 4: the pitches stay nested), and the `fh * fw` copies write
//! disjoint bytes that together cover the output. As for the channel shuffle, each
//! SCALE reads the codes with `in_zero = 0` and outputs them unchanged (`FUSED_RELU`
//! by `2^30 >> 30`), so the result is the quantized reference interpreter's copy
//! exactly. The SIMD work is one row per channel and at most 96 input pixels per
//! copy: `fh * fw` times the input's rows, the output's elements / 96 when the input
//! rows fill the tiles (docs/PERFORMANCE.md 1.5).
//!
//! It is not split in bands: a spilled input comes into SRAM whole before it
//! (`place::spill::prepare`) and a spilled output goes back whole after it (`place::spill::settle`).

use crate::base::job::{tiles, Loc};
use crate::base::walk::Walk;
use crate::error::{wide, Limit, Refusal};
use crate::lower::copy::{
    check_copies, copy_instr, in_and_out, phase_offset, phase_pitches, push_copies,
};
use crate::place::spill;
use nnac_ir::NodeId;

pub(crate) fn upsample(
    walk: &mut Walk<'_>,
    id: NodeId,
    [fh, fw]: [usize; 2],
) -> Result<(), Refusal> {
    let ins = walk.g.node_inputs(id);
    let name = walk.g.node(id).name.clone();
    let xs = spill::source(walk, ins[0]).ok_or(Refusal::NotActivation { operand: "input" })?;
    let xa = xs.act().clone();
    let (fh, fw) = (
        u32::try_from(fh).map_err(|_| Refusal::range("factor", wide(fh), Limit::TooLarge))?,
        u32::try_from(fw).map_err(|_| Refusal::range("factor", wide(fw), Limit::TooLarge))?,
    );
    check_copies(u64::from(fh) * u64::from(fw))?;
    let (x, o) = in_and_out(walk, id, xs, "an upsample (prepare brings it in whole)")?;
    let oa = o.act.clone();
    let t = copy_instr(&xa, phase_pitches(&oa, fh, fw)?, oa.signed);
    let Loc { buf: ob, off: oo } = o.loc();
    let tl = tiles(xa.pixels(), xa.c, walk.tile_pixels, walk.hw.mac_cols);
    let copies = (0..fh)
        .flat_map(|dy| (0..fw).map(move |dx| (dy, dx)))
        .map(|(dy, dx)| {
            [
                x.loc(),
                Loc::new(ob, oo + phase_offset(&oa, dy, dx)),
                x.loc(),
            ]
        });
    push_copies(walk, &name, &t, &tl, copies);
    Ok(())
}
