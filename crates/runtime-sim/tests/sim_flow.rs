//! Interleavings, run-time hazard detection, deadlocks, flag errors, refusal of
//! foreign programs, and malformed input.

mod common;
use common::*;
use nnac_isa::*;
use nnac_runtime_sim::{
    run, ExecError, HazardKind, IoError, MemError, RunOptions, Schedule, SimError,
};

const X: u64 = 0; // DRAM: three 4x4x8 inputs at 0, 128, 256; weights at 384
const W_DRAM: u64 = 384;
const OUT_DRAM: u64 = 1024; // three outputs of 128 bytes
const BUF_A: u32 = 0x000;
const BUF_B: u32 = 0x100;
const BUF_W: u32 = 0x200;
const OUTS: [u32; 3] = [0x400, 0x500, 0x600];

fn conv1x1(input: u32, out: u32, flags: FlagOps) -> Instr {
    conv4x4x8(input, BUF_W, out, flags)
}

fn read(dram: u64, sram: u32, len: u32, f: FlagOps) -> Instr {
    Instr::DmaRead(dma(1, len, dram, 0, sram, 0, f))
}

fn write(sram: u32, dram: u64, f: FlagOps) -> Instr {
    Instr::DmaWrite(dma(1, 128, dram, 0, sram, 0, f))
}

fn f() -> FlagOps {
    FlagOps::new()
}

/// A correct double-buffered program: three convolutions over three inputs.
fn pipeline() -> Vec<Instr> {
    vec![
        read(X, BUF_A, 128, f().set(0)),                               // 0
        read(W_DRAM, BUF_W, 64, f().set(1)),                           // 1
        read(X + 128, BUF_B, 128, f().set(2)),                         // 2
        conv1x1(BUF_A, OUTS[0], f().wait(0).wait(1).clear(0).set(3)),  // 3
        read(X + 256, BUF_A, 128, f().wait_clear(0).set(0)),           // 4
        conv1x1(BUF_B, OUTS[1], f().wait(2).clear(2).set(4)),          // 5
        write(OUTS[0], OUT_DRAM, f().wait(3).clear(3)),                // 6
        conv1x1(BUF_A, OUTS[2], f().wait(0).clear(0).clear(1).set(5)), // 7
        write(OUTS[1], OUT_DRAM + 128, f().wait(4).clear(4)),          // 8
        write(OUTS[2], OUT_DRAM + 256, f().wait(5).clear(5)),          // 9
        Instr::Stop(Stop::default()),                                  // 10
    ]
}

fn program(instrs: Vec<Instr>) -> Program {
    let mut rng = Lcg(77);
    Program {
        instrs,
        dram: DramImage {
            base: 0,
            bytes: rng.bytes(448).into(),
        },
        io: vec![IoDesc {
            name: "y".into(),
            dir: IoDir::Output,
            dtype: IoDtype::Int8,
            shape: vec![3, 4, 4, 8],
            dram_addr: OUT_DRAM,
            layout: IoLayout::Dense,
            scale: 1.0,
            zero_point: 0,
        }],
        host_ops: None,
        layers: None,
        body_start: None,
        meta: Metadata {
            hw: small_hw(),
            ..Metadata::default()
        },
    }
}

fn opts(schedule: Schedule) -> RunOptions {
    RunOptions { schedule, hw: None }
}

fn schedules() -> Vec<Schedule> {
    let mut v = vec![Schedule::Serial, Schedule::Eager];
    v.extend((0..10).map(|seed| Schedule::Random { seed }));
    v
}

#[test]
fn every_schedule_gives_identical_bytes() {
    let p = program(pipeline());
    let base = run(&p, &[], &opts(Schedule::Serial)).unwrap();
    assert!(base.outputs[0].data.iter().filter(|&&b| b != 0).count() > 100);
    assert_eq!(base.stats.instructions, 10);
    assert_eq!(base.stats.macs, 3 * 16 * 8 * 8);
    for s in schedules() {
        let r = run(&p, &[], &opts(s)).unwrap();
        assert_eq!(r.outputs, base.outputs, "{s:?}");
    }
    let eager = run(&p, &[], &opts(Schedule::Eager)).unwrap();
    assert!(
        eager.stats.overlapped_starts > 0,
        "eager must overlap the queues"
    );
}

fn expect_hazard(instrs: Vec<Instr>, kind: HazardKind, a: usize, b: usize, schedules: &[Schedule]) {
    let p = program(instrs);
    for s in schedules {
        match run(&p, &[], &opts(*s)) {
            Err(SimError::Hazard(h)) => {
                assert_eq!(h.kind, kind, "{s:?}: {h}");
                assert_eq!((h.earlier.index, h.later.index), (a, b), "{s:?}: {h}");
                let msg = h.to_string();
                assert!(
                    msg.contains(kind.short()) && msg.contains("SRAM [0x"),
                    "{msg}"
                );
            }
            other => panic!("{s:?}: expected a {kind:?} hazard, got {other:?}"),
        }
    }
}

#[test]
fn missing_wait_is_a_read_after_write_hazard_under_every_schedule() {
    let mut p = pipeline();
    p[5] = conv1x1(BUF_B, OUTS[1], f().clear(2).set(4)); // no longer waits for F2
    expect_hazard(p, HazardKind::ReadAfterWrite, 2, 5, &schedules());
}

#[test]
fn missing_wait_clear_is_a_write_after_read_hazard() {
    let mut p = pipeline();
    p[4] = read(X + 256, BUF_A, 128, f()); // overwrites A without waiting for conv #3
    p[7] = conv1x1(BUF_A, OUTS[2], f().clear(1).set(5));
    expect_hazard(
        p.clone(),
        HazardKind::WriteAfterRead,
        3,
        4,
        &[Schedule::Serial, Schedule::Eager],
    );
    // Every other schedule fails too (with this hazard or a race on the reuse).
    for seed in 0..10 {
        assert!(run(&program(p.clone()), &[], &opts(Schedule::Random { seed })).is_err());
    }
}

#[test]
fn unsynchronized_writes_are_a_write_after_write_hazard() {
    let mut p = pipeline();
    // A DMA refills the output buffer of conv #3 with nothing ordering the two.
    p.insert(4, read(X, OUTS[0], 16, f()));
    expect_hazard(
        p,
        HazardKind::WriteAfterWrite,
        3,
        4,
        &[Schedule::Serial, Schedule::Eager],
    );
}

#[test]
fn waiting_forever_is_a_deadlock() {
    let mut p = pipeline();
    p[3] = conv1x1(BUF_A, OUTS[0], f().wait(0).wait(1).wait(9).clear(0).set(3));
    for s in schedules() {
        match run(&program(p.clone()), &[], &opts(s)) {
            Err(SimError::Deadlock(m)) => assert!(m.contains("#3 CONV") && m.contains("F9"), "{m}"),
            other => panic!("{s:?}: expected a deadlock, got {other:?}"),
        }
    }
}

#[test]
fn serial_schedule_refuses_programs_that_need_the_queues_out_of_order() {
    // The conv waits for a DMA that comes later in program order: fine for the
    // two queues, a deadlock when run as one stream.
    let p = vec![
        read(W_DRAM, BUF_W, 64, f().set(1)),
        conv1x1(BUF_A, OUTS[0], f().wait(0).wait(1).clear(0).clear(1).set(3)),
        read(X, BUF_A, 128, f().set(0)),
        write(OUTS[0], OUT_DRAM, f().wait(3).clear(3)),
        Instr::Stop(Stop::default()),
    ];
    assert!(run(&program(p.clone()), &[], &opts(Schedule::Eager)).is_ok());
    match run(&program(p), &[], &opts(Schedule::Serial)) {
        Err(SimError::Deadlock(m)) => assert!(m.contains("#1 CONV") && m.contains("F0"), "{m}"),
        other => panic!("expected a serial deadlock, got {other:?}"),
    }
}

#[test]
fn setting_a_set_flag_is_a_program_error() {
    let mut p = pipeline();
    p[1] = read(W_DRAM, BUF_W, 64, f().set(1).set(0)); // F0 already set by #0
    let e = run(&program(p), &[], &opts(Schedule::Serial)).unwrap_err();
    assert!(
        e.to_string().contains("#1 DMA_READ") && e.to_string().contains("already set"),
        "{e}"
    );
    let mut p = pipeline();
    p[6] = write(OUTS[0], OUT_DRAM, f().wait(3).clear(3).clear(7));
    let e = run(&program(p), &[], &opts(Schedule::Eager)).unwrap_err();
    assert!(
        e.to_string().contains("#6 DMA_WRITE") && e.to_string().contains("F7"),
        "{e}"
    );
}

#[test]
fn foreign_hardware_and_bad_host_ops_are_refused() {
    let p = program(pipeline());
    let e = run(
        &p,
        &[],
        &RunOptions {
            schedule: Schedule::Eager,
            hw: Some(HwConfig::fsd()),
        },
    )
    .unwrap_err();
    assert!(matches!(e, SimError::HwMismatch { .. }), "{e}");
    assert!(run(
        &p,
        &[],
        &RunOptions {
            schedule: Schedule::Eager,
            hw: Some(small_hw())
        }
    )
    .is_ok());
    // A host op whose op text is not an op is refused before the run, by name.
    let mut h = p.clone();
    let out = h.io[0].clone();
    h.host_ops = Some(HostOps {
        ops: vec![HostOp {
            segment: 0,
            name: "bad".into(),
            op: "frobnicate{x=1}".into(),
            inputs: vec![],
            output: IoDesc {
                dir: IoDir::Output,
                ..out
            },
        }],
    });
    match run(&h, &[], &Default::default()) {
        Err(SimError::Host { name, message }) => {
            assert_eq!(name, "bad");
            assert!(message.contains("frobnicate"), "{message}");
        }
        other => panic!("expected a host-op error, got {other:?}"),
    }
    let mut f = p;
    f.instrs[0] = read(X, BUF_A, 128, FlagOps::new().set(20)); // only 16 flags
    let e = run(&f, &[], &Default::default()).unwrap_err();
    assert!(
        matches!(
            e,
            SimError::Rule(nnac_isa::error::ProgramError::Flag {
                index: 0,
                flag: 20,
                hw_flags: 16,
                ..
            })
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("instruction 0"), "{e}");
}

#[test]
fn inputs_are_checked() {
    let mut p = program(pipeline());
    p.io.push(IoDesc {
        name: "x".into(),
        dir: IoDir::Input,
        dtype: IoDtype::Int8,
        shape: vec![4],
        dram_addr: 0,
        layout: IoLayout::Dense,
        scale: 1.0,
        zero_point: 0,
    });
    for bad in [vec![], vec![("z".to_string(), vec![1u8; 4])]] {
        assert!(
            matches!(run(&p, &bad, &Default::default()), Err(SimError::Input(_))),
            "{bad:?}"
        );
    }
    let short = [("x".to_string(), vec![1u8; 3])];
    match run(&p, &short, &Default::default()) {
        Err(SimError::InputData(IoError::Size {
            name, needed, got, ..
        })) => assert_eq!((name.as_str(), needed, got), ("x", 4, 3)),
        other => panic!("expected a size error, got {other:?}"),
    }
    assert!(run(&p, &[("x".into(), vec![1; 4])], &Default::default()).is_ok());
}

#[test]
fn corrupted_programs_give_errors_not_panics() {
    let bytes = program(pipeline()).write().unwrap();
    let mut rng = Lcg(99);
    let mut ran = 0;
    for _ in 0..1500 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.next() % 4 {
            let i = rng.next() as usize % b.len();
            b[i] ^= 1 << (rng.next() % 8);
        }
        // Keep the checksum valid half the time so the corruption reaches the decoder
        // and the simulator.
        if rng.next().is_multiple_of(2) {
            let n = b.len() - 4;
            let crc = nnac_isa::crc32::crc32(&b[..n]);
            b[n..].copy_from_slice(&crc.to_le_bytes());
        }
        if let Ok(p) = Program::read(&b) {
            ran += 1;
            let _ = run(&p, &[], &opts(Schedule::Random { seed: 3 }));
        }
    }
    assert!(
        ran > 50,
        "the loop must exercise the simulator ({ran} programs ran)"
    );
}

#[test]
fn malformed_instruction_fields_give_errors_not_panics() {
    let mut rng = Lcg(5);
    let base = pipeline();
    for _ in 0..400 {
        let mut p = base.clone();
        let i = rng.next() as usize % (p.len() - 1);
        let body = p[i].body_mut();
        let specs = body.specs();
        let spec = &specs[rng.next() as usize % specs.len()];
        let v = match rng.next() % 3 {
            0 => spec.min,
            1 => spec.max,
            _ => spec.min + i64::from(rng.next() % 300).min(spec.max - spec.min),
        };
        let v = if spec.names.is_empty() {
            v
        } else {
            v.min(spec.names.len() as i64 - 1)
        };
        body.set(spec.name, v).unwrap();
        let _ = run(&program(p), &[], &opts(Schedule::Eager));
    }
}

/// Every variant of the pipeline with one flag operation removed: the run-time
/// detector agrees with the isa crate's static hazard checker. A statically clean
/// program runs under every two-queue schedule with identical outputs (the serial
/// schedule may deadlock on it: a clean program may need the queues out of program
/// order); a program the checker rejects fails under at least one schedule.
#[test]
fn run_time_detection_agrees_with_the_static_checker() {
    let base = pipeline();
    let mut variants = 0;
    let mut rejected = 0;
    for i in 0..base.len() - 1 {
        let ops = *base[i].flags();
        for list in 0..4 {
            for flag in ops.lists()[list].iter() {
                let mut p = base.clone();
                let mut f = ops;
                f.list_mut(list).remove(flag);
                *p[i].flags_mut() = f;
                let prog = program(p);
                let report = nnac_isa::hazard::check_program(&prog).expect("checkable");
                let results: Vec<_> = schedules()
                    .into_iter()
                    .map(|s| (s, run(&prog, &[], &opts(s))))
                    .collect();
                variants += 1;
                if report.is_clean() {
                    let eager = results[1].1.as_ref().expect("eager runs a clean program");
                    for (s, r) in &results {
                        match r {
                            Ok(r) => {
                                assert_eq!(r.outputs, eager.outputs, "#{i} without F{flag}, {s:?}")
                            }
                            Err(SimError::Deadlock(_)) if *s == Schedule::Serial => {}
                            Err(e) => panic!("#{i} without F{flag}: clean statically, {s:?}: {e}"),
                        }
                    }
                } else {
                    rejected += 1;
                    assert!(
                        results.iter().any(|(_, r)| r.is_err()),
                        "#{i} without F{flag}: the static checker reports {:?} but every schedule ran",
                        report.lines()
                    );
                }
            }
        }
    }
    assert!(
        variants > 20 && rejected > 5,
        "{variants} variants, {rejected} rejected"
    );
}

/// A DMA outside the program's DRAM stops the run with an error naming the
/// instruction (index and mnemonic) and the byte range, as typed fields.
#[test]
fn an_access_outside_dram_names_the_instruction_and_the_range() {
    let mut instrs = pipeline();
    instrs[2] = read(0x10_0000, BUF_B, 128, f().set(2));
    let e = run(&program(instrs), &[], &opts(Schedule::Serial)).unwrap_err();
    match &e {
        SimError::Instr {
            at,
            error: ExecError::Mem(MemError::OutsideDram { addr, len, .. }),
        } => {
            assert_eq!((at.index, at.mnemonic), (2, "DMA_READ"));
            assert_eq!((*addr, *len), (0x10_0000, 128));
        }
        other => panic!("expected an out-of-DRAM error, got {other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.starts_with("instruction #2 DMA_READ: DRAM range [0x100000, 0x100080)"),
        "{text}"
    );
}
