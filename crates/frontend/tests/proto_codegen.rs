//! Regenerates the committed protobuf code in `src/proto/` from the committed schemas in
//! `proto/` and checks that it is byte-for-byte identical.
//!
//! The generator (`generate_all`) is pure Rust: protox parses the `.proto` files (no system
//! `protoc`), prost-build turns the descriptors into Rust (formatted with prettyplease, so
//! the output does not depend on the local rustfmt). Outputs:
//!
//! - `src/proto/onnx.rs` from `proto/onnx.proto` (package `onnx`),
//! - `src/proto/caffe.rs` from `proto/caffe.proto` (package `caffe`),
//! - `src/proto/caffe.fds.bin`: the encoded `FileDescriptorSet` of `caffe.proto` (without
//!   source info), used with prost-reflect to parse `.prototxt` text format.
//!
//! To rewrite the committed files after changing a schema or the prost version, run
//! `NNAC_BLESS=1 cargo test -p nnac-frontend --test proto_codegen`.

use std::fs;
use std::path::{Path, PathBuf};

/// One generated artifact: its file name in `src/proto/` and how to produce its bytes.
struct Output {
    file_name: &'static str,
    bytes: Vec<u8>,
}

/// A schema to generate Rust code for.
struct Schema {
    /// File name in `proto/`.
    proto: &'static str,
    /// The `package` declared in the file; prost-build names its output `<package>.rs`.
    package: &'static str,
    /// File name of the generated Rust code in `src/proto/`.
    rust_file: &'static str,
}

const SCHEMAS: [Schema; 2] = [
    Schema {
        proto: "onnx.proto",
        package: "onnx",
        rust_file: "onnx.rs",
    },
    Schema {
        proto: "caffe.proto",
        package: "caffe",
        rust_file: "caffe.rs",
    },
];

/// The descriptor set committed for prost-reflect: (schema file, output file name).
const DESCRIPTOR_SETS: [(&str, &str); 1] = [("caffe.proto", "caffe.fds.bin")];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn proto_dir() -> PathBuf {
    crate_dir().join("proto")
}

fn committed_dir() -> PathBuf {
    crate_dir().join("src").join("proto")
}

/// Parses one schema with protox. `source_info` keeps comments (for doc comments in the
/// generated Rust); the committed descriptor set omits them to stay small.
fn compile_schema(
    proto: &str,
    source_info: bool,
) -> Result<protox::Compiler, Box<dyn std::error::Error>> {
    let mut compiler = protox::Compiler::new([proto_dir()])?;
    compiler
        .include_source_info(source_info)
        .include_imports(true)
        .open_file(proto)?;
    Ok(compiler)
}

/// Generates the Rust code for one schema with prost-build, in a scratch directory.
fn generate_rust(schema: &Schema, scratch: &Path) -> Result<Output, Box<dyn std::error::Error>> {
    let fds = compile_schema(schema.proto, true)?.file_descriptor_set();
    let dir = scratch.join(schema.package);
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    fs::create_dir_all(&dir)?;
    // Tensor payloads as `Bytes`: decoding from a `Bytes` buffer then slices the
    // weights out of the file's bytes instead of copying them (the ONNX importer).
    prost_build::Config::new()
        .bytes([".onnx.TensorProto.raw_data"])
        .out_dir(&dir)
        .compile_fds(fds)?;
    let produced = dir.join(format!("{}.rs", schema.package));
    let bytes = fs::read(&produced)
        .map_err(|e| format!("prost-build did not write {}: {e}", produced.display()))?;
    Ok(Output {
        file_name: schema.rust_file,
        bytes,
    })
}

/// Produces every artifact of `src/proto/` in memory. `scratch` is a directory
/// prost-build may write into.
fn generate_all(scratch: &Path) -> Result<Vec<Output>, Box<dyn std::error::Error>> {
    let mut outputs = Vec::new();
    for schema in &SCHEMAS {
        outputs.push(generate_rust(schema, scratch)?);
    }
    for (proto, file_name) in DESCRIPTOR_SETS {
        let bytes = compile_schema(proto, false)?.encode_file_descriptor_set();
        outputs.push(Output { file_name, bytes });
    }
    Ok(outputs)
}

/// A scratch directory for prost-build, removed when the guard drops.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("nnac-proto-codegen-")
        .tempdir()
        .expect("create scratch dir")
}

fn bless_requested() -> bool {
    std::env::var_os("NNAC_BLESS").is_some_and(|v| v == "1")
}

#[test]
fn generated_proto_code_is_up_to_date() {
    let scratch = scratch_dir();
    let outputs = generate_all(scratch.path()).expect("proto generation failed");
    let committed = committed_dir();
    let mut stale = Vec::new();
    for out in &outputs {
        let path = committed.join(out.file_name);
        let current = fs::read(&path).unwrap_or_default();
        if current == out.bytes {
            continue;
        }
        if bless_requested() {
            fs::write(&path, &out.bytes).expect("write blessed output");
            eprintln!("blessed {}", path.display());
        } else {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "generated protobuf code differs from the committed files: {stale:?}\n\
         rerun with NNAC_BLESS=1 cargo test -p nnac-frontend --test proto_codegen"
    );
}

#[test]
fn generation_is_deterministic() {
    let scratch = scratch_dir();
    let first = generate_all(scratch.path()).expect("first generation");
    let second = generate_all(scratch.path()).expect("second generation");
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.file_name, b.file_name);
        assert!(a.bytes == b.bytes, "{} differs between runs", a.file_name);
        assert!(!a.bytes.is_empty(), "{} is empty", a.file_name);
    }
}

/// The committed descriptor set and the generated Caffe structs describe the same schema:
/// a message encoded with the generated code decodes through the descriptor with the
/// same field values.
#[test]
fn caffe_descriptor_set_matches_generated_code() {
    use nnac_frontend::proto::{caffe, CAFFE_DESCRIPTOR_SET, CAFFE_NET_PARAMETER};
    use protox::prost::Message;
    use protox::prost_reflect::{DescriptorPool, DynamicMessage, Value};

    let pool = DescriptorPool::decode(CAFFE_DESCRIPTOR_SET).expect("decode descriptor set");
    let desc = pool
        .get_message_by_name(CAFFE_NET_PARAMETER)
        .expect("NetParameter in descriptor set");
    let net = caffe::NetParameter {
        name: Some("tiny".into()),
        layer: vec![caffe::LayerParameter {
            name: Some("conv1".into()),
            r#type: Some("Convolution".into()),
            bottom: vec!["data".into()],
            top: vec!["conv1".into()],
            convolution_param: Some(caffe::ConvolutionParameter {
                num_output: Some(8),
                kernel_size: vec![3],
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let bytes = net.encode_to_vec();
    let dynamic = DynamicMessage::decode(desc, bytes.as_slice()).expect("dynamic decode");
    assert_eq!(
        dynamic.get_field_by_name("name").as_deref(),
        Some(&Value::String("tiny".into()))
    );
    let layers = dynamic.get_field_by_name("layer").expect("layer field");
    let layer = layers.as_list().expect("repeated")[0]
        .as_message()
        .expect("message")
        .clone();
    let conv = layer
        .get_field_by_name("convolution_param")
        .expect("convolution_param");
    let conv = conv.as_message().expect("message");
    assert_eq!(
        conv.get_field_by_name("num_output").as_deref(),
        Some(&Value::U32(8))
    );
    // And back: the dynamic message re-encodes to bytes the generated code decodes.
    let round = caffe::NetParameter::decode(dynamic.encode_to_vec().as_slice()).expect("decode");
    assert_eq!(round, net);
}

/// The generated ONNX messages round-trip a model with the fields importers rely on.
#[test]
fn onnx_messages_round_trip() {
    use nnac_frontend::proto::onnx;
    use protox::prost::Message;

    let model = onnx::ModelProto {
        ir_version: Some(onnx::Version::IrVersion as i64),
        opset_import: vec![onnx::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(onnx::GraphProto {
            name: Some("g".into()),
            node: vec![onnx::NodeProto {
                op_type: Some("Relu".into()),
                input: vec!["x".into()],
                output: vec!["y".into()],
                ..Default::default()
            }],
            initializer: vec![onnx::TensorProto {
                dims: vec![2],
                data_type: Some(onnx::tensor_proto::DataType::Float as i32),
                raw_data: Some(vec![0, 0, 128, 63, 0, 0, 0, 64].into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let decoded = onnx::ModelProto::decode(model.encode_to_vec().as_slice()).expect("decode");
    assert_eq!(decoded, model);
    assert_eq!(
        onnx::Version::IrVersion as i64,
        14,
        "onnx.proto from onnx 1.23.2 is IR 14"
    );
}
