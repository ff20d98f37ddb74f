//! Programs of several segments with host ops between them (docs/ISA.md 2.1).

mod common;

use common::*;
use nnac_isa::*;
use nnac_runtime_sim::{run, RunOptions, Schedule, SimError};

fn desc(name: &str, dir: IoDir, shape: &[u32], addr: u64) -> IoDesc {
    IoDesc {
        name: name.into(),
        dir,
        dtype: IoDtype::Int8,
        shape: shape.to_vec(),
        dram_addr: addr,
        layout: IoLayout::Dense,
        scale: 0.125,
        zero_point: 3,
    }
}

const IN: u64 = 0x0;
const SCRATCH: u64 = 0x100;
const HOST_OUT: u64 = 0x200;
const OUT: u64 = 0x300;

/// Segment 0 loads the input and writes it to scratch; the host transposes the two
/// inner axes; segment 1 loads the result and writes it to the output.
fn transpose_program(out_shape: &[u32]) -> Program {
    let f = FlagOps::new;
    let instrs = vec![
        Instr::DmaRead(dma(1, 24, IN, 0, 0, 0, f().set(0))),
        Instr::DmaWrite(dma(1, 24, SCRATCH, 0, 0, 0, f().wait(0).clear(0))),
        Instr::Stop(Stop::default()),
        // Flags start clear again: F0 is reused.
        Instr::DmaRead(dma(1, 24, HOST_OUT, 0, 0x40, 0, f().set(0))),
        Instr::DmaWrite(dma(1, 24, OUT, 0, 0x40, 0, f().wait(0).clear(0))),
        Instr::Stop(Stop::default()),
    ];
    Program {
        instrs,
        dram: DramImage::default(),
        io: vec![
            desc("x", IoDir::Input, &[1, 2, 3, 4], IN),
            desc("y", IoDir::Output, &[1, 2, 4, 3], OUT),
        ],
        host_ops: Some(HostOps {
            ops: vec![HostOp {
                segment: 0,
                name: "t".into(),
                op: "transpose{perm=[0, 1, 3, 2]}".into(),
                inputs: vec![desc("x", IoDir::Input, &[1, 2, 3, 4], SCRATCH)],
                output: desc("t", IoDir::Output, out_shape, HOST_OUT),
            }],
        }),
        layers: None,
        body_start: None,
        meta: Metadata {
            hw: small_hw(),
            ..Metadata::default()
        },
    }
}

#[test]
fn host_op_runs_between_segments_under_every_schedule() {
    let p = transpose_program(&[1, 2, 4, 3]);
    let bytes = Program::read(&p.write().unwrap()).unwrap();
    assert_eq!(bytes, p);
    let x: Vec<u8> = Lcg(5).bytes(24);
    // Plain transpose of the codes (dequantize / quantize with one scale is exact).
    let mut want = vec![0u8; 24];
    for c in 0..2 {
        for h in 0..3 {
            for w in 0..4 {
                want[c * 12 + w * 3 + h] = x[c * 12 + h * 4 + w];
            }
        }
    }
    let schedules = [Schedule::Serial, Schedule::Eager]
        .into_iter()
        .chain((0..6).map(|seed| Schedule::Random { seed }));
    for schedule in schedules {
        let r = run(
            &p,
            &[("x".into(), x.clone())],
            &RunOptions { schedule, hw: None },
        )
        .unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
        assert_eq!(r.outputs[0].data, want, "{schedule:?}");
        assert_eq!((r.stats.segments, r.stats.host_ops), (2, 1));
        assert_eq!(r.stats.dma_instructions, 4);
    }
}

#[test]
fn a_host_op_with_the_wrong_output_shape_is_an_error() {
    let p = transpose_program(&[1, 2, 3, 4]);
    match run(&p, &[("x".into(), vec![0; 24])], &Default::default()) {
        Err(SimError::Host { name, message }) => {
            assert_eq!(name, "t");
            assert!(message.contains("[1, 2, 4, 3]"), "{message}");
        }
        other => panic!("expected a host-op error, got {other:?}"),
    }
}

#[test]
fn a_flag_left_set_is_cleared_at_stop() {
    // Segment 0 sets F3 and nobody clears it; segment 1 sets it again: legal only
    // because the STOP cleared it.
    let mut p = transpose_program(&[1, 2, 4, 3]);
    p.instrs[1].flags_mut().set.insert(3);
    p.instrs[3].flags_mut().set.insert(3);
    let r = run(&p, &[("x".into(), vec![1; 24])], &Default::default()).unwrap();
    assert_eq!(r.stats.segments, 2);
    let hz = hazard::check_program(&p).unwrap();
    assert!(hz.is_clean(), "{}", hz.lines().join("\n"));
}
