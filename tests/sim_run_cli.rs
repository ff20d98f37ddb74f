//! End-to-end: `nnac run` quantizes float inputs, runs the simulator, dequantizes
//! (or with --raw keeps) the outputs, stacks frames, and leaves no files on error.

mod common;

use common::tempdir;
use nnac_interp::npy::{encode_npy, read_npy};
use nnac_ir::{Tensor, TensorData};
use nnac_isa::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NNAC: &str = env!("CARGO_BIN_EXE_nnac");

fn nnac(args: &[&str]) -> Output {
    Command::new(NNAC).args(args).output().expect("run nnac")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Copies input `x` (int8 [1,4], scale 0.5, zero point 1) to output `y` (scale 0.25,
/// zero point 0) through SRAM.
fn copy_program(dir: &Path) -> PathBuf {
    let dma = |flags: FlagOps, dram: u64| Dma {
        flags,
        dram_addr: dram,
        sram_addr: 0x40,
        rows: 1,
        row_len: 4,
        ..Dma::default()
    };
    let io = |name: &str, dir: IoDir, addr: u64, scale: f32, zero_point: i32| IoDesc {
        name: name.into(),
        dir,
        dtype: IoDtype::Int8,
        shape: vec![1, 4],
        dram_addr: addr,
        layout: IoLayout::Dense,
        scale,
        zero_point,
    };
    let p = Program {
        instrs: vec![
            Instr::DmaRead(dma(FlagOps::new().set(0), 0)),
            Instr::DmaWrite(dma(FlagOps::new().wait(0).clear(0), 16)),
            Instr::Stop(Stop::default()),
        ],
        dram: DramImage::default(),
        io: vec![
            io("x", IoDir::Input, 0, 0.5, 1),
            io("y:0", IoDir::Output, 16, 0.25, 0),
        ],
        host_ops: None,
        layers: None,
        body_start: None,
        meta: Metadata::default(),
    };
    let path = dir.join("copy.nnab");
    std::fs::write(&path, p.write().unwrap()).unwrap();
    path
}

fn write_f32(path: &Path, shape: Vec<usize>, v: Vec<f32>) {
    std::fs::write(path, encode_npy(&Tensor::f32(shape, v).unwrap())).unwrap();
}

#[test]
fn quantizes_runs_and_dequantizes() {
    let tmp = tempdir("sim-run-basic");
    let d = tmp.path();
    let prog = copy_program(d);
    let x = d.join("x.npy");
    write_f32(&x, vec![1, 4], vec![0.0, 0.25, -1.0, 100.0]);
    let out = d.join("out");
    let r = nnac(&[
        "run",
        s(&prog),
        "--input",
        &format!("x={}", s(&x)),
        "--output-dir",
        s(&out),
        "--schedule",
        "random",
        "--seed",
        "7",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    // codes (round half to even): round(0/0.5)+1 = 1, round(0.5)+1 = 1, -2+1 = -1,
    // saturated 127.
    let y = read_npy(out.join("y_0.npy")).unwrap();
    assert_eq!(y.shape, vec![1, 4]);
    assert_eq!(y.data, TensorData::F32(vec![0.25, 0.25, -0.25, 31.75]));

    let raw = nnac(&[
        "run",
        s(&prog),
        "--input",
        &format!("x={}", s(&x)),
        "--output-dir",
        s(&out),
        "--raw",
    ]);
    assert!(raw.status.success());
    assert_eq!(
        read_npy(out.join("y_0.npy")).unwrap().data,
        TensorData::I8(vec![1, 1, -1, 127])
    );
}

#[test]
fn a_leading_dimension_runs_several_frames() {
    let tmp = tempdir("sim-run-frames");
    let d = tmp.path();
    let prog = copy_program(d);
    let x = d.join("x.npy");
    write_f32(&x, vec![3, 1, 4], (0..12).map(|i| i as f32 * 0.5).collect());
    let r = nnac(&[
        "run",
        s(&prog),
        "--input",
        &format!("x={}", s(&x)),
        "--output-dir",
        s(d),
        "--raw",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let y = read_npy(d.join("y_0.npy")).unwrap();
    assert_eq!(y.shape, vec![3, 1, 4]);
    assert_eq!(
        y.data,
        TensorData::I8((0..12).map(|i| i as i8 + 1).collect())
    );
}

#[test]
fn errors_exit_1_and_write_nothing() {
    let tmp = tempdir("sim-run-errors");
    let d = tmp.path();
    let prog = copy_program(d);
    let out = d.join("out");
    let bad = d.join("bad.npy");
    write_f32(&bad, vec![1, 5], vec![0.0; 5]);
    let hw = d.join("hw.toml");
    std::fs::write(&hw, "flags = 32\n").unwrap();
    let x = d.join("x.npy");
    write_f32(&x, vec![1, 4], vec![0.0; 4]);
    for args in [
        vec!["run", s(&prog), "--output-dir", s(&out)],
        vec![
            "run",
            s(&prog),
            "--input",
            &format!("x={}", s(&bad)),
            "--output-dir",
            s(&out),
        ],
        vec![
            "run",
            s(&prog),
            "--input",
            &format!("z={}", s(&x)),
            "--output-dir",
            s(&out),
        ],
        vec![
            "run",
            s(&prog),
            "--input",
            &format!("x={}", s(&x)),
            "--hw",
            s(&hw),
            "--output-dir",
            s(&out),
        ],
        vec!["run", s(&d.join("missing.nnab")), "--output-dir", s(&out)],
    ] {
        let r = nnac(&args);
        assert_eq!(
            r.status.code(),
            Some(1),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert!(!r.stderr.is_empty());
        assert!(
            !out.join("y_0.npy").exists(),
            "{args:?} left an output file"
        );
    }
}
