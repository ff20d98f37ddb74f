//! Evaluates every node whose inputs are all constants (shape arithmetic left by the
//! importers, constant subgraphs) and replaces it by a constant.

use crate::float_eval::eval_op;
use crate::util::bypass;
use crate::{PassCtx, PassError};
use nnac_ir::{DType, Graph, Op};

pub fn fold_constants(g: &mut Graph, ctx: &mut PassCtx) -> Result<(), PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("fold_constants", &e.node, e.msg))?;
    for id in order {
        let node = g.node(id);
        if matches!(node.op, Op::Input | Op::Constant(_) | Op::Nna(_)) || node.outputs.len() != 1 {
            continue;
        }
        let ins = g.node_inputs(id);
        if ins.is_empty() {
            continue;
        }
        let Some(operands) = ins
            .iter()
            .map(|&v| g.const_of(v).cloned())
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        if operands.iter().any(|t| t.dtype() != DType::F32) || node.outputs[0].dtype != DType::F32 {
            continue; // integer shape tensors are the importers' business
        }
        let name = node.name.clone();
        let op = node.op.clone();
        let t = eval_op(&op, &operands, &format!("folding constant node '{name}'"))?;
        let fresh = g.fresh_name(&format!("{name}.folded"));
        let c = g.add_constant(fresh, t);
        bypass(g, id, c);
        ctx.note(&name, format!("{} of constants folded", op.mnemonic()));
    }
    g.remove_dead();
    Ok(())
}
