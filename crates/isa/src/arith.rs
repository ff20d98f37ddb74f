//! Exact integer arithmetic shared by the simulator and the reference interpreter:
//! accumulator wrap, rounding shifts, requantization, saturation, ELTWISE combine.
//! docs/ISA.md ("Arithmetic") states the same definitions.

use crate::bits;
use crate::layouts::EltOp;

/// Accumulator width of the MAC array cells.
pub const ACC_BITS: u32 = 30;

/// Wraps an exact sum to a `acc_bits`-bit two's-complement accumulator.
/// Returns the wrapped value and whether it differs from the exact one (an overflow,
/// which the simulator counts and the compiler must rule out).
#[inline]
pub fn wrap_acc(exact: i64, acc_bits: u32) -> (i32, bool) {
    let w = bits::wrap_signed(exact, acc_bits);
    (w as i32, w != exact)
}

/// `floor((v + 2^(shift-1)) / 2^shift)`, or `v` for `shift` = 0, in `v`'s type
/// (`one` is 1 of that type): the one statement of the rounding shift.
macro_rules! round_shift {
    ($v:expr, $shift:expr, $one:expr) => {
        if $shift == 0 {
            $v
        } else {
            ($v + ($one << ($shift - 1))) >> $shift
        }
    };
}

/// `v / 2^shift` rounded to nearest, ties toward +infinity:
/// `floor((v + 2^(shift-1)) / 2^shift)`; `shift` = 0 returns `v`. Exact (i128).
#[inline]
pub fn rounding_shift_right(v: i128, shift: u32) -> i128 {
    round_shift!(v, shift, 1i128)
}

/// `rounding_shift_right(x * multiplier, shift)`, exact.
#[inline]
pub fn scale(x: i64, multiplier: i32, shift: u32) -> i128 {
    // The same value in i64 when it cannot overflow there (every 8-bit code and
    // accumulator): |x| < 2^31 and |multiplier| <= 2^31 give |x * multiplier| < 2^62,
    // and the rounding term 2^(shift-1) <= 2^62 for shift <= 63.
    if shift <= 63 && x.unsigned_abs() < 1 << 31 {
        return i128::from(round_shift!(x * i64::from(multiplier), shift, 1i64));
    }
    rounding_shift_right(i128::from(x) * i128::from(multiplier), shift)
}

/// Saturates to the 8-bit output type; returns the output byte.
#[inline]
pub fn saturate8(v: i64, signed: bool) -> u8 {
    if signed {
        v.clamp(-128, 127) as i8 as u8
    } else {
        v.clamp(0, 255) as u8
    }
}

/// The value of an 8-bit code.
#[inline]
pub fn code_value(byte: u8, signed: bool) -> i32 {
    if signed {
        byte as i8 as i32
    } else {
        byte as i32
    }
}

/// The last step of FUSED_RELU_F, and of FUSED_RELU by `1 >> 0` after F2I / F2IE:
/// `min(max(y + zero_point, lo), hi)`, exact, as FUSED_RELU clamps (`lo > hi` gives
/// `hi`, no panic on any encoding).
pub fn add_zero_point(y: i32, zero_point: i32, lo: i32, hi: i32) -> i32 {
    (i64::from(y) + i64::from(zero_point))
        .max(i64::from(lo))
        .min(i64::from(hi)) as i32
}

/// Clamps to the int32 range.
#[inline]
pub fn sat_i32(v: i128) -> i32 {
    v.clamp(i32::MIN as i128, i32::MAX as i128) as i32
}

/// ELTWISE: combines the rescaled inputs exactly (before the 30-bit wrap); every
/// result fits in i64 (a product of two i32 values is below 2^62 in magnitude).
#[inline]
pub fn eltwise_combine(op: EltOp, a: i32, b: i32) -> i64 {
    let (a, b) = (i64::from(a), i64::from(b));
    match op {
        EltOp::Add => a + b,
        EltOp::Mul => a * b,
        EltOp::Max => a.max(b),
    }
}

/// ELTWISE input rescale: `sat_i32(rounding_shift_right((code - zero) * mult, shift))`.
#[inline]
pub fn eltwise_rescale(code: i32, zero: i32, mult: i32, shift: u32) -> i32 {
    sat_i32(scale(i64::from(code - zero), mult, shift))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_half_up() {
        assert_eq!(rounding_shift_right(5, 1), 3); // 2.5 -> 3
        assert_eq!(rounding_shift_right(-5, 1), -2); // -2.5 -> -2
        assert_eq!(rounding_shift_right(-7, 2), -2); // -1.75 -> -2
        assert_eq!(rounding_shift_right(7, 0), 7);
    }

    #[test]
    fn scale_equals_the_i128_definition() {
        let xs = [
            0,
            1,
            -1,
            255,
            -510,
            (1 << 29) - 1,
            -(1 << 29),
            (1 << 31) - 1,
            -(1 << 31) + 1,
            -(1 << 31),
            1 << 31,
            i64::MAX,
            i64::MIN,
        ];
        let ms = [0, 1, -1, 1 << 30, i32::MAX, i32::MIN, -1_234_567_891];
        for &x in &xs {
            for &m in &ms {
                for shift in [0, 1, 2, 17, 31, 32, 62, 63] {
                    let want = rounding_shift_right(i128::from(x) * i128::from(m), shift);
                    assert_eq!(scale(x, m, shift), want, "{x} * {m} >> {shift}");
                }
            }
        }
    }

    #[test]
    fn accumulator_wraps_at_30_bits() {
        assert_eq!(wrap_acc((1 << 29) - 1, 30), ((1 << 29) - 1, false));
        assert_eq!(wrap_acc(1 << 29, 30), (-(1 << 29), true));
        assert_eq!(wrap_acc(-(1 << 29), 30), (-(1 << 29), false));
    }

    #[test]
    fn saturation() {
        assert_eq!(saturate8(300, true), 127);
        assert_eq!(saturate8(-300, true), 0x80);
        assert_eq!(saturate8(-1, false), 0);
        assert_eq!(saturate8(256, false), 255);
        assert_eq!(code_value(0xFF, true), -1);
        assert_eq!(code_value(0xFF, false), 255);
    }

    #[test]
    fn eltwise() {
        assert_eq!(eltwise_rescale(10, 2, 1 << 20, 20), 8);
        assert_eq!(eltwise_combine(EltOp::Max, -3, 2), 2);
        assert_eq!(eltwise_combine(EltOp::Mul, -3, 2), -6);
        // The rescale saturates to i32; the combine is exact beyond it.
        assert_eq!(eltwise_rescale(255, -128, i32::MAX, 0), i32::MAX);
        assert_eq!(eltwise_rescale(-128, 127, i32::MAX, 0), i32::MIN);
        let (max, min) = (i32::MAX, i32::MIN);
        assert_eq!(eltwise_combine(EltOp::Add, max, max), (1i64 << 32) - 2);
        assert_eq!(eltwise_combine(EltOp::Add, min, min), -(1i64 << 32));
        assert_eq!(eltwise_combine(EltOp::Mul, min, min), 1i64 << 62);
        assert_eq!(
            eltwise_combine(EltOp::Mul, min, max),
            -(1i64 << 62) + (1i64 << 31)
        );
        assert_eq!(eltwise_combine(EltOp::Max, min, max), i64::from(max));
    }
}
