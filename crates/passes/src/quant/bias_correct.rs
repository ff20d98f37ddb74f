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
//! and the op runs again with the corrected bias before its users run, so every layer
//! is corrected against the already-corrected layers before it. Only integers change:
//! the corrected graph runs the same integer arithmetic.
//!
//! A channel whose corrected bias would break its 30-bit accumulator bound keeps
//! its bias.

use super::acc_bound::{bound_of_abs_sum, ACC_LIMIT};
use super::dot::{bias_node, layout_op};
use super::input_code_max;
use crate::calib::Stats;
use crate::channels::WeightChannels;
use crate::float_eval::Frame;
use crate::qinterp::{self, dot::Weights, QTrace, QVal};
use crate::PassError;
use nnac_ir::{Graph, NnaOp, NodeId, Op, Quant, TensorData};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const PASS: &str = "bias correction";

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

/// Corrects the bias of every dot op of the quantized graph `g` on `frames`; `stats`
/// are the float calibration statistics (with channel sums).
pub fn correct_biases(
    g: &mut Graph,
    stats: &BTreeMap<String, Stats>,
    frames: &[Frame],
) -> Result<Vec<BiasCorrection>, PassError> {
    let order = g
        .topo_order()
        .map_err(|e| PassError::node(PASS, &e.node, e.msg))?;
    let outputs: BTreeSet<NodeId> = g.outputs().iter().map(|o| o.value.node).collect();
    let mut uses: BTreeMap<NodeId, usize> = BTreeMap::new();
    for &id in &order {
        for v in g.node_inputs(id) {
            *uses.entry(v.node).or_default() += 1;
        }
    }
    let mut vals: Vec<BTreeMap<NodeId, QVal>> = vec![BTreeMap::new(); frames.len()];
    let mut done = Vec::new();
    for id in order {
        if qinterp::read_in_place(g, id, &outputs) {
            continue;
        }
        if let Op::Nna(NnaOp::Dot(_)) = g.node(id).op {
            let old_bias = g.node_inputs(id)[2];
            if let Some(c) = correct_dot(g, id, stats, &vals)? {
                done.push(c);
            }
            // A replaced bias is a constant the topological order does not hold yet.
            let bias = g.node_inputs(id)[2];
            if bias != old_bias {
                if let Some(TensorData::I32(b)) = g.const_of(bias).map(|t| &t.data) {
                    for v in vals.iter_mut() {
                        v.insert(bias.node, QVal::Codes(b.clone()));
                    }
                }
                uses.insert(bias.node, 1);
            }
        }
        let g_ref: &Graph = g;
        let outs: Vec<QVal> = frames
            .par_iter()
            .zip(vals.par_iter())
            .map(|(f, v)| qinterp::eval_node(g_ref, id, f, v, &mut QTrace::default()))
            .collect::<Result<_, _>>()?;
        for (v, o) in vals.iter_mut().zip(outs) {
            if uses.contains_key(&id) || outputs.contains(&id) {
                v.insert(id, o);
            }
        }
        for input in g.node_inputs(id) {
            let left = uses.get_mut(&input.node).expect("counted above");
            *left -= 1;
            if *left == 0 && !outputs.contains(&input.node) {
                vals.iter_mut().for_each(|v| {
                    v.remove(&input.node);
                });
            }
        }
    }
    Ok(done)
}

/// Measures the mean pre-activation error of dot op `id` and replaces its bias.
fn correct_dot(
    g: &mut Graph,
    id: NodeId,
    stats: &BTreeMap<String, Stats>,
    vals: &[BTreeMap<NodeId, QVal>],
) -> Result<Option<BiasCorrection>, PassError> {
    let node = g.node(id);
    let name = node.name.clone();
    let Op::Nna(NnaOp::Dot(d)) = &node.op else {
        unreachable!("caller matched a dot")
    };
    let ins = g.node_inputs(id);
    let Some(float_mean) = stats.get(&name).map(Stats::chan_means) else {
        return Ok(None);
    };
    let (Some(TensorData::I32(bias)), Some(Quant::PerChannel { scales: unit, .. })) = (
        g.const_of(ins[2]).map(|t| &t.data),
        g.value_type(ins[2]).quant.as_ref(),
    ) else {
        return Ok(None);
    };
    let (bias, unit) = (bias.clone(), unit.clone());
    let m = bias.len();
    if float_mean.len() != m || unit.len() != m || vals.is_empty() {
        return Ok(None);
    }
    // Per-channel sums of the exact accumulators over all frames.
    let per_frame: Vec<(Vec<i128>, u64)> = vals
        .par_iter()
        .map(|v| {
            let code = |i: usize| {
                v[&ins[i].node].codes().ok_or_else(|| {
                    PassError::node(PASS, &name, format!("input {i} is not quantized"))
                })
            };
            let w = match Weights::int8_const(g, ins[1]) {
                Some(w) => Weights::Int8(w),
                None => Weights::Codes(code(1)?),
            };
            let (acc, m, spatial) = qinterp::dot::accumulators(g, id, d, (code(0)?, w, code(2)?))?;
            let mut sums = vec![0i128; m];
            if spatial.is_empty() {
                for (i, &a) in acc.iter().enumerate() {
                    sums[i % m] += i128::from(a);
                }
                Ok((sums, (acc.len() / m.max(1)) as u64))
            } else {
                let p = acc.len() / m.max(1);
                for (c, plane) in acc.chunks(p.max(1)).enumerate() {
                    sums[c] = plane.iter().map(|&a| i128::from(a)).sum();
                }
                Ok((sums, p as u64))
            }
        })
        .collect::<Result<_, PassError>>()?;
    let n: u64 = per_frame.iter().map(|x| x.1).sum();
    if n == 0 {
        return Ok(None);
    }
    let mut sums = vec![0i128; m];
    for (s, _) in &per_frame {
        sums.iter_mut().zip(s).for_each(|(a, b)| *a += b);
    }
    // Weight magnitudes per channel for the accumulator bound.
    let wt = g.const_of(ins[1]);
    let wshape = g.value_type(ins[1]).shape.clone();
    let layout = WeightChannels::of(&layout_op(&d.kind), &wshape);
    let mut wabs = vec![0i64; m];
    let wq: Vec<i8> = match wt.map(|t| &t.data) {
        Some(TensorData::I8(w)) => w.clone(),
        _ => return Ok(None),
    };
    let Some(layout) = layout else {
        return Ok(None);
    };
    for (i, &w) in wq.iter().enumerate() {
        if let Some(a) = wabs.get_mut(layout.channel(i)) {
            *a += i64::from(w).abs();
        }
    }
    let xmax = input_code_max(g, ins[0]);
    let s_out = match &g.node(id).outputs[0].quant {
        Some(Quant::PerTensor { scale, .. }) => f64::from(*scale),
        _ => 1.0,
    };
    let mut new_bias = bias.clone();
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
    if changed > 0 {
        let bv = bias_node(g, &name, new_bias, unit);
        let mut new_ins = ins.clone();
        new_ins[2] = bv;
        g.set_node_inputs(id, &new_ins);
        // The corrected bias takes the old one's place and name.
        let old = ins[2].node;
        if g.users(ins[2]).is_empty() {
            let old_name = g.node(old).name.clone();
            g.remove_node(old);
            g.node_mut(bv.node).name = old_name;
        }
    }
    Ok(Some(BiasCorrection {
        layer: name,
        max_shift_out_steps: max_shift as f32,
        corrected_channels: changed,
        acc_bound: bound,
    }))
}
