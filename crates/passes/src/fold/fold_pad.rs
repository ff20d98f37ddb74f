//! Folds an explicit zero Pad of the spatial axes into the convolutions that read it
//! (TensorFlow exports pad before a stride-2 convolution with "valid" padding), so the
//! pad is the convolution's own zero padding instead of a host op and a DRAM round
//! trip. The Pad must be constant-mode with value 0, pad only H and W of a 4-D
//! tensor, and every reader must be a Conv reading it as its data input; each reader's
//! pads grow by the Pad's (begins then ends, as both store them). In the quantized
//! graph the convolution's padding reads the input's zero point, the code of 0.0, so
//! the fold is exact there too.

use crate::{PassCtx, PassError};
use nnac_ir::{Graph, NodeId, Op, Value};

pub fn fold_pad(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        let Op::Pad { pads, value } = &g.node(id).op else {
            continue;
        };
        let x = g.node_inputs(id)[0];
        // [n, c, h, w] begins then ends; only h and w may be padded.
        let (&[0, 0, t, l, 0, 0, b, r], 0.0) = (pads.as_slice(), *value) else {
            continue;
        };
        let v = Value::new(id, 0);
        let users = g.users(v);
        let convs = !users.is_empty()
            && !g.is_output(v)
            && users.iter().all(|&(u, slot)| {
                slot == 0 && matches!(&g.node(u).op, Op::Conv(a) if a.pads.len() == 4)
            });
        if !convs || g.value_type(x).shape.len() != 4 {
            continue;
        }
        // The readers' new pads (none if a sum overflows: the pad then stays).
        let grown: Option<Vec<(NodeId, Vec<usize>)>> = users
            .iter()
            .map(|&(u, _)| match &g.node(u).op {
                Op::Conv(a) => a
                    .pads
                    .iter()
                    .zip([t, l, b, r])
                    .map(|(p, extra)| p.checked_add(extra))
                    .collect::<Option<Vec<usize>>>()
                    .map(|pads| (u, pads)),
                _ => None,
            })
            .collect();
        let Some(grown) = grown else {
            continue;
        };
        for (u, pads) in grown {
            if let Op::Conv(a) = &mut g.node_mut(u).op {
                a.pads = pads;
            }
        }
        let name = g.node(id).name.clone();
        g.replace_uses(v, x);
        g.remove_node(id);
        ctx.note(
            &name,
            format!(
                "zero pad [{t}, {l}, {b}, {r}] folded into {} conv(s)",
                users.len()
            ),
        );
    }
    Ok(())
}
