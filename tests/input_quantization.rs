//! One float -> code rule everywhere (`nnac_interp::host::quantize`, docs/ISA.md
//! "Quantizing inputs"): ONNX QuantizeLinear's, checked against ONNX Runtime on every
//! rounding boundary of a scale, and the same codes at the input of `nnac run` (the
//! simulator's I/O) and of `nnac eval --quantized` (the quantized reference
//! interpreter), so the two agree on every output code for inputs that sit exactly on
//! a boundary, NaN, infinities, subnormals and values beyond the range included.
//! Needs the venv and cache of `scripts/setup.sh` (never skipped).

mod common;

use common::{python, root, run_ok, tempdir};
use nnac_interp::host::quantize;
use nnac_interp::npy::{encode_npy, read_npy};
use nnac_ir::{DType, Tensor, TensorData};
use nnac_isa::{IoDir, IoDtype, Program};
use std::path::Path;
use std::process::Command;

fn nnac() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nnac"))
}

/// Every rounding boundary `(k + 0.5) * scale` of the codes around `[lo, hi]` (and a
/// few beyond it), computed in float32 as a user's normalisation would, with the
/// float just above and just below each; the codes themselves `k * scale`; and the
/// special values.
fn boundary_values(scale: f32, zp: i32) -> Vec<f32> {
    let mut v = Vec::new();
    for k in (-140 - zp)..=(140 - zp) {
        let tie = (k as f32 + 0.5) * scale;
        v.extend([tie, tie.next_up(), tie.next_down(), k as f32 * scale]);
    }
    v.extend([
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MIN_POSITIVE / 2.0,
        0.0,
        -0.0,
        1e30,
        -1e30,
        f32::MAX,
        f32::MIN,
    ]);
    v
}

fn write(path: &Path, t: &Tensor) {
    std::fs::write(path, encode_npy(t)).unwrap();
}

/// ONNX Runtime's QuantizeLinear (scripts/ref_quantize_linear.py) of `values`.
fn ort_codes(dir: &Path, values: &[f32], scale: f32, zp: i32, dtype: &str) -> Vec<i32> {
    let (src, dst) = (dir.join("q_in.npy"), dir.join("q_out.npy"));
    write(
        &src,
        &Tensor::f32(vec![values.len()], values.to_vec()).unwrap(),
    );
    run_ok(
        Command::new(python())
            .arg(root().join("scripts/ref_quantize_linear.py"))
            .arg(&src)
            .arg(format!("{scale:e}"))
            .arg(zp.to_string())
            .arg(dtype)
            .arg(&dst),
    );
    match read_npy(&dst).unwrap().data {
        TensorData::I8(c) => c.into_iter().map(i32::from).collect(),
        TensorData::U8(c) => c.into_iter().map(i32::from).collect(),
        other => panic!("unexpected codes {:?}", other.dtype()),
    }
}

#[test]
fn the_rule_is_onnx_runtimes_quantize_linear_on_every_boundary() {
    let tmp = tempdir("quantize-ort");
    for (scale, zp, dtype, name) in [
        (0.0123_f32, 3, DType::I8, "int8"),
        (1.0 / 255.0, 0, DType::U8, "uint8"),
        (0.5, 128, DType::U8, "uint8"),
        (7.3e-3, -17, DType::I8, "int8"),
    ] {
        let values = boundary_values(scale, zp);
        let ours: Vec<i32> = values
            .iter()
            .map(|&x| quantize(x, scale, zp, dtype))
            .collect();
        let theirs = ort_codes(tmp.path(), &values, scale, zp, name);
        // The one documented difference: ONNX leaves NaN undefined for integer
        // outputs; nnac gives the zero point (the code of 0.0), ONNX Runtime the
        // bottom of the range.
        let mut ties = 0;
        for ((x, a), b) in values.iter().zip(&ours).zip(&theirs) {
            if x.is_nan() {
                assert_eq!(*a, zp, "NaN gives the zero point");
                continue;
            }
            assert_eq!(a, b, "{x:e} at scale {scale:e}, zp {zp} ({name})");
            ties += usize::from((x / scale).fract().abs() == 0.5);
        }
        // The values do probe ties (a float32 product is not always one).
        assert!(ties > 100, "only {ties} exact ties at scale {scale:e}");
    }
}

/// The program's input descriptor (scale, zero point, shape, type).
fn input_desc(program: &Path) -> nnac_isa::IoDesc {
    let p = Program::read(&std::fs::read(program).unwrap()).unwrap();
    p.io.iter()
        .find(|d| d.dir == IoDir::Input)
        .expect("an input")
        .clone()
}

#[test]
fn run_and_eval_quantized_agree_on_inputs_at_every_boundary() {
    let tmp = tempdir("quantize-run-eval");
    let d = tmp.path();
    let model = root().join("models/gated_cnn.onnx");
    let calib = d.join("calib.npy");
    let per = 3 * 48 * 64;
    let smooth: Vec<f32> = (0..2 * per)
        .map(|i| ((i * 37 % 101) as f32 / 50.0 - 1.0) * 1.5)
        .collect();
    write(&calib, &Tensor::f32(vec![2, 1, 3, 48, 64], smooth).unwrap());
    let prog = d.join("g.nnab");
    run_ok(nnac().args([
        "compile",
        model.to_str().unwrap(),
        "--calib",
        calib.to_str().unwrap(),
        "-q",
        "-o",
        prog.to_str().unwrap(),
    ]));
    let desc = input_desc(&prog);
    assert_eq!(desc.shape, [1, 3, 48, 64]);
    assert_eq!(desc.dtype, IoDtype::Int8);
    // Every boundary of the input's scale, repeated over the image.
    let values = boundary_values(desc.scale, desc.zero_point);
    let image: Vec<f32> = values.iter().copied().cycle().take(per).collect();
    let input = d.join("input.npy");
    write(&input, &Tensor::f32(vec![1, 3, 48, 64], image).unwrap());
    let (sim, ev) = (d.join("sim"), d.join("eval"));
    run_ok(nnac().args([
        "run",
        prog.to_str().unwrap(),
        "--input",
        &format!("image={}", input.display()),
        "--output-dir",
        sim.to_str().unwrap(),
    ]));
    run_ok(nnac().args([
        "eval",
        model.to_str().unwrap(),
        "--input",
        &format!("image={}", input.display()),
        "--quantized",
        "--calib",
        calib.to_str().unwrap(),
        "--output-dir",
        ev.to_str().unwrap(),
    ]));
    // Both dequantize with the same rule: equal floats are equal codes.
    let (s, e) = (
        read_npy(sim.join("mask.npy")).unwrap(),
        read_npy(ev.join("mask.npy")).unwrap(),
    );
    assert_eq!(s.shape, e.shape);
    let (s, e) = (s.to_f32_vec(), e.to_f32_vec());
    let differ = s
        .iter()
        .zip(&e)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    assert_eq!(differ, 0, "{differ} of {} output values differ", s.len());
    // The input does reach both ends of the code range and the ties.
    let codes: Vec<i32> = values
        .iter()
        .map(|&x| quantize(x, desc.scale, desc.zero_point, DType::I8))
        .collect();
    assert!(codes.contains(&-128) && codes.contains(&127));
}
