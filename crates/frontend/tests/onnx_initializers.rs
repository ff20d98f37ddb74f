//! ONNX importer: initializer encodings (typed fields, raw_data, float16, float64,
//! int8/uint8/int32/int64/bool, external data) and initializers listed as inputs.

mod onnx_support;

use nnac_frontend::proto::onnx::{StringStringEntryProto, TensorProto};
use nnac_frontend::{onnx, ImportError, ImportOptions};
use nnac_ir::{Op, TensorData};
use onnx_support::*;

/// A model whose output is `Add(x, c)`, `c` an initializer of shape [4].
fn add_model(c: TensorProto) -> nnac_frontend::proto::onnx::ModelProto {
    model(
        13,
        vec![node("Add", &["x", "c"], &["y"], vec![])],
        vec![vi("x", &[1, 4])],
        vec![vi("y", &[])],
        vec![c],
    )
}

fn constant_data(c: TensorProto) -> TensorData {
    const_input(&import_ok(&add_model(c)), 0, 1).data
}

#[test]
fn float_typed_and_raw() {
    let want = TensorData::F32(vec![1.0, -2.0, 0.5, 3.25]);
    assert_eq!(
        constant_data(tensor_f32("c", &[4], &[1.0, -2.0, 0.5, 3.25])),
        want
    );
    assert_eq!(
        constant_data(tensor_raw_f32("c", &[4], &[1.0, -2.0, 0.5, 3.25])),
        want
    );
}

#[test]
fn float16_in_int32_data_and_raw() {
    let bits: [u16; 4] = [0x3c00, 0xc000, 0x3800, 0x4240]; // 1, -2, 0.5, 3.125
    let want = TensorData::F32(vec![1.0, -2.0, 0.5, 3.125]);
    let typed = TensorProto {
        int32_data: bits.iter().map(|&b| b as i32).collect(),
        ..tensor_raw("c", FLOAT16, &[4], vec![])
    };
    let typed = TensorProto {
        raw_data: None,
        ..typed
    };
    assert_eq!(constant_data(typed), want);
    let raw = tensor_raw(
        "c",
        FLOAT16,
        &[4],
        bits.iter().flat_map(|b| b.to_le_bytes()).collect(),
    );
    assert_eq!(constant_data(raw), want);
}

#[test]
fn float64_typed_and_raw() {
    let v = [1.5f64, -2.0, 1e-3, 4.0];
    let want = TensorData::F32(v.iter().map(|&x| x as f32).collect());
    let typed = TensorProto {
        double_data: v.to_vec(),
        ..tensor_raw("c", DOUBLE, &[4], vec![])
    };
    assert_eq!(
        constant_data(TensorProto {
            raw_data: None,
            ..typed
        }),
        want
    );
    assert_eq!(
        constant_data(tensor_raw(
            "c",
            DOUBLE,
            &[4],
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        )),
        want
    );
}

#[test]
fn integer_types_typed_and_raw() {
    let ints = TensorProto {
        int32_data: vec![-1, 2, -128, 127],
        ..tensor_raw("c", INT8, &[4], vec![])
    };
    assert_eq!(
        constant_data(TensorProto {
            raw_data: None,
            ..ints
        }),
        TensorData::I8(vec![-1, 2, -128, 127])
    );
    assert_eq!(
        constant_data(tensor_raw("c", INT8, &[4], vec![0xff, 2, 0x80, 0x7f])),
        TensorData::I8(vec![-1, 2, -128, 127])
    );
    assert_eq!(
        constant_data(tensor_raw("c", UINT8, &[4], vec![0, 1, 200, 255])),
        TensorData::U8(vec![0, 1, 200, 255])
    );
    let u8s = TensorProto {
        int32_data: vec![0, 1, 200, 255],
        raw_data: None,
        ..tensor_raw("c", UINT8, &[4], vec![])
    };
    assert_eq!(constant_data(u8s), TensorData::U8(vec![0, 1, 200, 255]));
    let i32s = TensorProto {
        int32_data: vec![7, -8, 9, 1 << 20],
        raw_data: None,
        ..tensor_raw("c", INT32, &[4], vec![])
    };
    assert_eq!(
        constant_data(i32s),
        TensorData::I32(vec![7, -8, 9, 1 << 20])
    );
    let raw: Vec<u8> = [7i32, -8, 9, 1 << 20]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(
        constant_data(tensor_raw("c", INT32, &[4], raw)),
        TensorData::I32(vec![7, -8, 9, 1 << 20])
    );
    assert_eq!(
        constant_data(tensor_i64("c", &[4], &[1, -2, 3, i64::MAX])),
        TensorData::I64(vec![1, -2, 3, i64::MAX])
    );
    let raw: Vec<u8> = [1i64, -2, 3, 4]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(
        constant_data(tensor_raw("c", INT64, &[4], raw)),
        TensorData::I64(vec![1, -2, 3, 4])
    );
    assert_eq!(
        constant_data(tensor_raw("c", BOOL, &[4], vec![0, 1, 2, 0])),
        TensorData::I64(vec![0, 1, 1, 0])
    );
}

#[test]
fn size_mismatch_is_an_error_naming_the_initializer() {
    let e = import(&add_model(tensor_raw("c", FLOAT, &[4], vec![0; 15]))).unwrap_err();
    assert!(
        matches!(&e, ImportError::Invalid { node, .. } if node == "c"),
        "{e}"
    );
    let e = import(&add_model(tensor_f32("c", &[4], &[1.0; 3]))).unwrap_err();
    assert!(e.to_string().contains("float_data has 3 values"), "{e}");
    // Dims whose product overflows never allocate.
    let e = import(&add_model(tensor_f32("c", &[i64::MAX, i64::MAX], &[1.0]))).unwrap_err();
    assert!(matches!(e, ImportError::Invalid { .. }), "{e}");
    let e = import(&add_model(tensor_f32("c", &[-4], &[1.0; 4]))).unwrap_err();
    assert!(e.to_string().contains("negative"), "{e}");
}

#[test]
fn string_initializers_are_unsupported() {
    let t = TensorProto {
        string_data: vec![b"a".to_vec()],
        ..tensor_raw("c", 8, &[1], vec![])
    };
    let e = import(&add_model(TensorProto {
        raw_data: None,
        ..t
    }))
    .unwrap_err();
    assert!(
        matches!(&e, ImportError::Unsupported(l) if l[0].node == "c"),
        "{e}"
    );
}

#[test]
fn initializers_listed_as_inputs_are_constants() {
    let mut m = add_model(tensor_f32("c", &[4], &[1.0; 4]));
    m.ir_version = Some(3);
    m.graph.as_mut().unwrap().input.push(vi("c", &[4]));
    let g = import_ok(&m);
    assert_eq!(g.inputs().len(), 1);
    assert!(matches!(
        g.node(g.node_inputs(g.outputs()[0].value.node)[1].node).op,
        Op::Constant(_)
    ));
}

fn external(location: &str, offset: Option<u64>, length: Option<u64>) -> TensorProto {
    let kv = |k: &str, v: String| StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v),
    };
    let mut entries = vec![kv("location", location.into())];
    entries.extend(offset.map(|o| kv("offset", o.to_string())));
    entries.extend(length.map(|l| kv("length", l.to_string())));
    TensorProto {
        name: Some("c".into()),
        dims: vec![4],
        data_type: Some(FLOAT),
        external_data: entries,
        data_location: Some(1),
        ..Default::default()
    }
}

/// A scratch model directory with a `sub/` directory, removed when the guard drops.
fn model_dir(tag: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(&format!("nnac-onnx-ext-{tag}-"))
        .tempdir()
        .unwrap();
    std::fs::create_dir_all(d.path().join("sub")).unwrap();
    d
}

#[test]
fn external_data_next_to_the_model() {
    let tmp = model_dir("ok");
    let dir = tmp.path();
    let mut bytes = vec![0xAAu8; 8];
    bytes.extend([1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_le_bytes()));
    std::fs::write(dir.join("sub/weights.bin"), &bytes).unwrap();
    let m = add_model(external("sub/weights.bin", Some(8), Some(16)));
    std::fs::write(dir.join("model.onnx"), encode(&m)).unwrap();
    let g = onnx::import_file(&dir.join("model.onnx"), &ImportOptions::default()).unwrap();
    assert_eq!(
        const_input(&g, 0, 1).data,
        TensorData::F32(vec![1.0, 2.0, 3.0, 4.0])
    );
    // Without a length the rest of the file from the offset is read; the same bytes
    // through import_bytes with a base directory.
    let m = add_model(external("sub/weights.bin", Some(8), None));
    let g = onnx::import_bytes(&encode(&m), Some(dir), "m", &ImportOptions::default()).unwrap();
    assert_eq!(
        const_input(&g, 0, 1).data,
        TensorData::F32(vec![1.0, 2.0, 3.0, 4.0])
    );
    // Too short a file, a wrong length, no base directory: errors naming the tensor.
    for m in [
        add_model(external("sub/weights.bin", Some(12), None)),
        add_model(external("sub/weights.bin", Some(0), Some(12))),
    ] {
        let e =
            onnx::import_bytes(&encode(&m), Some(dir), "m", &ImportOptions::default()).unwrap_err();
        assert!(
            matches!(&e, ImportError::Invalid { node, .. } if node == "c"),
            "{e}"
        );
    }
    let e =
        onnx::import_bytes(&encode(&m_plain()), None, "m", &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("directory"), "{e}");
}

fn m_plain() -> nnac_frontend::proto::onnx::ModelProto {
    add_model(external("weights.bin", None, None))
}

#[test]
fn external_paths_may_not_escape_the_model_directory() {
    let tmp = model_dir("escape");
    let dir = tmp.path();
    std::fs::write(dir.join("w.bin"), [0u8; 16]).unwrap();
    for loc in ["../w.bin", "/etc/passwd", "sub/../../w.bin", ""] {
        let e = onnx::import_bytes(
            &encode(&add_model(external(loc, None, None))),
            Some(&dir.join("sub")),
            "m",
            &ImportOptions::default(),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("relative path") || msg.contains("leaves the model's directory"),
            "{loc}: {msg}"
        );
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.join("w.bin"), dir.join("sub/link.bin")).unwrap();
        let e = onnx::import_bytes(
            &encode(&add_model(external("link.bin", None, None))),
            Some(&dir.join("sub")),
            "m",
            &ImportOptions::default(),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("outside the model's directory"),
            "{e}"
        );
    }
}
