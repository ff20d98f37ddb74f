//! The Caffe importer against an independent implementation: nnac's float interpreter
//! on the imported graph versus OpenCV 4's Caffe importer (`cv2.dnn.readNetFromCaffe`)
//! on the same prototxt, caffemodel and input.
//!
//! - open_nsfw (ResNet-50-1by2, real trained weights; BatchNorm + Scale, Eltwise) on
//!   real photographs (scikit-image samples, resized to 224x224, BGR mean-subtracted
//!   as the model expects): `prob` to 1e-4.
//! - BVLC AlexNet, CaffeNet and GoogLeNet deploy nets with seeded random weights
//!   (scripts/make_caffe_models.py): the pre-softmax logits, a few intermediate blobs
//!   to 2e-5 relative to the blob's largest magnitude (measured: at most 4e-6), and
//!   `prob` to 1e-4.
//!
//! Inputs are prepared by OpenCV (imread, resize) and handed to both sides as .npy.
//! Missing models or venv fail the test with "run scripts/setup.sh first".

mod common;

use common::tempdir;
use nnac_frontend::caffe::import_files;
use nnac_frontend::ImportOptions;
use nnac_interp::npy::read_npy;
use nnac_interp::run_float;
use nnac_ir::{Graph, Tensor, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cached(rel: &str) -> PathBuf {
    let p = repo_root().join(".cache/models").join(rel);
    assert!(
        p.is_file(),
        "{} is missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

fn python() -> PathBuf {
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

/// OpenCV side: for each image, writes `<i>_input.npy` (the network input: resized,
/// BGR, mean-subtracted, NCHW) and `<i>_<k>.npy` (OpenCV's output of blob k).
const OPENCV_SCRIPT: &str = r#"
import sys, numpy as np, cv2
proto, model, out, size, mean = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
blobs = sys.argv[6].split(',')
images = sys.argv[7:]
mean = np.array([float(m) for m in mean.split(',')], np.float32)
net = cv2.dnn.readNetFromCaffe(proto, model)
net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
for i, path in enumerate(images):
    img = cv2.imread(path, cv2.IMREAD_COLOR)
    assert img is not None, path
    img = cv2.resize(img, (size, size), interpolation=cv2.INTER_LINEAR).astype(np.float32) - mean
    x = np.ascontiguousarray(img.transpose(2, 0, 1)[None])
    np.save(f'{out}/{i}_input.npy', x)
    net.setInput(x)
    for k, o in enumerate(net.forward(blobs)):
        np.save(f'{out}/{i}_{k}.npy', np.ascontiguousarray(o.astype(np.float32)))
"#;

struct Case {
    name: &'static str,
    prototxt: PathBuf,
    caffemodel: PathBuf,
    size: usize,
    /// Blobs compared: graph outputs or layers whose node is made an extra output.
    blobs: &'static [&'static str],
    images: &'static [&'static str],
}

fn run_opencv(case: &Case, dir: &Path) {
    let mean = "104,117,123";
    let images: Vec<PathBuf> = case
        .images
        .iter()
        .map(|i| cached(&format!("images/{i}")))
        .collect();
    let out = Command::new(python())
        .args(["-c", OPENCV_SCRIPT])
        .arg(&case.prototxt)
        .arg(&case.caffemodel)
        .arg(dir)
        .arg(case.size.to_string())
        .arg(mean)
        .arg(case.blobs.join(","))
        .args(&images)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "OpenCV failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes each compared blob a graph output (the node named after the layer).
fn expose(g: &mut Graph, blobs: &[&str]) {
    for b in blobs {
        if g.outputs().iter().any(|o| o.name == *b) {
            continue;
        }
        let id = g.find(b).unwrap_or_else(|| panic!("no node named '{b}'"));
        g.add_output(b.to_string(), Value::new(id, 0));
    }
}

/// Largest |a - b| and the largest |b|.
fn diff(ours: &Tensor, reference: &Tensor) -> (f32, f32) {
    let (a, b) = (
        ours.as_f32().expect("f32"),
        reference.as_f32().expect("f32"),
    );
    assert_eq!(a.len(), b.len());
    let d = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    (d, b.iter().map(|y| y.abs()).fold(0.0, f32::max))
}

/// Runs a case; `tol(blob, ref_max)` is the allowed max abs difference.
fn check(case: Case, tol: impl Fn(&str, f32) -> f32) {
    let mut g = import_files(
        &case.prototxt,
        Some(&case.caffemodel),
        &ImportOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{}: import: {e}", case.name));
    if let Err(errs) = nnac_ir::verify(&g) {
        panic!(
            "{}: verifier: {}",
            case.name,
            nnac_ir::verify::report(&errs)
        );
    }
    expose(&mut g, case.blobs);
    let tmp = tempdir(&format!("caffe-vs-opencv-{}", case.name));
    let dir = tmp.path();
    run_opencv(&case, dir);
    let input_name = g.node(g.inputs()[0]).name.clone();
    for i in 0..case.images.len() {
        let x = read_npy(dir.join(format!("{i}_input.npy"))).expect("input npy");
        let outs = run_float(&g, &BTreeMap::from([(input_name.clone(), x)]))
            .unwrap_or_else(|e| panic!("{}: run: {e}", case.name));
        for (k, blob) in case.blobs.iter().enumerate() {
            let reference = read_npy(dir.join(format!("{i}_{k}.npy"))).expect("output npy");
            let ours = &outs[*blob];
            assert_eq!(
                ours.shape, reference.shape,
                "{} image {i} blob '{blob}'",
                case.name
            );
            let (d, max) = diff(ours, &reference);
            let t = tol(blob, max);
            eprintln!(
                "{} {} '{blob}': max |diff| {d:.3e} (max |ref| {max:.3e}, tolerance {t:.1e})",
                case.name, case.images[i]
            );
            assert!(
                d <= t,
                "{} image {} blob '{blob}': max |diff| {d} > {t}",
                case.name,
                case.images[i]
            );
        }
    }
}

#[test]
fn nsfw_matches_opencv_on_photographs() {
    let case = Case {
        name: "nsfw",
        prototxt: cached("nsfw/deploy.prototxt"),
        caffemodel: cached("nsfw/resnet_50_1by2_nsfw.caffemodel"),
        size: 224,
        blobs: &["prob", "fc_nsfw", "pool"],
        images: &["astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg"],
    };
    check(case, |blob, max| {
        if blob == "prob" {
            1e-4
        } else {
            2e-5 * max.max(1.0)
        }
    });
}

fn bvlc(name: &'static str, size: usize, blobs: &'static [&'static str]) {
    let case = Case {
        name,
        prototxt: cached(&format!("caffe/models/{name}/deploy.prototxt")),
        caffemodel: cached(&format!("caffe-random/{name}.caffemodel")),
        size,
        blobs,
        images: &["astronaut.png", "coffee.png"],
    };
    check(case, |blob, max| {
        if blob == "prob" {
            1e-4
        } else {
            2e-5 * max.max(1.0)
        }
    });
}

#[test]
fn bvlc_alexnet_matches_opencv() {
    bvlc("bvlc_alexnet", 227, &["prob", "fc8", "pool5", "norm2"]);
}

#[test]
fn bvlc_caffenet_matches_opencv() {
    bvlc(
        "bvlc_reference_caffenet",
        227,
        &["prob", "fc8", "pool5", "norm2"],
    );
}

#[test]
fn bvlc_googlenet_matches_opencv() {
    bvlc(
        "bvlc_googlenet",
        224,
        &[
            "prob",
            "loss3/classifier",
            "pool5/7x7_s1",
            "inception_4a/output",
            "pool1/norm1",
        ],
    );
}
