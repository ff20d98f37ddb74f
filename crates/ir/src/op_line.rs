//! One op on its own as text: `mnemonic{attributes}` in the syntax of the graph text
//! form ([`crate::op_table`]), e.g. `softmax{axis=1}`. The container's host-op records
//! carry ops this way; [`parse_op`] reads back exactly what [`op_to_text`] writes.

use crate::attr::Rec;
use crate::lex::Cur;
use crate::tagged::{decode_tag, Tagged};
use crate::{Op, ParseError};

/// The op as `mnemonic` or `mnemonic {k=v, ...}` (no operands, no types).
pub fn op_to_text(op: &Op) -> String {
    let (mnemonic, rec) = op.encode();
    let mut out = mnemonic.to_string();
    if !rec.entries.is_empty() {
        rec.write(&mut out);
    }
    out
}

/// Parses the text of one op; errors give the column (line 1).
pub fn parse_op(text: &str) -> Result<Op, ParseError> {
    let mut c = Cur {
        s: text,
        pos: 0,
        line: 1,
    };
    c.skip_ws();
    let op_pos = c.pos;
    let mnemonic = c.word()?;
    c.skip_ws();
    let mut rec = if c.peek() == Some('{') {
        c.record(0)?
    } else {
        Rec::default()
    };
    rec.pos = op_pos;
    let op = decode_tag::<Op>(&mnemonic, &rec).map_err(|e| c.decode_err(e))?;
    c.end()?;
    Ok(op)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CoordTransform, NearestMode, PoolKind, ResizeAttrs, ResizeMode};

    #[test]
    fn ops_round_trip() {
        let ops = [
            Op::Softmax { axis: 1 },
            Op::Lrn {
                size: 5,
                alpha: 1e-4,
                beta: 0.75,
                bias: 1.0,
            },
            Op::Transpose {
                perm: vec![0, 2, 1, 3, 4],
            },
            Op::Slice {
                axes: vec![1, 3],
                starts: vec![2, 0],
                ends: vec![5, 4],
            },
            Op::StridedSlice {
                axes: vec![2, 3],
                starts: vec![1, 0],
                ends: vec![8, 8],
                steps: vec![2, 2],
            },
            Op::Reshape {
                shape: vec![1, 2, 3],
            },
            Op::GlobalPool(PoolKind::Max),
            Op::Resize(ResizeAttrs {
                mode: ResizeMode::Nearest(NearestMode::Floor),
                coord: CoordTransform::Asymmetric,
                sizes: vec![1, 3, 8, 8],
                scales: vec![1.0, 1.0, 2.0, 2.0],
            }),
            Op::Identity,
        ];
        for op in ops {
            let t = op_to_text(&op);
            assert_eq!(parse_op(&t).unwrap(), op, "{t}");
            assert_eq!(parse_op(&format!("  {t} ")).unwrap(), op, "{t}");
        }
        assert_eq!(op_to_text(&Op::Softmax { axis: 1 }), "softmax{axis=1}");
    }

    #[test]
    fn bad_text_is_an_error_with_a_column() {
        for bad in [
            "",
            "softmax{axis=x}",
            "softmax{axis=1} extra",
            "frob",
            "softmax{",
        ] {
            let e = parse_op(bad).unwrap_err();
            assert_eq!(e.line, 1, "{bad}: {e}");
        }
        let e = parse_op("softmax{axes=1}").unwrap_err();
        assert!(e.col >= 1, "{e}");
    }
}
