//! Per-output-channel quantization of one dot product's weights and bias under the
//! 30-bit accumulator bound. Every channel is independent (its scale, bias, bound and
//! any rescaling depend on its own weights only), so the channels run in parallel on
//! contiguous blocks; all arithmetic per channel is exact or in a fixed order, so the
//! result does not depend on the thread count.

use super::acc_bound::{channel_bound, AccReport, ACC_LIMIT};
use super::gptq::round_channel;
use super::params::{quantize_weights_from, weight_scale, FILE_WEIGHT_MIN, WEIGHT_MIN};
use crate::channels::WeightChannels;
use rayon::prelude::*;

/// GPTQ's Cholesky factors of one layer (`gptq::Hessian::factor`): channel `c` uses
/// group `c / channels_per_group`'s; a group without one rounds to nearest.
pub struct GptqFactors {
    pub per_group: Vec<Option<Vec<f64>>>,
    pub channels_per_group: usize,
}

/// Quantized weights of one layer.
pub struct QWeights {
    pub wq: Vec<i8>,
    pub scales: Vec<f32>,
    pub bias: Vec<i64>,
    pub acc: AccReport,
    /// Channels rounded by GPTQ (the others to nearest).
    pub gptq_channels: usize,
}

/// What one layer's weights are quantized from besides the weights and bias.
#[derive(Clone, Copy)]
pub struct LayerFrom<'a> {
    /// Input scale and zero point.
    pub s_in: f32,
    pub zp_in: i32,
    /// Largest input code magnitude (the accumulator bound).
    pub xmax: i64,
    /// GPTQ's factors (else weights round to nearest).
    pub gptq: Option<&'a GptqFactors>,
    /// Per-channel scales fixed by a pre-quantized model (else `max|w| / 127`); its
    /// codes keep their int8 range, -128 included.
    pub fixed: Option<&'a [f32]>,
}

/// The quantization-independent inputs every channel shares.
#[derive(Clone, Copy)]
struct LayerIn {
    s_in: f32,
    zp_in: i32,
    xmax: i64,
    /// The smallest weight code: -128 for a file's codes, else -127.
    code_min: i32,
}

/// One channel's result (its codes are written in place).
struct ChannelQ {
    scale: f32,
    bias: i64,
    bound_before: i64,
    bound: i64,
    /// Product of the rescaling factors (1 when the bound held at once).
    factor: f32,
}

/// Most rescaling rounds per channel.
const MAX_ROUNDS: usize = 16;

/// Quantizes `w` per output channel (`layout`, `bias.len()` channels) and the bias at
/// `s_in * s_w`, then enforces the accumulator bound by coarsening the scale of any
/// channel that could overflow. Weights are rounded to nearest, or by GPTQ with
/// `gptq`'s factors, at the `fixed` scales when given (the bound may still coarsen
/// a channel: reported as rescaled). `None` if the weights do not split evenly into
/// the channels (or the fixed scales do not match them).
pub fn quantize_layer(
    w: &[f32],
    bias: &[f32],
    layout: WeightChannels,
    from: LayerFrom<'_>,
) -> Option<QWeights> {
    let m = bias.len();
    let blocks = layout.channel_major(w, m)?;
    let len = w.len().checked_div(m).unwrap_or(0);
    let LayerFrom {
        s_in,
        zp_in,
        xmax,
        gptq,
        fixed,
    } = from;
    if fixed.is_some_and(|f| f.len() != m) {
        return None;
    }
    let scale_of = |c: usize, wc: &[f32]| fixed.map_or_else(|| weight_scale(wc), |f| f[c]);
    let li = LayerIn {
        s_in,
        zp_in,
        xmax,
        code_min: if fixed.is_some() {
            FILE_WEIGHT_MIN
        } else {
            WEIGHT_MIN
        },
    };
    let mut wq = vec![0i8; w.len()];
    let factor_of = |c: usize| -> Option<&[f64]> {
        let f = gptq?;
        f.per_group.get(c / f.channels_per_group.max(1))?.as_deref()
    };
    let gptq_channels = if len == 0 {
        0
    } else {
        (0..m).filter(|&c| factor_of(c).is_some()).count()
    };
    let chans: Vec<ChannelQ> = if len == 0 {
        bias.iter()
            .enumerate()
            .map(|(c, &b)| quantize_channel(&[], &mut [], b, li, scale_of(c, &[]), None))
            .collect()
    } else {
        blocks
            .par_chunks(len)
            .zip(wq.par_chunks_mut(len))
            .zip(bias.par_iter())
            .enumerate()
            .map(|(c, ((wc, qc), &b))| match factor_of(c) {
                Some(u) => quantize_channel(wc, qc, b, li, scale_of(c, wc), Some(u)),
                None => quantize_channel_fast(wc, qc, b, li, scale_of(c, wc)),
            })
            .collect()
    };
    let wq = layout.restore_order(wq, m)?;
    let acc = AccReport {
        limit: ACC_LIMIT,
        bound_before: chans.iter().map(|c| c.bound_before).max().unwrap_or(0),
        bound: chans.iter().map(|c| c.bound).max().unwrap_or(0),
        rescaled_channels: chans.iter().filter(|c| c.factor > 1.0).count(),
        max_rescale: chans.iter().map(|c| c.factor).fold(1.0, f32::max),
    };
    Some(QWeights {
        wq,
        scales: chans.iter().map(|c| c.scale).collect(),
        bias: chans.iter().map(|c| c.bias).collect(),
        acc,
        gptq_channels,
    })
}

/// [`quantize_channel`], compiled with AVX2 when the CPU has it (wider vectors for the
/// same IEEE operations: the same results).
fn quantize_channel_fast(w: &[f32], q: &mut [i8], bias: f32, li: LayerIn, scale: f32) -> ChannelQ {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        fn with_avx2(w: &[f32], q: &mut [i8], bias: f32, li: LayerIn, scale: f32) -> ChannelQ {
            quantize_channel(w, q, bias, li, scale, None)
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { with_avx2(w, q, bias, li, scale) };
        }
    }
    quantize_channel(w, q, bias, li, scale, None)
}

/// Quantizes one channel's weights `w` into `q` at `scale` (to nearest, or by GPTQ
/// with the factor `gptq` of its group); returns its scale (coarsened if the
/// accumulator bound needs it), bias and bounds.
#[inline(always)]
fn quantize_channel(
    w: &[f32],
    q: &mut [i8],
    bias: f32,
    li: LayerIn,
    scale: f32,
    gptq: Option<&[f64]>,
) -> ChannelQ {
    let round = |scale: f32, q: &mut [i8]| match gptq {
        Some(u) => round_channel(w, u, scale, q),
        None => quantize_weights_from(w, scale, li.code_min, q),
    };
    let mut scale = scale;
    round(scale, q);
    let mut qb = qbias(q, bias, scale, li);
    let bound_before = channel_bound(q, qb, li.xmax);
    let mut bound_now = bound_before;
    let mut factor = 1f32;
    for _ in 0..MAX_ROUNDS {
        if bound_now <= ACC_LIMIT {
            break;
        }
        // Shrink the weights by the overshoot (plus a margin for rounding).
        let f = (bound_now as f64 / ACC_LIMIT as f64 * 1.01) as f32;
        factor *= f;
        scale *= f;
        round(scale, q);
        qb = qbias(q, bias, scale, li);
        bound_now = channel_bound(q, qb, li.xmax);
    }
    ChannelQ {
        scale,
        bias: qb,
        bound_before,
        bound: bound_now,
        factor,
    }
}

/// The int32 bias at `s_in * scale`, with the input zero-point correction
/// `- zp_in * sum(q)`.
fn qbias(q: &[i8], bias: f32, scale: f32, li: LayerIn) -> i64 {
    let sum: i64 = q.iter().map(|&x| i64::from(x)).sum();
    (f64::from(bias) / (f64::from(li.s_in) * f64::from(scale))).round() as i64
        - i64::from(li.zp_in) * sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflowing_channel_is_rescaled_alone() {
        // Channel 0's bound (321 * 1.5e6) holds; channel 1's (508 * 1.5e6 > 2^29) must
        // shrink.
        let w = [0.01, -0.021, 0.03, 0.04, 1.0, 1.0, 1.0, 1.0];
        let from = |s_in, xmax| LayerFrom {
            s_in,
            zp_in: 0,
            xmax,
            gptq: None,
            fixed: None,
        };
        let q = quantize_layer(
            &w,
            &[0.0, 0.0],
            WeightChannels::Blocks { len: 4 },
            from(0.1, 1_500_000),
        )
        .unwrap();
        assert_eq!(q.wq[..4], [32, -67, 95, 127]);
        assert!(q.acc.bound <= ACC_LIMIT && q.acc.bound_before > ACC_LIMIT);
        assert_eq!(q.acc.rescaled_channels, 1);
        assert!(q.acc.max_rescale > 1.0 && q.scales[1] > 1.0 / 127.0);
        assert!(quantize_layer(
            &w,
            &[0.0; 3],
            WeightChannels::Strided { n: 3 },
            from(1.0, 1)
        )
        .is_none());
    }
}
