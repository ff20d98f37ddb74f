//! The compile report: what every pass did, the host ops, and per-layer quantization
//! accuracy (SQNR and cosine similarity of the int8 output against the float
//! interpreter on the calibration frames), scales and accumulator bounds. Serializable
//! to JSON (`nnac compile --quant-report`) and printable as a table (`nnac inspect`).

pub use crate::agreement::Accuracy;
use crate::agreement::{db_text, Sums};
use crate::ctx::{Fused, PassCtx, Rewrite};
use crate::float_eval::{run_observed, Frame};
use crate::float_ref::{FloatRef, FrameValues};
use crate::quant::LayerQuant;
use crate::{CalibMethod, PassError};
use nnac_ir::{Graph, NodeId, Op, Tensor};
use nnac_qinterp::{run_quantized_observed, QVal};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct HostOpEntry {
    pub node: String,
    pub op: String,
    /// Why it is not on the NNA.
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LayerReport {
    pub name: String,
    pub op: String,
    /// The original node whose float value this layer's output is compared with.
    pub float_ref: String,
    pub accuracy: Accuracy,
    /// Scales, zero points and accumulator bound (NNA compute ops).
    pub quant: Option<LayerQuant>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OutputReport {
    pub name: String,
    pub accuracy: Accuracy,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Report {
    pub graph: String,
    pub calib_method: Option<CalibMethod>,
    /// How the weights were rounded to int8 (`None`: not quantized).
    pub weight_rounding: Option<crate::WeightRounding>,
    pub calib_frames: usize,
    /// Every rewrite, in pass order.
    pub rewrites: Vec<Rewrite>,
    /// Ops the NNA cannot run: executed on the host CPU.
    pub host_ops: Vec<HostOpEntry>,
    pub layers: Vec<LayerReport>,
    pub outputs: Vec<OutputReport>,
    /// Accumulator values that wrapped in the quantized reference run (must be 0).
    pub acc_overflows: u64,
    /// Layers whose weights were rescaled to respect the 30-bit accumulator.
    pub acc_rescaled_layers: Vec<String>,
    /// Per dot op, what empirical bias correction changed (empty when it is off).
    pub bias_correction: Vec<crate::quant::bias_correct::BiasCorrection>,
    /// For a pre-quantized model: which values and weights keep the file's
    /// quantization and which were calibrated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quant_source: Option<crate::quant::QuantSource>,
    /// Wall time per pass in milliseconds (not serialized: not deterministic).
    #[serde(skip)]
    pub pass_ms: Vec<(String, f64)>,
    /// Fused node name -> the source nodes it stands for (`nnac compile --graph`;
    /// not serialized: the quantization report's JSON is unchanged).
    #[serde(skip)]
    pub fused: std::collections::BTreeMap<String, Fused>,
}

/// The names of the original nodes whose float values the report compares with the
/// layers of the fused (or quantized) graph `g`.
pub fn wanted_names(g: &Graph, ctx: &PassCtx) -> BTreeSet<String> {
    compared_nodes(g)
        .into_iter()
        .map(|n| ctx.out_name(&g.node(n).name).to_string())
        .collect()
}

/// The nodes of `g` the report measures (every node but constants and inputs).
fn compared_nodes(g: &Graph) -> Vec<NodeId> {
    g.node_ids()
        .into_iter()
        .filter(|&n| !matches!(g.node(n).op, Op::Constant(_) | Op::Input))
        .collect()
}

/// Measures every quantized layer against the float graph `float_g` on `frames`. The
/// float values of the frames `kept` from calibration are used as they are; the
/// float interpreter runs only on the others (concurrently with the quantized run).
pub fn measure(
    float_g: &Graph,
    q: &Graph,
    ctx: &PassCtx,
    layers: &[LayerQuant],
    frames: &[Frame],
    kept: &FloatRef,
    report: &mut Report,
) -> Result<(), PassError> {
    let ids = compared_nodes(q);
    let mut sums: BTreeMap<NodeId, Sums> = BTreeMap::new();
    let mut out_sums: BTreeMap<String, Sums> = BTreeMap::new();
    let wanted: BTreeMap<&str, NodeId> = ids
        .iter()
        .map(|&n| (ctx.out_name(&q.node(n).name), n))
        .collect();
    let wanted_ids: BTreeSet<NodeId> = wanted.values().copied().collect();
    for (i, frame) in frames.iter().enumerate() {
        let run_q = || {
            let mut codes: BTreeMap<NodeId, QVal> = BTreeMap::new();
            run_quantized_observed(q, frame, &mut |n, v| {
                if wanted_ids.contains(&n) {
                    codes.insert(n, v.clone());
                }
            })
            .map(|(vals, trace)| (vals, trace, codes))
        };
        let (float_run, q_run) = match kept.frame(i) {
            Some(f) => (Ok(Cow::Borrowed(f)), run_q()),
            None => rayon::join(|| run_float(float_g, frame, i, kept).map(Cow::Owned), run_q),
        };
        let float_run = float_run?;
        let (vals, trace, codes) = q_run?;
        let pairs: Vec<(NodeId, &QVal, &[f32])> = codes
            .iter()
            .filter_map(|(n, c)| {
                let name = ctx.out_name(&q.node(*n).name);
                let f = float_run
                    .values
                    .get(name)
                    .filter(|_| wanted.get(name) == Some(n))?;
                Some((*n, c, f.as_slice()))
            })
            .collect();
        // Layers in parallel; each layer's sums continue in their own order.
        let updated: Vec<(NodeId, Sums)> = pairs
            .par_iter()
            .map(|&(n, c, f)| {
                let y = crate::analysis::real(c, &q.node(n).outputs[0]);
                let mut acc = sums.get(&n).copied().unwrap_or_default();
                acc.add(f, &y);
                (n, acc)
            })
            .collect();
        sums.extend(updated);
        report.acc_overflows += trace.acc_overflows;
        let q_outs = nnac_qinterp::dequantized_outputs(q, &vals);
        for (name, t) in &float_run.outputs {
            if let Some(y) = q_outs.get(name) {
                out_sums
                    .entry(name.clone())
                    .or_default()
                    .add(&t.to_f32_vec(), &y.to_f32_vec());
            }
        }
    }
    let by_name: BTreeMap<&str, &LayerQuant> =
        layers.iter().map(|l| (l.name.as_str(), l)).collect();
    for &n in &ids {
        let name = &q.node(n).name;
        let Some(s) = sums.get(&n) else { continue };
        report.layers.push(LayerReport {
            name: name.clone(),
            op: q.node(n).op.mnemonic().to_string(),
            float_ref: ctx.out_name(name).to_string(),
            accuracy: s.accuracy(),
            quant: by_name.get(name.as_str()).map(|l| (*l).clone()),
        });
    }
    report.outputs = out_sums
        .into_iter()
        .map(|(name, s)| OutputReport {
            name,
            accuracy: s.accuracy(),
        })
        .collect();
    Ok(())
}

/// The float values of frame `i` the report compares (those `kept` wants).
fn run_float(
    float_g: &Graph,
    frame: &Frame,
    i: usize,
    kept: &FloatRef,
) -> Result<FrameValues, PassError> {
    let mut values: BTreeMap<String, Vec<f32>> = BTreeMap::new();
    let outputs = run_observed(float_g, frame, &format!("report frame {i}"), &mut |v, t| {
        let name = &float_g.node(v.node).name;
        if kept.wants(name) {
            values.insert(name.clone(), t.to_f32_vec());
        }
    })?;
    Ok(FrameValues { values, outputs })
}

impl Report {
    /// A human-readable table (host ops, per-layer accuracy, scales, bounds).
    pub fn table(&self) -> String {
        let mut s = String::new();
        // With GPTQ, how many dot layers it rounded (the others fell back to nearest).
        let dots: Vec<usize> = self
            .layers
            .iter()
            .filter_map(|l| l.quant.as_ref()?.gptq_channels)
            .collect();
        let gptq = match self.weight_rounding {
            Some(crate::WeightRounding::Gptq) if !dots.is_empty() => format!(
                " (on {} of {} dot layers)",
                dots.iter().filter(|&&c| c > 0).count(),
                dots.len()
            ),
            _ => String::new(),
        };
        let bias = match self.bias_correction.len() {
            0 => String::new(),
            n => format!(", bias correction on {n} dot layers"),
        };
        let _ = writeln!(
            s,
            "graph {}: {} calibration frame(s), method {}, weights {}{gptq}{bias}",
            self.graph,
            self.calib_frames,
            self.calib_method.map_or("-", |m| m.name()),
            self.weight_rounding.map_or("-", |m| m.name())
        );
        if let Some(q) = &self.quant_source {
            let _ = writeln!(s, "{}", q.summary());
        }
        let _ = writeln!(s, "host ops ({}):", self.host_ops.len());
        for h in &self.host_ops {
            let _ = writeln!(s, "  {} ({}): {}", h.node, h.op, h.reason);
        }
        let _ = writeln!(
            s,
            "{:<32} {:<12} {:>9} {:>8} {:>4} {:>11} {:>4} {:>12} {:>11}",
            "layer", "op", "SQNR dB", "cosine", "out", "out scale", "zp", "acc bound", "rescaled"
        );
        for l in &self.layers {
            let (dt, sc, zp, acc, resc) = match &l.quant {
                Some(q) => (
                    q.out_dtype.clone(),
                    format!("{:.4e}", q.out_scale),
                    q.out_zero_point.to_string(),
                    q.acc.as_ref().map_or("-".into(), |a| a.bound.to_string()),
                    q.acc
                        .as_ref()
                        .map_or("-".into(), |a| a.rescaled_channels.to_string()),
                ),
                None => ("-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
            };
            let _ = writeln!(
                s,
                "{:<32} {:<12} {:>9} {:>8.5} {:>4} {:>11} {:>4} {:>12} {:>11}",
                l.name,
                l.op,
                db_text(l.accuracy.sqnr_db),
                l.accuracy.cosine,
                dt,
                sc,
                zp,
                acc,
                resc
            );
        }
        for o in &self.outputs {
            let _ = writeln!(
                s,
                "output {}: SQNR {} dB, cosine {:.5}",
                o.name,
                db_text(o.accuracy.sqnr_db),
                o.accuracy.cosine
            );
        }
        let _ = writeln!(
            s,
            "accumulator overflows in the reference run: {}",
            self.acc_overflows
        );
        s
    }
}

/// Converts named float tensors for tests and tools.
pub fn frame(pairs: &[(&str, Tensor)]) -> Frame {
    pairs
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect()
}

/// A table of stage wall times (`(stage, ms)` in pipeline order, e.g.
/// [`Report::pass_ms`] followed by the backend's stages) with each stage's share and
/// the total (`nnac compile --time-passes`, the compile benchmark).
pub fn time_table(rows: &[(String, f64)]) -> String {
    let total: f64 = rows.iter().map(|(_, ms)| ms).sum();
    let width = rows.iter().map(|(s, _)| s.len()).max().unwrap_or(0).max(5);
    let mut s = String::new();
    let _ = writeln!(s, "{:<width$} {:>10} {:>6}", "stage", "ms", "%");
    for (stage, ms) in rows {
        let share = if total > 0.0 { 100.0 * ms / total } else { 0.0 };
        let _ = writeln!(s, "{stage:<width$} {ms:>10.1} {share:>6.1}");
    }
    let _ = writeln!(s, "{:<width$} {total:>10.1} {:>6.1}", "total", 100.0);
    s
}
