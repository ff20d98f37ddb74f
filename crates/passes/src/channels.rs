//! Which output channel each element of a dot product's weight tensor belongs to, as
//! a layout rather than a per-element closure: per-channel work (folding a scale,
//! quantizing) then runs over contiguous channel blocks, in parallel where it pays.

use nnac_ir::Op;
use std::borrow::Cow;

/// The output-channel layout of a dot product's weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightChannels {
    /// Channel `c` owns the contiguous block `[c * len, (c + 1) * len)`: Conv
    /// `[M, C/g, k...]`, Gemm with `trans_b` `[N, K]`.
    Blocks { len: usize },
    /// Element `i` belongs to channel `i % n`: Gemm without `trans_b` `[K, N]`.
    Strided { n: usize },
    /// ConvTranspose `[C, M/g, k...]` with `cg = C / g` input channels per group:
    /// element `(ci, j, ..)` belongs to channel `(ci / cg) * mg + j`.
    Deconv { mg: usize, k: usize, cg: usize },
}

impl WeightChannels {
    /// The layout of `op`'s weight tensor of shape `wshape` (`None`: not a dot product).
    pub fn of(op: &Op, wshape: &[usize]) -> Option<WeightChannels> {
        match op {
            Op::Conv(_) => Some(WeightChannels::Blocks {
                len: wshape.iter().skip(1).product(),
            }),
            Op::ConvTranspose(a) => {
                let (c, mg) = (*wshape.first()?, *wshape.get(1)?);
                Some(WeightChannels::Deconv {
                    mg,
                    k: wshape.iter().skip(2).product(),
                    cg: c / a.group.max(1),
                })
            }
            Op::Gemm(a) if a.trans_b && wshape.len() == 2 => {
                Some(WeightChannels::Blocks { len: wshape[1] })
            }
            Op::Gemm(a) if !a.trans_b && wshape.len() == 2 => {
                Some(WeightChannels::Strided { n: wshape[1] })
            }
            _ => None,
        }
    }

    /// The output channel of element `i`.
    pub fn channel(self, i: usize) -> usize {
        match self {
            WeightChannels::Blocks { len } => i / len.max(1),
            WeightChannels::Strided { n } => i % n.max(1),
            WeightChannels::Deconv { mg, k, cg } => {
                let ci = i / (mg * k).max(1);
                let j = (i / k.max(1)) % mg.max(1);
                (ci / cg.max(1)) * mg + j
            }
        }
    }

    /// `w[i] *= mul[channel(i)]` for every element.
    pub fn scale_in_place(self, w: &mut [f32], mul: &[f32]) {
        match self {
            WeightChannels::Blocks { len } if len > 0 => w
                .chunks_mut(len)
                .zip(mul)
                .for_each(|(block, &s)| block.iter_mut().for_each(|x| *x *= s)),
            _ => w
                .iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x *= mul[self.channel(i)]),
        }
    }

    /// `w` regrouped channel-major for `m` channels of `w.len() / m` elements each
    /// (each channel's elements in their original order); borrowed when the layout
    /// already is. `None` if the elements do not split evenly into `m` channels.
    pub fn channel_major<'a, T: Copy + Default>(
        self,
        w: &'a [T],
        m: usize,
    ) -> Option<Cow<'a, [T]>> {
        let len = self.block_len(w.len(), m)?;
        if matches!(self, WeightChannels::Blocks { .. }) {
            return Some(Cow::Borrowed(w));
        }
        let mut next: Vec<usize> = (0..m).map(|c| c * len).collect();
        let mut out = vec![T::default(); w.len()];
        for (i, &x) in w.iter().enumerate() {
            let slot = next.get_mut(self.channel(i))?;
            *out.get_mut(*slot)? = x;
            *slot += 1;
        }
        Some(Cow::Owned(out))
    }

    /// The inverse of [`WeightChannels::channel_major`]: channel-major `blocks` back in
    /// this layout's element order.
    pub fn restore_order<T: Copy + Default>(self, blocks: Vec<T>, m: usize) -> Option<Vec<T>> {
        let len = self.block_len(blocks.len(), m)?;
        if matches!(self, WeightChannels::Blocks { .. }) {
            return Some(blocks);
        }
        let mut next: Vec<usize> = (0..m).map(|c| c * len).collect();
        let mut out = vec![T::default(); blocks.len()];
        for (i, o) in out.iter_mut().enumerate() {
            let slot = next.get_mut(self.channel(i))?;
            *o = *blocks.get(*slot)?;
            *slot += 1;
        }
        Some(out)
    }

    /// Elements per channel when `n` elements split evenly into `m` channels.
    fn block_len(self, n: usize, m: usize) -> Option<usize> {
        match m {
            0 => (n == 0).then_some(0),
            _ => n.is_multiple_of(m).then_some(n / m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_ir::{ConvAttrs, ConvTransposeAttrs, GemmAttrs};

    fn layouts() -> Vec<(WeightChannels, usize, usize)> {
        let deconv = Op::ConvTranspose(ConvTransposeAttrs {
            kernel: vec![2, 1],
            strides: vec![1, 1],
            pads: vec![0; 4],
            dilations: vec![1, 1],
            output_padding: vec![0, 0],
            group: 2,
        });
        let gemm = |trans_b| {
            Op::Gemm(GemmAttrs {
                alpha: 1.0,
                beta: 1.0,
                trans_a: false,
                trans_b,
            })
        };
        let conv = Op::Conv(ConvAttrs {
            kernel: vec![2, 2],
            strides: vec![1, 1],
            pads: vec![0; 4],
            dilations: vec![1, 1],
            group: 1,
        });
        [
            (conv, vec![3, 2, 2, 2], 3),
            (deconv, vec![4, 3, 2, 1], 6),
            (gemm(true), vec![5, 7], 5),
            (gemm(false), vec![7, 5], 5),
        ]
        .into_iter()
        .map(|(op, shape, m)| {
            let n = shape.iter().product();
            (WeightChannels::of(&op, &shape).unwrap(), n, m)
        })
        .collect()
    }

    #[test]
    fn blocks_round_trip_and_group_by_channel() {
        for (l, n, m) in layouts() {
            let w: Vec<usize> = (0..n).collect();
            let b = l.channel_major(&w, m).unwrap();
            let len = n / m;
            for (pos, &i) in b.iter().enumerate() {
                assert_eq!(l.channel(i), pos / len, "{l:?}");
            }
            assert!(b
                .windows(2)
                .enumerate()
                .all(|(p, x)| (p + 1) % len == 0 || x[0] < x[1]));
            assert_eq!(l.restore_order(b.into_owned(), m).unwrap(), w, "{l:?}");
        }
    }

    #[test]
    fn scale_in_place_uses_each_elements_channel() {
        for (l, n, m) in layouts() {
            let mul: Vec<f32> = (0..m).map(|c| c as f32 + 2.0).collect();
            let mut w = vec![1f32; n];
            l.scale_in_place(&mut w, &mul);
            for (i, x) in w.iter().enumerate() {
                assert_eq!(*x, mul[l.channel(i)], "{l:?}");
            }
        }
    }

    #[test]
    fn uneven_channels_are_refused() {
        let l = WeightChannels::Strided { n: 4 };
        assert!(l.channel_major(&[0u8; 6], 4).is_none());
        assert!(l.restore_order(vec![0u8; 6], 4).is_none());
        assert!(l.channel_major(&[0u8; 0], 0).is_some());
    }
}
