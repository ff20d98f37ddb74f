//! The errors a user meets, tested as a user meets them: through the `nnac` binary.
//! Each must exit with status 1 (user error, README "Exit codes"), print one clear
//! message on stderr naming the culprit (file, node, layer, byte offset, input), and
//! leave no output file behind (not even a partial one).
//!
//! Models are built here as ONNX protobufs (prost messages from nnac-frontend), so the
//! test needs nothing from the model cache.

mod common;

use common::tempdir;
use nnac_frontend::proto::onnx::tensor_shape_proto::{dimension, Dimension};
use nnac_frontend::proto::onnx::*;
use prost::Message;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn nnac(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nnac"))
        .args(args)
        .output()
        .expect("run nnac")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs nnac, expects exit status 1 and a one-message stderr containing every needle;
/// returns stderr.
fn fails_with(args: &[&str], needles: &[&str]) -> String {
    let out = nnac(args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: stderr lacks {n:?}:\n{err}");
    }
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    eprintln!("{args:?}\n  -> {err}");
    err
}

fn vi(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            denotation: None,
            value: Some(match d {
                Some(v) => dimension::Value::DimValue(*v),
                None => dimension::Value::DimParam("size".into()),
            }),
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            denotation: None,
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(1),
                shape: Some(TensorShapeProto { dim }),
            })),
        }),
        ..Default::default()
    }
}

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(7),
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn weights(name: &str, dims: &[i64]) -> TensorProto {
    let n: i64 = dims.iter().product();
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(1),
        // Deterministic small values; the contents do not matter for these errors.
        float_data: (0..n).map(|i| ((i % 7) as f32 - 3.0) * 0.01).collect(),
        ..Default::default()
    }
}

fn write_model(path: &Path, graph: GraphProto) {
    let m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(graph),
        ..Default::default()
    };
    std::fs::write(path, m.encode_to_vec()).unwrap();
}

/// x -> Relu -> TopK-like unsupported ops -> y.
fn unsupported_model(path: &Path) {
    let g = GraphProto {
        name: Some("unsupported".into()),
        node: vec![
            node("Relu", "relu0", &["x"], &["a"]),
            node("Hardmax", "the_hardmax", &["a"], &["b"]),
            node("Relu", "relu1", &["b"], &["c"]),
            node("Erf", "the_erf", &["c"], &["y"]),
        ],
        input: vec![vi("x", &[Some(1), Some(4)])],
        output: vec![vi("y", &[Some(1), Some(4)])],
        ..Default::default()
    };
    write_model(path, g);
}

/// A conv whose smallest split (one output row, 96 output channels, the whole
/// 3x3x1024 reduction) needs more than 256 KiB of SRAM.
fn huge_layer_model(path: &Path) {
    let mut conv = node("Conv", "big_conv", &["x", "w"], &["y"]);
    conv.attribute = vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1, 1, 1, 1])];
    let g = GraphProto {
        name: Some("huge".into()),
        node: vec![conv],
        initializer: vec![weights("w", &[96, 1024, 3, 3])],
        input: vec![vi("x", &[Some(1), Some(1024), Some(4), Some(4)])],
        output: vec![vi("y", &[Some(1), Some(96), Some(4), Some(4)])],
        ..Default::default()
    };
    write_model(path, g);
}

fn dynamic_model(path: &Path) {
    let g = GraphProto {
        name: Some("dynamic".into()),
        node: vec![node("Relu", "relu", &["x"], &["y"])],
        input: vec![vi("x", &[Some(1), Some(3), None, None])],
        output: vec![vi("y", &[Some(1), Some(3), None, None])],
        ..Default::default()
    };
    write_model(path, g);
}

fn write_npy_f32(path: &Path, shape: Vec<usize>) {
    let n = shape.iter().product();
    let t = nnac_ir::Tensor::f32(shape, vec![0.25; n]).unwrap();
    nnac_interp::npy::write_npy(path, &t).unwrap();
}

fn write_npy_i32(path: &Path, shape: Vec<usize>) {
    // Hand-written int32 .npy (v1.0 header padded to 64 bytes).
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let mut header = format!(
        "{{'descr': '<i4', 'fortran_order': False, 'shape': ({},), }}",
        dims.join(", ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    b.extend_from_slice(header.as_bytes());
    let n: usize = shape.iter().product();
    b.extend(std::iter::repeat_n(0u8, 4 * n));
    std::fs::write(path, b).unwrap();
}

/// Compiles models/tiny_cnn.onnx (calibrated on one generated frame) into `dir`.
fn tiny_program(dir: &Path) -> PathBuf {
    let calib = dir.join("calib.npy");
    write_npy_f32(&calib, vec![1, 3, 64, 64]);
    let prog = dir.join("tiny.nnab");
    let out = nnac(&[
        "compile",
        s(&root().join("models/tiny_cnn.onnx")),
        "--calib",
        s(&calib),
        "-o",
        s(&prog),
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    prog
}

#[test]
fn a_missing_model_file_is_named() {
    let tmp = tempdir("user-errors-missing");
    let d = tmp.path();
    let out = d.join("x.nnab");
    let missing = d.join("no_such_model.onnx");
    fails_with(
        &["compile", s(&missing), "-o", s(&out)],
        &["no_such_model.onnx"],
    );
    fails_with(&["inspect", s(&missing)], &["no_such_model.onnx"]);
    fails_with(
        &["run", s(&d.join("nope.nnab")), "--output-dir", s(d)],
        &["nope.nnab"],
    );
    assert!(!out.exists());
}

#[test]
fn every_unsupported_op_is_listed_with_its_node() {
    let tmp = tempdir("user-errors-unsupported");
    let d = tmp.path();
    let model = d.join("m.onnx");
    unsupported_model(&model);
    let out = d.join("m.nnab");
    let err = fails_with(
        &["compile", s(&model), "-o", s(&out)],
        &["the_hardmax", "Hardmax", "the_erf", "Erf"],
    );
    assert!(!out.exists(), "{err}");
    fails_with(&["inspect", s(&model)], &["the_hardmax", "the_erf"]);
}

#[test]
fn a_dynamic_input_asks_for_input_shape() {
    let tmp = tempdir("user-errors-dynamic");
    let d = tmp.path();
    let model = d.join("dyn.onnx");
    dynamic_model(&model);
    let out = d.join("dyn.nnab");
    let calib = d.join("c.npy");
    write_npy_f32(&calib, vec![1, 3, 8, 8]);
    fails_with(
        &["compile", s(&model), "--calib", s(&calib), "-o", s(&out)],
        &["'x'", "--input-shape"],
    );
    assert!(!out.exists());
    // With the shape given, the same model compiles.
    let ok = nnac(&[
        "compile",
        s(&model),
        "--input-shape",
        "x=1x3x8x8",
        "--calib",
        s(&calib),
        "-o",
        s(&out),
        "--quiet",
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(out.exists());
}

#[test]
fn a_corrupted_program_names_the_problem() {
    let tmp = tempdir("user-errors-corrupt");
    let d = tmp.path();
    let prog = tiny_program(d);
    let bytes = std::fs::read(&prog).unwrap();
    let flipped = d.join("flipped.nnab");
    let mut b = bytes.clone();
    b[100] ^= 0x40;
    std::fs::write(&flipped, &b).unwrap();
    let truncated = d.join("truncated.nnab");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let x = d.join("x.npy");
    write_npy_f32(&x, vec![1, 3, 64, 64]);
    let outdir = d.join("out");
    for bad in [&flipped, &truncated] {
        fails_with(&["verify", s(bad)], &["checksum"]);
        fails_with(&["disasm", s(bad)], &["checksum"]);
        fails_with(
            &[
                "run",
                s(bad),
                "--input",
                &format!("image={}", s(&x)),
                "--output-dir",
                s(&outdir),
            ],
            &["checksum"],
        );
        assert!(!outdir.join("logits.npy").exists());
    }
    let tiny = d.join("tiny.bin");
    std::fs::write(&tiny, b"NNAB").unwrap();
    fails_with(&["verify", s(&tiny)], &["too short"]);
}

#[test]
fn a_model_too_large_for_sram_names_the_layer_and_bytes() {
    let tmp = tempdir("user-errors-too-large");
    let d = tmp.path();
    let model = d.join("huge.onnx");
    huge_layer_model(&model);
    let hw = d.join("small.toml");
    std::fs::write(&hw, "sram_bytes = 262144\n").unwrap();
    let calib = d.join("c.npy");
    write_npy_f32(&calib, vec![1, 1024, 4, 4]);
    let out = d.join("huge.nnab");
    fails_with(
        &[
            "compile",
            s(&model),
            "--calib",
            s(&calib),
            "--hw",
            s(&hw),
            "-o",
            s(&out),
        ],
        &["big_conv", "262144"],
    );
    assert!(!out.exists());
}

#[test]
fn an_input_of_the_wrong_shape_or_dtype_is_refused() {
    let tmp = tempdir("user-errors-bad-input");
    let d = tmp.path();
    let prog = tiny_program(d);
    let outdir = d.join("out");
    let model = root().join("models/tiny_cnn.onnx");
    let wrong_shape = d.join("shape.npy");
    write_npy_f32(&wrong_shape, vec![1, 3, 32, 64]);
    let wrong_dtype = d.join("dtype.npy");
    write_npy_i32(&wrong_dtype, vec![1, 3, 64, 64]);
    // One rule and one message for all three subcommands (src/cmd/frame_shape.rs).
    let shape_msg = "input 'image' expects shape 1x3x64x64 (or Nx1x3x64x64 for N frames), \
                     the file has 1x3x32x64";
    for (file, needle) in [(&wrong_shape, shape_msg), (&wrong_dtype, "dtype")] {
        let input = format!("image={}", s(file));
        let all: &[&str] = if needle == shape_msg {
            &[needle, s(file)]
        } else {
            &["image"]
        };
        fails_with(
            &[
                "run",
                s(&prog),
                "--input",
                &input,
                "--output-dir",
                s(&outdir),
            ],
            &["image", needle, s(file)],
        );
        fails_with(
            &[
                "eval",
                s(&model),
                "--input",
                &input,
                "--output-dir",
                s(&outdir),
            ],
            all,
        );
        let calib_out = d.join("c.nnab");
        fails_with(
            &[
                "compile",
                s(&model),
                "--calib",
                s(file),
                "-o",
                s(&calib_out),
            ],
            all,
        );
        assert!(!calib_out.exists());
    }
    assert!(!outdir.join("logits.npy").exists());
}

#[test]
fn usage_errors_exit_1() {
    let out = nnac(&["compile"]);
    assert_eq!(out.status.code(), Some(1));
    let out = nnac(&["no-such-subcommand"]);
    assert_eq!(out.status.code(), Some(1));
    let out = nnac(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
}
