//! The Caffe network of `pipeline_robustness.rs`' Caffe campaign and its mutations: a
//! small net touching most layer builders (convolution, batch norm + scale, ReLU,
//! pooling, LRN, concat, eltwise, dropout, deconvolution, sigmoid, global pooling,
//! inner product, softmax) with seeded random weights, and line-level edits of its
//! prototxt: a number replaced (0, -1, 2^31 - 1, NaN, ...), a layer type swapped, a
//! parameter added, a bottom rewired.

use super::Rng;
use nnac_frontend::proto::caffe::{BlobProto, BlobShape, LayerParameter, NetParameter};
use prost::Message;

/// Lines before the first layer (left alone: the input declaration).
const HEADER_LINES: usize = 3;

pub const NET: &str = r#"name: "fuzz"
input: "data"
input_shape { dim: 1 dim: 3 dim: 16 dim: 16 }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 8 kernel_size: 3 pad: 1 stride: 1 } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" batch_norm_param { eps: 0.00001 } }
layer { name: "sc1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" relu_param { negative_slope: 0 } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "lrn" type: "LRN" bottom: "pool1" top: "lrn" lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layer { name: "c2a" type: "Convolution" bottom: "lrn" top: "c2a" convolution_param { num_output: 4 kernel_size: 1 } }
layer { name: "c2b" type: "Convolution" bottom: "lrn" top: "c2b" convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
layer { name: "cat" type: "Concat" bottom: "c2a" bottom: "c2b" top: "cat" concat_param { axis: 1 } }
layer { name: "sum" type: "Eltwise" bottom: "cat" bottom: "pool1" top: "sum" eltwise_param { operation: SUM } }
layer { name: "drop" type: "Dropout" bottom: "sum" top: "sum" dropout_param { dropout_ratio: 0.5 } }
layer { name: "up" type: "Deconvolution" bottom: "sum" top: "up" convolution_param { num_output: 8 kernel_size: 2 stride: 2 } }
layer { name: "sig" type: "Sigmoid" bottom: "up" top: "up" }
layer { name: "gp" type: "Pooling" bottom: "up" top: "gp" pooling_param { pool: AVE global_pooling: true } }
layer { name: "ip" type: "InnerProduct" bottom: "gp" top: "ip" inner_product_param { num_output: 10 } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
"#;

fn blob(shape: &[i64], seed: u64) -> BlobProto {
    let n: i64 = shape.iter().product();
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    BlobProto {
        shape: Some(BlobShape {
            dim: shape.to_vec(),
        }),
        data: (0..n)
            .map(|_| (r.next() % 1000) as f32 / 2000.0 - 0.2)
            .collect(),
        ..Default::default()
    }
}

/// The caffemodel of [`NET`]: every learned layer's blobs, the batch norm's variance
/// positive and its factor 1.
pub fn weights() -> Vec<u8> {
    let layer = |name: &str, blobs: Vec<BlobProto>| LayerParameter {
        name: Some(name.into()),
        blobs,
        ..Default::default()
    };
    let mut var = blob(&[8], 4);
    var.data.iter_mut().for_each(|v| *v = v.abs() + 0.1);
    // Caffe's moving-average factor: mean and variance are stored multiplied by it.
    let mut factor = blob(&[1], 5);
    factor.data = vec![1.0];
    NetParameter {
        layer: vec![
            layer("conv1", vec![blob(&[8, 3, 3, 3], 1), blob(&[8], 2)]),
            layer("bn1", vec![blob(&[8], 3), var, factor]),
            layer("sc1", vec![blob(&[8], 6), blob(&[8], 7)]),
            layer("c2a", vec![blob(&[4, 8, 1, 1], 8), blob(&[4], 9)]),
            layer("c2b", vec![blob(&[4, 8, 3, 3], 10), blob(&[4], 11)]),
            layer("up", vec![blob(&[8, 8, 2, 2], 12), blob(&[8], 13)]),
            layer("ip", vec![blob(&[10, 8], 14), blob(&[10], 15)]),
        ],
        ..Default::default()
    }
    .encode_to_vec()
}

const NUMBERS: [&str; 14] = [
    "0",
    "-1",
    "1",
    "2",
    "3",
    "5",
    "7",
    "17",
    "100",
    "2147483647",
    "-2147483648",
    "nan",
    "inf",
    "1e30",
];
const TYPES: [&str; 20] = [
    "Convolution",
    "Deconvolution",
    "Pooling",
    "ReLU",
    "PReLU",
    "Sigmoid",
    "TanH",
    "BatchNorm",
    "Scale",
    "Eltwise",
    "Concat",
    "InnerProduct",
    "Softmax",
    "Dropout",
    "LRN",
    "Flatten",
    "Reshape",
    "Power",
    "Split",
    "Bias",
];
const EXTRA: [&str; 14] = [
    "dilation: 2",
    "group: 3",
    "axis: -5",
    "pad_h: 9",
    "stride_w: 0",
    "kernel_h: 4",
    "round_mode: FLOOR",
    "bias_term: false",
    "num_output: 0",
    "operation: PROD",
    "coeff: 2",
    "ceil_mode: false",
    "top: \"conv1\"",
    "bottom: \"prob\"",
];
const BLOBS: [&str; 10] = [
    "data", "conv1", "pool1", "lrn", "cat", "sum", "up", "gp", "ip", "nope",
];

/// The byte ranges of the unsigned numbers standing alone (after a space) in `line`.
fn numbers(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        if b[k].is_ascii_digit() && k > 0 && b[k - 1] == b' ' {
            let s = k;
            while k < b.len() && (b[k].is_ascii_digit() || b[k] == b'.') {
                k += 1;
            }
            out.push((s, k));
        } else {
            k += 1;
        }
    }
    out
}

/// The range of the quoted value after `key` in `line`, if any.
fn quoted(line: &str, key: &str) -> Option<(usize, usize)> {
    let s = line.find(key)? + key.len();
    let e = s + line[s..].find('"')?;
    Some((s, e))
}

/// One edit of one layer line of `text`.
pub fn mutate(text: &str, r: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let i = HEADER_LINES + r.below(lines.len() - HEADER_LINES);
    let line = &mut lines[i];
    match r.below(5) {
        0 | 1 => {
            let nums = numbers(line);
            if !nums.is_empty() {
                let (s, e) = nums[r.below(nums.len())];
                line.replace_range(s..e, NUMBERS[r.below(NUMBERS.len())]);
            }
        }
        2 => {
            if let Some((s, e)) = quoted(line, "type: \"") {
                line.replace_range(s..e, TYPES[r.below(TYPES.len())]);
            }
        }
        3 => {
            // Inside the innermost parameter block (before its closing brace).
            if let Some(end) = line.rfind('}') {
                let at = line[..end].rfind('}').unwrap_or(end);
                line.insert_str(at, &format!(" {} ", EXTRA[r.below(EXTRA.len())]));
            }
        }
        _ => {
            if let Some((s, e)) = quoted(line, "bottom: \"") {
                line.replace_range(s..e, BLOBS[r.below(BLOBS.len())]);
            }
        }
    }
    lines.join("\n")
}
