//! ONNX element types (`TensorProto.DataType`) and their IR counterparts.

use nnac_ir::DType;

pub const FLOAT: i32 = 1;
pub const UINT8: i32 = 2;
pub const INT8: i32 = 3;
pub const UINT16: i32 = 4;
pub const INT16: i32 = 5;
pub const INT32: i32 = 6;
pub const INT64: i32 = 7;
pub const BOOL: i32 = 9;
pub const FLOAT16: i32 = 10;
pub const DOUBLE: i32 = 11;
pub const UINT32: i32 = 12;
pub const UINT64: i32 = 13;
pub const BFLOAT16: i32 = 16;

/// The ONNX name of an element type, for messages.
pub fn name(elem: i32) -> String {
    let known = [
        (FLOAT, "float"),
        (UINT8, "uint8"),
        (INT8, "int8"),
        (UINT16, "uint16"),
        (INT16, "int16"),
        (INT32, "int32"),
        (INT64, "int64"),
        (8, "string"),
        (BOOL, "bool"),
        (FLOAT16, "float16"),
        (DOUBLE, "double"),
        (UINT32, "uint32"),
        (UINT64, "uint64"),
        (14, "complex64"),
        (15, "complex128"),
        (BFLOAT16, "bfloat16"),
    ];
    known
        .iter()
        .find(|(c, _)| *c == elem)
        .map_or_else(|| format!("element type {elem}"), |(_, n)| n.to_string())
}

/// The IR type a runtime value of this ONNX type becomes (floats become f32).
pub fn ir_dtype(elem: i32) -> Option<DType> {
    match elem {
        FLOAT | FLOAT16 | DOUBLE | BFLOAT16 => Some(DType::F32),
        INT8 => Some(DType::I8),
        UINT8 => Some(DType::U8),
        INT32 => Some(DType::I32),
        INT64 => Some(DType::I64),
        _ => None,
    }
}

/// Whether a `Cast` target is a floating-point type.
pub fn is_float(elem: i32) -> bool {
    matches!(elem, FLOAT | FLOAT16 | DOUBLE | BFLOAT16)
}

/// IEEE 754 half precision bits to f32 (exact).
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exp = u32::from((bits >> 10) & 0x1f);
    let man = u32::from(bits & 0x3ff);
    let magnitude = match (exp, man) {
        (0, 0) => 0,
        // Subnormal: value = man * 2^-24, exactly representable in f32.
        (0, m) => {
            let v = m as f32 * f32::powi(2.0, -24);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => 0xff << 23,
        (0x1f, m) => (0xff << 23) | (m << 13),
        (e, m) => ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(sign | magnitude)
}

/// bfloat16 bits to f32 (exact).
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversion() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert_eq!(f16_to_f32(0x8001), -5.960_464_5e-8);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
    }
}
