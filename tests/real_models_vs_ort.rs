//! Real models through import + the float reference interpreter, checked against ONNX
//! Runtime on real photographs: every output within 1e-4 of the output's range.
//! Models: the nine ONNX "light" topologies with seeded random weights and the
//! PP-OCR text-orientation classifier and text detector (real trained weights).
//! Needs the cache and venv of `scripts/setup.sh`; fails (never skips) without them.

mod common;

use common::{need, ort_reference, python, root, run_ok, tempdir};
use nnac_frontend::ImportOptions;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Compares nnac's float interpreter with ONNX Runtime on `image`, preprocessed to the
/// input's H x W with `mean`/`scale`. Returns the worst error relative to each output's range.
fn compare(
    model: &Path,
    input: &str,
    shape: &[usize],
    image: &str,
    mean: &str,
    scale: &str,
) -> f32 {
    let tmp = tempdir(&format!(
        "ort-{}",
        model.file_stem().unwrap().to_string_lossy()
    ));
    let dir = tmp.path();
    let npy = dir.join("input.npy");
    let size = format!("{}x{}", shape[2], shape[3]);
    let img = need(root().join(".cache/models/images").join(image));
    run_ok(
        Command::new(python())
            .arg(root().join("scripts/image_to_npy.py"))
            .arg(img)
            .arg(&npy)
            .args(["--size", &size, "--mean", mean, "--scale", scale]),
    );
    ort_reference(
        model,
        &dir.join("ort"),
        &format!("{input}={}", npy.display()),
    );
    let opts = ImportOptions {
        input_shapes: [(input.to_string(), shape.to_vec())].into_iter().collect(),
    };
    let graph = nnac_frontend::load_model(model, None, &opts)
        .unwrap_or_else(|e| panic!("{}: {e}", model.display()));
    nnac_ir::verify(&graph)
        .unwrap_or_else(|e| panic!("{}: {}", model.display(), nnac_ir::verify::report(&e)));
    let frame: BTreeMap<String, nnac_ir::Tensor> =
        [(input.to_string(), nnac_interp::npy::read_npy(&npy).unwrap())]
            .into_iter()
            .collect();
    let outs = nnac_interp::run_float(&graph, &frame).unwrap();
    let mut worst = 0f32;
    for (name, got) in &outs {
        let want =
            nnac_interp::npy::read_npy(dir.join("ort").join(format!("{}.npy", sanitize(name))))
                .unwrap();
        assert_eq!(
            got.shape,
            want.shape,
            "{}: output {name} shape",
            model.display()
        );
        let (w, g) = (want.to_f32_vec(), got.to_f32_vec());
        let (lo, hi) = w
            .iter()
            .fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        let range = (hi - lo).max(f32::MIN_POSITIVE);
        let err = w
            .iter()
            .zip(&g)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
            / range;
        println!(
            "{}: {name}: max |nnac - ORT| / range = {err:.2e}",
            model.display()
        );
        worst = worst.max(err);
    }
    worst
}

#[test]
fn light_topologies_match_onnx_runtime() {
    let dir = root().join(".cache/models/light");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(need(dir.join("manifest.json"))).unwrap()).unwrap();
    let images = ["astronaut.png", "coffee.png", "chelsea.png"];
    let mut failures = Vec::new();
    let nets = manifest.as_object().unwrap();
    assert_eq!(nets.len(), 9, "expected the nine light topologies");
    for (i, (name, m)) in nets.iter().enumerate() {
        let input = m["input"]["name"].as_str().unwrap();
        let shape: Vec<usize> = m["input"]["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let model = need(dir.join(m["file"].as_str().unwrap()));
        let err = compare(
            &model,
            input,
            &shape,
            images[i % images.len()],
            "123.7,116.3,103.5",
            "0.0171",
        );
        if err > 1e-4 {
            failures.push(format!("{name}: {err:.2e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "outputs differ from ONNX Runtime by more than 1e-4 of their range: {failures:?}"
    );
}

#[test]
fn pp_ocr_models_match_onnx_runtime() {
    let dir = root().join(".cache/models/rapidocr");
    let cls = compare(
        &need(dir.join("ch_ppocr_mobile_v2.0_cls_infer.onnx")),
        "x",
        &[1, 3, 48, 192],
        "text.png",
        "127.5,127.5,127.5",
        "0.00784314",
    );
    let det = compare(
        &need(dir.join("ch_PP-OCRv4_det_infer.onnx")),
        "x",
        &[1, 3, 640, 640],
        "page.png",
        "123.7,116.3,103.5",
        "0.0171",
    );
    assert!(
        cls <= 1e-4 && det <= 1e-4,
        "PP-OCR outputs differ from ONNX Runtime: classifier {cls:.2e}, detector {det:.2e}"
    );
}
