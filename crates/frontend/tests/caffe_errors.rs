//! Bad networks and weights: every error names the file position, layer or blob at
//! fault; unsupported layers are listed together.

mod caffe_support;

use caffe_support::*;
use nnac_frontend::caffe::{import_bytes, import_files};
use nnac_frontend::{ImportError, ImportOptions};

fn err(prototxt: &str, caffemodel: Option<&[u8]>) -> ImportError {
    match import(prototxt, caffemodel) {
        Ok(_) => panic!("import unexpectedly succeeded"),
        Err(e) => e,
    }
}

fn conv_net() -> String {
    net_with_input(
        &[1, 3, 4, 4],
        r#"layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 2 kernel_size: 3 } }"#,
    )
}

#[test]
fn syntax_error_gives_line_and_column() {
    let p = "name: \"t\"\ninput: \"data\"\nlayer {\n  name: \"x\"\n  type: \"ReLU\" }\n  bottom \"data\"\n";
    let e = err(p, None);
    let ImportError::Malformed { ref msg, .. } = e else {
        panic!("{e:?}")
    };
    assert!(msg.starts_with("line 6, column 10:"), "{msg}");
    assert!(msg.contains("expected ':'"), "{msg}");
}

#[test]
fn unknown_field_gives_line_and_column() {
    let p = "name: \"t\"\nlayer {\n  name: \"x\"\n    kernel: 3\n}\n";
    let e = err(p, None);
    let ImportError::Malformed { ref msg, .. } = e else {
        panic!("{e:?}")
    };
    assert!(msg.starts_with("line 4, column 5:"), "{msg}");
    assert!(msg.contains("kernel"), "{msg}");
}

#[test]
fn unexpected_end_of_file_points_at_the_end() {
    let e = err("name: \"t\"\nlayer {\n  name: \"x\"\n", None);
    let ImportError::Malformed { ref msg, .. } = e else {
        panic!("{e:?}")
    };
    assert!(msg.starts_with("line 4, column 1:"), "{msg}");
}

#[test]
fn file_errors_name_the_file() {
    let tmp = tempfile::Builder::new()
        .prefix("nnac-caffe-errors-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let path = dir.join("bad.prototxt");
    std::fs::write(&path, "name: \"t\"\nlayer { nme: \"x\" }\n").unwrap();
    let e = import_files(&path, None, &ImportOptions::default()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("bad.prototxt") && text.contains("line 2, column 9"),
        "{text}"
    );
    let missing =
        import_files(&dir.join("none.prototxt"), None, &ImportOptions::default()).unwrap_err();
    assert!(matches!(missing, ImportError::Io { .. }), "{missing:?}");
}

#[test]
fn missing_blob_names_layer_and_blob() {
    let e = err(
        &conv_net(),
        Some(&model(vec![("conv1", vec![blob(&[2, 3, 3, 3], 0.1)])])),
    );
    let ImportError::Invalid { ref node, ref msg } = e else {
        panic!("{e:?}")
    };
    assert_eq!(node, "conv1");
    assert!(msg.contains("blob 1 (bias) is missing"), "{msg}");
    let e = err(&conv_net(), None);
    assert!(
        e.to_string()
            .contains("node 'conv1': weight blob 0 (weights) is missing"),
        "{e}"
    );
}

#[test]
fn misshaped_blob_names_layer_and_blob() {
    let e = err(
        &conv_net(),
        Some(&model(vec![(
            "conv1",
            vec![blob(&[2, 3, 2, 2], 0.1), blob(&[2], 0.1)],
        )])),
    );
    let ImportError::Invalid { ref node, ref msg } = e else {
        panic!("{e:?}")
    };
    assert_eq!(node, "conv1");
    assert!(
        msg.contains("blob 0 (weights) has shape 2x3x2x2, expected 2x3x3x3"),
        "{msg}"
    );
}

#[test]
fn blob_data_length_must_match_its_shape() {
    let mut w = blob(&[2, 3, 3, 3], 0.1);
    w.data.pop();
    let e = err(
        &conv_net(),
        Some(&model(vec![("conv1", vec![w, blob(&[2], 0.1)])])),
    );
    let ImportError::Invalid { ref node, ref msg } = e else {
        panic!("{e:?}")
    };
    assert_eq!(node, "conv1");
    assert!(
        msg.contains("blob 0 (weights) holds 53 values but its shape 2x3x3x3 needs 54"),
        "{msg}"
    );
}

#[test]
fn all_unsupported_layers_are_listed_together() {
    let p = net_with_input(
        &[1, 3, 4, 4],
        r#"layer { name: "abs" type: "AbsVal" bottom: "data" top: "abs" }
           layer { name: "relu" type: "ReLU" bottom: "abs" top: "relu" }
           layer { name: "lrn" type: "LRN" bottom: "data" top: "lrn" lrn_param { norm_region: WITHIN_CHANNEL } }
           layer { name: "sp" type: "Pooling" bottom: "data" top: "sp" pooling_param { pool: STOCHASTIC kernel_size: 2 } }
           layer { name: "py" type: "Python" bottom: "relu" top: "py" }
           layers { name: "v1" type: THRESHOLD bottom: "data" top: "v1" }"#,
    );
    // Mixing forms is itself an error; check the current form alone first.
    let current = p.replace(
        r#"layers { name: "v1" type: THRESHOLD bottom: "data" top: "v1" }"#,
        "",
    );
    let ImportError::Unsupported(list) = err(&current, None) else {
        panic!("expected Unsupported")
    };
    let got: Vec<(&str, &str, i64)> = list
        .iter()
        .map(|u| (u.node.as_str(), u.op_type.as_str(), u.opset))
        .collect();
    assert_eq!(
        got,
        vec![
            ("abs", "AbsVal", 0),
            ("lrn", "LRN", 0),
            ("sp", "Pooling", 0),
            ("py", "Python", 0)
        ]
    );
    assert!(list[1].reason.contains("WITHIN_CHANNEL"));
    assert!(list[2].reason.contains("STOCHASTIC"));
    let e = err(&p, None);
    assert!(e.to_string().contains("mixes"), "{e}");
}

#[test]
fn unknown_bottom_is_an_error() {
    let p = net_with_input(
        &[1, 3, 4, 4],
        r#"layer { name: "r" type: "ReLU" bottom: "nope" top: "r" }"#,
    );
    assert!(err(&p, None)
        .to_string()
        .contains("node 'r': bottom blob 'nope' is not produced"));
}

#[test]
fn dynamic_input_needs_a_shape_and_the_override_is_used() {
    let p = "name: \"t\"\nlayer { name: \"in\" type: \"Input\" top: \"data\" }\nlayer { name: \"r\" type: \"ReLU\" bottom: \"data\" top: \"r\" }\n";
    let e = err(p, None);
    assert!(
        matches!(e, ImportError::DynamicInput { ref input, .. } if input == "data"),
        "{e:?}"
    );
    let mut opts = ImportOptions::default();
    opts.input_shapes.insert("data".into(), vec![1, 2, 3]);
    let g = import_bytes(p.as_bytes(), None, &opts).unwrap();
    assert_eq!(shape(&g, "r"), vec![1, 2, 3]);
    opts.input_shapes.insert("other".into(), vec![1]);
    let e = import_bytes(p.as_bytes(), None, &opts).unwrap_err();
    assert!(
        matches!(e, ImportError::Usage(ref m) if m.contains("other")),
        "{e:?}"
    );
}

#[test]
fn invalid_parameters_are_errors_naming_the_layer() {
    let cases = [
        (
            r#"convolution_param { num_output: 2 kernel_size: 3 group: 2 }"#,
            "multiples of group",
        ),
        (
            r#"convolution_param { num_output: 2 }"#,
            "kernel size is not given",
        ),
        (
            r#"convolution_param { num_output: 2 kernel_size: 3 kernel_h: 3 kernel_w: 3 }"#,
            "kernel_h/kernel_w",
        ),
        (
            r#"convolution_param { num_output: 2 kernel_size: 1 kernel_size: 2 kernel_size: 3 }"#,
            "3 kernel values for 2 spatial axes",
        ),
    ];
    for (param, want) in cases {
        let p = net_with_input(
            &[1, 3, 4, 4],
            &format!(
                r#"layer {{ name: "c" type: "Convolution" bottom: "data" top: "c" {param} }}"#
            ),
        );
        let e = err(&p, None);
        assert!(
            e.to_string().starts_with("node 'c':") && e.to_string().contains(want),
            "{param}: {e}"
        );
    }
    let p = net_with_input(
        &[1, 2, 3, 3],
        r#"layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e" eltwise_param { operation: PROD coeff: 1 coeff: 2 } }"#,
    );
    assert!(err(&p, None).to_string().contains("node 'e'"));
    let p = net_with_input(
        &[1, 2, 3, 3],
        r#"layer { name: "r" type: "Reshape" bottom: "data" top: "r" reshape_param { shape { dim: -1 dim: -1 } } }"#,
    );
    assert!(err(&p, None).to_string().contains("node 'r'"));
    let p = net_with_input(
        &[1, 2, 3, 3],
        r#"layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { kernel_size: 2 pad: 2 } }"#,
    );
    assert!(err(&p, None).to_string().contains("node 'p': pad"));
}

/// A stride that makes a layer's output larger than any IR tensor (here a
/// deconvolution of an 8 x 8 map by 2^31 - 1) is refused naming the layer, before
/// anything is allocated for it.
#[test]
fn a_layer_output_beyond_the_element_limit_names_the_layer() {
    let p = net_with_input(
        &[1, 2, 8, 8],
        r#"layer { name: "up" type: "Deconvolution" bottom: "data" top: "up" convolution_param { num_output: 2 kernel_size: 2 stride: 2147483647 } }"#,
    );
    let w = model(vec![(
        "up",
        vec![blob(&[2, 2, 2, 2], 0.1), blob(&[2], 0.1)],
    )]);
    let e = err(&p, Some(&w));
    let msg = e.to_string();
    assert!(msg.contains("'up'") && msg.contains("elements"), "{msg}");
}
