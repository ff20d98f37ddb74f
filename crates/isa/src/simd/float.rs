//! Bit-exact fp32 operations of the SIMD unit. All arithmetic is IEEE-754 binary32
//! with round-to-nearest-even and subnormals (no flush to zero; a multiply and an add
//! round apart except in the FMA instruction, which rounds once); every NaN result is
//! replaced by the canonical quiet NaN [`CANONICAL_NAN`].

/// The only NaN the SIMD unit produces.
pub const CANONICAL_NAN: u32 = 0x7FC0_0000;

/// Canonicalizes NaN results.
pub fn canon(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(CANONICAL_NAN)
    } else {
        x
    }
}

/// minNum with a defined sign of zero: a NaN operand yields the other operand;
/// for equal operands (including +0/-0) the result is -0 if either is -0.
pub fn fmin(a: f32, b: f32) -> f32 {
    pick(a, b, true)
}

/// maxNum with a defined sign of zero: for equal operands the result is +0 unless
/// both are -0.
pub fn fmax(a: f32, b: f32) -> f32 {
    pick(a, b, false)
}

fn pick(a: f32, b: f32, min: bool) -> f32 {
    if a.is_nan() {
        return canon(b);
    }
    if b.is_nan() {
        return a;
    }
    if a < b {
        return if min { a } else { b };
    }
    if b < a {
        return if min { b } else { a };
    }
    // Equal: only +0/-0 differ in bits.
    if min {
        f32::from_bits(a.to_bits() | b.to_bits())
    } else {
        f32::from_bits(a.to_bits() & b.to_bits())
    }
}

/// fp32 to int32: round half away from zero, saturate, NaN -> 0.
pub fn f2i(x: f32) -> i32 {
    x.round() as i32
}

/// fp32 to int32: round half to even, saturate, NaN -> 0.
pub fn f2i_even(x: f32) -> i32 {
    x.round_ties_even() as i32
}

/// FUSED_RELU_F: `min(max(f2i_even(fp32(src) * scale) + zero_point, lo), hi)`, the
/// product rounded once to fp32 (ONNX Runtime's `MlasRequantizeOutput`); like
/// FUSED_RELU, `lo > hi` gives `hi` (no panic on any encoding).
pub fn requant_even(src: i32, scale: f32, zero_point: i32, lo: i32, hi: i32) -> i32 {
    crate::arith::add_zero_point(f2i_even(canon(i2f(src) * scale)), zero_point, lo, hi)
}

/// int32 to fp32, round to nearest even.
pub fn i2f(x: i32) -> f32 {
    x as f32
}

/// ln(2) split for the exp range reduction: `LN2_HI` has few mantissa bits so that
/// `n * LN2_HI` is exact for |n| <= 255.
pub const LN2_HI: f32 = 0.693_359_4;
pub const LN2_LO: f32 = -2.121_944_4e-4;
pub const LOG2E: f32 = std::f32::consts::LOG2_E;
/// Taylor coefficients 1/k! for k = 2..=6, as f32.
pub const EXP_POLY: [f32; 5] = [0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0];

/// exp(x), defined by this exact sequence of fp32 operations:
/// 1. NaN -> canonical NaN; clamp x to [-87, 88].
/// 2. n = round_ties_even(x * LOG2E).
/// 3. r = (x - n*LN2_HI) - n*LN2_LO.
/// 4. p = 1 + r*(1 + r*(c2 + r*(c3 + r*(c4 + r*(c5 + r*c6))))) with c = EXP_POLY.
/// 5. result = p * 2^n (2^n built exactly from its exponent bits; n is in -126..=127).
pub fn fexp(x: f32) -> f32 {
    if x.is_nan() {
        return f32::from_bits(CANONICAL_NAN);
    }
    let x = x.clamp(-87.0, 88.0);
    let n = (x * LOG2E).round_ties_even();
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let [c2, c3, c4, c5, c6] = EXP_POLY;
    let p = 1.0 + r * (1.0 + r * (c2 + r * (c3 + r * (c4 + r * (c5 + r * c6)))));
    let two_n = f32::from_bits(((n as i32 + 127) as u32) << 23);
    canon(p * two_n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate_enough() {
        for i in -870..=880 {
            let x = i as f32 / 10.0;
            let got = fexp(x) as f64;
            let want = (x as f64).exp();
            assert!(
                ((got - want) / want).abs() < 1e-6,
                "exp({x}) = {got}, want {want}"
            );
        }
        assert_eq!(fexp(1000.0), fexp(88.0));
        assert_eq!(fexp(f32::NEG_INFINITY), fexp(-87.0));
        assert_eq!(fexp(f32::NAN).to_bits(), CANONICAL_NAN);
    }

    #[test]
    fn exp_bits_are_pinned() {
        // Guards the exact algorithm: any change to the sequence of operations shows.
        assert_eq!(fexp(0.0).to_bits(), 1.0f32.to_bits());
        assert_eq!(fexp(1.0).to_bits(), 0x402d_f854);
        assert_eq!(fexp(-2.5).to_bits(), 0x3da8_1c2e);
    }

    #[test]
    fn min_max_signed_zero_and_nan() {
        assert_eq!(fmin(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fmax(-0.0, 0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(fmin(f32::NAN, 2.0), 2.0);
        assert_eq!(fmax(3.0, f32::NAN), 3.0);
        assert_eq!(fmin(f32::NAN, f32::NAN).to_bits(), CANONICAL_NAN);
    }

    #[test]
    fn conversions() {
        assert_eq!(f2i(2.5), 3);
        assert_eq!(f2i(-2.5), -3);
        assert_eq!(f2i(f32::NAN), 0);
        assert_eq!(f2i(1e20), i32::MAX);
        assert_eq!(i2f(16_777_217), 16_777_216.0);
    }
}
