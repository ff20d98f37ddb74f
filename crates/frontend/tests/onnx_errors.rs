//! ONNX importer errors: every unsupported node listed in one error, dynamic inputs,
//! `--input-shape`, versions, malformed bytes.

mod onnx_support;

use nnac_frontend::proto::onnx::OperatorSetIdProto;
use nnac_frontend::{onnx, ImportError, ImportOptions};
use onnx_support::*;

fn opts(name: &str, shape: &[usize]) -> ImportOptions {
    ImportOptions {
        input_shapes: [(name.to_string(), shape.to_vec())].into_iter().collect(),
    }
}

#[test]
fn all_unsupported_nodes_are_listed_even_downstream_of_one() {
    let nodes = vec![
        node("LSTM", &["x"], &["a"], vec![]),
        node("Relu", &["a"], &["b"], vec![]),
        // Downstream of the unsupported LSTM, and unsupported itself.
        node(
            "Resize",
            &["b", "", "sc"],
            &["c"],
            vec![a_s("mode", "cubic")],
        ),
        node("Erf", &["x"], &["d"], vec![]),
        node("Conv", &["x", "w"], &["e"], vec![a_s("bogus", "1")]),
    ];
    let inits = vec![
        tensor_f32("sc", &[4], &[1.0, 1.0, 2.0, 2.0]),
        tensor_f32("w", &[1, 1, 1, 1], &[1.0]),
    ];
    let m = model(
        13,
        nodes,
        vec![vi("x", &[1, 1, 4, 4])],
        vec![vi("c", &[]), vi("d", &[]), vi("e", &[])],
        inits,
    );
    let Err(ImportError::Unsupported(list)) = import(&m) else {
        panic!("expected Unsupported")
    };
    let got: Vec<(&str, &str)> = list
        .iter()
        .map(|u| (u.node.as_str(), u.op_type.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("LSTM_a", "LSTM"),
            ("Resize_c", "Resize"),
            ("Erf_d", "Erf"),
            ("Conv_e", "Conv")
        ]
    );
    assert!(list.iter().all(|u| u.opset == 13));
    assert!(list[2].reason.contains("not supported") && list[3].reason.contains("'bogus'"));
    let text = ImportError::Unsupported(list).to_string();
    assert!(
        text.contains("4 unsupported") && text.contains("LSTM") && text.contains("Erf"),
        "{text}"
    );
}

#[test]
fn other_domains_are_unsupported() {
    let mut n = node("FusedConv", &["x"], &["y"], vec![]);
    n.domain = Some("com.microsoft".into());
    let mut m = model(
        13,
        vec![n],
        vec![vi("x", &[1, 2])],
        vec![vi("y", &[])],
        vec![],
    );
    m.opset_import.push(OperatorSetIdProto {
        domain: Some("com.microsoft".into()),
        version: Some(1),
    });
    let Err(ImportError::Unsupported(list)) = import(&m) else {
        panic!()
    };
    assert_eq!(
        (list[0].opset, list[0].reason.contains("com.microsoft")),
        (1, true)
    );
}

#[test]
fn dynamic_inputs() {
    let relu = || vec![node("Relu", &["x"], &["y"], vec![])];
    // A symbolic batch becomes 1.
    let g = import_ok(&model(
        13,
        relu(),
        vec![vi("x", &[-1, 3, 8, 8])],
        vec![vi("y", &[])],
        vec![],
    ));
    assert_eq!(output_shape(&g, 0), vec![1, 3, 8, 8]);
    // Any other dynamic dimension needs --input-shape.
    let m = model(
        13,
        relu(),
        vec![vi("x", &[-1, 3, -1, -1])],
        vec![vi("y", &[])],
        vec![],
    );
    let e = import(&m).unwrap_err();
    assert!(
        matches!(&e, ImportError::DynamicInput { input, shape } if input == "x" && shape == "[N, 3, N, N]"),
        "{e}"
    );
    let bytes = encode(&m);
    let g = onnx::import_bytes(&bytes, None, "m", &opts("x", &[1, 3, 32, 48])).unwrap();
    assert_eq!(output_shape(&g, 0), vec![1, 3, 32, 48]);
    // Wrong rank, a changed static dimension, an unknown input name: usage errors.
    for o in [
        opts("x", &[1, 3, 32]),
        opts("x", &[1, 4, 32, 32]),
        opts("nope", &[1]),
    ] {
        let e = onnx::import_bytes(&bytes, None, "m", &o).unwrap_err();
        assert!(matches!(e, ImportError::Usage(_)), "{e}");
    }
}

#[test]
fn versions_are_checked() {
    let relu = || vec![node("Relu", &["x"], &["y"], vec![])];
    for opset in [5, 28] {
        let e = import(&model(
            opset,
            relu(),
            vec![vi("x", &[1])],
            vec![vi("y", &[])],
            vec![],
        ))
        .unwrap_err();
        assert!(
            matches!(&e, ImportError::Unsupported(l) if l[0].op_type == "opset_import"),
            "{e}"
        );
    }
    for opset in [6, 7, 11, 13, 27] {
        import_ok(&model(
            opset,
            relu(),
            vec![vi("x", &[1])],
            vec![vi("y", &[])],
            vec![],
        ));
    }
    let mut m = model(13, relu(), vec![vi("x", &[1])], vec![vi("y", &[])], vec![]);
    m.ir_version = Some(2);
    assert!(import(&m).unwrap_err().to_string().contains("IR version 2"));
    m.ir_version = Some(14);
    m.opset_import.clear();
    assert!(matches!(import(&m), Err(ImportError::Malformed { .. })));
}

#[test]
fn malformed_bytes_name_the_file() {
    let e = onnx::import_bytes(
        &[0xff, 0xff, 0xff],
        None,
        "broken.onnx",
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, ImportError::Malformed { path, .. } if path.ends_with("broken.onnx")),
        "{e}"
    );
    let e = onnx::import_file(
        std::path::Path::new("/nonexistent/x.onnx"),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ImportError::Io { .. }));
}

#[test]
fn semantic_errors_name_the_node() {
    // Undefined input.
    let m = model(
        13,
        vec![node("Relu", &["missing"], &["y"], vec![])],
        vec![vi("x", &[1])],
        vec![vi("y", &[])],
        vec![],
    );
    let e = import(&m).unwrap_err();
    assert!(
        matches!(&e, ImportError::Invalid { node, msg } if node == "Relu_y" && msg.contains("missing")),
        "{e}"
    );
    // Shape mismatch found by shape inference.
    let m = model(
        13,
        vec![node("Add", &["x", "c"], &["y"], vec![])],
        vec![vi("x", &[1, 3])],
        vec![vi("y", &[])],
        vec![tensor_f32("c", &[4], &[0.0; 4])],
    );
    let e = import(&m).unwrap_err();
    assert!(
        matches!(&e, ImportError::Invalid { node, .. } if node == "Add_y"),
        "{e}"
    );
    // A graph output nothing produces.
    let m = model(
        13,
        vec![],
        vec![vi("x", &[1])],
        vec![vi("ghost", &[])],
        vec![],
    );
    assert!(import(&m).unwrap_err().to_string().contains("ghost"));
}

#[test]
fn freeze_inputs_binds_test_data() {
    use prost::Message;
    let m = model(
        13,
        vec![node("Reshape", &["x", "s"], &["y"], vec![])],
        vec![vi("x", &[1, 6]), value_info("s", INT64, &[2])],
        vec![vi("y", &[])],
        vec![],
    );
    let e = import(&m).unwrap_err();
    assert!(e.to_string().contains("run time"), "{e}");
    let shape = tensor_i64("ignored", &[2], &[2, 3]).encode_to_vec();
    let frozen = onnx::freeze_inputs(&encode(&m), "m", &[("s", &shape)]).unwrap();
    let g = onnx::import_bytes(&frozen, None, "m", &ImportOptions::default()).unwrap();
    assert_eq!(output_shape(&g, 0), vec![2, 3]);
    assert_eq!(g.inputs().len(), 1);
    assert!(onnx::freeze_inputs(&encode(&m), "m", &[("nope", &shape)]).is_err());
}
