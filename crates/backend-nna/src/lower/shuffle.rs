//! Channel shuffle (`NnaOp::ChannelShuffle`): a permutation of whole channel planes,
//! done by SCALE instructions running the identity program (no DRAM round trip).
//!
//! With `C = g * n` channels, output channel `j*g + i` is input channel `i*n + j`.
//! In a layout with channel pitch `CP` (planar: `H*W`) that is `g` copies of `n`
//! planes: copy `i` reads channels `i*n .. i*n+n` (input at `i*n*CP_in`, pitch
//! `CP_in`) and writes output channels `i, i+g, ...` (output at `i*CP_out`, pitch
//! `g*CP_out`); or, the same permutation seen from the output, `n` copies of `g`
//! planes: copy `j` reads channels `j, j+n, ...` (at `j*CP_in`, pitch `n*CP_in`) and
//! writes channels `j*g .. j*g+g` (at `j*g*CP_out`, pitch `CP_out`). The backend
//! takes the view with more channels per copy (fewer instructions: a SCALE tile holds
//! up to 96 channels of up to 96 pixels); the SIMD work is the same, one row per
//! channel and 96 pixels (docs/PERFORMANCE.md 1.5).
//!
//! Each SCALE reads the codes with `in_zero = 0` and runs the identity program
//! (`FUSED_RELU` by `2^30 >> 30`, clamped to the code range): the output code is the
//! input code, exactly, as the quantized reference interpreter's permutation. It
//! reads no channel table. Pitches are taken from the operands' layouts, so the
//! copies also work on band buffers of a layer split into row bands (`split_px.rs`).

use crate::base::job::{tiles, Job, JobKind, Loc};
use crate::base::spill_state::Src;
use crate::base::walk::{LayerTiles, Walk};
use crate::error::{wide, Limit, Refusal};
use crate::lower::simd::identity_program;
use crate::place::spill;
use crate::place::split_px;
use crate::place::split_px::BandOperand;
use nnac_ir::NodeId;
use nnac_isa::Scale;

/// One view of the permutation: `count` copies of `chans` channels; copy `k` starts
/// at input channel `k * in_step` and output channel `k * out_step`; within a copy
/// consecutive channels are `in_mul` input and `out_mul` output channels apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Copies {
    count: u32,
    chans: u32,
    in_step: u32,
    in_mul: u32,
    out_step: u32,
    out_mul: u32,
}

/// The view of a shuffle of `c` channels in `g` groups with more channels per copy.
fn copies(c: u32, g: u32) -> Copies {
    let n = c / g;
    if g <= n {
        Copies {
            count: g,
            chans: n,
            in_step: n,
            in_mul: 1,
            out_step: 1,
            out_mul: g,
        }
    } else {
        Copies {
            count: n,
            chans: g,
            in_step: 1,
            in_mul: n,
            out_step: g,
            out_mul: 1,
        }
    }
}

impl Copies {
    /// The SCALE jobs of the copies over `rows` rows of template `t`, input at `x`
    /// and output at `o` (location, channel pitch).
    fn jobs(
        &self,
        t: &Scale,
        rows: u32,
        x: BandOperand,
        o: BandOperand,
        tp: u32,
        tc: u32,
    ) -> Vec<JobKind> {
        let (Loc { buf: xb, off: xo }, xcp) = (x.loc, x.chan_pitch);
        let (Loc { buf: ob, off: oo }, ocp) = (o.loc, o.chan_pitch);
        (0..self.count)
            .map(|k| JobKind::Scale {
                t: Scale {
                    h: rows,
                    in_chan_pitch: xcp * self.in_mul,
                    out_chan_pitch: ocp * self.out_mul,
                    ..t.clone()
                },
                bufs: [
                    Loc::new(xb, xo + u64::from(k * self.in_step) * u64::from(xcp)),
                    Loc::new(ob, oo + u64::from(k * self.out_step) * u64::from(ocp)),
                    // No channel table is read; any buffer will do for its address.
                    Loc::new(xb, xo),
                ],
                tiles: tiles(rows * t.w, self.chans, tp, tc),
            })
            .collect()
    }
}

pub(crate) fn channel_shuffle(
    walk: &mut Walk<'_>,
    id: NodeId,
    groups: usize,
) -> Result<(), Refusal> {
    let ins = walk.g.node_inputs(id);
    let name = walk.g.node(id).name.clone();
    let xs = spill::source(walk, ins[0]).ok_or(Refusal::NotActivation { operand: "input" })?;
    let xa = xs.act().clone();
    // The verifier (`check_graph`) guarantees `groups > 0` dividing the channels
    // and an output of the input's shape, type and quantization.
    let g = u32::try_from(groups)
        .map_err(|_| Refusal::range("groups", wide(groups), Limit::TooLarge))?;
    let out = split_px::px_output(walk, id)?;
    let oa = out.act().clone();
    let v = copies(xa.c, g);
    let t = Scale {
        h: xa.h,
        w: xa.w,
        c: v.chans,
        in_row_pitch: xa.row_pitch,
        in_pix_pitch: xa.pix_pitch,
        out_row_pitch: oa.row_pitch,
        out_pix_pitch: oa.pix_pitch,
        in_signed: xa.signed,
        out_signed: oa.signed,
        in_zero: 0,
        simd: identity_program(oa.signed),
        ..Scale::default()
    };
    let (tp, tc) = (walk.tile_pixels, walk.hw.mac_cols);
    if walk.out.sp.px_split {
        return split_px::px_split(walk, id, &[xs], out, None, |rows, l, o| {
            v.jobs(&t, rows, l[0], o, tp, tc)
        });
    }
    let (Src::Sram(x), Src::Sram(out)) = (xs, out) else {
        return Err(Refusal::SpilledOperand {
            op: "an unsplit channel shuffle",
        });
    };
    let jobs = v.jobs(
        &t,
        xa.h,
        BandOperand {
            loc: x.loc(),
            chan_pitch: xa.chan_pitch,
        },
        BandOperand {
            loc: out.loc(),
            chan_pitch: oa.chan_pitch,
        },
        tp,
        tc,
    );
    let total = jobs.iter().map(JobKind::instr_count).sum();
    walk.out.layers.push(LayerTiles {
        layer: name.clone(),
        mnemonic: "SCALE".into(),
        tiles: total,
    });
    for kind in jobs {
        walk.out.jobs.push(Job {
            node: name.clone(),
            kind,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The output channel each input channel lands in, by the copies.
    fn mapping(c: u32, g: u32) -> Vec<u32> {
        let v = copies(c, g);
        let mut to = vec![u32::MAX; c as usize];
        for k in 0..v.count {
            for m in 0..v.chans {
                let ic = k * v.in_step + m * v.in_mul;
                to[ic as usize] = k * v.out_step + m * v.out_mul;
            }
        }
        to
    }

    #[test]
    fn both_views_are_the_shuffle() {
        for (c, g) in [(12, 3), (12, 4), (112, 4), (8, 8), (8, 1), (6, 2)] {
            let n = c / g;
            let want: Vec<u32> = (0..c).map(|ic| (ic % n) * g + ic / n).collect();
            assert_eq!(mapping(c, g), want, "{c} channels in {g} groups");
        }
        // More channels per copy: 4 copies of 28 for ShuffleNet's 112 in 4 groups,
        // 4 copies of 28 for the inverse (28 groups).
        assert_eq!((copies(112, 4).count, copies(112, 4).chans), (4, 28));
        assert_eq!((copies(112, 28).count, copies(112, 28).chans), (4, 28));
    }
}
