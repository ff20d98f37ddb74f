//! A pooled dot-product layer whose one tile would break the slice rule (docs/ISA.md
//! 4.1: every pooling window must lie inside one instruction's tile, so a pooled layer
//! is one tile of all its output pixels, and its slices cross output rows; at a large
//! stride over wide rows that breaks the rule). The dot product runs unpooled into a
//! temporary planar buffer with ordinary tiles (cut at rows by `seq_tiles.rs`), then
//! a depthwise 1x1 CONV with the pooling reads that buffer at stride 1, where a slice
//! spans at most 7 bytes.
//!
//! Bit-exact with the fused pooling: the pooling unit pools the SIMD output codes; the
//! depthwise CONV (weight 1, no bias, no padding) puts each code in its accumulator,
//! the identity program ([`crate::lower::simd::identity_program`]) returns it unchanged, and
//! its pooling unit pools the same codes with the same output zero point.

use crate::base::act::Act;
use crate::base::job::{tiles, DotOpcode, Job, JobKind, Loc};
use crate::base::params::weight_blocks;
use crate::base::walk::{LayerTiles, Walk};
use crate::error::Refusal;
use crate::lower::fields::{dot_base, out_fields};
use crate::lower::simd::identity_program;
use nnac_isa::{DotProduct, PoolKind};

/// Pushes the unpooled dot product `t` (its pooling fields say how to pool) into a
/// temporary buffer and the pooling CONV into the output `out` (at `bufs[2]`).
/// `bufs`: input, weights, output, bias, channel table of `t`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pool_apart(
    walk: &mut Walk<'_>,
    name: &str,
    opcode: DotOpcode,
    t: DotProduct,
    bufs: [Loc; 5],
    out: &Act,
    block: u32,
    mnemonic: &str,
) -> Result<(), Refusal> {
    let (oh, ow, c) = (t.out_h, t.out_w, t.out_c);
    let tmp_act = Act {
        h: oh,
        w: ow,
        c,
        pix_pitch: 1,
        row_pitch: ow,
        chan_pitch: oh * ow,
        ..out.clone()
    };
    let tmp = walk.new_buf(name, tmp_act.bytes());
    let mut dot = DotProduct {
        pool: PoolKind::None,
        pool_win: 0,
        pool_stride: 0,
        pool_count_pad: false,
        pool_pad_top: 0,
        pool_pad_left: 0,
        pool_pad_bottom: 0,
        pool_pad_right: 0,
        ..t.clone()
    };
    out_fields(&mut dot, &tmp_act)?;
    let cols = walk.hw.mac_cols;
    let dot_tiles = tiles(oh * ow, c, walk.tile_pixels, cols);
    let mut pool = DotProduct {
        out_h: oh,
        out_w: ow,
        out_c: c,
        kernel_h: 1,
        kernel_w: 1,
        groups: c,
        bias_en: false,
        pool: t.pool,
        pool_win: t.pool_win,
        pool_stride: t.pool_stride,
        pool_count_pad: t.pool_count_pad,
        pool_pad_top: t.pool_pad_top,
        pool_pad_left: t.pool_pad_left,
        pool_pad_bottom: t.pool_pad_bottom,
        pool_pad_right: t.pool_pad_right,
        ..dot_base(&tmp_act, identity_program(tmp_act.signed))?
    };
    out_fields(&mut pool, out)?;
    let ones = walk.param(name, &weight_blocks(c as usize, 1, cols as usize, |_, _| 1));
    let pool_tiles = tiles(oh * ow, c, oh * ow, cols);
    walk.out.layers.push(LayerTiles {
        layer: name.to_string(),
        mnemonic: mnemonic.into(),
        tiles: dot_tiles.len() + pool_tiles.len(),
    });
    walk.out.jobs.push(Job {
        node: name.to_string(),
        kind: JobKind::Dot {
            opcode,
            t: dot,
            bufs: [bufs[0], bufs[1], Loc::start(tmp), bufs[3], bufs[4]],
            block,
            w_group0: 0,
            tiles: dot_tiles,
        },
    });
    walk.out.jobs.push(Job {
        node: name.to_string(),
        kind: JobKind::Dot {
            opcode: DotOpcode::Conv,
            t: pool,
            bufs: [
                Loc::start(tmp),
                Loc::start(ones),
                bufs[2],
                Loc::start(ones),
                Loc::start(ones),
            ],
            block: cols,
            w_group0: 0,
            tiles: pool_tiles,
        },
    });
    Ok(())
}
