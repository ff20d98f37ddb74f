//! The SIMD epilogue of a layer: FUSED_RELU with the per-channel multiplier (C0) and
//! shift (C1) from the channel table (docs/ISA.md sections 4 and 7).

use nnac_ir::{Epilogue, Multiplier, Requant};
use nnac_isa::simd::{Requant as FusedRelu, SimdInstr};

/// The integer requantization of an epilogue: the FUSED_RELU instruction and the
/// `(C0, C1)` pair of every channel. Float requantization is not supported yet.
pub fn int_requant(e: &Epilogue, channels: usize) -> Result<(SimdInstr, Vec<[i32; 2]>), String> {
    match e.requant.as_ref() {
        None => Err("epilogue is not quantized".into()),
        Some(Requant::Float { .. }) => Err("float (fp32 SIMD) requantization".into()),
        Some(Requant::Int {
            mult,
            zero_point,
            lo,
            hi,
        }) => {
            if mult.len() != channels {
                return Err(format!(
                    "{} multipliers for {channels} channels",
                    mult.len()
                ));
            }
            let i16_of = |v: i32, what: &str| {
                i16::try_from(v).map_err(|_| format!("requant {what} {v} out of int16"))
            };
            let fr = FusedRelu {
                dst: 0,
                src: 0,
                per_channel: true,
                shift: 0,
                act_min: i16_of(*lo, "lo")?,
                act_max: i16_of(*hi, "hi")?,
                zero_point: i16_of(*zero_point, "zero point")?,
                multiplier: 0,
            };
            let pairs = mult
                .iter()
                .map(|&Multiplier { mult, shift }| [mult, i32::from(shift)])
                .collect();
            Ok((SimdInstr::FusedRelu(fr), pairs))
        }
    }
}
