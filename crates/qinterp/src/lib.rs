//! The quantized reference interpreter: runs a quantized graph exactly as docs/ISA.md
//! defines the arithmetic, written plainly (no tiling, no SRAM) — the bit-exact oracle
//! for the simulator. Activations are held as integer codes; graph inputs are
//! quantized by the runtime's one rule (`nnac_interp::host::quantize`) and graph
//! outputs dequantized (`(q - zp) * s`).
//!
//! **Boundary:** this crate lives apart from the compiler whose output it judges: it
//! depends on the IR (the quantized graph), the ISA's arithmetic (`nnac_isa::arith`,
//! `nnac_isa::simd`) and the float interpreter (host ops run with its semantics),
//! never on `nnac-passes` or the backend.
//!
//! Convolutions are computed as im2col + integer matrix products (`gemm.rs`): every
//! accumulator is still the exact `bias + sum of products`, wrapped once at 30 bits.

pub mod dot;
pub mod epilogue;
mod error;
mod gemm;
mod host;
mod pool;
pub mod simd_float;
mod simd_ops;

pub use error::QError;
use nnac_interp::host::{code_range, dequantize, quantize};
pub use nnac_interp::Frame;
use nnac_ir::{DType, DotOp, Graph, NnaOp, NodeId, Op, Tensor, TensorData, Value};
use nnac_ir::{Quant, TensorType};
use std::collections::{BTreeMap, BTreeSet};

/// A value during quantized execution.
#[derive(Clone, Debug, PartialEq)]
pub enum QVal {
    /// Integer codes (8-bit activations, int8 weights, int32 biases).
    Codes(Vec<i32>),
    /// A float constant (operands of host ops).
    F32(Vec<f32>),
}

impl QVal {
    pub fn codes(&self) -> Option<&[i32]> {
        match self {
            QVal::Codes(c) => Some(c),
            QVal::F32(_) => None,
        }
    }
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QTrace {
    /// Accumulator values that wrapped at 30 bits (the compiler must keep this 0).
    pub acc_overflows: u64,
}

/// Runs the quantized graph on float inputs (by input name); returns the dequantized
/// outputs by output name (the convention of `nnac_interp::run_float`).
pub fn run_quantized(g: &Graph, inputs: &Frame) -> Result<BTreeMap<String, Tensor>, QError> {
    let (vals, _) = run_quantized_observed(g, inputs, &mut |_, _| {})?;
    Ok(dequantized_outputs(g, &vals))
}

/// The graph outputs of a finished run, dequantized, by output name.
pub fn dequantized_outputs(g: &Graph, vals: &BTreeMap<NodeId, QVal>) -> BTreeMap<String, Tensor> {
    g.outputs()
        .iter()
        .map(|o| {
            let t = g.value_type(o.value);
            let (s, zp) = scale_zp(t);
            let codes = vals[&o.value.node].codes().unwrap_or(&[]);
            let data = codes.iter().map(|&q| dequantize(q, s, zp)).collect();
            (
                o.name.clone(),
                Tensor::f32(t.shape.clone(), data).expect("shape"),
            )
        })
        .collect()
}

/// Runs the quantized graph; returns the raw int8 / uint8 output codes by output name
/// (a constant graph output stays f32).
pub fn run_quantized_raw(g: &Graph, inputs: &Frame) -> Result<BTreeMap<String, Tensor>, QError> {
    let (vals, _) = run_quantized_observed(g, inputs, &mut |_, _| {})?;
    Ok(g.outputs()
        .iter()
        .map(|o| {
            (
                o.name.clone(),
                raw_tensor(g, o.value, vals[&o.value.node].codes().unwrap_or(&[])),
            )
        })
        .collect())
}

fn raw_tensor(g: &Graph, v: Value, codes: &[i32]) -> Tensor {
    let t = g.value_type(v);
    let data = match t.dtype {
        DType::U8 => TensorData::U8(codes.iter().map(|&c| c as u8).collect()),
        _ => TensorData::I8(codes.iter().map(|&c| c as i8).collect()),
    };
    Tensor::new(t.shape.clone(), data).expect("shape")
}

/// Runs the graph, calling `observe(node, value)` after every non-constant node (its
/// codes, or float32 values between layers kept in float).
/// Returns the values of the nodes producing graph outputs (every other value is
/// dropped once its last consumer has run) and the run's counters.
pub fn run_quantized_observed(
    g: &Graph,
    inputs: &Frame,
    observe: &mut dyn FnMut(NodeId, &QVal),
) -> Result<(BTreeMap<NodeId, QVal>, QTrace), QError> {
    check_frame(g, inputs, 0)?;
    let mut walk = Walk::new(g)?;
    let mut vals: BTreeMap<NodeId, QVal> = BTreeMap::new();
    let mut trace = QTrace::default();
    for id in walk.take_order() {
        if walk.skips(g, id) {
            continue;
        }
        let v = eval_node(g, id, inputs, &vals, &mut trace)?;
        if !matches!(g.node(id).op, Op::Constant(_)) {
            observe(id, &v);
        }
        if walk.keeps(id) {
            vals.insert(id, v);
        }
        walk.release(&g.node_inputs(id), |n| {
            vals.remove(&n);
        });
    }
    Ok((vals, trace))
}

/// The walk of a quantized run: the nodes in topological order, and which values must
/// be kept (a later node or a graph output reads them) and until when (each is dropped
/// after its last reader has run).
pub struct Walk {
    order: Vec<NodeId>,
    outputs: BTreeSet<NodeId>,
    /// Readers of each value that have not run yet.
    uses: BTreeMap<NodeId, usize>,
}

impl Walk {
    /// The walk of `g`.
    pub fn new(g: &Graph) -> Result<Walk, QError> {
        let order = g.topo_order().map_err(|e| QError::Cycle {
            node: e.node,
            msg: e.msg,
        })?;
        let outputs = g.outputs().iter().map(|o| o.value.node).collect();
        let mut uses: BTreeMap<NodeId, usize> = BTreeMap::new();
        for &id in &order {
            for v in g.node_inputs(id) {
                *uses.entry(v.node).or_default() += 1;
            }
        }
        Ok(Walk {
            order,
            outputs,
            uses,
        })
    }

    /// The nodes to visit, in topological order.
    pub fn take_order(&mut self) -> Vec<NodeId> {
        std::mem::take(&mut self.order)
    }

    /// Whether `id` is not run: an int8 constant that only dot ops use, as their
    /// weights (they read it from the graph, so the run does not turn it into codes).
    pub fn skips(&self, g: &Graph, id: NodeId) -> bool {
        let v = Value::new(id, 0);
        dot::Weights::int8_const(g, v).is_some()
            && !self.outputs.contains(&id)
            && g.users(v)
                .iter()
                .all(|&(n, slot)| slot == 1 && matches!(g.node(n).op, Op::Nna(NnaOp::Dot(_))))
    }

    /// Whether the value of `id` must be stored.
    pub fn keeps(&self, id: NodeId) -> bool {
        self.uses.contains_key(&id) || self.outputs.contains(&id)
    }

    /// Counts the reads of `ins` by a node that has run; calls `drop` on every value
    /// no node reads any more.
    pub fn release(&mut self, ins: &[Value], mut drop: impl FnMut(NodeId)) {
        for input in ins {
            let left = self
                .uses
                .get_mut(&input.node)
                .expect("counted by Walk::new");
            *left -= 1;
            if *left == 0 && !self.outputs.contains(&input.node) {
                drop(input.node);
            }
        }
    }
}

/// The exact accumulators of dot op `id` on the values `vals` of one run.
pub fn dot_accumulators(
    g: &Graph,
    id: NodeId,
    d: &DotOp,
    vals: &BTreeMap<NodeId, QVal>,
) -> Result<dot::Accumulators, QError> {
    let ins = g.node_inputs(id);
    let arg = |i: usize| codes_of(g, id, &ins, vals, i);
    let w = match dot::Weights::int8_const(g, ins[1]) {
        Some(w) => dot::Weights::Int8(w),
        None => dot::Weights::Codes(arg(1)?),
    };
    dot::accumulators(g, id, d, (arg(0)?, w, arg(2)?))
}

/// The codes of input `i` (of `ins`) of node `id`.
fn codes_of<'a>(
    g: &Graph,
    id: NodeId,
    ins: &[Value],
    vals: &'a BTreeMap<NodeId, QVal>,
    i: usize,
) -> Result<&'a [i32], QError> {
    let codes = vals[&ins[i].node]
        .codes()
        .ok_or_else(|| QError::node(&g.node(id).name, format!("input {i} is not quantized")))?;
    // Every kernel indexes by the declared shape: a value of another length (a
    // producer that computed another batch) is an error here, not a panic there.
    let shape = &g.value_type(ins[i]).shape;
    if shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) != Some(codes.len()) {
        return Err(QError::node(
            &g.node(id).name,
            format!("input {i} holds {} codes for shape {shape:?}", codes.len()),
        ));
    }
    Ok(codes)
}

pub fn eval_node(
    g: &Graph,
    id: NodeId,
    inputs: &Frame,
    vals: &BTreeMap<NodeId, QVal>,
    trace: &mut QTrace,
) -> Result<QVal, QError> {
    let node = g.node(id);
    let ins = g.node_inputs(id);
    let arg = |i: usize| codes_of(g, id, &ins, vals, i);
    let out = &node.outputs[0];
    Ok(match &node.op {
        Op::Input => {
            let (s, zp) = scale_zp(out);
            QVal::Codes(
                inputs[&node.name]
                    .to_f32_vec()
                    .iter()
                    .map(|&x| quantize(x, s, zp, out.dtype))
                    .collect(),
            )
        }
        Op::Constant(c) => {
            let t = g.constant(*c);
            match &t.data {
                TensorData::F32(v) => QVal::F32(v.clone()),
                TensorData::I8(v) => QVal::Codes(v.iter().map(|&x| i32::from(x)).collect()),
                TensorData::U8(v) => QVal::Codes(v.iter().map(|&x| i32::from(x)).collect()),
                TensorData::I32(v) => QVal::Codes(v.clone()),
                TensorData::I64(v) => QVal::Codes(v.iter().map(|&x| x as i32).collect()),
            }
        }
        Op::Reshape { .. } => QVal::Codes(arg(0)?.to_vec()),
        Op::Slice { axes, starts, ends } => QVal::Codes(nnac_interp::kernels::slice(
            arg(0)?,
            &g.value_type(ins[0]).shape,
            axes,
            starts,
            ends,
        )),
        Op::StridedSlice {
            axes,
            starts,
            ends,
            steps,
        } => QVal::Codes(nnac_interp::kernels::strided_slice(
            arg(0)?,
            &g.value_type(ins[0]).shape,
            axes,
            starts,
            ends,
            steps,
        )),
        Op::Nna(NnaOp::Dot(d)) => QVal::Codes(dot::finish(
            g,
            id,
            d,
            &dot_accumulators(g, id, d, vals)?,
            trace,
        )?),
        Op::Nna(NnaOp::Scale(s)) => {
            QVal::Codes(simd_ops::scale(g, id, s, arg(0)?, arg(1)?, arg(2)?))
        }
        Op::Nna(NnaOp::Eltwise(e)) => {
            QVal::Codes(simd_ops::eltwise(g, id, e, arg(0)?, arg(1)?, trace)?)
        }
        Op::Nna(NnaOp::Concat { axis }) => {
            let parts: Vec<(&[i32], Vec<usize>)> = (0..ins.len())
                .map(|i| Ok((arg(i)?, g.value_type(ins[i]).shape.clone())))
                .collect::<Result<_, QError>>()?;
            QVal::Codes(concat(&parts, *axis))
        }
        Op::Nna(NnaOp::ChannelShuffle { groups }) => {
            let shape = &g.value_type(ins[0]).shape;
            QVal::Codes(nnac_interp::kernels::channel_shuffle(
                arg(0)?,
                shape,
                *groups,
            ))
        }
        Op::Nna(NnaOp::Upsample { factors }) => {
            let shape = &g.value_type(ins[0]).shape;
            QVal::Codes(nnac_interp::kernels::upsample_nearest(
                arg(0)?,
                shape,
                *factors,
            ))
        }
        Op::Nna(NnaOp::DepthToSpace { block, crd }) => {
            let shape = &g.value_type(ins[0]).shape;
            QVal::Codes(nnac_interp::kernels::depth_to_space(
                arg(0)?,
                shape,
                *block,
                *crd,
            ))
        }
        Op::Nna(NnaOp::Host(op)) => host::run(g, id, op, vals)?,
        other => {
            return Err(QError::node(
                &node.name,
                format!("{} is not an op of the quantized IR", other.mnemonic()),
            ))
        }
    })
}

/// Concatenation of same-quantization code tensors along `axis`.
fn concat(parts: &[(&[i32], Vec<usize>)], axis: usize) -> Vec<i32> {
    let outer: usize = parts[0].1[..axis].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for (codes, shape) in parts {
            let chunk: usize = shape[axis..].iter().product();
            out.extend_from_slice(&codes[o * chunk..(o + 1) * chunk]);
        }
    }
    out
}

/// Clamps to a dtype's code range (the 8-bit output saturation).
pub fn saturate(v: i32, d: DType) -> i32 {
    let (lo, hi) = code_range(d);
    v.clamp(lo, hi)
}

/// `(scale, zero_point)` of a per-tensor quantized type (`(1, 0)` otherwise: integer
/// constants are codes of themselves).
pub fn scale_zp(t: &TensorType) -> (f32, i32) {
    match &t.quant {
        Some(Quant::PerTensor { scale, zero_point }) => (*scale, *zero_point),
        _ => (1.0, 0),
    }
}

/// Checks that frame `index` gives every graph input with its element count.
pub fn check_frame(g: &Graph, frame: &Frame, index: usize) -> Result<(), QError> {
    for &id in g.inputs() {
        let node = g.node(id);
        let want = &node.outputs[0];
        match frame.get(&node.name) {
            None => {
                return Err(QError::Frame {
                    index,
                    msg: format!("lacks input '{}'", node.name),
                })
            }
            Some(t) if t.numel() != want.numel() => {
                return Err(QError::Frame {
                    index,
                    msg: format!(
                        "input '{}' needs shape {:?}, got {:?}",
                        node.name, want.shape, t.shape
                    ),
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}
