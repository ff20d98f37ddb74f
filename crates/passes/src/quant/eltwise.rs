//! Quantizes an ELTWISE add: both inputs are rescaled to a common fixed-point scale
//! (`2 * max(s_a, s_b) / 2^20` per unit), added, and the sum requantized to the output.
//! With 8-bit inputs each rescaled term is below `255 * 2^19`, so the sum stays below
//! the 30-bit accumulator limit.

use super::params::{multiplier, scale_zp};
use super::requant;
use crate::PassError;
use nnac_ir::{EltwiseRequant, Graph, NnaOp, NodeId, Op};

/// Fractional bits of the common scale.
pub const ELTWISE_SHIFT: i32 = 20;

pub fn quantize_eltwise(g: &mut Graph, id: NodeId) -> Result<(), PassError> {
    let name = g.node(id).name.clone();
    let Op::Nna(NnaOp::Eltwise(mut e)) = g.node(id).op.clone() else {
        unreachable!("caller matched an eltwise")
    };
    let ins = g.node_inputs(id);
    let (sa, _) = scale_zp(g.value_type(ins[0]));
    let (sb, _) = scale_zp(g.value_type(ins[1]));
    let out_t = g.node(id).outputs[0].clone();
    let (s_out, zp_out) = scale_zp(&out_t);
    let twice_max = 2.0 * f64::from(sa.max(sb));
    let unit = twice_max / 2f64.powi(ELTWISE_SHIFT);
    let m = |s: f32| {
        multiplier(f64::from(s) / unit).ok_or_else(|| {
            PassError::node("quantize", &name, "eltwise input multiplier out of range")
        })
    };
    e.inputs = Some(EltwiseRequant {
        a: m(sa)?,
        b: m(sb)?,
    });
    let c = out_t.shape.get(1).copied().unwrap_or(1);
    let rq = requant::build(
        e.epilogue.act.as_ref(),
        &vec![unit; c],
        s_out,
        zp_out,
        out_t.dtype,
    )
    .map_err(|err| PassError::node("quantize", &name, err))?;
    e.epilogue.requant = Some(rq);
    g.node_mut(id).op = Op::Nna(NnaOp::Eltwise(e));
    Ok(())
}
