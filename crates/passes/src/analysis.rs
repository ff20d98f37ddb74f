//! Which layer lost the accuracy? (`nnac analyze`, `nnac.analyze`, `--auto-float`.)
//!
//! Runs frames through the float reference (the folded float graph) and the quantized
//! reference interpreter (the bit-exact int8 path of the program) and measures, for
//! every layer of the quantized graph:
//!
//! - **entire**: its int8 output against the float value it stands for, with int8
//!   inputs all the way from the graph input: the error accumulated up to it;
//! - **single**: the layer alone, its inputs the float values quantized to their int8
//!   grids: the error the layer itself adds (input rounding, weights, accumulator
//!   requantization, epilogue, output rounding);
//! - **removable**: the part of the single error that keeping the layer in float32
//!   on the host (`--float-layers`) takes away: single error energy minus the error of
//!   rounding the float output to the layer's output grid (which a float layer still
//!   pays), over the float signal energy. The sensitivity ranking orders the layers
//!   that can be kept in float (dot products, SCALE, ELTWISE) by it, largest first.
//!
//! Each as cosine similarity, SQNR and largest absolute error over all frames.

use crate::agreement::{db_text, Accuracy, Sums};
use crate::float_eval::{run_observed, Frame};
use crate::quant::params::{dequantize, scale_zp};
use crate::PassError;
use nnac_interp::host::quantize;
use nnac_ir::{DType, Graph, NnaOp, NodeId, Op, TensorType};
use nnac_qinterp::{eval_node, run_quantized_observed, QTrace, QVal, Walk};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The float graph a quantized graph was made from, and which of its values each
/// quantized node stands for ([`crate::Compiled::reference`]).
#[derive(Clone, Debug)]
pub struct FloatReference {
    /// The folded float graph (after the float passes; what calibration runs).
    pub graph: Graph,
    /// Quantized node name -> the float node whose value it computes.
    pub out_names: BTreeMap<String, String>,
}

/// Agreement of one layer's output with float.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ErrorStats {
    pub cosine: f64,
    /// `None` when the values are exactly equal.
    pub sqnr_db: Option<f64>,
    /// Largest absolute difference from the float value.
    pub max_abs_error: f64,
}

impl ErrorStats {
    fn of(s: &Sums) -> ErrorStats {
        let Accuracy { sqnr_db, cosine } = s.accuracy();
        ErrorStats {
            cosine,
            sqnr_db,
            max_abs_error: s.max_abs(),
        }
    }
}

/// One layer of the analysis.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LayerAnalysis {
    /// The quantized graph's node (the name `--float-layers` takes).
    pub name: String,
    pub op: String,
    /// The float node whose value it is compared with.
    pub float_ref: String,
    /// Accumulated from the graph input.
    pub entire: ErrorStats,
    /// The layer alone on float inputs; `None` when an input has no float value to
    /// start from.
    pub single: Option<ErrorStats>,
    /// Error energy keeping the layer in float would remove, over the signal energy
    /// (see the module doc); `None` for layers that cannot be kept in float.
    pub removable: Option<f64>,
    /// Whether the layer already runs on the host (in float).
    pub on_host: bool,
}

/// Agreement of one graph output.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OutputAnalysis {
    pub name: String,
    pub entire: ErrorStats,
}

/// The result of [`analyze`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Analysis {
    pub graph: String,
    pub frames: usize,
    /// In the quantized graph's topological order.
    pub layers: Vec<LayerAnalysis>,
    pub outputs: Vec<OutputAnalysis>,
    /// Layers that can be kept in float, most sensitive first (largest `removable`).
    pub ranking: Vec<String>,
}

/// Per-layer sums over the frames.
#[derive(Clone, Copy, Default)]
struct LayerSums {
    entire: Sums,
    single: Option<Sums>,
    /// The float output rounded to the layer's grid against float.
    rounding: Sums,
}

/// Whether the layer does arithmetic the NNA could do in float on the host.
fn floatable(op: &Op) -> bool {
    matches!(
        op,
        Op::Nna(NnaOp::Dot(_) | NnaOp::Scale(_) | NnaOp::Eltwise(_))
    )
}

/// Measures every layer of quantized graph `q` against `reference` on `frames`.
pub fn analyze(
    reference: &FloatReference,
    q: &Graph,
    frames: &[Frame],
) -> Result<Analysis, PassError> {
    let order = q
        .topo_order()
        .map_err(|e| PassError::node("analyze", &e.node, e.msg))?;
    let layers: Vec<NodeId> = order
        .iter()
        .copied()
        .filter(|&n| !matches!(q.node(n).op, Op::Constant(_) | Op::Input))
        .collect();
    let ref_name = |n: NodeId| ref_name(q, reference, n);
    let wanted: BTreeSet<&str> = order
        .iter()
        .filter(|&&n| !matches!(q.node(n).op, Op::Constant(_)))
        .map(|&n| ref_name(n))
        .collect();
    // Constant operands, as the quantized interpreter holds them (not the int8
    // weights, which dot ops read from the graph).
    let walk = Walk::new(q).map_err(|e| PassError::Interp {
        context: "analysis".into(),
        msg: e.to_string(),
    })?;
    let mut consts: BTreeMap<NodeId, QVal> = BTreeMap::new();
    let mut trace = QTrace::default();
    for &n in &order {
        if matches!(q.node(n).op, Op::Constant(_)) && !walk.skips(q, n) {
            let v = eval_node(q, n, &Frame::new(), &BTreeMap::new(), &mut trace)
                .map_err(|e| PassError::node("analyze", &q.node(n).name, e.to_string()))?;
            consts.insert(n, v);
        }
    }
    let mut sums: BTreeMap<NodeId, LayerSums> = BTreeMap::new();
    let mut out_sums: BTreeMap<String, Sums> = BTreeMap::new();
    for (i, frame) in frames.iter().enumerate() {
        let context = format!("analysis frame {i}");
        let mut float: BTreeMap<String, Vec<f32>> = frame
            .iter()
            .map(|(k, t)| (k.clone(), t.to_f32_vec()))
            .collect();
        let float_outs = run_observed(&reference.graph, frame, &context, &mut |v, t| {
            let name = &reference.graph.node(v.node).name;
            if v.port == 0 && wanted.contains(name.as_str()) {
                float.insert(name.clone(), t.to_f32_vec());
            }
        })?;
        let mut int8: BTreeMap<NodeId, QVal> = BTreeMap::new();
        let (vals, _) = run_quantized_observed(q, frame, &mut |n, v| {
            int8.insert(n, v.clone());
        })
        .map_err(|e| PassError::Interp {
            context: context.clone(),
            msg: e.to_string(),
        })?;
        let updated: Vec<(NodeId, LayerSums)> = layers
            .par_iter()
            .filter_map(|&n| {
                let f = float.get(ref_name(n))?;
                let t = &q.node(n).outputs[0];
                let y = real(int8.get(&n)?, t);
                let mut acc = sums.get(&n).copied().unwrap_or_default();
                acc.entire.add(f, &y);
                // A value kept float32 (between float layers) is not rounded.
                let rounded: Vec<f32> = match t.dtype {
                    DType::F32 => f.clone(),
                    d => {
                        let (s, zp) = scale_zp(t);
                        f.iter()
                            .map(|&x| dequantize(quantize(x, s, zp, d), s, zp))
                            .collect()
                    }
                };
                acc.rounding.add(f, &rounded);
                acc.single = match single(q, reference, n, frame, &float, &consts) {
                    Some(y) if y.len() == f.len() => {
                        let mut s1 = acc.single.unwrap_or_default();
                        s1.add(f, &y);
                        Some(s1)
                    }
                    _ => None,
                };
                Some((n, acc))
            })
            .collect();
        sums.extend(updated);
        let q_outs = nnac_qinterp::dequantized_outputs(q, &vals);
        for (name, t) in &float_outs {
            if let Some(y) = q_outs.get(name) {
                out_sums
                    .entry(name.clone())
                    .or_default()
                    .add(&t.to_f32_vec(), &y.to_f32_vec());
            }
        }
    }
    let mut out = Analysis {
        graph: q.name.clone(),
        frames: frames.len(),
        layers: Vec::new(),
        outputs: out_sums
            .into_iter()
            .map(|(name, s)| OutputAnalysis {
                name,
                entire: ErrorStats::of(&s),
            })
            .collect(),
        ranking: Vec::new(),
    };
    for &n in &layers {
        let Some(s) = sums.get(&n) else { continue };
        let node = q.node(n);
        let removable = match (&s.single, floatable(&node.op)) {
            (Some(single), true) if s.rounding.signal_energy() > 0.0 => Some(
                (single.error_energy() - s.rounding.error_energy()).max(0.0)
                    / s.rounding.signal_energy(),
            ),
            _ => None,
        };
        out.layers.push(LayerAnalysis {
            name: node.name.clone(),
            op: node.op.mnemonic().to_string(),
            float_ref: ref_name(n).to_string(),
            entire: ErrorStats::of(&s.entire),
            single: s.single.as_ref().map(ErrorStats::of),
            removable,
            on_host: matches!(node.op, Op::Nna(NnaOp::Host(_))),
        });
    }
    let mut ranked: Vec<&LayerAnalysis> = out
        .layers
        .iter()
        .filter(|l| l.removable.is_some_and(|r| r > 0.0))
        .collect();
    // Largest removable error first; ties in graph order (a stable sort).
    ranked.sort_by(|a, b| b.removable.partial_cmp(&a.removable).expect("finite"));
    out.ranking = ranked.iter().map(|l| l.name.clone()).collect();
    Ok(out)
}

/// Layer `n` alone: its inputs' float values quantized to their int8 grids, the
/// layer run by the quantized interpreter; dequantized. `None` when an input has no
/// float value or the layer fails on these inputs.
fn single(
    q: &Graph,
    reference: &FloatReference,
    n: NodeId,
    frame: &Frame,
    float: &BTreeMap<String, Vec<f32>>,
    consts: &BTreeMap<NodeId, QVal>,
) -> Option<Vec<f32>> {
    let mut vals: BTreeMap<NodeId, QVal> = BTreeMap::new();
    for v in q.node_inputs(n) {
        let p = v.node;
        if matches!(q.node(p).op, Op::Constant(_)) {
            // Int8 weights are not in `consts`: the dot op reads them from the graph.
            if let Some(c) = consts.get(&p) {
                vals.insert(p, c.clone());
            }
            continue;
        }
        let t = q.value_type(v);
        let f = float.get(ref_name(q, reference, p))?;
        let val = match t.dtype {
            DType::F32 => QVal::F32(f.clone()),
            d => {
                let (s, zp) = scale_zp(t);
                QVal::Codes(f.iter().map(|&x| quantize(x, s, zp, d)).collect())
            }
        };
        vals.insert(p, val);
    }
    let mut trace = QTrace::default();
    let out = eval_node(q, n, frame, &vals, &mut trace).ok()?;
    Some(real(&out, &q.node(n).outputs[0]))
}

/// The real values of a quantized interpreter's value of type `t`: codes
/// dequantized, float32 values as they are.
pub(crate) fn real(v: &QVal, t: &TensorType) -> Vec<f32> {
    match v {
        QVal::Codes(c) => {
            let (s, zp) = scale_zp(t);
            c.iter().map(|&c| dequantize(c, s, zp)).collect()
        }
        QVal::F32(f) => f.clone(),
    }
}

/// The float node whose value node `n` of `q` stands for.
fn ref_name<'a>(q: &'a Graph, reference: &'a FloatReference, n: NodeId) -> &'a str {
    let name = q.node(n).name.as_str();
    reference.out_names.get(name).map_or(name, String::as_str)
}

impl Analysis {
    /// The table `nnac analyze` prints: per layer entire and single error, the
    /// removable error, then the outputs and the sensitivity ranking (`top` first).
    pub fn table(&self, top: usize) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "graph {}: {} frame(s); entire = int8 from the graph input, single = the layer alone on float inputs",
            self.graph, self.frames
        );
        let _ = writeln!(
            s,
            "{:<32} {:<12} {:>9} {:>8} {:>10} {:>9} {:>8} {:>10} {:>10}",
            "layer",
            "op",
            "entire dB",
            "cosine",
            "max err",
            "single dB",
            "cosine",
            "max err",
            "removable"
        );
        for l in &self.layers {
            let (sd, sc, sm) = match &l.single {
                Some(e) => (
                    db_text(e.sqnr_db),
                    format!("{:.5}", e.cosine),
                    format!("{:.4}", e.max_abs_error),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            let removable = match (l.on_host, l.removable) {
                (true, _) => "host".to_string(),
                (false, Some(r)) if r > 0.0 => format!("{:.1} dB", 10.0 * r.log10()),
                (false, Some(_)) => "0".to_string(),
                (false, None) => "-".to_string(),
            };
            let _ = writeln!(
                s,
                "{:<32} {:<12} {:>9} {:>8.5} {:>10.4} {:>9} {:>8} {:>10} {:>10}",
                l.name,
                l.op,
                db_text(l.entire.sqnr_db),
                l.entire.cosine,
                l.entire.max_abs_error,
                sd,
                sc,
                sm,
                removable
            );
        }
        for o in &self.outputs {
            let _ = writeln!(
                s,
                "output {}: SQNR {} dB, cosine {:.5}, max error {:.4}",
                o.name,
                db_text(o.entire.sqnr_db),
                o.entire.cosine,
                o.entire.max_abs_error
            );
        }
        let shown: Vec<&str> = self.ranking.iter().take(top).map(String::as_str).collect();
        let _ = writeln!(
            s,
            "most sensitive (keep in float with --float-layers, or --auto-float N): {}",
            if shown.is_empty() {
                "none".to_string()
            } else {
                shown.join(", ")
            }
        );
        s
    }
}
