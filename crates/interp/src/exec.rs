//! The float executor: runs the nodes in topological order, keeping each value only
//! until its last consumer has run.
//!
//! Before a node runs, shape inference is re-run on the actual input shapes; a
//! failure, or a result that differs from the node's declared output type, is an
//! error naming the node (so a kernel never sees inconsistent shapes). An op that
//! can work in place receives its first input's buffer when it is that value's last
//! user. Constants are read from the graph without copying (unless they need
//! converting to f32).

use crate::kernels::{self, Operand, View};
use crate::InterpError;
use nnac_ir::infer::infer_types;
use nnac_ir::{Graph, Node, NodeId, Op, Tensor, TensorData, TensorType, Value};
use std::collections::BTreeMap;

/// A live value: a graph constant or input used in place, or a computed tensor.
/// The data is always f32.
enum Slot<'a> {
    Ref(&'a Tensor),
    Own(Tensor),
}

impl<'a> Slot<'a> {
    /// Wraps a tensor from outside (constant or input), converting it to f32.
    fn external(t: &'a Tensor) -> Slot<'a> {
        match t.data {
            TensorData::F32(_) => Slot::Ref(t),
            _ => Slot::Own(Tensor {
                shape: t.shape.clone(),
                data: TensorData::F32(t.to_f32_vec()),
            }),
        }
    }

    fn tensor(&self) -> &Tensor {
        match self {
            Slot::Ref(t) => t,
            Slot::Own(t) => t,
        }
    }

    fn view(&self) -> View<'_> {
        let t = self.tensor();
        View {
            shape: &t.shape,
            data: f32_data(t),
        }
    }
}

fn f32_data(t: &Tensor) -> &[f32] {
    match &t.data {
        TensorData::F32(v) => v,
        // Slots are built through `Slot::external` or from kernel output: always f32.
        _ => unreachable!("slot tensors hold f32 data"),
    }
}

/// Runs `graph` on `inputs` (by input name) in float32; returns the graph outputs by
/// name. See [`run_float_observed`].
pub fn run_float(
    graph: &Graph,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, InterpError> {
    run_float_observed(graph, inputs, &mut |_, _| {})
}

/// Like [`run_float`], and calls `observe(value, tensor)` once for every value
/// produced by a graph input or a compute node, in execution order, with its f32
/// tensor. Constant nodes are not observed (their data is in the graph).
///
/// Every graph input must be given with its declared shape and element type (data
/// of integer inputs is computed on as f32); unknown input names are an error.
pub fn run_float_observed(
    graph: &Graph,
    inputs: &BTreeMap<String, Tensor>,
    observe: &mut dyn FnMut(Value, &Tensor),
) -> Result<BTreeMap<String, Tensor>, InterpError> {
    check_input_names(graph, inputs)?;
    let order = graph.topo_order()?;
    let mut uses = use_counts(graph, &order);
    let mut store: BTreeMap<Value, Slot<'_>> = BTreeMap::new();
    for id in order {
        let node = graph.node(id);
        if node.outputs.len() != 1 {
            return Err(InterpError::at(
                &node.name,
                format!(
                    "{} node declares {} outputs, expected 1",
                    node.op,
                    node.outputs.len()
                ),
            ));
        }
        let value = Value::new(id, 0);
        let slot = match &node.op {
            Op::Input => input_slot(node, inputs)?,
            Op::Constant(c) => {
                let t = graph.constants().get(c.0 as usize).ok_or_else(|| {
                    InterpError::at(&node.name, format!("constant #{} is not in the pool", c.0))
                })?;
                check_tensor(node, t, "constant")?;
                Slot::external(t)
            }
            _ => Slot::Own(compute(graph, id, node, &mut store, &mut uses)?),
        };
        if !matches!(node.op, Op::Constant(_)) {
            observe(value, slot.tensor());
        }
        if uses.get(&value).copied().unwrap_or(0) > 0 {
            store.insert(value, slot);
        }
    }
    let mut out = BTreeMap::new();
    for o in graph.outputs() {
        let slot = store
            .get(&o.value)
            .ok_or_else(|| InterpError::at(&o.name, "graph output was not computed"))?;
        out.insert(o.name.clone(), slot.tensor().clone());
    }
    Ok(out)
}

fn check_input_names(graph: &Graph, inputs: &BTreeMap<String, Tensor>) -> Result<(), InterpError> {
    let names: Vec<&str> = graph
        .inputs()
        .iter()
        .map(|&id| graph.node(id).name.as_str())
        .collect();
    for name in inputs.keys() {
        if !names.contains(&name.as_str()) {
            return Err(InterpError::at(
                "",
                format!(
                    "unknown input '{name}'; the graph's inputs are: {}",
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// How many times each value will still be read: one per consuming edge, plus one
/// per graph output naming it.
fn use_counts(graph: &Graph, order: &[NodeId]) -> BTreeMap<Value, usize> {
    let mut uses = BTreeMap::new();
    for &id in order {
        for v in graph.node_inputs(id) {
            *uses.entry(v).or_insert(0) += 1;
        }
    }
    for o in graph.outputs() {
        *uses.entry(o.value).or_insert(0) += 1;
    }
    uses
}

fn check_tensor(node: &Node, t: &Tensor, what: &str) -> Result<(), InterpError> {
    if t.numel() != t.shape.iter().product::<usize>() {
        return Err(InterpError::at(
            &node.name,
            format!("{what} has {} elements but shape {:?}", t.numel(), t.shape),
        ));
    }
    Ok(())
}

fn input_slot<'a>(
    node: &Node,
    inputs: &'a BTreeMap<String, Tensor>,
) -> Result<Slot<'a>, InterpError> {
    let want = &node.outputs[0];
    let t = inputs
        .get(&node.name)
        .ok_or_else(|| InterpError::at(&node.name, format!("missing input (expected {want})")))?;
    check_tensor(node, t, "input")?;
    if t.shape != want.shape || t.dtype() != want.dtype {
        return Err(InterpError::at(
            &node.name,
            format!("input has type {}, expected {want}", t.ty()),
        ));
    }
    Ok(Slot::external(t))
}

/// Runs one compute node, consuming one use of each of its inputs.
fn compute<'g>(
    graph: &'g Graph,
    id: NodeId,
    node: &Node,
    store: &mut BTreeMap<Value, Slot<'g>>,
    uses: &mut BTreeMap<Value, usize>,
) -> Result<Tensor, InterpError> {
    let err = |msg: String| InterpError::at(&node.name, format!("{}: {msg}", node.op));
    let ins = graph.node_inputs(id);
    let mut types = Vec::with_capacity(ins.len());
    for (slot, v) in ins.iter().enumerate() {
        let s = store.get(v).ok_or_else(|| {
            err(format!(
                "input {slot} (from '{}') is not available",
                graph.node(v.node).name
            ))
        })?;
        types.push(TensorType::f32(s.tensor().shape.clone()));
    }
    let type_refs: Vec<&TensorType> = types.iter().collect();
    let out_shape = match &node.op {
        // Fused NNA ops carry explicit output types, checked against the inputs.
        Op::Nna(n) => n
            .check(&type_refs, &node.outputs)
            .map(|()| node.outputs[0].shape.clone())
            .map_err(|e| err(e.into()))?,
        op => {
            infer_types(op, &type_refs)
                .map_err(|e| err(e.into()))?
                .remove(0)
                .shape
        }
    };
    if out_shape != node.outputs[0].shape {
        return Err(err(format!(
            "inputs give output shape {:?} but the node declares {}",
            out_shape, node.outputs[0]
        )));
    }
    let first = ins.first().copied();
    let take_first = first.is_some_and(|v| {
        kernels::reuses_first_input(&node.op)
            && uses.get(&v) == Some(&1)
            && matches!(store.get(&v), Some(Slot::Own(_)))
    });
    let owned = if take_first {
        first.and_then(|v| store.remove(&v))
    } else {
        None
    };
    let data = {
        let views: Vec<View<'_>> = ins.iter().skip(1).map(|v| store[v].view()).collect();
        let (x, x_shape) = match owned {
            Some(Slot::Own(Tensor { shape, data })) => {
                let v = match data {
                    TensorData::F32(v) => v,
                    other => Tensor {
                        shape: vec![other.len()],
                        data: other,
                    }
                    .to_f32_vec(),
                };
                (Operand::Owned(v), shape)
            }
            _ => {
                let t = store[&ins[0]].tensor();
                (Operand::Borrowed(f32_data(t)), t.shape.clone())
            }
        };
        kernels::eval(&node.op, x, &x_shape, &views, &out_shape).map_err(|e| InterpError {
            kernel: Some(e.clone()),
            ..err(e.to_string())
        })?
    };
    for v in &ins {
        let n = uses.get_mut(v).expect("every input edge was counted");
        *n -= 1;
        if *n == 0 {
            store.remove(v);
        }
    }
    Tensor::new(out_shape, TensorData::F32(data))
        .ok_or_else(|| err("kernel produced a wrong number of elements".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_ir::{Activation, BinaryOp, PoolKind};

    fn input(shape: &[usize], data: Vec<f32>) -> BTreeMap<String, Tensor> {
        BTreeMap::from([("x".to_string(), Tensor::f32(shape.to_vec(), data).unwrap())])
    }

    /// `x -> t = x * 2 -> r = relu(t) -> s = r + t` with `t` also a graph output:
    /// the in-place relu must not clobber `t`, which is still needed.
    fn shared_value_graph() -> Graph {
        let mut g = Graph::new("shared");
        let x = g.add_input("x", TensorType::f32(vec![1, 4]));
        let two = g.add_constant("two", Tensor::scalar_f32(2.0));
        let t = g
            .add_node("t", Op::Binary(BinaryOp::Mul), &[x, two])
            .unwrap();
        let r = g
            .add_node("r", Op::Act(Activation::Relu), &[Value::new(t, 0)])
            .unwrap();
        let s = g
            .add_node(
                "s",
                Op::Binary(BinaryOp::Add),
                &[Value::new(r, 0), Value::new(t, 0)],
            )
            .unwrap();
        g.add_output("t", Value::new(t, 0));
        g.add_output("s", Value::new(s, 0));
        g
    }

    #[test]
    fn values_with_later_users_are_not_overwritten() {
        let g = shared_value_graph();
        let out = run_float(&g, &input(&[1, 4], vec![-1.0, 0.5, 2.0, -3.0])).unwrap();
        assert_eq!(out["t"].as_f32().unwrap(), [-2.0, 1.0, 4.0, -6.0]);
        assert_eq!(out["s"].as_f32().unwrap(), [-2.0, 2.0, 8.0, -6.0]);
    }

    #[test]
    fn observe_sees_inputs_and_every_computed_value_once() {
        let g = shared_value_graph();
        let mut seen = Vec::new();
        run_float_observed(&g, &input(&[1, 4], vec![1.0; 4]), &mut |v, t| {
            seen.push((g.node(v.node).name.clone(), t.shape.clone()))
        })
        .unwrap();
        let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["x", "t", "r", "s"]);
        assert!(seen.iter().all(|(_, s)| s == &[1, 4]));
    }

    #[test]
    fn input_errors_name_the_input() {
        let g = shared_value_graph();
        let e = run_float(&g, &BTreeMap::new()).unwrap_err();
        assert_eq!(e.node, "x");
        assert!(
            e.msg.contains("missing input") && e.msg.contains("f32[1x4]"),
            "{e}"
        );
        let e = run_float(&g, &input(&[1, 5], vec![0.0; 5])).unwrap_err();
        assert_eq!(e.node, "x");
        assert!(
            e.msg.contains("f32[1x5]") && e.msg.contains("expected f32[1x4]"),
            "{e}"
        );
        let mut extra = input(&[1, 4], vec![0.0; 4]);
        extra.insert("y".into(), Tensor::scalar_f32(1.0));
        let e = run_float(&g, &extra).unwrap_err().to_string();
        assert!(e.contains("unknown input 'y'") && e.contains("x"), "{e}");
        let ints = BTreeMap::from([(
            "x".to_string(),
            Tensor::new(vec![1, 4], TensorData::I32(vec![1; 4])).unwrap(),
        )]);
        assert!(run_float(&g, &ints).unwrap_err().msg.contains("i32[1x4]"));
    }

    #[test]
    fn inconsistent_declared_types_are_reported_at_the_node() {
        let mut g = Graph::new("bad");
        let x = g.add_input("x", TensorType::f32(vec![1, 2, 4, 4]));
        let p = g.add_node_typed(
            "pool",
            Op::GlobalPool(PoolKind::Avg),
            &[x],
            vec![TensorType::f32(vec![1, 2])],
        );
        g.add_output("y", Value::new(p, 0));
        let e = run_float(&g, &input(&[1, 2, 4, 4], vec![0.0; 32])).unwrap_err();
        assert_eq!(e.node, "pool");
        assert!(e.msg.contains("declares"), "{e}");
        let mut g = Graph::new("arity");
        let x = g.add_input("x", TensorType::f32(vec![1, 2]));
        let a = g.add_node_typed(
            "add",
            Op::Binary(BinaryOp::Add),
            &[x],
            vec![TensorType::f32(vec![1, 2])],
        );
        g.add_output("y", Value::new(a, 0));
        let e = run_float(&g, &input(&[1, 2], vec![0.0; 2])).unwrap_err();
        assert_eq!(e.node, "add");
    }

    #[test]
    fn integer_constants_are_computed_as_float() {
        let mut g = Graph::new("ints");
        let x = g.add_input("x", TensorType::f32(vec![3]));
        let c = g.add_constant(
            "c",
            Tensor::new(vec![3], TensorData::I64(vec![1, 2, 3])).unwrap(),
        );
        let a = g.add_node("a", Op::Binary(BinaryOp::Add), &[x, c]).unwrap();
        g.add_output("y", Value::new(a, 0));
        g.add_output("c", c);
        let out = run_float(&g, &input(&[3], vec![0.5; 3])).unwrap();
        assert_eq!(out["y"].as_f32().unwrap(), [1.5, 2.5, 3.5]);
        assert_eq!(out["c"].as_f32().unwrap(), [1.0, 2.0, 3.0]);
    }
}
