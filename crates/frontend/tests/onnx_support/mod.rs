//! Helpers for the ONNX importer tests: build `ModelProto`s in code with prost.
#![allow(dead_code)]

use nnac_frontend::proto::onnx::tensor_shape_proto::{dimension, Dimension};
use nnac_frontend::proto::onnx::type_proto;
use nnac_frontend::proto::onnx::*;
use nnac_frontend::{ImportError, ImportOptions};
use nnac_ir::{Graph, Op, Tensor};
use prost::Message;

pub const FLOAT: i32 = 1;
pub const UINT8: i32 = 2;
pub const INT8: i32 = 3;
pub const INT32: i32 = 6;
pub const INT64: i32 = 7;
pub const BOOL: i32 = 9;
pub const FLOAT16: i32 = 10;
pub const DOUBLE: i32 = 11;

pub fn tensor_f32(name: &str, dims: &[i64], data: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(FLOAT),
        float_data: data.to_vec(),
        ..Default::default()
    }
}

pub fn tensor_raw(name: &str, elem: i32, dims: &[i64], raw: Vec<u8>) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(elem),
        raw_data: Some(raw.into()),
        ..Default::default()
    }
}

pub fn tensor_raw_f32(name: &str, dims: &[i64], data: &[f32]) -> TensorProto {
    tensor_raw(
        name,
        FLOAT,
        dims,
        data.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}

pub fn tensor_i64(name: &str, dims: &[i64], data: &[i64]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(INT64),
        int64_data: data.to_vec(),
        ..Default::default()
    }
}

/// A tensor input/output description; a negative dim becomes a symbolic one.
pub fn value_info(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|&d| Dimension {
            denotation: None,
            value: Some(if d < 0 {
                dimension::Value::DimParam("N".into())
            } else {
                dimension::Value::DimValue(d)
            }),
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            denotation: None,
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(elem),
                shape: Some(TensorShapeProto { dim }),
            })),
        }),
        ..Default::default()
    }
}

pub fn vi(name: &str, dims: &[i64]) -> ValueInfoProto {
    value_info(name, FLOAT, dims)
}

pub fn node(op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(format!("{op}_{}", outputs.first().copied().unwrap_or(""))),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        attribute: attrs,
        ..Default::default()
    }
}

fn attr(name: &str, ty: i32) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(ty),
        ..Default::default()
    }
}

pub fn a_f(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        f: Some(v),
        ..attr(name, 1)
    }
}

pub fn a_i(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        i: Some(v),
        ..attr(name, 2)
    }
}

pub fn a_s(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        s: Some(v.as_bytes().to_vec()),
        ..attr(name, 3)
    }
}

pub fn a_t(name: &str, t: TensorProto) -> AttributeProto {
    AttributeProto {
        t: Some(t),
        ..attr(name, 4)
    }
}

pub fn a_fs(name: &str, v: &[f32]) -> AttributeProto {
    AttributeProto {
        floats: v.to_vec(),
        ..attr(name, 6)
    }
}

pub fn a_is(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        ints: v.to_vec(),
        ..attr(name, 7)
    }
}

pub fn model(
    opset: i64,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    inits: Vec<TensorProto>,
) -> ModelProto {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(opset),
        }],
        producer_name: Some("nnac-tests".into()),
        graph: Some(GraphProto {
            name: Some("test".into()),
            node: nodes,
            input: inputs,
            output: outputs,
            initializer: inits,
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn encode(m: &ModelProto) -> Vec<u8> {
    m.encode_to_vec()
}

pub fn import(m: &ModelProto) -> Result<Graph, ImportError> {
    nnac_frontend::onnx::import_bytes(&encode(m), None, "test.onnx", &ImportOptions::default())
}

pub fn import_ok(m: &ModelProto) -> Graph {
    match import(m) {
        Ok(g) => g,
        Err(e) => panic!("import failed: {e}"),
    }
}

/// The ops of the graph in topological order, without inputs and constants.
pub fn ops(g: &Graph) -> Vec<Op> {
    g.topo_order()
        .expect("acyclic")
        .into_iter()
        .map(|n| g.node(n).op.clone())
        .filter(|op| !matches!(op, Op::Input | Op::Constant(_)))
        .collect()
}

/// The single op of a one-node graph.
pub fn only_op(g: &Graph) -> Op {
    let ops = ops(g);
    assert_eq!(ops.len(), 1, "expected one op, got {ops:?}");
    ops[0].clone()
}

pub fn output_shape(g: &Graph, i: usize) -> Vec<usize> {
    g.value_type(g.outputs()[i].value).shape.clone()
}

/// The constant feeding input `slot` of the node producing output `i`.
pub fn const_input(g: &Graph, i: usize, slot: usize) -> Tensor {
    let node = g.outputs()[i].value.node;
    let v = g.node_inputs(node)[slot];
    g.const_of(v).expect("constant input").clone()
}

/// The constant a graph output holds (a folded output).
pub fn output_const(g: &Graph, i: usize) -> Tensor {
    g.const_of(g.outputs()[i].value)
        .expect("constant output")
        .clone()
}
