//! Quantizes one NNA dot op: int8 per-output-channel weights, int32 bias (with the
//! input zero-point correction), the accumulator bound (rescaling channels that could
//! overflow), and the requantization of its epilogue.

use super::acc_bound::AccReport;
use super::gptq::Hessian;
use super::params::{scale_zp, weight_scale};
use super::requant;
use super::weights::{quantize_layer, GptqFactors, LayerFrom};
use crate::channels::WeightChannels;
use crate::fixed::FixedWeights;
use crate::util::dot_out_channels;
use crate::{PassError, RequantRule};
use nnac_ir::{
    DType, DotKind, GemmAttrs, Graph, NnaOp, NodeId, Op, Quant, Tensor, TensorData, TensorType,
};
use std::borrow::Cow;

const PASS: &str = "quantize";

/// The IR op whose weight layout a dot kind uses.
pub fn layout_op(kind: &DotKind) -> Op {
    match kind {
        DotKind::Conv(a) => Op::Conv(a.clone()),
        DotKind::Deconv(a) => Op::ConvTranspose(a.clone()),
        DotKind::Inner => Op::Gemm(GemmAttrs {
            alpha: 1.0,
            beta: 1.0,
            trans_a: false,
            trans_b: true,
        }),
    }
}

/// Refuses a NaN or infinite float parameter (int8 has no code for it), naming the
/// first one: from the model itself, or from folding a batch norm whose variance plus
/// epsilon is not positive.
fn non_finite(v: &[f32], what: &str, shape: &[usize], name: &str) -> Result<(), PassError> {
    match v.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(i) => Err(PassError::node(
            PASS,
            name,
            format!(
                "element {i} of the (folded) {what} {shape:?} is {}, which no int8 code \
                 represents (a non-finite parameter in the model, or a batch norm with \
                 variance + epsilon <= 0)",
                v[i]
            ),
        )),
    }
}

/// What quantizing one dot op reports.
pub struct DotQuant {
    pub acc: AccReport,
    /// Channels whose weights GPTQ rounded.
    pub gptq_channels: usize,
    /// The weights keep the model file's int8 codes and scales.
    pub weights_from_file: bool,
}

/// Quantizes the dot node `id` in place (its input and output types are already set);
/// with `hessian` (its input's `sum x x^T` from calibration) the weights are rounded
/// by GPTQ where the layout allows (`gptq`), else to nearest; with `fixed` (a
/// pre-quantized model's scales along the output channels) at those scales, which
/// gives back the file's codes.
pub fn quantize_dot(
    g: &mut Graph,
    id: NodeId,
    xmax: i64,
    hessian: Option<&Hessian>,
    fixed: Option<&FixedWeights>,
    rule: RequantRule,
) -> Result<DotQuant, PassError> {
    let name = g.node(id).name.clone();
    let Op::Nna(NnaOp::Dot(dot)) = g.node(id).op.clone() else {
        unreachable!("caller matched a dot")
    };
    let ins = g.node_inputs(id);
    let in_t = g.value_type(ins[0]).clone();
    let out_t = g.node(id).outputs[0].clone();
    let (s_in, zp_in) = scale_zp(&in_t);
    let (s_out, zp_out) = scale_zp(&out_t);
    // The float weights are read where they are (no copy); the quantized ones replace
    // them below.
    let wt = g
        .const_of(ins[1])
        .ok_or_else(|| PassError::node(PASS, &name, "weights are not constant"))?;
    let bias = g
        .const_of(ins[2])
        .ok_or_else(|| PassError::node(PASS, &name, "bias is not constant"))?
        .to_f32_vec();
    let op = layout_op(&dot.kind);
    let wshape = wt.shape.clone();
    let m = dot_out_channels(&op, &wshape)
        .ok_or_else(|| PassError::node(PASS, &name, "bad weight shape"))?;
    if bias.len() != m {
        return Err(PassError::node(
            PASS,
            &name,
            format!("bias has {} entries for {m} channels", bias.len()),
        ));
    }
    if matches!(dot.kind, DotKind::Deconv(_)) && zp_in != 0 {
        return Err(PassError::node(
            PASS,
            &name,
            "deconvolution input must have zero point 0",
        ));
    }
    let layout = WeightChannels::of(&op, &wshape).expect("dot op");
    let w: Cow<[f32]> = match wt.as_f32() {
        Some(w) => Cow::Borrowed(w),
        None => Cow::Owned(wt.to_f32_vec()),
    };
    non_finite(&w, "weights", &wshape, &name)?;
    non_finite(&bias, "bias", &[m], &name)?;
    let ort = rule == RequantRule::OnnxRuntime;
    // ONNX Runtime sums a pooling window's codes and scales the sum: weight code 1.
    let window = ort
        .then(|| average_window(&dot.kind, &w, &wshape))
        .flatten();
    let file = fixed.and_then(|f| file_scales(f, &dot.kind, m));
    let from_file = file.is_some() && window.is_none();
    let fixed_scales = match window {
        Some(n) => Some(vec![1.0 / n as f32; m]),
        None => file,
    };
    let factors = hessian
        .filter(|_| fixed_scales.is_none())
        .and_then(|h| gptq_factors(h, layout, m, w.len()));
    let from = LayerFrom {
        s_in,
        zp_in,
        xmax,
        gptq: factors.as_ref(),
        fixed: fixed_scales.as_deref(),
    };
    let q = quantize_layer(&w, &bias, layout, from).ok_or_else(|| {
        PassError::node(
            PASS,
            &name,
            "weights do not split evenly into output channels",
        )
    })?;
    drop(w);
    let bias_i32 = to_i32(&q.bias)
        .ok_or_else(|| PassError::node(PASS, &name, "quantized bias exceeds int32"))?;
    let unit: Vec<f64> = q
        .scales
        .iter()
        .map(|&s| f64::from(s_in) * f64::from(s))
        .collect();
    let mut rq = requant::build(dot.epilogue.act.as_ref(), &unit, s_out, zp_out, out_t.dtype)
        .map_err(|e| PassError::node(PASS, &name, e.to_string()))?;
    if ort {
        // ONNX Runtime's fp32 scales: QLinearConv / QGemm `s_x * s_w / s_y`,
        // QLinearGlobalAveragePool `s_x / (s_y * n)`.
        let scale = q
            .scales
            .iter()
            .map(|&sw| match window {
                Some(n) => s_in / (s_out * n as f32),
                None => s_in * sw / s_out,
            })
            .collect();
        rq = requant::even(&rq, scale).unwrap_or(rq);
    }
    let axis = if matches!(dot.kind, DotKind::Deconv(_)) {
        1
    } else {
        0
    };
    let wv = const_node(
        g,
        &name,
        "weight_q",
        wshape,
        TensorData::I8(q.wq),
        Quant::PerChannel {
            axis,
            scales: q.scales.clone(),
        },
    );
    let unit_f32: Vec<f32> = unit.iter().map(|&u| u as f32).collect();
    let bv = bias_node(g, &name, bias_i32, unit_f32);
    g.set_node_inputs(id, &[ins[0], wv, bv]);
    let mut dot = dot;
    dot.epilogue.requant = Some(rq);
    g.node_mut(id).op = Op::Nna(NnaOp::Dot(dot));
    Ok(DotQuant {
        acc: q.acc,
        gptq_channels: q.gptq_channels,
        weights_from_file: from_file,
    })
}

/// `Some(n)` when the dot is an average over windows of `n` pixels (the pooling
/// convolution of `lower_pools`: depthwise, every weight `1 / n`).
fn average_window(kind: &DotKind, w: &[f32], wshape: &[usize]) -> Option<usize> {
    let DotKind::Conv(attrs) = kind else {
        return None;
    };
    let (m, n) = (*wshape.first()?, wshape.get(2..)?.iter().product::<usize>());
    let depthwise = attrs.group == m && wshape.get(1) == Some(&1);
    (depthwise && n > 0 && w.iter().all(|&x| x == 1.0 / n as f32)).then_some(n)
}

/// The file's weight scale of each of the `m` output channels, when its axis is the
/// output channels of the dot's weight layout (per-tensor: the one scale for all).
fn file_scales(f: &FixedWeights, kind: &DotKind, m: usize) -> Option<Vec<f32>> {
    let out_axis = match kind {
        DotKind::Conv(_) | DotKind::Inner => 0,
        DotKind::Deconv(a) if a.group == 1 => 1,
        DotKind::Deconv(_) => return None,
    };
    match f.axis {
        None => Some(vec![*f.scales.first()?; m]),
        Some(a) if a == out_axis && f.scales.len() == m => Some(f.scales.clone()),
        Some(_) => None,
    }
}

/// GPTQ's factors for a layer of `m` channels in `layout`, when its Hessian matches
/// the channel blocks (`k` weights per channel, channels split evenly over groups;
/// not for deconvolutions, whose channel blocks are not one input vector's weights).
fn gptq_factors(
    h: &Hessian,
    layout: WeightChannels,
    m: usize,
    w_len: usize,
) -> Option<GptqFactors> {
    if matches!(layout, WeightChannels::Deconv { .. })
        || m == 0
        || w_len != m * h.k
        || h.groups == 0
        || !m.is_multiple_of(h.groups)
    {
        return None;
    }
    Some(GptqFactors {
        per_group: h.factor(),
        channels_per_group: m / h.groups,
    })
}

pub fn to_i32(v: &[i64]) -> Option<Vec<i32>> {
    v.iter().map(|&x| i32::try_from(x).ok()).collect()
}

/// Adds a quantized constant (its type carries `quant`).
pub fn const_node(
    g: &mut Graph,
    owner: &str,
    what: &str,
    shape: Vec<usize>,
    data: TensorData,
    quant: Quant,
) -> nnac_ir::Value {
    let name = g.fresh_name(&format!("{owner}.{what}"));
    let t = Tensor::new(shape, data).expect("shape matches data");
    let v = g.add_constant(name, t);
    let ty: &mut TensorType = &mut g.node_mut(v.node).outputs[0];
    ty.quant = Some(quant);
    debug_assert!(matches!(ty.dtype, DType::I8 | DType::I32));
    v
}

/// Adds the int32 bias of dot product `owner`, one code per output channel in units
/// of `unit` (input scale x weight scale of the channel).
pub fn bias_node(g: &mut Graph, owner: &str, bias: Vec<i32>, unit: Vec<f32>) -> nnac_ir::Value {
    let m = bias.len();
    let quant = Quant::PerChannel {
        axis: 0,
        scales: unit,
    };
    const_node(g, owner, "bias_q", vec![m], TensorData::I32(bias), quant)
}

/// Quantizes the SCALE node `id` in place: per-channel factor `w_q = +-127 * 2^k`
/// (scale `|w| / (127 * 2^k)`), shift `b_q` at `s_in * s_w`; the SIMD input is
/// `(x_q - zp_in) * w_q + b_q`. A SCALE without pooling multiplies by an int32
/// channel entry (`IMUL`, docs/ISA.md), so `k` is as large as keeps
/// `255 |w_q| + |b_q|` inside the 30-bit accumulator (at most 16): the shift then has
/// `k` more bits than an int8 factor would leave it (with `k = 0`, `x + 3` after a
/// value of scale 0.0616 was off by up to 0.01 output steps, which moved 1.6% of the
/// PP-OCR classifier's first hard-swish codes). With pooling it runs as a depthwise
/// CONV whose weights are int8 (`k = 0`).
pub fn quantize_scale(g: &mut Graph, id: NodeId) -> Result<(), PassError> {
    let name = g.node(id).name.clone();
    let Op::Nna(NnaOp::Scale(mut sc)) = g.node(id).op.clone() else {
        unreachable!("caller matched a scale")
    };
    let ins = g.node_inputs(id);
    let (s_in, _) = scale_zp(g.value_type(ins[0]));
    let out_t = g.node(id).outputs[0].clone();
    let (s_out, zp_out) = scale_zp(&out_t);
    let w = g
        .const_of(ins[1])
        .ok_or_else(|| PassError::node(PASS, &name, "scale is not constant"))?
        .to_f32_vec();
    let b = g
        .const_of(ins[2])
        .ok_or_else(|| PassError::node(PASS, &name, "shift is not constant"))?
        .to_f32_vec();
    let c = w.len();
    let int32_factor = sc.pool.is_none();
    let scales: Vec<f32> = w
        .iter()
        .zip(&b)
        .map(|(x, &bias)| {
            let s0 = weight_scale(std::slice::from_ref(x));
            if !int32_factor {
                return s0;
            }
            // Accumulator units per unit of the factor code: 255 * 127 for the
            // product, |b| / (s_in * s0) for the shift.
            let per = 255.0 * 127.0 + (f64::from(bias) / (f64::from(s_in) * f64::from(s0))).abs();
            let k = (0..=16)
                .rev()
                .find(|&k| per * f64::from(1u32 << k) < f64::from((1u32 << 29) - 1))
                .unwrap_or(0);
            s0 / (1u32 << k) as f32
        })
        .collect();
    let wq: Vec<i32> = w
        .iter()
        .zip(&scales)
        .map(|(&x, &s)| (f64::from(x) / f64::from(s)).round() as i32)
        .collect();
    let bq: Vec<i64> = (0..c)
        .map(|i| (f64::from(b[i]) / (f64::from(s_in) * f64::from(scales[i]))).round() as i64)
        .collect();
    let bq =
        to_i32(&bq).ok_or_else(|| PassError::node(PASS, &name, "quantized shift exceeds int32"))?;
    let unit: Vec<f64> = scales
        .iter()
        .map(|&s| f64::from(s_in) * f64::from(s))
        .collect();
    let rq = requant::build(sc.epilogue.act.as_ref(), &unit, s_out, zp_out, out_t.dtype)
        .map_err(|e| PassError::node(PASS, &name, e.to_string()))?;
    let factors = if int32_factor {
        TensorData::I32(wq)
    } else {
        TensorData::I8(wq.iter().map(|&q| q as i8).collect())
    };
    let wv = const_node(
        g,
        &name,
        "scale_q",
        vec![c],
        factors,
        Quant::PerChannel {
            axis: 0,
            scales: scales.clone(),
        },
    );
    let unit_f32: Vec<f32> = unit.iter().map(|&u| u as f32).collect();
    let bv = const_node(
        g,
        &name,
        "shift_q",
        vec![c],
        TensorData::I32(bq),
        Quant::PerChannel {
            axis: 0,
            scales: unit_f32,
        },
    );
    g.set_node_inputs(id, &[ins[0], wv, bv]);
    sc.epilogue.requant = Some(rq);
    g.node_mut(id).op = Op::Nna(NnaOp::Scale(sc));
    Ok(())
}
