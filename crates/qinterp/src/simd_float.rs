//! The fp32 SIMD sequences of the activations that need the float path, evaluated on
//! one value: the quantized reference interpreter's side of the fp32 epilogue. They
//! are the exact operation sequences (docs/ISA.md fp32 semantics: IEEE binary32, round
//! to nearest even, each multiply and add rounded apart, canonical NaN) of the SIMD
//! programs that
//! nnac-backend-nna `simd.rs` emits; the backend's `tests/simd_epilogue.rs` runs those
//! programs on the ISA's SIMD executor against this code bit for bit.
//!
//! - sigmoid(x)      = 1 / (1 + exp(-x))
//! - tanh(x)         = (1 - e) / (1 + e) with e = exp(-2x)
//! - hard_sigmoid(x) = min(max(alpha * x + beta, 0), 1)
//! - hard_swish(x)   = x * min(max(x * (1/6) + 0.5, 0), 1)
//! - silu(x)         = x / (1 + exp(-x))
//! - relu, leaky, clip on the float path: max/min/select.

use nnac_ir::Activation;
use nnac_isa::simd::float::{canon, fexp, fmax, fmin};

pub fn activation(a: &Activation, x: f32) -> f32 {
    match *a {
        Activation::Sigmoid => canon(1.0 / canon(1.0 + fexp(canon(-x)))),
        Activation::Tanh => {
            let e = fexp(canon(-2.0 * x));
            canon(canon(1.0 - e) / canon(1.0 + e))
        }
        Activation::HardSigmoid { alpha, beta } => hard_sigmoid(x, alpha, beta),
        Activation::HardSwish => canon(x * hard_sigmoid(x, 1.0 / 6.0, 0.5)),
        Activation::Silu => canon(x / canon(1.0 + fexp(canon(-x)))),
        Activation::Relu => fmax(x, 0.0),
        Activation::LeakyRelu { alpha } => {
            if x < 0.0 {
                canon(alpha * x)
            } else {
                x
            }
        }
        Activation::Clip { min, max } => fmin(fmax(x, min), max),
    }
}

fn hard_sigmoid(x: f32, alpha: f32, beta: f32) -> f32 {
    fmin(fmax(canon(canon(alpha * x) + beta), 0.0), 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_sequences_match_the_float_reference() {
        let acts = [
            Activation::Sigmoid,
            Activation::Tanh,
            Activation::HardSigmoid {
                alpha: 0.2,
                beta: 0.5,
            },
            Activation::HardSwish,
            Activation::Silu,
            Activation::LeakyRelu { alpha: 0.1 },
            Activation::Clip { min: 0.0, max: 6.0 },
        ];
        for a in acts {
            for i in -400..=400 {
                let x = i as f32 / 37.0;
                let (got, want) = (activation(&a, x), a.apply(x));
                assert!(
                    (got - want).abs() <= 2e-6 * want.abs().max(1.0),
                    "{a:?}({x}) = {got}, want {want}"
                );
            }
        }
    }
}
