//! Quantizes an ELTWISE op.
//! - add and max: both inputs are rescaled to a common fixed-point scale
//!   (`2 * max(s_a, s_b) / 2^20` per unit), combined, and the result requantized to the
//!   output. With 8-bit inputs each rescaled term is below `255 * 2^19`, so the sum
//!   stays below the 30-bit accumulator limit.
//! - mul: both inputs enter as their codes minus the zero point (multiplier 1), so
//!   the accumulator holds the exact product `(a_q - zp_a) * (b_q - zp_b)` (at most
//!   `255^2`) in units of `s_a * s_b`, which the epilogue requantizes.
//! - `RequantRule::OnnxRuntime`: an add of one shape packs both differences into the
//!   accumulator and runs QLinearAdd (`Requant::FmaAdd`); a product requantizes as
//!   QLinearMul (`Requant::Even`, scale `s_a * s_b / s_y`).

use super::params::{multiplier, scale_zp};
use super::requant;
use crate::{PassError, RequantRule};
use nnac_ir::{EltwiseKind, EltwiseRequant, Graph, NnaOp, NodeId, Op, Requant};

/// Fractional bits of the common scale.
pub const ELTWISE_SHIFT: i32 = 20;

/// `shifts`: ONNX Runtime's codes minus the NNA's for input a, input b and the output
/// (`FixedAct::onnx_code_shift`), used by `RequantRule::OnnxRuntime`.
pub fn quantize_eltwise(
    g: &mut Graph,
    id: NodeId,
    rule: RequantRule,
    shifts: [i32; 3],
) -> Result<(), PassError> {
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
    let same_shape = g.value_type(ins[0]).shape == g.value_type(ins[1]).shape;
    e.epilogue.requant = Some(match (rule, e.kind, rq) {
        (
            RequantRule::OnnxRuntime,
            EltwiseKind::Add,
            Requant::Int {
                zero_point, lo, hi, ..
            },
        ) if same_shape => {
            e.inputs = Some(EltwiseRequant::FMA_ADD);
            let (_, zp_a) = scale_zp(g.value_type(ins[0]));
            let (_, zp_b) = scale_zp(g.value_type(ins[1]));
            fma_add(sa, sb, s_out, [zp_a, zp_b, zero_point], shifts, lo, hi)
        }
        // QLinearMul (`qlmul.cpp`): the exact product of the two differences times
        // `s_a * s_b / s_y` in fp32, rounded half to even, broadcast or not.
        (RequantRule::OnnxRuntime, EltwiseKind::Mul, rq) => {
            requant::even(&rq, vec![sa * sb / s_out; c]).unwrap_or(rq)
        }
        (_, _, rq) => rq,
    });
    g.node_mut(id).op = Op::Nna(NnaOp::Eltwise(e));
    Ok(())
}

/// ONNX Runtime's QLinearAdd (`qladd_avx2.cpp`) on the NNA's codes: its ratios
/// `s_a / s_y`, `s_b / s_y` and `fixed = z_y - (r_a z_a + r_b z_b)` in fp32 with the
/// zero points of ONNX Runtime's codes (`zp + shift`). The C++ compiler contracts
/// `r_a z_a + r_b z_b` into `fma(r_a, z_a, r_b z_b)`: with the two products rounded
/// apart, MobileNet-v2's uint8 codes were 98.8% exact, with the contraction 100%
/// (docs/QUANTIZATION.md).
fn fma_add(
    sa: f32,
    sb: f32,
    sy: f32,
    zps: [i32; 3],
    shifts: [i32; 3],
    lo: i32,
    hi: i32,
) -> Requant {
    let [za, zb, zy] = [0, 1, 2].map(|i| zps[i] + shifts[i]);
    let (ratio_a, ratio_b) = (sa / sy, sb / sy);
    let fixed = zy as f32 - ratio_a.mul_add(za as f32, ratio_b * zb as f32);
    Requant::FmaAdd {
        ratio_a,
        ratio_b,
        fixed,
        code_a: za,
        code_b: zb,
        offset: -shifts[2],
        lo,
        hi,
    }
}
