//! The verifier: valid graphs pass; one test per invariant builds a graph breaking it
//! and checks the violation is reported with the node's name.

mod common;

use common::{all_ops_graph, nna_graph, tiny_graph};
use nnac_ir::*;

fn errors(g: &Graph) -> Vec<VerifyError> {
    verify(g).expect_err("the graph should be rejected")
}

/// The violations of `inv`, as `(node, msg)`.
fn of(g: &Graph, inv: Invariant) -> Vec<(String, String)> {
    errors(g)
        .into_iter()
        .filter(|e| e.invariant == inv)
        .map(|e| (e.node, e.msg))
        .collect()
}

fn node_of(g: &Graph, name: &str) -> NodeId {
    g.find(name).unwrap_or_else(|| panic!("no node {name}"))
}

fn v(g: &Graph, name: &str) -> Value {
    Value::new(node_of(g, name), 0)
}

#[test]
fn valid_graphs_pass() {
    for g in [tiny_graph(), all_ops_graph(), nna_graph()] {
        if let Err(e) = verify(&g) {
            panic!("{} rejected:\n{}", g.name, verify::report(&e));
        }
    }
}

#[test]
fn node_names_nonempty() {
    let mut g = tiny_graph();
    let r = node_of(&g, "relu");
    g.node_mut(r).name.clear();
    let e = of(&g, Invariant::NodeName);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].1.contains("empty name"), "{e:?}");
}

#[test]
fn node_names_unique() {
    let mut g = tiny_graph();
    let r = node_of(&g, "relu");
    g.node_mut(r).name = "conv".into();
    let e = of(&g, Invariant::NodeName);
    assert_eq!(
        e,
        vec![
            (
                "conv".to_string(),
                "name is used by more than one node".to_string()
            );
            2
        ]
    );
}

#[test]
fn input_slot_missing_after_producer_removed() {
    let mut g = tiny_graph();
    let y = v(&g, "relu");
    let id = g.add_node("id", Op::Identity, &[y]).unwrap();
    let sum = g
        .add_node("sum", Op::Binary(BinaryOp::Add), &[Value::new(id, 0), y])
        .unwrap();
    g.add_output("s", Value::new(sum, 0));
    g.remove_node(id);
    let e = of(&g, Invariant::InputSlots);
    assert_eq!(
        e,
        vec![(
            "sum".to_string(),
            "input slot 0 is missing (next connected slot is 1)".to_string()
        )]
    );
}

#[test]
fn source_port_exists() {
    let mut g = tiny_graph();
    let conv = node_of(&g, "conv");
    let ty = g.node(conv).outputs.clone();
    g.add_node_typed("bad", Op::Act(Activation::Relu), &[Value::new(conv, 1)], ty);
    let e = of(&g, Invariant::SourcePort);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "bad");
    assert!(e[0].1.contains("port 1 of 'conv'"), "{e:?}");
}

#[test]
fn arity_within_op_arity() {
    let mut g = tiny_graph();
    let (x, c) = (v(&g, "x"), v(&g, "conv"));
    let ty = g.value_type(c).clone();
    g.add_node_typed("two_in_relu", Op::Act(Activation::Relu), &[c, x], vec![ty]);
    let xi = node_of(&g, "x");
    let b = v(&g, "b");
    g.set_node_inputs(xi, &[b]);
    let e = of(&g, Invariant::Arity);
    let names: Vec<&str> = e.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["x", "two_in_relu"], "{e:?}");
    assert!(e[1].1.contains("relu takes 1..=1 inputs, has 2"), "{e:?}");
}

#[test]
fn acyclic() {
    let mut g = tiny_graph();
    let r = v(&g, "relu");
    let a = g.add_node("a", Op::Identity, &[r]).unwrap();
    let b = g.add_node("b", Op::Identity, &[Value::new(a, 0)]).unwrap();
    g.set_node_inputs(a, &[Value::new(b, 0)]);
    g.add_output("out_b", Value::new(b, 0));
    let e = of(&g, Invariant::Acyclic);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, "a");
    assert!(e[0].1.contains("a -> b"), "{e:?}");
}

#[test]
fn self_loop_is_a_cycle() {
    let mut g = tiny_graph();
    let r = v(&g, "relu");
    let a = g
        .add_node("loop", Op::Binary(BinaryOp::Add), &[r, r])
        .unwrap();
    g.set_node_inputs(a, &[r, Value::new(a, 0)]);
    assert_eq!(of(&g, Invariant::Acyclic).len(), 1);
}

#[test]
fn input_nodes_are_the_input_list() {
    let mut g = tiny_graph();
    g.add_node_typed("stray", Op::Input, &[], vec![TensorType::f32(vec![1])]);
    let x = node_of(&g, "x");
    g.node_mut(x).op = Op::Identity;
    let e = of(&g, Invariant::GraphInputs);
    assert!(
        e.iter()
            .any(|(n, m)| n == "stray" && m.contains("not in the graph's input list")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|(n, m)| n == "x" && m.contains("is a identity node")),
        "{e:?}"
    );
}

#[test]
fn input_has_one_output_type() {
    let mut g = tiny_graph();
    let x = node_of(&g, "x");
    g.node_mut(x).outputs.push(TensorType::f32(vec![2]));
    let e = of(&g, Invariant::GraphInputs);
    assert_eq!(
        e,
        vec![(
            "x".to_string(),
            "input node has 2 output types, expected 1".to_string()
        )]
    );
}

#[test]
fn constant_id_in_range() {
    let mut g = tiny_graph();
    g.add_node_typed(
        "ghost",
        Op::Constant(ConstId(99)),
        &[],
        vec![TensorType::f32(vec![1])],
    );
    let e = of(&g, Invariant::ConstantRef);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "ghost");
    assert!(e[0].1.contains("#99 is out of range"), "{e:?}");
}

#[test]
fn constant_type_matches_pool() {
    let mut g = tiny_graph();
    let b = node_of(&g, "b");
    g.node_mut(b).outputs[0] = TensorType::new(DType::I32, vec![2]);
    let e = of(&g, Invariant::ConstantRef);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "b");
    assert!(e[0].1.contains("differs from constant"), "{e:?}");
}

#[test]
fn constant_data_matches_shape() {
    let mut g = tiny_graph();
    let bad = Tensor {
        shape: vec![2, 2],
        data: TensorData::F32(vec![1.0; 3]),
    };
    let id = g.push_constant(bad);
    g.add_node_typed(
        "k",
        Op::Constant(id),
        &[],
        vec![TensorType::f32(vec![2, 2])],
    );
    let e = of(&g, Invariant::ConstantData);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "k");
    assert!(e[0].1.contains("shape [2, 2] but 3 elements"), "{e:?}");
}

#[test]
fn unused_constants_are_allowed() {
    let mut g = tiny_graph();
    g.push_constant(Tensor::scalar_f32(1.0));
    assert_eq!(verify(&g), Ok(()));
}

#[test]
fn sizes_fit_usize() {
    let mut g = tiny_graph();
    let huge = TensorType::f32(vec![usize::MAX / 2, 3]);
    let x = v(&g, "x");
    g.add_node_typed("huge", Op::Identity, &[x], vec![huge]);
    let e = of(&g, Invariant::Size);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "huge");
}

#[test]
fn output_types_match_inference() {
    let mut g = tiny_graph();
    let r = node_of(&g, "relu");
    g.node_mut(r).outputs[0].shape = vec![1, 2, 8, 9];
    let e = of(&g, Invariant::Types);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "relu");
    assert!(
        e[0].1.contains("f32[1x2x8x9]") && e[0].1.contains("f32[1x2x8x8]"),
        "{e:?}"
    );
}

#[test]
fn attributes_valid_for_inputs() {
    let mut g = tiny_graph();
    let c = node_of(&g, "conv");
    if let Op::Conv(a) = &mut g.node_mut(c).op {
        a.kernel = vec![3, 3];
    }
    let e = of(&g, Invariant::Types);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "conv");
    assert!(e[0].1.contains("does not match kernel"), "{e:?}");
}

#[test]
fn nna_ops_checked_by_their_own_rule() {
    let mut g = nna_graph();
    let c = node_of(&g, "conv");
    g.node_mut(c).outputs[0].shape = vec![1, 8, 8, 8];
    let e = of(&g, Invariant::Types);
    assert!(
        e.iter()
            .any(|(n, m)| n == "conv" && m.contains("output shape")),
        "{e:?}"
    );
}

#[test]
fn at_least_one_output() {
    let mut g = tiny_graph();
    g.outputs_mut().clear();
    assert_eq!(
        of(&g, Invariant::Outputs),
        vec![(String::new(), "the graph has no outputs".to_string())]
    );
}

#[test]
fn output_names_unique_and_nonempty() {
    let mut g = tiny_graph();
    let c = v(&g, "conv");
    g.add_output("y", c);
    g.add_output("", c);
    let e = of(&g, Invariant::Outputs);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e.iter().all(|(n, _)| n == "conv"), "{e:?}");
    assert!(e[0].1.contains("'y' is used twice"), "{e:?}");
    assert!(e[1].1.contains("empty name"), "{e:?}");
}

#[test]
fn outputs_reference_existing_values() {
    let mut g = tiny_graph();
    let c = node_of(&g, "conv");
    g.add_output("port", Value::new(c, 3));
    let extra = g
        .add_node("extra", Op::Identity, &[Value::new(c, 0)])
        .unwrap();
    g.add_output("gone", Value::new(extra, 0));
    g.remove_node(extra);
    let e = of(&g, Invariant::Outputs);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e.iter()
            .any(|(n, m)| n == "conv" && m.contains("reads port 3")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|(n, m)| n.is_empty() && m.contains("'gone' refers to a removed node")),
        "{e:?}"
    );
}

fn set_quant(g: &mut Graph, node: &str, dtype: DType, q: Quant) {
    let id = node_of(g, node);
    let t = &mut g.node_mut(id).outputs[0];
    t.dtype = dtype;
    t.quant = Some(q);
}

#[test]
fn quant_only_on_integer_types() {
    let mut g = tiny_graph();
    set_quant(
        &mut g,
        "relu",
        DType::F32,
        Quant::PerTensor {
            scale: 0.1,
            zero_point: 0,
        },
    );
    let e = of(&g, Invariant::Quant);
    assert_eq!(
        e,
        vec![(
            "relu".to_string(),
            "output 0: f32 tensors cannot be quantized".to_string()
        )]
    );
}

#[test]
fn quant_scale_positive_finite_and_zero_point_in_range() {
    for (q, want) in [
        (
            Quant::PerTensor {
                scale: 0.0,
                zero_point: 0,
            },
            "not positive",
        ),
        (
            Quant::PerTensor {
                scale: f32::NAN,
                zero_point: 0,
            },
            "not positive",
        ),
        (
            Quant::PerTensor {
                scale: f32::INFINITY,
                zero_point: 0,
            },
            "not positive",
        ),
        (
            Quant::PerTensor {
                scale: 0.5,
                zero_point: 128,
            },
            "does not fit i8",
        ),
    ] {
        let mut g = nna_graph();
        set_quant(&mut g, "scale", DType::I8, q);
        let e = of(&g, Invariant::Quant);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].0, "scale");
        assert!(e[0].1.contains(want), "{e:?}");
    }
}

#[test]
fn quant_per_channel_matches_axis() {
    for (q, want) in [
        (
            Quant::PerChannel {
                axis: 0,
                scales: vec![0.1; 7],
            },
            "7 per-channel scales for axis 0 of size 8",
        ),
        (
            Quant::PerChannel {
                axis: 4,
                scales: vec![0.1; 8],
            },
            "axis 4 is out of range",
        ),
        (
            Quant::PerChannel {
                axis: 0,
                scales: [vec![0.1; 7], vec![-1.0]].concat(),
            },
            "scale 7 (-1.0)",
        ),
    ] {
        let mut g = nna_graph();
        set_quant(&mut g, "w", DType::I8, q);
        let e = of(&g, Invariant::Quant);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].0, "w");
        assert!(e[0].1.contains(want), "{e:?}");
    }
}

#[test]
fn all_violations_collected_in_a_deterministic_order() {
    let build = || {
        let mut g = tiny_graph();
        let r = node_of(&g, "relu");
        g.node_mut(r).outputs[0].shape = vec![7];
        let b = node_of(&g, "b");
        g.node_mut(b).name = "w".into();
        g.outputs_mut().clear();
        g
    };
    let e = errors(&build());
    let got: Vec<(Invariant, &str)> = e.iter().map(|e| (e.invariant, e.node.as_str())).collect();
    assert_eq!(
        got,
        [
            (Invariant::NodeName, "w"),
            (Invariant::NodeName, "w"),
            (Invariant::Types, "relu"),
            (Invariant::Outputs, ""),
        ]
    );
    assert_eq!(e, errors(&build()));
    let text = verify::report(&e);
    assert!(text.contains("node 'relu': [types]"), "{text}");
    assert_eq!(text.lines().count(), 4);
}

/// Absurd attributes (as a corrupted model or a mutated text may carry) are reported
/// by shape inference, never an arithmetic overflow panic.
#[test]
fn huge_attributes_are_errors_not_panics() {
    let big = usize::MAX / 2 + 1;
    let conv = |kernel: usize, pads: usize, dil: usize, group: usize| {
        Op::Conv(ConvAttrs {
            kernel: vec![kernel; 2],
            strides: vec![1; 2],
            pads: vec![pads; 4],
            dilations: vec![dil; 2],
            group,
        })
    };
    let deconv = |stride: usize| {
        Op::ConvTranspose(ConvTransposeAttrs {
            kernel: vec![1; 2],
            strides: vec![stride; 2],
            pads: vec![0; 4],
            dilations: vec![1; 2],
            output_padding: vec![0; 2],
            group: 1,
        })
    };
    let pool = |kernel: usize, dil: usize| {
        Op::Pool(PoolAttrs {
            kind: PoolKind::Max,
            kernel: vec![kernel; 2],
            strides: vec![1; 2],
            pads: vec![1; 4],
            dilations: vec![dil; 2],
            ceil_mode: true,
            count_include_pad: false,
        })
    };
    let cases: Vec<(Op, Vec<Vec<usize>>)> = vec![
        (conv(1, big, 1, 1), vec![vec![1, 2, 4, 4], vec![2, 2, 1, 1]]),
        (conv(3, 0, big, 1), vec![vec![1, 2, 4, 4], vec![2, 2, 3, 3]]),
        (conv(1, 0, 1, big), vec![vec![1, 2, 4, 4], vec![2, 2, 1, 1]]),
        (deconv(big), vec![vec![1, 2, 4, 4], vec![2, 2, 1, 1]]),
        (deconv(1), vec![vec![1, 2, 0, 4], vec![2, 2, 1, 1]]),
        (pool(big, 4), vec![vec![1, 2, 4, 4]]),
        (
            Op::Pad {
                pads: vec![big; 4],
                value: 0.0,
            },
            vec![vec![4, 4]],
        ),
        (
            Op::Reshape {
                shape: vec![big, 4],
            },
            vec![vec![4, 4]],
        ),
        (Op::Concat { axis: 0 }, vec![vec![big, 1], vec![big, 1]]),
    ];
    for (op, shapes) in cases {
        let mut g = Graph::new("huge");
        let ins: Vec<Value> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| g.add_input(format!("i{i}"), TensorType::f32(s.clone())))
            .collect();
        assert!(
            g.add_node("n", op.clone(), &ins).is_err(),
            "{op:?} accepted"
        );
    }
}

/// A pool stage with stride 0 or huge pads is a type violation, not a panic.
#[test]
fn bad_nna_pool_stage_is_reported() {
    for (strides, pads) in [([0, 2], [0; 4]), ([2, 2], [usize::MAX, 0, 0, 0])] {
        let mut g = nna_graph();
        let c = node_of(&g, "conv");
        if let Op::Nna(NnaOp::Dot(d)) = &mut g.node_mut(c).op {
            let p = d.pool.as_mut().expect("conv has a pool stage");
            p.strides = strides;
            p.pads = pads;
        }
        let e = of(&g, Invariant::Types);
        assert!(
            e.iter()
                .any(|(n, m)| n == "conv" && m.contains("pool window")),
            "{e:?}"
        );
    }
}

/// Asserts that `g` has a type violation at `node` whose message contains `needle`.
fn assert_type_error(g: &Graph, node: &str, needle: &str) {
    let e = of(g, Invariant::Types);
    assert!(
        e.iter().any(|(n, m)| n == node && m.contains(needle)),
        "{e:?}"
    );
}

/// The NNA fixture with `node`'s output quantized unlike its input.
fn requantized(node: &str) -> Graph {
    let mut g = nna_graph();
    let s = node_of(&g, node);
    g.node_mut(s).outputs[0].quant = Some(nnac_ir::Quant::PerTensor {
        scale: 0.5,
        zero_point: 0,
    });
    g
}

/// A channel shuffle whose groups do not divide the channels, or whose output is
/// quantized differently from its input (it only moves codes), is a type violation.
#[test]
fn bad_channel_shuffle_is_reported() {
    let mut g = nna_graph();
    let s = node_of(&g, "shuffle");
    g.node_mut(s).op = Op::Nna(NnaOp::ChannelShuffle { groups: 5 });
    assert_type_error(&g, "shuffle", "multiple");
    assert_type_error(&requantized("shuffle"), "shuffle", "input's type");
}

/// An upsample whose output is not its input's spatial size times the factors, or
/// that is quantized differently from its input (it only moves codes), is a type
/// violation.
#[test]
fn bad_upsample_is_reported() {
    let mut g = nna_graph();
    let s = node_of(&g, "upsample");
    g.node_mut(s).op = Op::Nna(NnaOp::Upsample { factors: [3, 3] });
    assert_type_error(&g, "upsample", "[1, 16, 12, 12]");
    assert_type_error(&requantized("upsample"), "upsample", "input's type");
}

/// Shape inference and the NNA type check return typed errors callers can match on;
/// their text is what the verifier and `Graph::add_node` report.
#[test]
fn shape_errors_are_typed() {
    let x = TensorType::f32(vec![1, 4, 8, 8]);
    let w = TensorType::f32(vec![6, 3, 3, 3]);
    let conv = Op::Conv(ConvAttrs {
        kernel: vec![3, 3],
        strides: vec![1, 1],
        pads: vec![0; 4],
        dilations: vec![1, 1],
        group: 1,
    });
    let e = infer::infer_types(&conv, &[&x, &w]).unwrap_err();
    assert_eq!(
        e,
        ShapeError::ConvChannels {
            channels: 4,
            weight: vec![6, 3, 3, 3],
            group: 1
        }
    );
    assert_eq!(
        e.to_string(),
        "input channels 4 do not match weight [6, 3, 3, 3] with group 1"
    );
    let e = infer::infer_types(&conv, &[&x]).unwrap_err();
    assert!(
        matches!(
            e,
            ShapeError::Arity {
                op: "conv",
                min: 2,
                max: 3,
                got: 1
            }
        ),
        "{e}"
    );
    assert_eq!(e.to_string(), "conv takes 2 to 3 inputs, got 1");
    assert_eq!(
        infer::broadcast(&[2, 3], &[4]),
        Err(ShapeError::Broadcast {
            a: vec![2, 3],
            b: vec![4]
        })
    );
    assert!(matches!(
        checked_numel(&[1 << 20, 1 << 20]),
        Err(ShapeError::TooManyElements { .. })
    ));
    let shuffle = NnaOp::ChannelShuffle { groups: 3 };
    let e = shuffle.check(&[&x], std::slice::from_ref(&x)).unwrap_err();
    assert_eq!(
        e,
        NnaTypeError::ShuffleGroups {
            shape: vec![1, 4, 8, 8],
            groups: 3
        }
    );
}
