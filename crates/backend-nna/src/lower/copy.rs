//! Layout moves as SCALE copies: the instruction that reads an activation through one
//! set of pitches and writes it through another, running the identity program (codes
//! read with `in_zero = 0` and written unchanged: `FUSED_RELU` by `2^30 >> 30`,
//! clamped to the code range), and the jobs of a move made of several such copies.
//! Used by the upsampling (`upsample.rs`), depth-to-space (`depth_to_space.rs`) and
//! strided slices (`strided.rs`); they differ only in where each copy reads and writes.

use crate::base::act::{scale_over, Act, Placed};
use crate::base::job::{Job, JobKind, Loc, Tile};
use crate::base::spill_state::Src;
use crate::base::walk::{LayerTiles, Walk};
use crate::error::{Limit, Refusal};
use crate::lower::simd::identity_program;
use nnac_ir::NodeId;
use nnac_isa::Scale;

/// Most copies one layout move may take (an upsampling by 16 x 16, a depth-to-space
/// by 16): beyond, a hostile factor would emit millions of instructions; the move
/// runs on the host instead.
pub(crate) const MAX_COPIES: u64 = 256;

/// Refuses a move of `copies` copies above [`MAX_COPIES`].
pub(crate) fn check_copies(copies: u64) -> Result<(), Refusal> {
    if (1..=MAX_COPIES).contains(&copies) {
        Ok(())
    } else {
        Err(Refusal::range(
            "copies",
            i64::try_from(copies).unwrap_or(i64::MAX),
            Limit::Copies { max: MAX_COPIES },
        ))
    }
}

/// The input `x` and the output of node `id` (defined now) of a move that is not split
/// in bands: a spilled input is refused (`place::spill::prepare` brings it into SRAM
/// whole before `op`).
pub(crate) fn in_and_out(
    walk: &mut Walk<'_>,
    id: NodeId,
    x: Src,
    op: &'static str,
) -> Result<(Placed, Placed), Refusal> {
    let o = walk.define(id).map_err(Refusal::from)?;
    match x {
        Src::Sram(x) => Ok((x, o)),
        Src::Dram(_) => Err(Refusal::SpilledOperand { op }),
    }
}

/// The output pitches `(row, pix, chan)` of one phase of a move that writes every
/// `fh`-th row and `fw`-th pixel of an output laid out as `o` (an upsampling's or a
/// depth-to-space's phases).
pub(crate) fn phase_pitches(o: &Act, fh: u32, fw: u32) -> Result<(u32, u32, u32), Refusal> {
    let pitch = |p: u32, f: u32| {
        p.checked_mul(f).ok_or(Refusal::PitchOverflow {
            pitch: p,
            factor: f,
        })
    };
    Ok((
        pitch(o.row_pitch, fh)?,
        pitch(o.pix_pitch, fw)?,
        o.chan_pitch,
    ))
}

/// Byte offset of phase `(dy, dx)` (its first row and pixel) in an output laid out as `o`.
pub(crate) fn phase_offset(o: &Act, dy: u32, dx: u32) -> u64 {
    u64::from(dy) * u64::from(o.row_pitch) + u64::from(dx) * u64::from(o.pix_pitch)
}

/// A SCALE copying the elements of `read` (its shape and pitches) to the output
/// pitches `(row, pix, chan)`, as codes of the output's signedness.
pub(crate) fn copy_instr(read: &Act, out_pitches: (u32, u32, u32), out_signed: bool) -> Scale {
    Scale {
        in_zero: 0,
        simd: identity_program(out_signed),
        ..scale_over(read, out_pitches, out_signed)
    }
}

/// The jobs of layer `layer`: one copy `t` over `tiles` per entry of `bufs` (input,
/// output and channel-table locations; no table is read, so any buffer serves for
/// its address), and the layer's instruction count.
pub(crate) fn push_copies(
    walk: &mut Walk<'_>,
    layer: &str,
    t: &Scale,
    tiles: &[Tile],
    bufs: impl IntoIterator<Item = [Loc; 3]>,
) {
    let mut total = 0;
    for bufs in bufs {
        let kind = JobKind::Scale {
            t: t.clone(),
            bufs,
            tiles: tiles.to_vec(),
        };
        total += kind.instr_count();
        walk.out.jobs.push(Job {
            node: layer.to_string(),
            kind,
        });
    }
    walk.out.layers.push(LayerTiles {
        layer: layer.to_string(),
        mnemonic: "SCALE".into(),
        tiles: total,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_move_of_more_than_max_copies_is_refused() {
        assert!(check_copies(1).is_ok() && check_copies(MAX_COPIES).is_ok());
        let e = check_copies(1024).unwrap_err();
        assert_eq!(
            e.to_string(),
            "1024 SCALE copies, more than the 256 one layout move may take"
        );
        assert!(check_copies(0).is_err());
    }
}
