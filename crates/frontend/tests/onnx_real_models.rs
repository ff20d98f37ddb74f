//! Imports the real models and the ONNX backend node-test models from the repository
//! cache (`.cache/`, filled by `scripts/setup.sh`). These tests fail — never skip —
//! when the cache is missing.
//!
//! Node tests: every model must either import or fail with `ImportError::Unsupported`
//! (never a panic, a malformed-file or a semantic error); every test whose op types
//! are all supported must import unless [`NODE_TESTS_NOT_IMPORTED`] lists it with the
//! reason, so a regression or a newly supported case shows up as a failure.

use nnac_frontend::proto::onnx::ModelProto;
use nnac_frontend::{onnx, ImportError, ImportOptions};
use nnac_ir::Graph;
use prost::Message;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cache(sub: &str) -> PathBuf {
    let p = repo().join(".cache").join(sub);
    assert!(
        p.is_dir(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

fn import(path: &Path) -> Result<Graph, ImportError> {
    onnx::import_file(path, &ImportOptions::default())
}

/// Node tests made only of supported op types that do not import, with the reason (an
/// element type, attribute value, output or runtime operand nnac does not support).
/// A trailing `*` matches a prefix.
const NODE_TESTS_NOT_IMPORTED: &[(&str, &str)] = &[
    (
        "test_cast_*",
        "opset 28, exotic float formats, or Cast of a runtime tensor",
    ),
    ("test_castlike_*FLOAT8*", "8-bit float element types"),
    ("test_castlike_*FLOAT4E2M1*", "4-bit float element type"),
    ("test_castlike_*INT4*", "4-bit integer element types"),
    ("test_castlike_*INT2*", "2-bit integer element types"),
    ("test_*_int16", "int16 inputs"),
    ("test_*_uint16", "uint16 inputs"),
    ("test_*_uint32", "uint32 inputs"),
    ("test_*_uint64", "uint64 inputs"),
    ("test_identity_opt", "optional-typed input"),
    (
        "test_quantizelinear",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_quantizelinear_axis",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_dequantizelinear",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_dequantizelinear_axis",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_depthtospace_crd_mode_example",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_depthtospace_crd_mode_example_expanded",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_depthtospace_example",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_depthtospace_example_expanded",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_spacetodepth",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_spacetodepth_example",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_spacetodepth_example_expanded",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_spacetodepth_expanded",
        "opset 28 (its opset-21 copy `_opset21` imports)",
    ),
    (
        "test_spacetodepth_crd_mode_example",
        "opset 28 (SpaceToDepth's `mode`; only the expanded form has an `_opset21` copy)",
    ),
    (
        "test_spacetodepth_crd_mode_example_expanded",
        "opset 28 (SpaceToDepth's `mode`; only the expanded form has an `_opset21` copy)",
    ),
    (
        "test_spacetodepth_dcr_mode_example",
        "opset 28 (SpaceToDepth's `mode`; only the expanded form has an `_opset21` copy)",
    ),
    (
        "test_spacetodepth_dcr_mode_example_expanded",
        "opset 28 (SpaceToDepth's `mode`; only the expanded form has an `_opset21` copy)",
    ),
    ("test_*quantizelinear_blocked*", "blocked quantization"),
    ("test_*quantizelinear_e4m3fn*", "8-bit float quantization"),
    ("test_*quantizelinear_e5m2*", "8-bit float quantization"),
    (
        "test_*quantizelinear_float4e2m1*",
        "4-bit float quantization",
    ),
    (
        "test_*quantizelinear_*int16*",
        "16-bit integer quantization",
    ),
    ("test_*quantizelinear_*int4*", "4-bit integer quantization"),
    ("test_*quantizelinear_*int2*", "2-bit integer quantization"),
    ("test_identity_sequence", "sequence-typed input"),
    ("test_batchnorm_epsilon_training_mode", "training_mode = 1"),
    ("test_batchnorm_example_training_mode", "training_mode = 1"),
    ("test_training_dropout*", "Dropout training mode"),
    ("test_dropout_default_mask*", "Dropout mask output"),
    ("test_maxpool_with_argmax_*", "MaxPool Indices output"),
    ("test_gather_*", "Gather of a runtime tensor (only folded)"),
    (
        "test_slice_neg_steps",
        "Slice of a runtime tensor with step -1",
    ),
    ("test_slice_start_out_of_bounds", "an empty slice"),
    ("test_split_zero_size_splits_*", "zero-size Split outputs"),
    (
        "test_clip_default_int8_max_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_default_int8_min_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_default_max_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_default_min_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_example_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_inbounds_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_min_greater_than_max_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_outbounds_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    (
        "test_clip_splitbounds_expanded",
        "Less/Where on runtime tensors (only folded)",
    ),
    ("test_Softsign", "Abs of a runtime tensor (only folded)"),
    ("test_ReplicationPad2d", "Pad mode edge"),
    ("test_edge_pad", "Pad mode edge"),
    ("test_ReflectionPad2d", "Pad mode reflect"),
    ("test_operator_pad", "Pad mode reflect"),
    ("test_reflect_pad", "Pad mode reflect"),
    ("test_wrap_pad", "Pad mode wrap"),
    ("test_resize_*_antialias", "Resize antialias"),
    (
        "test_resize_*_half_pixel_symmetric",
        "Resize coordinate mode half_pixel_symmetric",
    ),
    (
        "test_resize_tf_crop_and_resize*",
        "Resize coordinate mode tf_crop_and_resize",
    ),
    ("test_resize_*cubic*", "Resize mode cubic"),
    (
        "test_reshape_allowzero_reordered",
        "zero-size input: a 0 batch dimension is read as dynamic and fixed to 1",
    ),
];

/// Glob match with `*` wildcards.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            name.starts_with(head)
                && (0..=name.len() - head.len()).any(|k| glob(rest, &name[head.len() + k..]))
        }
    }
}

/// Graph inputs no node reads as its first operand (`shape`, `axes`, `scales`, weights,
/// second addends...) and the operand of ConstantOfShape: the conformance convention
/// binds them to their test data as constants (see `onnx::freeze_inputs`); the other
/// inputs stay runtime inputs.
fn frozen_inputs(model: &ModelProto) -> Vec<String> {
    let g = model.graph.as_ref().expect("graph");
    let inits: BTreeSet<&str> = g.initializer.iter().map(|t| t.name()).collect();
    let first: BTreeSet<&str> = g
        .node
        .iter()
        .filter(|n| n.op_type() != "ConstantOfShape")
        .filter_map(|n| n.input.first())
        .map(String::as_str)
        .collect();
    g.input
        .iter()
        .map(|i| i.name())
        .filter(|n| !inits.contains(n) && !first.contains(n))
        .map(str::to_string)
        .collect()
}

/// The model bytes of one node test, with its operand inputs frozen.
fn node_test_model(dir: &Path) -> Vec<u8> {
    let bytes = std::fs::read(dir.join("model.onnx")).expect("model.onnx");
    let model = ModelProto::decode(bytes.as_slice()).expect("decodable model");
    let g = model.graph.as_ref().expect("graph");
    let inits: BTreeSet<&str> = g.initializer.iter().map(|t| t.name()).collect();
    let runtime: Vec<&str> = g
        .input
        .iter()
        .map(|i| i.name())
        .filter(|n| !inits.contains(n))
        .collect();
    let frozen = frozen_inputs(&model);
    let data: Vec<(String, Vec<u8>)> = frozen
        .iter()
        .map(|name| {
            let k = runtime
                .iter()
                .position(|r| r == name)
                .expect("a runtime input");
            let pb = dir.join("test_data_set_0").join(format!("input_{k}.pb"));
            (
                name.clone(),
                std::fs::read(&pb).unwrap_or_else(|e| panic!("{}: {e}", pb.display())),
            )
        })
        .collect();
    let refs: Vec<(&str, &[u8])> = data
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    onnx::freeze_inputs(&bytes, "model.onnx", &refs).expect("freeze inputs")
}

/// `name -> ops used` from the node-test index.
fn node_test_ops(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let index = std::fs::read_to_string(dir.join("index.tsv"))
        .expect("index.tsv: run scripts/setup.sh first");
    index
        .lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            Some((
                cols.first()?.to_string(),
                cols.get(4)?.split(',').map(str::to_string).collect(),
            ))
        })
        .collect()
}

#[test]
fn glob_patterns() {
    assert!(glob(
        "test_resize_*cubic*",
        "test_resize_upsample_scales_cubic_align_corners"
    ));
    assert!(glob("test_*_uint16", "test_add_uint16"));
    assert!(!glob("test_*_uint16", "test_add_uint8"));
    assert!(glob("test_wrap_pad", "test_wrap_pad"));
}

#[test]
fn node_test_models_import_or_report_unsupported() {
    let dir = cache("onnx-node-tests");
    let index = node_test_ops(&dir);
    assert!(
        index.len() > 400,
        "only {} node tests in {}: rerun scripts/setup.sh",
        index.len(),
        dir.display()
    );
    let supported: BTreeSet<&str> = onnx::supported_op_types().collect();
    let mut problems = Vec::new();
    let mut reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let (mut imported, mut all_supported) = (0, 0);
    for (name, ops) in &index {
        let must_import = ops.iter().all(|o| supported.contains(o.as_str()));
        all_supported += usize::from(must_import);
        let excused = NODE_TESTS_NOT_IMPORTED
            .iter()
            .find(|(p, _)| glob(p, name))
            .map(|(_, r)| *r);
        let bytes = node_test_model(&dir.join(name));
        let result = std::panic::catch_unwind(|| {
            onnx::import_bytes(&bytes, None, name, &ImportOptions::default())
        });
        match result {
            Err(_) => problems.push(format!("{name}: import panicked")),
            Ok(Ok(_)) if excused.is_some() => problems.push(format!(
                "{name}: imports now; remove it from NODE_TESTS_NOT_IMPORTED"
            )),
            Ok(Ok(_)) => imported += 1,
            Ok(Err(e)) if excused.is_some() && !matches!(e, ImportError::Unsupported(_)) => {
                reasons
                    .entry(format!("excused error: {e}"))
                    .or_default()
                    .push(name.clone());
            }
            Ok(Err(ImportError::Unsupported(list))) => {
                if must_import && excused.is_none() {
                    problems.push(format!(
                        "{name}: {}",
                        ImportError::Unsupported(list.clone())
                    ));
                }
                for u in list {
                    reasons
                        .entry(format!("{}: {}", u.op_type, u.reason))
                        .or_default()
                        .push(name.clone());
                }
            }
            Ok(Err(e)) => problems.push(format!("{name}: {e}")),
        }
    }
    for (reason, tests) in &reasons {
        eprintln!(
            "unsupported ({}): {reason}: {}",
            tests.len(),
            tests.join(" ")
        );
    }
    eprintln!(
        "{imported} of {} node-test models import ({all_supported} use only supported op types)",
        index.len()
    );
    assert!(
        problems.is_empty(),
        "{} node-test problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(imported >= 320, "only {imported} node-test models import");
}

fn check_classifier(g: &Graph, classes: usize) {
    assert_eq!(g.inputs().len(), 1);
    assert_eq!(g.outputs().len(), 1);
    let shape = &g.value_type(g.outputs()[0].value).shape;
    assert_eq!(
        shape.iter().product::<usize>(),
        classes,
        "output shape {shape:?}"
    );
}

#[test]
fn light_models_import() {
    let dir = cache("models/light");
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json");
    let names = [
        "bvlc_alexnet",
        "densenet121",
        "inception_v1",
        "inception_v2",
        "resnet50",
        "shufflenet",
        "squeezenet",
        "vgg19",
        "zfnet512",
    ];
    for name in names {
        assert!(
            manifest.contains(&format!("\"{name}\"")),
            "{name} is not in the manifest"
        );
        let g = import(&dir.join(format!("{name}.onnx"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_classifier(&g, 1000);
        let input = g.value_type(nnac_ir::Value::new(g.inputs()[0], 0));
        assert_eq!(input.shape[..2], [1, 3], "{name} input {input}");
    }
}

#[test]
fn rapidocr_models_import() {
    let dir = cache("models/rapidocr");
    let cls = import(&dir.join("ch_ppocr_mobile_v2.0_cls_infer.onnx"));
    let cls_opts = ImportOptions {
        input_shapes: [("x".to_string(), vec![1, 3, 48, 192])]
            .into_iter()
            .collect(),
    };
    let cls = match cls {
        Err(ImportError::DynamicInput { .. }) => {
            onnx::import_file(&dir.join("ch_ppocr_mobile_v2.0_cls_infer.onnx"), &cls_opts)
        }
        other => other,
    }
    .unwrap_or_else(|e| panic!("cls: {e}"));
    check_classifier(&cls, 2);

    let det_path = dir.join("ch_PP-OCRv4_det_infer.onnx");
    assert!(
        matches!(import(&det_path), Err(ImportError::DynamicInput { .. })),
        "the detector's input is dynamic"
    );
    let det_opts = ImportOptions {
        input_shapes: [("x".to_string(), vec![1, 3, 640, 640])]
            .into_iter()
            .collect(),
    };
    let det = onnx::import_file(&det_path, &det_opts).unwrap_or_else(|e| panic!("det: {e}"));
    assert_eq!(
        det.value_type(det.outputs()[0].value).shape,
        vec![1, 1, 640, 640]
    );
}
