//! Quantizes an ELTWISE op.
//! - add and max: both inputs are rescaled to a common fixed-point scale
//!   (`2 * max(s_a, s_b) / 2^20` per unit), combined, and the result requantized to the
//!   output. With 8-bit inputs each rescaled term is below `255 * 2^19`, so the sum
//!   stays below the 30-bit accumulator limit.
//! - mul: both inputs enter as their codes minus the zero point (multiplier 1), so
//!   the accumulator holds the exact product `(a_q - zp_a) * (b_q - zp_b)` (at most
//!   `255^2`) in units of `s_a * s_b`, which the epilogue requantizes.

use super::params::{multiplier, scale_zp};
use super::requant;
use crate::PassError;
use nnac_ir::{EltwiseKind, EltwiseRequant, Graph, NnaOp, NodeId, Op};

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
    let (unit, real_a, real_b) = match e.kind {
        EltwiseKind::Add | EltwiseKind::Max => {
            let unit = 2.0 * f64::from(sa.max(sb)) / 2f64.powi(ELTWISE_SHIFT);
            (unit, f64::from(sa) / unit, f64::from(sb) / unit)
        }
        EltwiseKind::Mul => (f64::from(sa) * f64::from(sb), 1.0, 1.0),
    };
    let m = |real: f64| {
        multiplier(real).ok_or_else(|| {
            PassError::node("quantize", &name, "eltwise input multiplier out of range")
        })
    };
    e.inputs = Some(EltwiseRequant {
        a: m(real_a)?,
        b: m(real_b)?,
    });
    let c = out_t.shape.get(1).copied().unwrap_or(1);
    let rq = requant::build(
        e.epilogue.act.as_ref(),
        &vec![unit; c],
        s_out,
        zp_out,
        out_t.dtype,
    )
    .map_err(|err| PassError::node("quantize", &name, err.to_string()))?;
    e.epilogue.requant = Some(rq);
    g.node_mut(id).op = Op::Nna(NnaOp::Eltwise(e));
    Ok(())
}
