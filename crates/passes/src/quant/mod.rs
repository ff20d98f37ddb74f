//! The quantization pass: turns a fused float graph into the quantized IR.
//!
//! 1. Every value gets an activation range from the calibration statistics of the
//!    original node it stands for (for fused ops: the SIMD output, i.e. the value
//!    before the pooling unit), by the calibration method; graph inputs always by
//!    min/max (never clipped).
//! 2. Values that must share one buffer encoding share one quantization: the inputs and
//!    output of a placement concat, the input and output of a reshape (a view), and of
//!    a channel shuffle (a permutation: the codes move unchanged).
//!    Their ranges are merged. Inputs of deconvolutions are symmetric (zero point 0).
//! 3. Every non-constant node's output type becomes uint8 (range >= 0) or int8 (zero
//!    point) with per-tensor quantization; graph inputs too (the runtime quantizes).
//! 4. Each dot / scale / eltwise op gets its quantized constants and requantization;
//!    a dot's weights are rounded to nearest, or by GPTQ when calibration kept its
//!    input Hessian (`gptq`).

pub mod acc_bound;
pub mod bias_correct;
pub mod dot;
pub mod eltwise;
pub mod gptq;
pub mod params;
pub mod requant;
pub mod weights;

use crate::calib::Stats;
use crate::fixed::FixedAct;
use crate::{CalibMethod, PassCtx, PassError, PassOptions};
use acc_bound::AccReport;
use nnac_ir::{Graph, NnaOp, NodeId, Op, Quant, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Quantization facts of one NNA compute layer (for the report).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LayerQuant {
    pub name: String,
    pub op: String,
    pub in_scale: f32,
    pub in_zero_point: i32,
    pub out_dtype: String,
    pub out_scale: f32,
    pub out_zero_point: i32,
    /// Smallest and largest per-channel weight scale (dot and scale ops).
    pub weight_scale_range: Option<(f32, f32)>,
    /// Accumulator bound (dot ops).
    pub acc: Option<AccReport>,
    /// Output channels whose weights GPTQ rounded (dot ops; 0 with nearest rounding
    /// or where GPTQ does not apply, `gptq.rs`).
    pub gptq_channels: Option<usize>,
}

/// Where the quantization of a pre-quantized model came from (`None` in the report
/// when the file fixes nothing).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct QuantSource {
    /// Values (by original node name) quantized with the file's scale and zero point.
    pub from_file: Vec<String>,
    /// Values the file leaves float: calibrated.
    pub calibrated: Vec<String>,
    /// Dot layers whose int8 weight codes and per-channel scales are the file's.
    pub weights_from_file: Vec<String>,
    /// Dot layers whose weights nnac quantized itself (float or asymmetric in the
    /// file, or the file's axis is not the output channels).
    pub weights_calibrated: Vec<String>,
    /// Values whose group (a concatenation, a view) the file gives several
    /// quantizations: every member takes the last one in data-flow order.
    pub merged: Vec<String>,
}

impl QuantSource {
    /// One line for the compile summary: what the file fixed, what was calibrated.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "pre-quantized model: {} value(s) and {} weight set(s) quantized as the file \
             says; calibrated: {} value(s){}, {} weight set(s)",
            self.from_file.len(),
            self.weights_from_file.len(),
            self.calibrated.len(),
            if self.calibrated.is_empty() {
                String::new()
            } else {
                format!(" ({})", abbreviated(&self.calibrated))
            },
            self.weights_calibrated.len()
        );
        if !self.merged.is_empty() {
            s += &format!(
                "; shared buffers take one of several file quantizations: {}",
                abbreviated(&self.merged)
            );
        }
        s
    }
}

/// The first names of a list, then how many more.
fn abbreviated(names: &[String]) -> String {
    const SHOW: usize = 6;
    let mut s = names
        .iter()
        .take(SHOW)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOW {
        s += &format!(", ... {} more", names.len() - SHOW);
    }
    s
}

/// What [`quantize`] returns.
pub struct Quantized {
    pub layers: Vec<LayerQuant>,
    /// `Some` when the model file fixed any quantization.
    pub source: Option<QuantSource>,
}

pub fn quantize(
    g: &mut Graph,
    ctx: &PassCtx,
    stats: &BTreeMap<String, Stats>,
    opts: &PassOptions,
) -> Result<Quantized, PassError> {
    let (method, percentile) = (opts.calib_method, opts.percentile);
    let order = g
        .topo_order()
        .map_err(|e| PassError::node("quantize", &e.node, e.msg))?;
    // Values that stay float32 (between layers kept in float) get no quantization.
    let values: Vec<NodeId> = order
        .iter()
        .copied()
        .filter(|&n| !matches!(g.node(n).op, Op::Constant(_)))
        .filter(|&n| !crate::host::float_layers::keeps_float(g, n))
        .collect();
    let groups = share_groups(g, &values);
    let symmetric = symmetric_roots(g, &values, &groups);
    let mut source = QuantSource::default();
    let mut fixed: BTreeMap<NodeId, FixedAct> = BTreeMap::new();
    for &n in &values {
        if let Some(f) = fixed_act(g, ctx, n) {
            let root = groups[&n];
            if fixed.get(&root).is_some_and(|old| old != f) {
                source.merged.push(g.node(n).name.clone());
            }
            fixed.insert(root, f.clone());
        }
    }
    let mut ranges: BTreeMap<NodeId, (f32, f32)> = BTreeMap::new();
    for &n in &values {
        let node = g.node(n);
        let key = stats_key(ctx, n, g);
        if fixed.contains_key(&groups[&n]) {
            source.from_file.push(key.to_string());
            continue;
        }
        source.calibrated.push(key.to_string());
        let st = stats.get(key).ok_or_else(|| {
            PassError::node(
                "quantize",
                &node.name,
                if ctx.fixed.is_empty() {
                    format!("no calibration statistics for '{key}'")
                } else {
                    format!(
                        "the model file does not quantize '{key}' and there are no \
                         calibration statistics for it (give --calib frames)"
                    )
                },
            )
        })?;
        // A graph input is never clipped: its range is fixed by the preprocessing, not
        // a long tail, and clipping it saturates whole regions of a frame (measured:
        // open_nsfw on horse.png's white background, |dp| 0.0258 -> 0.0062).
        let (lo, hi) = match node.op {
            Op::Input => st.range(CalibMethod::MinMax, percentile),
            _ => st.range(method, percentile),
        };
        let r = ranges.entry(groups[&n]).or_insert((lo, hi));
        *r = (r.0.min(lo), r.1.max(hi));
    }
    for &n in &values {
        let root = groups[&n];
        let (dtype, q) = match fixed.get(&root) {
            Some(f) => (f.dtype, f.quant()),
            None => {
                let (lo, hi) = ranges[&root];
                params::act_quant(lo, hi, symmetric.contains(&root))
            }
        };
        let t = &mut g.node_mut(n).outputs[0];
        t.dtype = dtype;
        t.quant = Some(q);
    }
    let mut layers = Vec::new();
    for &n in &values {
        let dq = match &g.node(n).op {
            Op::Nna(NnaOp::Dot(_)) => {
                let xmax = input_code_max(g, g.node_inputs(n)[0]);
                let hessian = stats.get(&g.node(n).name).and_then(|s| s.hessian.as_ref());
                let wname = g.node(g.node_inputs(n)[1].node).name.clone();
                let fw = ctx.fixed.weights.get(&wname);
                let d = dot::quantize_dot(g, n, xmax, hessian, fw, opts.requant)?;
                let name = g.node(n).name.clone();
                if d.weights_from_file {
                    source.weights_from_file.push(name);
                } else {
                    source.weights_calibrated.push(name);
                }
                Some(d)
            }
            Op::Nna(NnaOp::Scale(_)) => {
                dot::quantize_scale(g, n)?;
                None
            }
            Op::Nna(NnaOp::Eltwise(_)) => {
                // ONNX Runtime's codes: 128 above the NNA's for a uint8 value of the
                // file stored as int8.
                let shift = |v: NodeId| {
                    groups
                        .get(&v)
                        .and_then(|r| fixed.get(r))
                        .map_or(0, |f| f.onnx_code_shift)
                };
                let ins = g.node_inputs(n);
                let shifts = [shift(ins[0].node), shift(ins[1].node), shift(n)];
                eltwise::quantize_eltwise(g, n, opts.requant, shifts)?;
                None
            }
            _ => continue,
        };
        layers.push(layer_info(g, n, dq));
    }
    g.remove_dead();
    Ok(Quantized {
        layers,
        source: (!ctx.fixed.is_empty()).then_some(source),
    })
}

/// The original node whose calibration statistics stand for value `n`.
fn stats_key<'a>(ctx: &'a PassCtx, n: NodeId, g: &'a Graph) -> &'a str {
    let node = g.node(n);
    match &node.op {
        Op::Nna(NnaOp::Dot(_) | NnaOp::Scale(_) | NnaOp::Eltwise(_)) => ctx.simd_name(&node.name),
        // A fused layer kept in float on the host quantizes its final value (after
        // its pooling stage).
        Op::Nna(NnaOp::Host(inner)) if matches!(**inner, Op::Nna(_)) => ctx.out_name(&node.name),
        _ => node.name.as_str(),
    }
}

/// The quantization the model file gives value `n`: that of the last original node
/// a fused op absorbed (after its pooling), else of its SIMD output, else its own.
fn fixed_act<'a>(g: &Graph, ctx: &'a PassCtx, n: NodeId) -> Option<&'a FixedAct> {
    let name = g.node(n).name.as_str();
    [ctx.out_name(name), ctx.simd_name(name), name]
        .into_iter()
        .find_map(|k| ctx.fixed.acts.get(k))
}

/// Union-find roots: values that must share one quantization.
fn share_groups(g: &Graph, values: &[NodeId]) -> BTreeMap<NodeId, NodeId> {
    let mut parent: BTreeMap<NodeId, NodeId> = values.iter().map(|&n| (n, n)).collect();
    fn find(p: &mut BTreeMap<NodeId, NodeId>, n: NodeId) -> NodeId {
        let mut r = n;
        while p[&r] != r {
            r = p[&r];
        }
        p.insert(n, r);
        r
    }
    for &n in values {
        if matches!(
            g.node(n).op,
            Op::Nna(
                NnaOp::Concat { .. }
                    | NnaOp::ChannelShuffle { .. }
                    | NnaOp::Upsample { .. }
                    | NnaOp::DepthToSpace { .. }
            ) | Op::Reshape { .. }
                | Op::Slice { .. }
                | Op::StridedSlice { .. }
        ) {
            for v in g.node_inputs(n) {
                if parent.contains_key(&v.node) {
                    let (a, b) = (find(&mut parent, n), find(&mut parent, v.node));
                    parent.insert(a.max(b), a.min(b));
                }
            }
        }
    }
    values.iter().map(|&n| (n, find(&mut parent, n))).collect()
}

/// Groups whose values feed a deconvolution (zero point must be 0).
fn symmetric_roots(
    g: &Graph,
    values: &[NodeId],
    groups: &BTreeMap<NodeId, NodeId>,
) -> BTreeSet<NodeId> {
    values
        .iter()
        .filter(|&&n| matches!(&g.node(n).op, Op::Nna(NnaOp::Dot(d)) if matches!(d.kind, nnac_ir::DotKind::Deconv(_))))
        .filter_map(|&n| groups.get(&g.node_inputs(n)[0].node).copied())
        .collect()
}

/// The largest code magnitude value `v` can hold: its producer's clamp bounds when it
/// is an NNA compute op, else the whole code range of its dtype.
pub fn input_code_max(g: &Graph, v: Value) -> i64 {
    let t = g.value_type(v);
    let (lo, hi) = params::code_range(t.dtype);
    let (lo, hi) = match &g.node(v.node).op {
        Op::Nna(
            NnaOp::ChannelShuffle { .. } | NnaOp::Upsample { .. } | NnaOp::DepthToSpace { .. },
        ) => return input_code_max(g, g.node_inputs(v.node)[0]),
        Op::Nna(op) => match op.epilogue().and_then(|e| e.requant.as_ref()) {
            Some(rq) => rq.code_range(),
            None => (lo, hi),
        },
        Op::Reshape { .. } | Op::Slice { .. } | Op::StridedSlice { .. } => {
            return input_code_max(g, g.node_inputs(v.node)[0])
        }
        _ => (lo, hi),
    };
    i64::from(lo.abs().max(hi.abs()))
}

fn layer_info(g: &Graph, n: NodeId, dq: Option<dot::DotQuant>) -> LayerQuant {
    let node = g.node(n);
    let ins = g.node_inputs(n);
    let (s_in, zp_in) = params::scale_zp(g.value_type(ins[0]));
    let (s_out, zp_out) = params::scale_zp(&node.outputs[0]);
    let weight_scale_range = match ins.get(1).map(|&w| g.value_type(w).quant.clone()) {
        Some(Some(Quant::PerChannel { scales, .. })) => Some(
            scales
                .iter()
                .fold((f32::INFINITY, 0f32), |(a, b), &s| (a.min(s), b.max(s))),
        ),
        _ => None,
    };
    LayerQuant {
        name: node.name.clone(),
        op: node.op.mnemonic().to_string(),
        in_scale: s_in,
        in_zero_point: zp_in,
        out_dtype: node.outputs[0].dtype.name().to_string(),
        out_scale: s_out,
        out_zero_point: zp_out,
        weight_scale_range,
        acc: dq.as_ref().map(|d| d.acc.clone()),
        gptq_channels: dq.map(|d| d.gptq_channels),
    }
}
