//! int8 accuracy targets of issue 5 on real models and real images that are not the
//! calibration set (float = nnac's float interpreter on the imported graph; int8 =
//! `nnac_passes::run_quantized` on the compiled graph, default options):
//!
//! - PP-OCR orientation classifier: text-line crops of page.png and text.png, each
//!   also rotated 180 degrees (scripts/make_ocr_crops.py), calibrated on synthetic
//!   text cut the way the test crops are (whole lines and windows of lines): int8
//!   predicts float's class on >= 99% of crops. Default options (MSE-chosen ranges
//!   and bias correction since 2026-11-28, docs/QUANTIZATION.md).
//! - open_nsfw (Caffe): |p_int8 - p_float| <= 0.02 on photographs, calibrated on other
//!   photographs.
//! - PP-OCRv4 detector: mean text-mask IoU (probability > 0.3) between int8 and float
//!   at least ONNX Runtime's quantize_static (per-channel, same calibration frames,
//!   same percentile method; scripts/ort_quantize.py) on the same test frames.
//!
//! The classifier target is NOT met yet (docs/QUANTIZATION.md, issue 5): measured
//! 97.1% agreement with the defaults, 96.2% with `--weight-rounding gptq`. Its test
//! measures both, prints the target and asserts the measured levels as regression
//! floors (`CLS_FLOOR`, `CLS_FLOOR_GPTQ`); raise them to the target when the
//! quantizer gets there. The open_nsfw and detector tests assert their targets.
//!
//! Needs the cache and venv of `scripts/setup.sh`; fails (never skips) without them.

/// Classifier agreement measured on 2026-11-28 (431/444, default options: MSE
/// ranges, bias correction); the target is 0.99.
const CLS_FLOOR: f64 = 0.97;
/// The same with GPTQ weight rounding (427/444 on 2026-11-28; 432/444 with the
/// percentile defaults before).
const CLS_FLOOR_GPTQ: f64 = 0.96;
/// The open_nsfw target (measured 0.0101 on 2026-11-25).
const NSFW_TARGET: f32 = 0.02;

mod common;

use common::{need, python, root, run_ok, tempdir};
use nnac_frontend::ImportOptions;
use nnac_ir::{Graph, Tensor};
use nnac_passes::{Frame, PassOptions, WeightRounding};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The OCR frames of scripts/make_ocr_crops.py (deterministic; regenerated each run,
/// about 2 s) in `.cache/quant-ocr`.
fn ocr_data() -> PathBuf {
    static ONCE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let dir = root().join(".cache/quant-ocr");
        run_ok(
            Command::new(python())
                .arg(root().join("scripts/make_ocr_crops.py"))
                .arg(&dir),
        );
        dir
    })
    .clone()
}

/// Frames of an `N x 1 x C x H x W` .npy, each as input `x`.
fn npy_frames(path: &Path) -> Vec<Frame> {
    let t = nnac_interp::npy::read_npy(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let shape = t.shape[1..].to_vec();
    let per: usize = shape.iter().product();
    let data = t.to_f32_vec();
    data.chunks_exact(per)
        .map(|c| frame("x", Tensor::f32(shape.clone(), c.to_vec()).unwrap()))
        .collect()
}

fn frame(name: &str, t: Tensor) -> Frame {
    [(name.to_string(), t)].into_iter().collect()
}

fn onnx_model(file: &str, shape: &[usize]) -> Graph {
    let path = need(root().join(".cache/models/rapidocr").join(file));
    let opts = ImportOptions {
        input_shapes: [("x".to_string(), shape.to_vec())].into_iter().collect(),
    };
    nnac_frontend::load_model(&path, None, &opts).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Compiles (fold, fuse, calibrate, quantize) with the default options.
/// The options of the open_nsfw and detector measurements: the defaults, or with
/// `NNAC_QA_WEIGHT_ROUNDING=gptq` GPTQ weight rounding (how docs/QUANTIZATION.md's
/// GPTQ column of those models was measured).
fn quantize(g: &Graph, calib: &[Frame]) -> Graph {
    let rounding = match std::env::var("NNAC_QA_WEIGHT_ROUNDING") {
        Err(_) => WeightRounding::Nearest,
        Ok(v) => WeightRounding::from_name(&v)
            .unwrap_or_else(|| panic!("NNAC_QA_WEIGHT_ROUNDING={v}: not nearest or gptq")),
    };
    let opts = PassOptions {
        weight_rounding: rounding,
        ..PassOptions::default()
    };
    quantize_with(g, calib, &opts)
}

fn quantize_with(g: &Graph, calib: &[Frame], opts: &PassOptions) -> Graph {
    let c = nnac_passes::compile_graph(g.clone(), calib, opts)
        .unwrap_or_else(|e| panic!("compile: {e}"));
    assert_eq!(c.report.acc_overflows, 0, "accumulator overflows");
    c.graph
}

/// The single output of `g` on `f` (float) and of `q` (int8, dequantized).
fn float_and_int8(g: &Graph, q: &Graph, f: &Frame) -> (Vec<f32>, Vec<f32>) {
    let fo = nnac_interp::run_float(g, f).expect("float run");
    let qo = nnac_passes::run_quantized(q, f).expect("int8 run");
    assert_eq!(fo.len(), 1);
    let (name, ft) = fo.into_iter().next().unwrap();
    (ft.to_f32_vec(), qo[&name].to_f32_vec())
}

/// The sources of the classifier test crops, in the order of
/// `cls_test_sources.txt`'s values (scripts/make_ocr_crops.py): whole line bands and
/// windows of page.png and text.png.
const CLS_SOURCES: [&str; 4] = ["page-line", "page-window", "text-line", "text-window"];
/// The classifier's output index for "rotated 180 degrees" (0 = upright; RapidOCR's
/// label list is ["0", "180"]). Checked on 2026-11-26 with the float outputs (nnac and
/// ONNX Runtime): with this labelling the float model is right on all 14 page.png
/// line bands, with the other on none (asserted in the test).
const CLS_ROTATED: usize = 1;

fn pct(n: usize, d: usize) -> f64 {
    100.0 * n as f64 / d.max(1) as f64
}

fn argmax(v: &[f32]) -> usize {
    (0..v.len()).fold(0, |b, i| if v[i] > v[b] { i } else { b })
}

/// One quantization of the classifier measured on the test crops.
struct ClsRun {
    /// Per source: [crops, int8 = float class, float class = true rotation].
    by_source: Vec<(&'static str, [usize; 3])>,
    total: [usize; 3],
    worst: f32,
    /// How far from the decision boundary (0.5) the float probability of any crop
    /// int8 disagrees on lies, and how many crops lie that close.
    margin: f32,
    near: usize,
}

fn cls_run(
    float_out: &[Vec<f32>],
    q: &Graph,
    test: &[Frame],
    sources: &[&str],
    sources_path: &Path,
) -> ClsRun {
    let mut by_source: Vec<(&str, [usize; 3])> = CLS_SOURCES.iter().map(|&s| (s, [0; 3])).collect();
    let mut worst = 0f32;
    let mut margin = 0f32;
    for (i, ((f, fp), src)) in test.iter().zip(float_out).zip(sources).enumerate() {
        let qo = nnac_passes::run_quantized(q, f).expect("int8 run");
        let qp = qo.into_values().next().expect("one output").to_f32_vec();
        let same = argmax(fp) == argmax(&qp);
        worst = worst.max((fp[0] - qp[0]).abs());
        if !same {
            margin = margin.max((fp[0] - 0.5).abs());
        }
        // Crops alternate upright, rotated: crop i is rotated 180 degrees iff i is odd.
        let truth = if i % 2 == 1 {
            CLS_ROTATED
        } else {
            1 - CLS_ROTATED
        };
        let right = argmax(fp) == truth;
        let row = match by_source.iter_mut().find(|(s, _)| s == src) {
            Some((_, row)) => row,
            None => panic!("{}: unknown source {src:?}", sources_path.display()),
        };
        row[0] += 1;
        row[1] += usize::from(same);
        row[2] += usize::from(right);
    }
    let total = by_source
        .iter()
        .fold([0; 3], |t, (_, r)| [t[0] + r[0], t[1] + r[1], t[2] + r[2]]);
    let near = float_out
        .iter()
        .filter(|p| (p[0] - 0.5).abs() <= margin)
        .count();
    ClsRun {
        by_source,
        total,
        worst,
        margin,
        near,
    }
}

impl ClsRun {
    /// Prints the table by source and the summary; returns the agreement rate.
    fn print(&self, label: &str) -> f64 {
        println!(
            "PP-OCR cls, {label}, by source (float = truth: float class = true rotation, i % 2):"
        );
        println!(
            "  {:<12} {:>5}  {:>13}   {:>13}",
            "source", "crops", "int8 = float", "float = truth"
        );
        for (src, r) in self.by_source.iter().chain([&("total", self.total)]) {
            println!(
                "  {src:<12} {:>5}  {:>4} ({:5.1}%)   {:>4} ({:5.1}%)",
                r[0],
                r[1],
                pct(r[1], r[0]),
                r[2],
                pct(r[2], r[0])
            );
        }
        let (agree, n) = (self.total[1], self.total[0]);
        let rate = agree as f64 / n.max(1) as f64;
        println!(
            "PP-OCR cls, {label}: int8 = float class on {agree}/{n} crops ({:.2}%), max |dp| \
             {:.4}; every disagreement has a float probability within {:.3} of 0.5, as \
             have {} of all crops",
            rate * 100.0,
            self.worst,
            self.margin,
            self.near
        );
        println!(
            "classifier agreement, {label}: {:.2}% (target 99%: {})",
            rate * 100.0,
            if rate >= 0.99 { "met" } else { "NOT met" }
        );
        rate
    }
}

#[test]
fn ppocr_classifier_int8_agreement_target_99_percent_holds_measured_floor() {
    let dir = ocr_data();
    let g = onnx_model("ch_ppocr_mobile_v2.0_cls_infer.onnx", &[1, 3, 48, 192]);
    let calib = npy_frames(&dir.join("cls_calib.npy"));
    let test = npy_frames(&dir.join("cls_test.npy"));
    assert!(test.len() >= 100, "only {} crops", test.len());
    let sources_path = dir.join("cls_test_sources.txt");
    let sources_text = std::fs::read_to_string(&sources_path)
        .unwrap_or_else(|e| panic!("{}: {e}", sources_path.display()));
    let sources: Vec<&str> = sources_text.lines().collect();
    assert_eq!(
        sources.len(),
        test.len(),
        "{} has {} lines for {} crops of cls_test.npy",
        sources_path.display(),
        sources.len(),
        test.len()
    );
    let float_out: Vec<Vec<f32>> = test
        .iter()
        .map(|f| {
            let fo = nnac_interp::run_float(&g, f).expect("float run");
            fo.into_values().next().expect("one output").to_f32_vec()
        })
        .collect();
    let mut rates = Vec::new();
    for (label, rounding, floor) in [
        ("defaults", WeightRounding::Nearest, CLS_FLOOR),
        (
            "--weight-rounding gptq",
            WeightRounding::Gptq,
            CLS_FLOOR_GPTQ,
        ),
    ] {
        let opts = PassOptions {
            weight_rounding: rounding,
            ..PassOptions::default()
        };
        let q = quantize_with(&g, &calib, &opts);
        let run = cls_run(&float_out, &q, &test, &sources, &sources_path);
        // Documents the label convention (CLS_ROTATED): the float model is sure of these.
        let page_line = run
            .by_source
            .iter()
            .find(|(s, _)| *s == "page-line")
            .unwrap()
            .1;
        assert!(page_line[0] > 0, "no page-line crops");
        assert_eq!(
            page_line[2], page_line[0],
            "float classifier wrong on page.png line bands: class {CLS_ROTATED} = rotated 180?"
        );
        let rate = run.print(label);
        rates.push((label, rate, floor));
    }
    for (label, rate, floor) in rates {
        assert!(
            rate >= floor,
            "{label}: agreement {:.2}% fell below the measured floor {:.0}%",
            rate * 100.0,
            floor * 100.0
        );
    }
}

/// open_nsfw's preprocessing: 224x224, BGR, minus the Caffe mean 104,117,123.
fn nsfw_frame(image: &str) -> Frame {
    let path = need(root().join(".cache/models/images").join(image));
    let img = image::ImageReader::open(&path)
        .and_then(|r| r.with_guessed_format())
        .expect("open")
        .decode()
        .unwrap_or_else(|e| panic!("{image}: {e}"))
        .to_rgb8();
    let img = image::imageops::resize(&img, 224, 224, image::imageops::FilterType::Triangle);
    let mean = [104.0, 117.0, 123.0];
    let mut x = vec![0f32; 3 * 224 * 224];
    for (px, py, p) in img.enumerate_pixels() {
        for c in 0..3 {
            x[(c * 224 + py as usize) * 224 + px as usize] = f32::from(p[2 - c]) - mean[c];
        }
    }
    frame("data", Tensor::f32(vec![1, 3, 224, 224], x).unwrap())
}

#[test]
fn open_nsfw_int8_probability_within_0_02_of_float() {
    let dir = root().join(".cache/models/nsfw");
    let g = nnac_frontend::caffe::import_files(
        &need(dir.join("deploy.prototxt")),
        Some(&need(dir.join("resnet_50_1by2_nsfw.caffemodel"))),
        &ImportOptions::default(),
    )
    .expect("import open_nsfw");
    let calib: Vec<Frame> = [
        "brick.png",
        "coins.png",
        "grass.png",
        "hubble_deep_field.jpg",
        "motorcycle_right.png",
        "retina.jpg",
    ]
    .iter()
    .map(|i| nsfw_frame(i))
    .collect();
    let q = quantize(&g, &calib);
    let mut worst = 0f32;
    for image in [
        "astronaut.png",
        "chelsea.png",
        "coffee.png",
        "rocket.jpg",
        "horse.png",
    ] {
        let (fp, qp) = float_and_int8(&g, &q, &nsfw_frame(image));
        let d = (fp[1] - qp[1]).abs();
        println!(
            "open_nsfw {image}: p_float {:.4} p_int8 {:.4} |diff| {d:.4}",
            fp[1], qp[1]
        );
        worst = worst.max(d);
    }
    println!(
        "open_nsfw max |p_int8 - p_float| = {worst:.4} (target 0.02: {})",
        if worst <= 0.02 { "met" } else { "NOT met" }
    );
    assert!(
        worst <= NSFW_TARGET,
        "max |p_int8 - p_float| = {worst:.4} misses the target {NSFW_TARGET}"
    );
}

fn mask_iou(a: &[f32], b: &[f32], t: f32) -> f64 {
    let (mut inter, mut union) = (0usize, 0usize);
    for (&x, &y) in a.iter().zip(b) {
        inter += usize::from(x > t && y > t);
        union += usize::from(x > t || y > t);
    }
    if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    }
}

#[test]
fn ppocr_detector_int8_mask_iou_at_least_onnx_runtime() {
    let dir = ocr_data();
    let (calib_npy, test_npy) = (dir.join("det_calib.npy"), dir.join("det_test.npy"));
    let test = npy_frames(&test_npy);
    let shape = test[0]["x"].shape.clone();
    let model = "ch_PP-OCRv4_det_infer.onnx";
    let g = onnx_model(model, &shape);
    let q = quantize(&g, &npy_frames(&calib_npy));
    let mut ious = Vec::new();
    for f in &test {
        let (fp, qp) = float_and_int8(&g, &q, f);
        assert!(
            fp.iter().filter(|&&p| p > 0.3).count() > 100,
            "the float detector finds no text in a test frame"
        );
        ious.push(mask_iou(&fp, &qp, 0.3));
    }
    let ours = ious.iter().sum::<f64>() / ious.len() as f64;
    let ort_tmp = tempdir("quant-accuracy");
    let ort_dir = ort_tmp.path().join("ort");
    let line = run_ok(
        Command::new(python())
            .arg(root().join("scripts/ort_quantize.py"))
            .arg(need(root().join(".cache/models/rapidocr").join(model)))
            .args([&calib_npy, &test_npy, &ort_dir])
            .args(["--method", "percentile", "--percentile", "99.99"]),
    );
    let ort: serde_json::Value =
        serde_json::from_str(line.lines().last().expect("ort_quantize output")).expect("json");
    let theirs = ort["mean_mask_iou"].as_f64().expect("mean_mask_iou");
    println!("PP-OCRv4 det mask IoU: nnac {ious:?} mean {ours:.4}; ONNX Runtime {ort}");
    assert!(
        ours >= theirs,
        "nnac's int8 mask IoU {ours:.4} is below ONNX Runtime's {theirs:.4}"
    );
}
