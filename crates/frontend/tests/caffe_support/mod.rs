//! Shared helpers of the Caffe importer tests: building caffemodels in memory, finding
//! the cached real models and running OpenCV's Caffe importer as the reference.
#![allow(dead_code)]

use nnac_frontend::caffe::import_bytes;
use nnac_frontend::proto::caffe::{
    BlobProto, BlobShape, LayerParameter, NetParameter, V1LayerParameter,
};
use nnac_frontend::{ImportError, ImportOptions};
use nnac_ir::{Graph, NodeId, Op, Value};
use prost::Message;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A blob of the given shape holding `0.5, 1.0, 1.5, ...` scaled by `step`.
pub fn blob(shape: &[i64], step: f32) -> BlobProto {
    let n: i64 = shape.iter().product();
    BlobProto {
        shape: Some(BlobShape {
            dim: shape.to_vec(),
        }),
        data: (0..n).map(|i| (i as f32 + 1.0) * step).collect(),
        ..Default::default()
    }
}

/// A blob with explicit values.
pub fn blob_of(shape: &[i64], data: &[f32]) -> BlobProto {
    BlobProto {
        shape: Some(BlobShape {
            dim: shape.to_vec(),
        }),
        data: data.to_vec(),
        ..Default::default()
    }
}

/// A caffemodel (current `layer` form) with the given blobs per layer name.
pub fn model(layers: Vec<(&str, Vec<BlobProto>)>) -> Vec<u8> {
    let net = NetParameter {
        layer: layers
            .into_iter()
            .map(|(name, blobs)| LayerParameter {
                name: Some(name.into()),
                blobs,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    net.encode_to_vec()
}

/// A caffemodel in the V1 `layers` form.
pub fn model_v1(layers: Vec<(&str, Vec<BlobProto>)>) -> Vec<u8> {
    let net = NetParameter {
        layers: layers
            .into_iter()
            .map(|(name, blobs)| V1LayerParameter {
                name: Some(name.into()),
                blobs,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    net.encode_to_vec()
}

/// Imports a prototxt (text) with an optional caffemodel (bytes).
pub fn import(prototxt: &str, caffemodel: Option<&[u8]>) -> Result<Graph, ImportError> {
    import_bytes(prototxt.as_bytes(), caffemodel, &ImportOptions::default())
}

/// Imports and unwraps, printing the error on failure.
pub fn import_ok(prototxt: &str, caffemodel: Option<&[u8]>) -> Graph {
    import(prototxt, caffemodel).unwrap_or_else(|e| panic!("import failed: {e}"))
}

/// The node named `name`.
pub fn node(g: &Graph, name: &str) -> NodeId {
    g.find(name)
        .unwrap_or_else(|| panic!("no node named '{name}'"))
}

pub fn op(g: &Graph, name: &str) -> Op {
    g.node(node(g, name)).op.clone()
}

/// Output shape of the node named `name`.
pub fn shape(g: &Graph, name: &str) -> Vec<usize> {
    g.node(node(g, name)).outputs[0].shape.clone()
}

/// The names of the nodes feeding node `name`, by slot.
pub fn input_names(g: &Graph, name: &str) -> Vec<String> {
    g.node_inputs(node(g, name))
        .iter()
        .map(|v| g.node(v.node).name.clone())
        .collect()
}

/// The f32 data of the constant feeding slot `slot` of node `name`.
pub fn const_input(g: &Graph, name: &str, slot: usize) -> (Vec<usize>, Vec<f32>) {
    let v: Value = g.node_inputs(node(g, name))[slot];
    let t = g
        .const_of(v)
        .unwrap_or_else(|| panic!("input {slot} of '{name}' is not a constant"));
    (t.shape.clone(), t.to_f32_vec())
}

/// Graph output names in order.
pub fn output_names(g: &Graph) -> Vec<String> {
    g.outputs().iter().map(|o| o.name.clone()).collect()
}

/// The one-input prelude `input: "data"` with the given shape (input_shape form).
pub fn net_with_input(shape: &[usize], body: &str) -> String {
    let dims: String = shape.iter().map(|d| format!(" dim: {d}")).collect();
    format!("name: \"t\"\ninput: \"data\"\ninput_shape {{{dims} }}\n{body}")
}

// ---- real models and the OpenCV reference -----------------------------------------

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// A file of the model cache; fails (never skips) when setup has not run.
pub fn cached(rel: &str) -> PathBuf {
    let p = repo_root().join(".cache/models").join(rel);
    assert!(
        p.is_file(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

/// The project's Python with OpenCV (`NNAC_PYTHON` overrides `.venv/bin/python`).
pub fn python() -> PathBuf {
    let p = std::env::var_os("NNAC_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"));
    assert!(
        p.is_file(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

/// Output shape of every layer OpenCV's Caffe importer runs, for a batch-1 input of
/// `input_shape`: `(layer name, shape)` in OpenCV's layer order.
pub fn opencv_layer_shapes(
    prototxt: &Path,
    caffemodel: &Path,
    input_shape: &[usize],
) -> Vec<(String, Vec<usize>)> {
    const SCRIPT: &str = r#"
import sys, numpy as np, cv2
proto, model = sys.argv[1], sys.argv[2]
shape = [int(d) for d in sys.argv[3].split('x')]
net = cv2.dnn.readNetFromCaffe(proto, model)
net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
net.setInput(np.zeros(shape, np.float32))
names = list(net.getLayerNames())
outs = net.forward(names)
for n, o in zip(names, outs):
    print(n + '\t' + 'x'.join(str(d) for d in o.shape))
"#;
    let dims = input_shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x");
    let out = Command::new(python())
        .args(["-c", SCRIPT])
        .arg(prototxt)
        .arg(caffemodel)
        .arg(&dims)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "OpenCV failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| {
            let (name, s) = l.split_once('\t').expect("name\\tshape");
            (
                name.to_string(),
                s.split('x').map(|d| d.parse().expect("dim")).collect(),
            )
        })
        .collect()
}
