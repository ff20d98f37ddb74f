//! A model as the analytical cost model sees it: the NNA layers of its quantized IR,
//! each as a hardware-independent shape, identical shapes counted once.

use crate::error::{LayerShapeError, TuneError};
use nnac_ir::{DotKind, Graph, NnaOp, Op};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the MAC array or the SIMD unit computes for one layer, independent of the
/// hardware. A dot product has `pixels = out_h * out_w` flattened output pixels,
/// `out_c` channels in `groups` groups and `terms` multiply-accumulates per output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LayerShape {
    /// A dot product (CONV / DECONV / INNER-PRODUCT) or SIMD-only work (SCALE, ELTWISE).
    pub dot: bool,
    pub out_h: u64,
    pub out_w: u64,
    pub out_c: u64,
    pub groups: u64,
    /// Terms per output value: `in_c / groups * kh * kw` (1 for SIMD-only layers).
    pub terms: u64,
    /// Kernel taps `kh * kw` (the packet pattern repeats per tap).
    pub taps: u64,
    /// Horizontal and vertical input stride (pixels between neighbouring outputs).
    pub stride_w: u64,
    pub stride_h: u64,
    /// Input row length in bytes (planar layout: one byte per pixel).
    pub in_w: u64,
    /// SIMD instructions per accumulator row (the epilogue program's length).
    pub simd_len: u64,
    /// Activation operands read (ELTWISE: 2).
    pub operands: u64,
    /// Input activation bytes (all operands), output activation bytes, parameter
    /// bytes (weights, biases, channel tables).
    pub in_bytes: u64,
    pub out_bytes: u64,
    pub param_bytes: u64,
    /// A 1x1, stride-1, unpadded, ungrouped, unpooled convolution: a plain matrix
    /// product the backend can run with its channels on the rows (`mapping.rs`).
    #[serde(default)]
    pub matmul: bool,
}

impl LayerShape {
    /// Flattened output pixels.
    pub fn pixels(&self) -> u64 {
        self.out_h * self.out_w
    }

    /// Multiply-accumulates of useful work.
    pub fn macs(&self) -> u64 {
        if self.dot {
            self.pixels() * self.out_c * self.terms
        } else {
            0
        }
    }

    /// A global pool as a depthwise convolution to one pixel: the compiler runs it
    /// with the channels as output pixels (`gap.rs`).
    pub fn is_channel_pool(&self) -> bool {
        self.dot && self.pixels() == 1 && self.groups > 1 && self.groups == self.out_c
    }

    /// A 1x1, stride-1, unpadded, ungrouped, unpooled convolution: a plain matrix
    /// product whose pixels and channels may trade places on the array
    /// (`mapping.rs`; the backend's `lower/channels_on_rows.rs`).
    pub fn is_matmul(&self) -> bool {
        self.dot && self.matmul
    }
}

/// One layer of a model: its name (the source node's) and shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    pub name: String,
    pub shape: LayerShape,
}

/// A distinct layer shape and how many layers have it (evaluated once per point).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UniqueShape {
    pub shape: LayerShape,
    pub count: u64,
}

/// A model of the workload mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// The model's name (its file stem).
    pub name: String,
    /// Weight in the mix (frames of this model per frame of the mix).
    pub weight: f64,
    pub layers: Vec<Layer>,
    pub unique: Vec<UniqueShape>,
    /// Bytes of the graph's inputs and outputs (moved once per frame).
    pub io_bytes: u64,
    /// Bytes of all parameters.
    pub param_bytes: u64,
    /// The most activation bytes any one layer touches (input + output).
    pub peak_act_bytes: u64,
}

fn numel(shape: &[usize]) -> u64 {
    shape.iter().map(|&d| d as u64).product()
}

/// `[c, h, w]` of a `[1, c, h, w]` shape; an inner product's `[1, k]` is `k`
/// channels of one pixel.
fn chw(shape: &[usize]) -> [u64; 3] {
    let s: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    match s.len() {
        4 => [s[1], s[2], s[3]],
        3 => [s[1], s[2], 1],
        2 => [s[1], 1, 1],
        _ => [numel(shape), 1, 1],
    }
}

/// One spatial output extent of a convolution.
fn conv_out(i: u64, k: u64, s: u64, pb: u64, pe: u64, d: u64) -> u64 {
    let span = d * (k.max(1) - 1) + 1;
    (i + pb + pe).saturating_sub(span) / s.max(1) + 1
}

/// The shape of one NNA node, `None` for nodes that do no NNA work (concatenation,
/// host ops, constants, inputs).
fn layer_shape(g: &Graph, id: nnac_ir::NodeId) -> Result<Option<LayerShape>, LayerShapeError> {
    let node = g.node(id);
    let Op::Nna(op) = &node.op else {
        return Ok(None);
    };
    let ins = g.node_inputs(id);
    let in_ty = |k: usize| ins.get(k).map(|&v| g.value_type(v).shape.clone());
    let x = in_ty(0).ok_or(LayerShapeError::NoInput)?;
    let out = node
        .outputs
        .first()
        .ok_or(LayerShapeError::NoOutput)?
        .shape
        .clone();
    let [ic, ih, iw] = chw(&x);
    let param_bytes: u64 = ins
        .iter()
        .skip(1)
        .filter(|&&v| g.const_of(v).is_some())
        .map(|&v| {
            let t = g.value_type(v);
            numel(&t.shape) * t.dtype.size() as u64
        })
        .sum();
    let act_in: u64 = ins
        .iter()
        .filter(|&&v| g.const_of(v).is_none())
        .map(|&v| numel(&g.value_type(v).shape))
        .sum();
    let out_bytes = numel(&out);
    let simd = |e: &nnac_ir::Epilogue, c: u64| {
        nnac_backend_nna::simd::epilogue(e, c as usize)
            .map(|p| p.program.len() as u64)
            .map_err(LayerShapeError::Epilogue)
    };
    let shape = match op {
        NnaOp::Dot(d) => {
            let [oc, _, _] = chw(&out);
            let matmul = match &d.kind {
                DotKind::Conv(a) => {
                    a.kernel.iter().all(|&k| k == 1)
                        && a.strides.iter().all(|&s| s == 1)
                        && a.pads.iter().all(|&p| p == 0)
                        && a.group <= 1
                        && d.pool.is_none()
                }
                DotKind::Deconv(_) | DotKind::Inner => false,
            };
            let (out_h, out_w, groups, taps, sw, sh) = match &d.kind {
                DotKind::Conv(a) => {
                    let k = |i: usize| a.kernel.get(i).copied().unwrap_or(1) as u64;
                    let s = |i: usize| a.strides.get(i).copied().unwrap_or(1) as u64;
                    let p = |i: usize| a.pads.get(i).copied().unwrap_or(0) as u64;
                    let dl = |i: usize| a.dilations.get(i).copied().unwrap_or(1) as u64;
                    (
                        conv_out(ih, k(0), s(0), p(0), p(2), dl(0)),
                        conv_out(iw, k(1), s(1), p(1), p(3), dl(1)),
                        a.group.max(1) as u64,
                        k(0) * k(1),
                        s(1),
                        s(0),
                    )
                }
                DotKind::Deconv(a) => {
                    let k = |i: usize| a.kernel.get(i).copied().unwrap_or(1) as u64;
                    let s = |i: usize| a.strides.get(i).copied().unwrap_or(1) as u64;
                    let p = |i: usize| a.pads.get(i).copied().unwrap_or(0) as u64;
                    let dl = |i: usize| a.dilations.get(i).copied().unwrap_or(1) as u64;
                    let op = |i: usize| a.output_padding.get(i).copied().unwrap_or(0) as u64;
                    let o = |i: u64, n: usize| {
                        ((i.max(1) - 1) * s(n) + dl(n) * (k(n).max(1) - 1) + 1 + op(n))
                            .saturating_sub(p(n) + p(n + 2))
                    };
                    (o(ih, 0), o(iw, 1), a.group.max(1) as u64, k(0) * k(1), 1, 1)
                }
                // The whole input is one kernel window: one output pixel.
                DotKind::Inner => (1, 1, 1, ih * iw, 1, 1),
            };
            LayerShape {
                dot: true,
                out_h,
                out_w,
                out_c: oc,
                groups,
                terms: ic / groups * taps,
                taps,
                stride_w: sw,
                stride_h: sh,
                in_w: iw,
                simd_len: simd(&d.epilogue, oc)?,
                operands: 1,
                in_bytes: act_in,
                out_bytes,
                param_bytes,
                matmul,
            }
        }
        NnaOp::Scale(_)
        | NnaOp::Eltwise(_)
        | NnaOp::ChannelShuffle { .. }
        | NnaOp::Upsample { .. }
        | NnaOp::DepthToSpace { .. } => {
            let [oc, oh, ow] = chw(&out);
            // The instruction's program: SCALE's multiply-add prefix then the
            // epilogue; ELTWISE rescales its inputs in its own fields.
            let len = match op {
                NnaOp::Scale(s) => {
                    simd(&s.epilogue, oc)? + nnac_backend_nna::simd::scale_prefix().len() as u64
                }
                NnaOp::Eltwise(e) => simd(&e.epilogue, oc)?,
                _ => 1,
            };
            let operands = if matches!(op, NnaOp::Eltwise(_)) {
                2
            } else {
                1
            };
            LayerShape {
                dot: false,
                out_h: oh,
                out_w: ow,
                out_c: oc,
                groups: 1,
                terms: 1,
                taps: 1,
                stride_w: 1,
                stride_h: 1,
                in_w: iw,
                simd_len: len,
                operands,
                in_bytes: act_in,
                out_bytes,
                param_bytes,
                matmul: false,
            }
        }
        NnaOp::Concat { .. } | NnaOp::Host(_) => return Ok(None),
    };
    Ok(Some(shape))
}

impl Workload {
    /// The layers of a quantized graph (`nnac_passes::compile_graph`'s output).
    pub fn from_graph(name: &str, weight: f64, g: &Graph) -> Result<Workload, TuneError> {
        let err = |message: String| TuneError::Workload {
            model: name.to_string(),
            message,
        };
        if !(weight.is_finite() && weight > 0.0) {
            return Err(err(format!("mix weight {weight} is not a positive number")));
        }
        let order = g.topo_order().map_err(|e| err(e.to_string()))?;
        let mut layers = Vec::new();
        for id in order {
            let shape =
                layer_shape(g, id).map_err(|m| err(format!("layer {}: {m}", g.node(id).name)))?;
            if let Some(shape) = shape {
                layers.push(Layer {
                    name: g.node(id).name.clone(),
                    shape,
                });
            }
        }
        if layers.is_empty() {
            return Err(err("no layer runs on the NNA".into()));
        }
        let mut counts: BTreeMap<LayerShape, u64> = BTreeMap::new();
        layers
            .iter()
            .for_each(|l| *counts.entry(l.shape).or_default() += 1);
        let io_bytes = g
            .inputs()
            .iter()
            .map(|&i| numel(&g.node(i).outputs[0].shape))
            .chain(
                g.outputs()
                    .iter()
                    .map(|o| numel(&g.value_type(o.value).shape)),
            )
            .sum();
        Ok(Workload {
            name: name.to_string(),
            weight,
            param_bytes: layers.iter().map(|l| l.shape.param_bytes).sum(),
            peak_act_bytes: layers
                .iter()
                .map(|l| l.shape.in_bytes + l.shape.out_bytes)
                .max()
                .unwrap_or(0),
            unique: counts
                .into_iter()
                .map(|(shape, count)| UniqueShape { shape, count })
                .collect(),
            layers,
            io_bytes,
        })
    }

    /// Useful multiply-accumulates of one frame.
    pub fn macs(&self) -> u64 {
        self.unique.iter().map(|u| u.shape.macs() * u.count).sum()
    }
}
