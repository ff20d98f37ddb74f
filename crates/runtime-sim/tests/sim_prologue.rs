//! Programs with a prologue (docs/ISA.md 2.2): the prologue runs once per load, the
//! body once per frame on the SRAM the previous frame left; the timing model reports
//! the body as the frame and the prologue apart.

mod common;
use common::*;
use nnac_isa::*;
use nnac_runtime_sim::timing::analyze;
use nnac_runtime_sim::{run, RunOptions, Schedule, Simulator};

const X_DRAM: u64 = 0x1000;
const Y_DRAM: u64 = 0x2000;
const BUF_A: u32 = 0x000;
const BUF_W: u32 = 0x200;
const OUT: u32 = 0x400;

fn conv1x1(flags: FlagOps) -> Instr {
    conv4x4x8(BUF_A, BUF_W, OUT, flags)
}

fn read(dram: u64, sram: u32, len: u32, f: FlagOps) -> Instr {
    Instr::DmaRead(dma(1, len, dram, 0, sram, 0, f))
}

fn f() -> FlagOps {
    FlagOps::new()
}

fn stop() -> Instr {
    Instr::Stop(Stop::default())
}

fn desc(name: &str, dir: IoDir, dram_addr: u64) -> IoDesc {
    IoDesc {
        name: name.into(),
        dir,
        dtype: IoDtype::Int8,
        shape: vec![1, 128],
        dram_addr,
        layout: IoLayout::Dense,
        scale: 1.0,
        zero_point: 0,
    }
}

fn program(instrs: Vec<Instr>, body_start: Option<usize>) -> Program {
    Program {
        instrs,
        dram: DramImage {
            base: 0,
            bytes: Lcg(5).bytes(64).into(),
        },
        io: vec![
            desc("x", IoDir::Input, X_DRAM),
            desc("y", IoDir::Output, Y_DRAM),
        ],
        host_ops: None,
        layers: None,
        body_start,
        meta: Metadata {
            hw: small_hw(),
            ..Metadata::default()
        },
    }
}

/// The body: input, conv, output. `extra` is appended before the final STOP.
fn body(extra: Vec<Instr>) -> Vec<Instr> {
    let mut v = vec![
        read(X_DRAM, BUF_A, 128, f().set(0)),
        conv1x1(f().wait(0).clear(0).set(1)),
        Instr::DmaWrite(dma(1, 128, Y_DRAM, 0, OUT, 0, f().wait(1).clear(1))),
    ];
    v.extend(extra);
    v.push(stop());
    v
}

/// Weights loaded once by the prologue.
fn resident(extra: Vec<Instr>) -> Program {
    let mut instrs = vec![read(0, BUF_W, 64, f()), stop()];
    instrs.extend(body(extra));
    program(instrs, Some(2))
}

/// The same computation loading the weights every frame.
fn streaming() -> Program {
    let mut instrs = vec![read(0, BUF_W, 64, f().set(2))];
    let mut b = body(vec![]);
    b[1] = conv1x1(f().wait(0).wait(2).clear(0).clear(2).set(1));
    instrs.extend(b);
    program(instrs, None)
}

fn frames() -> Vec<Vec<(String, Vec<u8>)>> {
    (0..3)
        .map(|k| vec![("x".to_string(), Lcg(100 + k).bytes(128))])
        .collect()
}

#[test]
fn the_body_runs_per_frame_on_the_resident_weights_bit_exactly() {
    let p = resident(vec![]);
    assert!(nnac_isa::hazard::check_program(&p).unwrap().is_clean());
    let s = streaming();
    for schedule in [
        Schedule::Serial,
        Schedule::Eager,
        Schedule::Random { seed: 3 },
    ] {
        let opts = RunOptions { schedule, hw: None };
        let sim = Simulator::new(&p, &opts).unwrap();
        let mut session = sim.session().unwrap();
        assert_eq!(session.prologue.dma_bytes, 64);
        assert_eq!(session.prologue.segments, 1);
        let mut outs = Vec::new();
        for frame in frames() {
            let got = session.run(&frame).unwrap();
            let want = run(&s, &frame, &opts).unwrap();
            assert_eq!(got.outputs, want.outputs, "{schedule:?}");
            assert_eq!(got.stats.dma_bytes, 256, "input + output only");
            assert_eq!(got.stats.segments, 1);
            outs.push(got.outputs[0].data.clone());
        }
        assert_ne!(outs[0], outs[1], "different inputs give different outputs");
        // One frame from power-on counts the prologue too.
        let one = sim.run(&frames()[0]).unwrap();
        assert_eq!(one.stats.dma_bytes, 64 + 256);
        assert_eq!(one.outputs[0].data, outs[0]);
    }
}

#[test]
fn sram_persists_so_a_body_overwriting_the_weights_breaks_frame_two() {
    // After the output is written, the body loads input bytes over the weights.
    let clobber = read(X_DRAM, BUF_W, 64, f());
    let p = resident(vec![clobber]);
    let r = nnac_isa::hazard::check_program(&p).unwrap();
    assert_eq!(r.resident_writes.len(), 1, "{}", r.lines().join("\n"));
    assert_eq!(r.resident_writes[0].instr.index, 5);
    let opts = RunOptions::default();
    let sim = Simulator::new(&p, &opts).unwrap();
    let mut session = sim.session().unwrap();
    let f = frames();
    let want = |k: usize| run(&streaming(), &f[k], &opts).unwrap().outputs;
    assert_eq!(session.run(&f[0]).unwrap().outputs, want(0));
    assert_ne!(session.run(&f[1]).unwrap().outputs, want(1));
}

#[test]
fn weights_the_body_rewrites_are_read_afresh_every_frame() {
    // A session keeps the converted weights of a dot product only while no body
    // instruction writes them. Here the body loads each frame's input bytes over the
    // weights after the convolution, so frame k computes with frame k-1's input as
    // its weights, exactly, on every frame (also those after the second, when the
    // session keeps what it may).
    let clobber = read(X_DRAM, BUF_W, 64, f());
    let p = resident(vec![clobber]);
    let opts = RunOptions::default();
    let sim = Simulator::new(&p, &opts).unwrap();
    let mut session = sim.session().unwrap();
    let f: Vec<_> = (0..5)
        .map(|k| vec![("x".to_string(), Lcg(200 + k).bytes(128))])
        .collect();
    for k in 0..f.len() {
        let mut s = streaming();
        if k > 0 {
            s.dram.bytes = f[k - 1][0].1[..64].to_vec().into();
        }
        let want = run(&s, &f[k], &opts).unwrap().outputs;
        assert_eq!(session.run(&f[k]).unwrap().outputs, want, "frame {k}");
    }
}

#[test]
fn timing_reports_the_body_per_frame_and_the_prologue_apart() {
    let p = resident(vec![]);
    let prof = analyze(&p, None).unwrap();
    let q = prof.prologue.expect("a prologue");
    assert_eq!((q.instructions, q.segments, q.dram_read), (2, 1, 64));
    assert!(q.cycles > 0);
    // The body alone, as a program, takes exactly the per-frame cycles.
    let alone = program(p.instrs[2..].to_vec(), None);
    let a = analyze(&alone, None).unwrap();
    assert_eq!(prof.total_cycles, a.total_cycles);
    assert_eq!((prof.dram_read, prof.dram_written), (128, 128));
    assert_eq!(prof.charge.total(), prof.total_cycles);
    assert_eq!(prof.timeline.total_cycles(), q.cycles + prof.total_cycles);
    assert_eq!(prof.io_bytes, 256);
    assert_eq!(prof.dram_lower_bound, 64 + 256);
    assert!(analyze(&streaming(), None).unwrap().prologue.is_none());
}
