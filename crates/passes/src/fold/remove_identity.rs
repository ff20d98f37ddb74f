//! Removes `Identity` nodes (ONNX Identity, Dropout at inference, Caffe Dropout/Split
//! arrive as Identity): their users read the input directly.

use crate::util::bypass;
use crate::{PassCtx, PassError};
use nnac_ir::{Graph, Op};

pub fn remove_identity(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    for id in g.node_ids() {
        if g.node(id).op != Op::Identity {
            continue;
        }
        let ins = g.node_inputs(id);
        let [x] = ins.as_slice() else {
            return Err(PassError::node(
                "remove_identity",
                &g.node(id).name,
                "identity without exactly one input",
            ));
        };
        let name = g.node(id).name.clone();
        bypass(g, id, *x);
        ctx.note(&name, "removed");
    }
    Ok(())
}
