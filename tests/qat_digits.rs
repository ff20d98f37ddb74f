//! Quantization-aware training pays off (issue 25, items 3 and 4): the digits
//! classifier trained with PyTorch's fake quantization and exported as ONNX QDQ
//! (`models/qat_digits.onnx`, made with `models/digits_float.onnx` by
//! `models/train_qat_digits.py`) compiles without calibration frames, keeps its
//! accuracy on the 360 held-out digits within 0.5 points of the float model's, and
//! its output codes on the simulator are ONNX Runtime's (executing the same file with
//! its int8 kernels) to within one code. Post-training quantization of the float model
//! is measured beside it. Data: scikit-learn's digits (`scripts/digits_data.py`);
//! ONNX Runtime's outputs: `scripts/qat_digits_ref.py`.

mod common;

use common::{need, python, root, run_ok, tempdir};
use nnac_interp::npy::read_npy;
use std::path::Path;
use std::process::Command;

const NNAC: &str = env!("CARGO_BIN_EXE_nnac");

fn nnac(args: &[&str]) -> String {
    run_ok(Command::new(NNAC).args(args))
}

fn floats(path: &Path) -> Vec<f32> {
    read_npy(path).unwrap().to_f32_vec()
}

/// Percent of the frames whose largest logit is the label.
fn accuracy(logits: &[f32], labels: &[f32]) -> f64 {
    let right = logits
        .chunks_exact(10)
        .zip(labels)
        .filter(|(l, &y)| argmax(l) == y as usize)
        .count();
    100.0 * right as f64 / labels.len() as f64
}

fn argmax(v: &[f32]) -> usize {
    (0..v.len())
        .max_by(|&a, &b| v[a].total_cmp(&v[b]).then(b.cmp(&a)))
        .unwrap()
}

#[test]
fn qat_model_keeps_its_accuracy_and_matches_onnx_runtime_code_for_code() {
    let tmp = tempdir("qat");
    let dir = tmp.path();
    need(root().join(".cache/models/digits/digits.csv.gz"));
    run_ok(
        Command::new(python())
            .arg(root().join("scripts/qat_digits_ref.py"))
            .arg(dir),
    );
    let labels = floats(&dir.join("heldout_y.npy"));
    assert_eq!(labels.len(), 360);
    let input = format!("image={}", dir.join("heldout_x.npy").display());
    let qat = root().join("models/qat_digits.onnx");
    let prog = dir.join("qat.nnab");
    let summary = nnac(&[
        "compile",
        qat.to_str().unwrap(),
        "-o",
        prog.to_str().unwrap(),
    ]);
    // Everything from the file: no calibration, the file's -128 weight codes kept.
    assert!(
        summary.contains(
            "pre-quantized model: 6 value(s) and 4 weight set(s) quantized as the file says; \
             calibrated: 0 value(s), 0 weight set(s)\n"
        ),
        "{summary}"
    );
    assert!(summary.contains("host ops: none"), "{summary}");
    let (sim, reference) = (dir.join("sim"), dir.join("ref"));
    nnac(&[
        "run",
        prog.to_str().unwrap(),
        "--input",
        &input,
        "--output-dir",
        sim.to_str().unwrap(),
    ]);
    nnac(&[
        "eval",
        qat.to_str().unwrap(),
        "--quantized",
        "--input",
        &input,
        "--output-dir",
        reference.to_str().unwrap(),
    ]);
    let ours = floats(&sim.join("logits.npy"));
    assert_eq!(
        ours,
        floats(&reference.join("logits.npy")),
        "simulator and quantized reference interpreter differ"
    );

    // Against ONNX Runtime executing the same QDQ file.
    let ort = floats(&dir.join("ort_qdq.npy"));
    let step: f32 = std::fs::read_to_string(dir.join("qdq_out_scale.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let codes: Vec<f32> = ours
        .iter()
        .zip(&ort)
        .map(|(a, b)| (a - b).abs() / step)
        .collect();
    let exact = codes.iter().filter(|&&d| d < 0.01).count() as f64 / codes.len() as f64;
    let worst = codes.iter().fold(0f32, |m, &d| m.max(d));
    let same_top1 = ours
        .chunks_exact(10)
        .zip(ort.chunks_exact(10))
        .filter(|(a, b)| argmax(a) == argmax(b))
        .count();
    let float_acc = accuracy(&floats(&dir.join("ort_float.npy")), &labels);
    let ort_acc = accuracy(&ort, &labels);
    let qat_acc = accuracy(&ours, &labels);

    // Post-training quantization of the float model, calibrated on 64 training digits.
    let ptq = dir.join("ptq.nnab");
    let calib = dir.join("calib_x.npy");
    nnac(&[
        "compile",
        root().join("models/digits_float.onnx").to_str().unwrap(),
        "--calib",
        calib.to_str().unwrap(),
        "-q",
        "-o",
        ptq.to_str().unwrap(),
    ]);
    let ptq_out = dir.join("ptq");
    nnac(&[
        "run",
        ptq.to_str().unwrap(),
        "--input",
        &input,
        "--output-dir",
        ptq_out.to_str().unwrap(),
    ]);
    let ptq_acc = accuracy(&floats(&ptq_out.join("logits.npy")), &labels);
    println!(
        "digits, 360 held out: float {float_acc:.2}%, QAT on nnac {qat_acc:.2}%, QAT on ONNX \
         Runtime {ort_acc:.2}%, PTQ on nnac {ptq_acc:.2}%; codes exact {:.2}%, max {worst:.3} \
         codes apart, same top-1 {same_top1}/360",
        100.0 * exact
    );
    assert!(
        qat_acc >= float_acc - 0.5,
        "QAT {qat_acc:.2}% is more than 0.5 points below float {float_acc:.2}%"
    );
    assert!(
        exact >= 0.99,
        "only {:.2}% of the codes exact",
        100.0 * exact
    );
    assert!(worst <= 1.001, "a code {worst} steps from ONNX Runtime's");
    assert!(same_top1 >= 357, "same top-1 on {same_top1}/360");
    assert!(ptq_acc > 90.0, "post-training quantization: {ptq_acc:.2}%");

    // With ONNX Runtime's requantization every code is ONNX Runtime's (99.97% above).
    let ort_rule = dir.join("qat_ort.nnab");
    nnac(&[
        "compile",
        qat.to_str().unwrap(),
        "--requant",
        "onnxruntime",
        "-q",
        "-o",
        ort_rule.to_str().unwrap(),
    ]);
    let ort_rule_out = dir.join("qat_ort");
    nnac(&[
        "run",
        ort_rule.to_str().unwrap(),
        "--input",
        &input,
        "--output-dir",
        ort_rule_out.to_str().unwrap(),
    ]);
    let same = floats(&ort_rule_out.join("logits.npy"))
        .iter()
        .zip(&ort)
        .filter(|(a, b)| (*a - *b).abs() / step < 0.01)
        .count();
    assert_eq!(
        same,
        ort.len(),
        "--requant onnxruntime: {same} of {} codes",
        ort.len()
    );
}
