//! Channel concatenation becomes an NNA placement op: the producers write their
//! outputs into adjacent channel ranges of one buffer and no data moves. (The
//! quantizer gives every input the output's scale and zero point; the backend places
//! the producers.) Concats on other axes stay and become host ops.

use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NnaOp, Op};

pub fn lower_concat(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        let Op::Concat { axis } = g.node(id).op else {
            continue;
        };
        let ins = g.node_inputs(id);
        let rank = g.node(id).outputs[0].rank();
        if axis != 1 || rank < 2 || ins.iter().any(|&v| g.const_of(v).is_some()) {
            continue;
        }
        g.node_mut(id).op = Op::Nna(NnaOp::Concat { axis });
        let name = g.node(id).name.clone();
        ctx.note(
            &name,
            format!(
                "channel concat of {} inputs placed in one buffer",
                ins.len()
            ),
        );
    }
    Ok(())
}
