//! Empirical bias correction (Nagel et al., "Data-Free Quantization", section 4.2,
//! with the expectations measured instead of modelled): int8 weight rounding and the
//! clipping and rounding of the activations feeding a dot product shift the mean of
//! its pre-activation per output channel; the shift is measured on the calibration
//! frames and subtracted from the int32 bias.
//!
//! Layer by layer in topological order: all calibration frames run through the
//! quantized reference interpreter together; at each dot op, the per-channel mean of
//! its exact accumulators (times the unit `s_in * s_w[c]`) is compared with the float
//! mean of the same pre-activation (the float value of the node the dot op was built
//! from, collected by calibration), `round(error / unit)` is subtracted from the bias,
//! and the op's output is computed with the corrected bias before its users run, so
//! every layer is corrected against the already-corrected layers before it. The
//! accumulators are computed once: those of the corrected bias are the same ones with
//! the correction subtracted per channel (exact: they are the unwrapped `bias + sum`).
//! Only integers change: the corrected graph runs the same integer arithmetic.
//!
//! A channel whose corrected bias would break its 30-bit accumulator bound keeps
//! its bias.
//!
//! Which dot ops: [`BiasScope`] (`--bias-correction`): depthwise convolutions by
//! default (few products per output, so rounding errors do not average out; on dense
//! layers the measured means mostly fit the calibration frames), or all. Never the
//! pooling convolutions (every weight the same code: exact averages). The walk stops
//! at the first node the quantized interpreter refuses as the NNA would (a batch of
//! two frames): the partitioning moves such a node to the host and compiles again.

use super::acc_bound::{abs_sum, bound_of_abs_sum, ACC_LIMIT};
use super::dot::{bias_node, layout_op};
use super::input_code_max;
use crate::calib::Stats;
use crate::channels::WeightChannels;
use crate::float_eval::Frame;
use crate::{BiasScope, PassError};
use nnac_ir::{DotKind, Graph, NnaOp, NodeId, Op, Quant, TensorData, Value};
use nnac_qinterp::{self as qinterp, dot::Accumulators, QTrace, QVal, Walk};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// What bias correction did to one layer (for the report).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct BiasCorrection {
    pub layer: String,
    /// Largest |mean error| of a channel before correction, in units of the output
    /// scale.
    pub max_shift_out_steps: f32,
    /// Channels whose bias changed.
    pub corrected_channels: usize,
    /// Largest accumulator bound of a channel after correction.
    pub acc_bound: i64,
}

/// Corrects the bias of the dot ops of the quantized graph `g` that `scope` names, on
/// `frames`; `stats` are the float calibration statistics (with channel sums).
pub fn correct_biases(
    g: &mut Graph,
    stats: &BTreeMap<String, Stats>,
    frames: &[Frame],
    scope: BiasScope,
) -> Result<Vec<BiasCorrection>, PassError> {
    // Nothing in scope (e.g. no depthwise layer): no quantized run at all.
    if !g.node_ids().into_iter().any(|id| in_scope(g, id, scope)) {
        return Ok(Vec::new());
    }
    let mut walk = Walk::new(g)?;
    let mut vals: Vec<BTreeMap<NodeId, QVal>> = vec![BTreeMap::new(); frames.len()];
    let mut done = Vec::new();
    for id in walk.take_order() {
        if walk.skips(g, id) {
            continue;
        }
        // The inputs the node reads (a corrected dot op reads its old bias).
        let ins = g.node_inputs(id);
        let outs: Vec<QVal> = if let Op::Nna(NnaOp::Dot(_)) = g.node(id).op {
            match correct_and_run_dot(g, id, stats, &vals, scope) {
                Ok((c, outs)) => {
                    done.extend(c);
                    outs
                }
                // A node the NNA cannot run (e.g. a batch of two frames): the
                // partitioning moves it to the host and compiles again; until then
                // the layers after it keep their biases.
                Err(Stop::Refused) => break,
                Err(Stop::Failed(e)) => return Err(e),
            }
        } else {
            let g: &Graph = g;
            match frames
                .par_iter()
                .zip(vals.par_iter())
                .map(|(f, v)| qinterp::eval_node(g, id, f, v, &mut QTrace::default()))
                .collect::<Result<_, _>>()
            {
                Ok(outs) => outs,
                Err(e) => match Stop::from(e) {
                    Stop::Refused => break,
                    Stop::Failed(e) => return Err(e),
                },
            }
        };
        if walk.keeps(id) {
            for (v, o) in vals.iter_mut().zip(outs) {
                v.insert(id, o);
            }
        }
        walk.release(&ins, |n| {
            vals.iter_mut().for_each(|v| {
                v.remove(&n);
            })
        });
    }
    Ok(done)
}

/// Why the correction walk stops: the quantized interpreter refuses a node as the
/// NNA would (`QError::Node`), or anything else went wrong.
enum Stop {
    Refused,
    Failed(PassError),
}

impl From<qinterp::QError> for Stop {
    fn from(e: qinterp::QError) -> Self {
        match e {
            qinterp::QError::Node { .. } => Stop::Refused,
            e => Stop::Failed(e.into()),
        }
    }
}

/// Runs dot op `id` on every frame's values `vals`, correcting its bias on the way:
/// its accumulators are computed once, and moved to the corrected bias before the
/// epilogue.
fn correct_and_run_dot(
    g: &mut Graph,
    id: NodeId,
    stats: &BTreeMap<String, Stats>,
    vals: &[BTreeMap<NodeId, QVal>],
    scope: BiasScope,
) -> Result<(Option<BiasCorrection>, Vec<QVal>), Stop> {
    // Bias correction changes the bias input, not the op.
    let Op::Nna(NnaOp::Dot(d)) = g.node(id).op.clone() else {
        unreachable!("caller matched a dot")
    };
    let mut accs: Vec<Accumulators> = {
        let g: &Graph = g;
        vals.par_iter()
            .map(|v| qinterp::dot_accumulators(g, id, &d, v))
            .collect::<Result<_, _>>()?
    };
    let done = correct_dot(g, id, stats, &mut accs, scope);
    let g: &Graph = g;
    // Each frame's accumulators are dropped once its codes exist.
    let outs = accs
        .into_par_iter()
        .map(|a| qinterp::dot::finish(g, id, &d, &a, &mut QTrace::default()).map(QVal::Codes))
        .collect::<Result<_, _>>()?;
    Ok((done, outs))
}

/// Measures the mean pre-activation error of dot op `id` on the accumulators `accs` of
/// every frame, replaces its bias and moves the accumulators to the new bias.
fn correct_dot(
    g: &mut Graph,
    id: NodeId,
    stats: &BTreeMap<String, Stats>,
    accs: &mut [Accumulators],
    scope: BiasScope,
) -> Option<BiasCorrection> {
    let (report, new_bias) = corrected_bias(g, id, stats, accs, scope)?;
    if report.corrected_channels > 0 {
        let mut ins = g.node_inputs(id);
        let old = ins[2];
        let (bias, unit) = bias_of(g, old).expect("read by corrected_bias");
        let delta: Vec<i64> = bias
            .iter()
            .zip(&new_bias)
            .map(|(&b, &n)| i64::from(b) - i64::from(n))
            .collect();
        let unit = unit.to_vec();
        accs.par_iter_mut()
            .for_each(|a| a.subtract_per_channel(&delta));
        ins[2] = bias_node(g, &report.layer, new_bias, unit);
        g.set_node_inputs(id, &ins);
        // The corrected bias takes the old one's place and name.
        if g.users(old).is_empty() {
            let old_name = g.node(old.node).name.clone();
            g.remove_node(old.node);
            g.node_mut(ins[2].node).name = old_name;
        }
    }
    Some(report)
}

/// Whether node `id` is a dot op `scope` corrects: with constant int8 weights, not a
/// pooling convolution, and depthwise unless the scope is all dot ops.
fn in_scope(g: &Graph, id: NodeId, scope: BiasScope) -> bool {
    let Op::Nna(NnaOp::Dot(d)) = &g.node(id).op else {
        return false;
    };
    let w = g.node_inputs(id)[1];
    let Some(TensorData::I8(wq)) = g.const_of(w).map(|t| &t.data) else {
        return false;
    };
    let wshape = &g.value_type(w).shape;
    match scope {
        BiasScope::Off => false,
        BiasScope::Depthwise if !is_depthwise(&d.kind, wshape) => false,
        _ => !is_pool_window(&d.kind, wshape, wq),
    }
}

/// Whether a dot op is a depthwise convolution (one input channel per output channel,
/// weights `[C, 1, kh, kw]`).
fn is_depthwise(kind: &DotKind, wshape: &[usize]) -> bool {
    matches!(kind, DotKind::Conv(a) if wshape.first() == Some(&a.group) && wshape.get(1) == Some(&1))
}

/// Whether a dot op is a pooling convolution (`lower_pools`: depthwise, every weight
/// the same code): it averages exact codes, so it adds no mean error of its own, and
/// the backend's channels-as-pixels form of a global pool needs its one common bias.
fn is_pool_window(kind: &DotKind, wshape: &[usize], wq: &[i8]) -> bool {
    is_depthwise(kind, wshape) && wq.first().is_some_and(|&w0| wq.iter().all(|&w| w == w0))
}

/// The int32 bias constant `v` and its per-channel units, if it is one.
fn bias_of(g: &Graph, v: Value) -> Option<(&[i32], &[f32])> {
    match (
        g.const_of(v).map(|t| &t.data),
        g.value_type(v).quant.as_ref(),
    ) {
        (Some(TensorData::I32(bias)), Some(Quant::PerChannel { scales, .. })) => {
            Some((bias, scales))
        }
        _ => None,
    }
}

/// The report of dot op `id`'s correction and its corrected bias, from the
/// accumulators of every frame; `None` when it cannot be corrected.
fn corrected_bias(
    g: &Graph,
    id: NodeId,
    stats: &BTreeMap<String, Stats>,
    accs: &[Accumulators],
    scope: BiasScope,
) -> Option<(BiasCorrection, Vec<i32>)> {
    if !in_scope(g, id, scope) {
        return None;
    }
    let node = g.node(id);
    let Op::Nna(NnaOp::Dot(d)) = &node.op else {
        unreachable!("caller matched a dot")
    };
    let ins = g.node_inputs(id);
    let float_mean = stats.get(&node.name).map(Stats::chan_means)?;
    let (bias, unit) = bias_of(g, ins[2])?;
    let m = bias.len();
    if float_mean.len() != m
        || unit.len() != m
        || accs.is_empty()
        || accs.iter().any(|a| a.channels != m)
    {
        return None;
    }
    // Per-channel sums of the exact accumulators over all frames.
    let per_frame: Vec<(Vec<i128>, u64)> =
        accs.par_iter().map(Accumulators::channel_sums).collect();
    let n: u64 = per_frame.iter().map(|x| x.1).sum();
    if n == 0 {
        return None;
    }
    let mut sums = vec![0i128; m];
    for (s, _) in &per_frame {
        sums.iter_mut().zip(s).for_each(|(a, b)| *a += b);
    }
    // Weight magnitudes per channel for the accumulator bound.
    let Some(TensorData::I8(wq)) = g.const_of(ins[1]).map(|t| &t.data) else {
        return None;
    };
    let layout = WeightChannels::of(&layout_op(&d.kind), &g.value_type(ins[1]).shape)?;
    let blocks = layout.channel_major(wq, m)?;
    let len = wq.len().checked_div(m).unwrap_or(0).max(1);
    let mut wabs = vec![0i64; m];
    for (a, w) in wabs.iter_mut().zip(blocks.chunks(len)) {
        *a = abs_sum(w);
    }
    let xmax = input_code_max(g, ins[0]);
    let s_out = match &node.outputs[0].quant {
        Some(Quant::PerTensor { scale, .. }) => f64::from(*scale),
        _ => 1.0,
    };
    let mut new_bias = bias.to_vec();
    let mut max_shift = 0f64;
    let mut changed = 0;
    let mut bound = 0i64;
    for c in 0..m {
        let u = f64::from(unit[c]);
        if u <= 0.0 || !u.is_finite() {
            continue;
        }
        let mean_q = sums[c] as f64 / n as f64;
        let err = mean_q - float_mean[c] / u; // in accumulator units
        max_shift = max_shift.max((err * u / s_out).abs());
        let delta = err.round() as i64;
        let b = i64::from(bias[c]) - delta;
        if delta == 0 || bound_of_abs_sum(wabs[c], b, xmax) > ACC_LIMIT {
            continue;
        }
        let Ok(b) = i32::try_from(b) else { continue };
        new_bias[c] = b;
        changed += 1;
    }
    for c in 0..m {
        bound = bound.max(bound_of_abs_sum(wabs[c], i64::from(new_bias[c]), xmax));
    }
    let report = BiasCorrection {
        layer: node.name.clone(),
        max_shift_out_steps: max_shift as f32,
        corrected_channels: changed,
        acc_bound: bound,
    };
    Some((report, new_bias))
}
