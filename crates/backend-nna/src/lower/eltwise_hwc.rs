//! An ELTWISE whose A operand is stored HWC (a squeeze-and-excitation product: its
//! map is also read by a global average pool, `gap.rs`), whose B is one value per
//! channel broadcast over the pixels (the gate) and whose output is planar runs over
//! the elements in A's memory order instead of the output's.
//!
//! The SIMD unit processes a tile as rows of at most 96 consecutive "pixels" of one
//! "channel" (docs/ISA.md 5, ELTWISE). Over the real channels and pixels, a row of
//! an HWC operand gathers 96 bytes `C` apart: one load per `256 / C` pixels, 1 to 4
//! cycles per row (docs/PERFORMANCE.md 1.5). Described instead as one "channel" of
//! `H * W` "rows" of `C` "pixels" (row = real pixel, pixel = real channel), A is read
//! contiguously (one load per row), the gate as the same `C` bytes for every row (row
//! pitch 0) and the planar output is stored with pixel pitch `H * W`: the write path
//! takes scattered bytes at the same rate. Every element gets the same arithmetic
//! (the epilogue's channel entry is the same for every channel, which is checked), so
//! the program computes the same bytes.

use crate::base::act::Act;
use nnac_isa::Eltwise;

/// `t` (the ELTWISE over the real geometry of `a`, `b`, `out`) described over A's
/// memory order, or `None` when the operands do not have the layouts above or the
/// channel entries differ.
pub(crate) fn over_memory_order(
    t: &Eltwise,
    a: &Act,
    b: &Act,
    out: &Act,
    entries: &[[i32; 4]],
) -> Option<Eltwise> {
    let hwc_dense = a.chan_pitch == 1 && a.pix_pitch == a.c && a.row_pitch == a.w * a.c;
    let planar_dense =
        out.pix_pitch == 1 && out.row_pitch == out.w && out.chan_pitch == out.h * out.w;
    let same_entries = entries.windows(2).all(|e| e[0] == e[1]);
    let rows = a.h.checked_mul(a.w)?;
    let fits = rows <= u32::from(u16::MAX) && a.c > 1;
    (b.broadcast_over(a) && hwc_dense && planar_dense && same_entries && fits && a.c == out.c).then(
        || Eltwise {
            h: rows,
            w: a.c,
            c: 1,
            a_row_pitch: a.pix_pitch,
            a_pix_pitch: a.chan_pitch,
            a_chan_pitch: 0,
            b_row_pitch: 0,
            b_pix_pitch: b.chan_pitch,
            b_chan_pitch: 0,
            out_row_pitch: out.pix_pitch,
            out_pix_pitch: out.chan_pitch,
            out_chan_pitch: 0,
            ..t.clone()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(h: u32, w: u32, c: u32, hwc: bool) -> Act {
        let (pix, row, chan) = if hwc { (c, w * c, 1) } else { (1, w, h * w) };
        Act {
            h,
            w,
            c,
            pix_pitch: pix,
            row_pitch: row,
            chan_pitch: chan,
            signed: false,
            zero_point: 0,
            scale: 1.0,
            rank: 4,
        }
    }

    /// A 7 x 5 x 120 HWC map, its gate and the planar product.
    fn se_operands() -> [Act; 3] {
        [
            act(7, 5, 120, true),
            act(1, 1, 120, false),
            act(7, 5, 120, false),
        ]
    }

    #[test]
    fn an_se_product_runs_in_the_hwc_operands_order() {
        let [a, b, out] = se_operands();
        let e = [[1, 2, 3, 4]; 120];
        let t = over_memory_order(&Eltwise::default(), &a, &b, &out, &e).unwrap();
        assert_eq!((t.h, t.w, t.c), (35, 120, 1));
        // Element (pixel q, channel k): A at q*120 + k, gate at k, output at k*35 + q.
        assert_eq!((t.a_row_pitch, t.a_pix_pitch), (120, 1));
        assert_eq!((t.b_row_pitch, t.b_pix_pitch), (0, 1));
        assert_eq!((t.out_row_pitch, t.out_pix_pitch), (1, 35));
    }

    #[test]
    fn other_layouts_or_entries_keep_the_plain_order() {
        let [a, b, out] = se_operands();
        let mut e = vec![[1, 2, 3, 4]; 120];
        let t = Eltwise::default();
        assert!(over_memory_order(&t, &act(7, 5, 120, false), &b, &out, &e).is_none());
        assert!(over_memory_order(&t, &a, &act(7, 5, 120, false), &out, &e).is_none());
        assert!(over_memory_order(&t, &a, &b, &act(7, 5, 120, true), &e).is_none());
        e[7][0] = 9;
        assert!(over_memory_order(&t, &a, &b, &out, &e).is_none());
    }
}
