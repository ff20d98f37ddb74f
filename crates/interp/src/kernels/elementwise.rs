//! Elementwise ops: activations, Power, PRelu and the broadcasting binary ops. The
//! per-element formulas are the IR's own (`Activation::apply`, `BinaryOp::apply`);
//! each variant is dispatched once outside the loop so the loop body is monomorphic.

use super::broadcast::{zip_broadcast, zip_inplace_a};
use super::View;
use nnac_ir::{Activation, BinaryOp};
use rayon::prelude::*;

/// Elements per parallel task.
const TASK: usize = 1 << 15;

fn map_inplace(x: &mut [f32], f: impl Fn(f32) -> f32 + Sync) {
    x.par_chunks_mut(TASK).for_each(|c| {
        for v in c {
            *v = f(*v);
        }
    });
}

pub fn activation(act: Activation, x: &mut [f32]) {
    use Activation as A;
    match act {
        A::Relu => map_inplace(x, |v| A::Relu.apply(v)),
        A::LeakyRelu { alpha } => map_inplace(x, move |v| A::LeakyRelu { alpha }.apply(v)),
        A::Clip { min, max } => map_inplace(x, move |v| A::Clip { min, max }.apply(v)),
        A::Sigmoid => map_inplace(x, |v| A::Sigmoid.apply(v)),
        A::Tanh => map_inplace(x, |v| A::Tanh.apply(v)),
        A::HardSigmoid { alpha, beta } => {
            map_inplace(x, move |v| A::HardSigmoid { alpha, beta }.apply(v))
        }
        A::HardSwish => map_inplace(x, |v| A::HardSwish.apply(v)),
        A::Silu => map_inplace(x, |v| A::Silu.apply(v)),
    }
}

/// `(shift + scale * x) ^ power`.
pub fn power(power: f32, scale: f32, shift: f32, x: &mut [f32]) {
    if power == 1.0 {
        map_inplace(x, move |v| shift + scale * v);
    } else if power == 2.0 {
        map_inplace(x, move |v| {
            let t = shift + scale * v;
            t * t
        });
    } else {
        map_inplace(x, move |v| (shift + scale * v).powf(power));
    }
}

macro_rules! with_binary_fn {
    ($op:expr, $f:ident => $body:expr) => {
        match $op {
            BinaryOp::Add => {
                let $f = |a: f32, b: f32| BinaryOp::Add.apply(a, b);
                $body
            }
            BinaryOp::Sub => {
                let $f = |a: f32, b: f32| BinaryOp::Sub.apply(a, b);
                $body
            }
            BinaryOp::Mul => {
                let $f = |a: f32, b: f32| BinaryOp::Mul.apply(a, b);
                $body
            }
            BinaryOp::Div => {
                let $f = |a: f32, b: f32| BinaryOp::Div.apply(a, b);
                $body
            }
            BinaryOp::Max => {
                let $f = |a: f32, b: f32| BinaryOp::Max.apply(a, b);
                $body
            }
            BinaryOp::Min => {
                let $f = |a: f32, b: f32| BinaryOp::Min.apply(a, b);
                $body
            }
        }
    };
}

pub fn binary(op: BinaryOp, a: View<'_>, b: View<'_>, out_shape: &[usize]) -> Vec<f32> {
    with_binary_fn!(op, f => zip_broadcast(a, b, out_shape, f))
}

/// The binary op written into `a_buf`, which holds `a` and has the output shape.
pub fn binary_inplace(op: BinaryOp, a_buf: &mut [f32], shape: &[usize], b: View<'_>) {
    with_binary_fn!(op, f => zip_inplace_a(a_buf, shape, b, f))
}

/// `x < 0 ? slope * x : x` with the slope broadcast to `x`.
pub fn prelu(x: View<'_>, slope: View<'_>) -> Vec<f32> {
    zip_broadcast(x, slope, x.shape, |v, s| if v < 0.0 { s * v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activations_follow_the_ir_formulas() {
        let xs = [-3.0f32, -0.5, 0.0, 0.25, 4.0, 7.0];
        let acts = [
            Activation::Relu,
            Activation::LeakyRelu { alpha: 0.1 },
            Activation::Clip { min: 0.0, max: 6.0 },
            Activation::Sigmoid,
            Activation::Tanh,
            Activation::HardSigmoid {
                alpha: 0.2,
                beta: 0.5,
            },
            Activation::HardSwish,
            Activation::Silu,
        ];
        for act in acts {
            let mut v = xs.to_vec();
            activation(act, &mut v);
            let want: Vec<f32> = xs.iter().map(|&x| act.apply(x)).collect();
            assert_eq!(v, want, "{act:?}");
        }
        let mut v = vec![-1.0f32, 2.0, 3.0];
        activation(Activation::LeakyRelu { alpha: 0.5 }, &mut v);
        assert_eq!(v, [-0.5, 2.0, 3.0]);
    }

    #[test]
    fn power_and_prelu() {
        let mut v = vec![1.0f32, 2.0, 3.0];
        power(2.0, 2.0, 1.0, &mut v);
        assert_eq!(v, [9.0, 25.0, 49.0]);
        let mut v = vec![4.0f32, 9.0];
        power(0.5, 1.0, 0.0, &mut v);
        assert_eq!(v, [2.0, 3.0]);
        let x = [-1.0f32, 1.0, -2.0, 2.0];
        let s = [0.5f32, 0.25];
        let got = prelu(
            View {
                shape: &[1, 2, 2],
                data: &x,
            },
            View {
                shape: &[2, 1],
                data: &s,
            },
        );
        assert_eq!(got, [-0.5, 1.0, -0.5, 2.0]);
    }

    #[test]
    fn binary_ops_and_in_place_agree() {
        let a = [1.0f32, -2.0, 3.0, 8.0];
        let b = [2.0f32, 4.0];
        for op in [
            BinaryOp::Add,
            BinaryOp::Sub,
            BinaryOp::Mul,
            BinaryOp::Div,
            BinaryOp::Max,
            BinaryOp::Min,
        ] {
            let av = View {
                shape: &[2, 2],
                data: &a,
            };
            let bv = View {
                shape: &[2],
                data: &b,
            };
            let got = binary(op, av, bv, &[2, 2]);
            let want: Vec<f32> = (0..4).map(|i| op.apply(a[i], b[i % 2])).collect();
            assert_eq!(got, want, "{op:?}");
            let mut buf = a.to_vec();
            binary_inplace(op, &mut buf, &[2, 2], bv);
            assert_eq!(buf, want, "{op:?} in place");
        }
    }
}
