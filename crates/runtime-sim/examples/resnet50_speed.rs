//! Speed of the functional simulator on the layer shapes of ResNet-50 (224x224, int8,
//! one instruction per layer, random weights): every convolution (with conv1's 3x3
//! max pool fused), every residual ELTWISE add and the final inner product, in SRAM.
//!
//! `cargo run --release -p nnac-runtime-sim --example resnet50_speed [-- RUNS]`
//! prints the wall time per run (RAYON_NUM_THREADS=2 to match the 2-thread target).

use nnac_isa::*;
use nnac_runtime_sim::{RunOptions, Schedule, Simulator};
use std::time::Instant;

const ACT: u32 = 0x10_0000; // five 1 MiB activation buffers from 1 MiB
const WEIGHTS: u32 = 0x60_0000; // 3 MiB weight region
const WEIGHT_BYTES: u32 = 3 << 20;

fn buf(i: u32) -> u32 {
    ACT + i * 0x10_0000
}

struct Act {
    addr: u32,
    h: u32,
    w: u32,
    c: u32,
}

fn requant() -> Vec<SimdInstr> {
    vec![SimdInstr::FusedRelu(Requant {
        dst: 0,
        src: 0,
        per_channel: false,
        shift: 16,
        act_min: 0,
        act_max: 127,
        zero_point: 0,
        multiplier: 1 << 8,
    })]
}

#[allow(clippy::too_many_arguments)]
fn conv(x: &Act, out: u32, oc: u32, k: u32, s: u32, p: u32, pool: bool) -> (Instr, Act) {
    let oh = (x.h + 2 * p - k) / s + 1;
    let ow = (x.w + 2 * p - k) / s + 1;
    let (sh, sw) = if pool {
        ((oh + 2 - 3) / 2 + 1, (ow + 2 - 3) / 2 + 1)
    } else {
        (oh, ow)
    };
    let d = DotProduct {
        simd: requant(),
        in_addr: x.addr,
        w_addr: WEIGHTS,
        out_addr: out,
        in_h: x.h,
        in_w: x.w,
        in_c: x.c,
        out_h: oh,
        out_w: ow,
        out_c: oc,
        in_row_pitch: x.w * x.c,
        in_pix_pitch: x.c,
        out_row_pitch: sw * oc,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        out_pix_pitch: oc,
        pix_count: oh * ow,
        oc_count: oc,
        kernel_h: k,
        kernel_w: k,
        pad_top: p,
        pad_left: p,
        pad_bottom: p,
        pad_right: p,
        stride_h: s,
        stride_w: s,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        in_signed: true,
        w_signed: true,
        out_signed: true,
        pool: if pool { PoolKind::Max } else { PoolKind::None },
        pool_win: if pool { 3 } else { 0 },
        pool_stride: if pool { 2 } else { 0 },
        pool_pad_top: u32::from(pool),
        pool_pad_left: u32::from(pool),
        pool_pad_bottom: u32::from(pool),
        pool_pad_right: u32::from(pool),
        ..DotProduct::default()
    };
    (
        Instr::Conv(d),
        Act {
            addr: out,
            h: sh,
            w: sw,
            c: oc,
        },
    )
}

fn add(a: &Act, b: u32, out: u32) -> Instr {
    let (rp, pp) = (a.w * a.c, a.c);
    Instr::Eltwise(Eltwise {
        simd: requant(),
        a_addr: a.addr,
        b_addr: b,
        out_addr: out,
        h: a.h,
        w: a.w,
        c: a.c,
        a_row_pitch: rp,
        a_pix_pitch: pp,
        b_row_pitch: rp,
        b_pix_pitch: pp,
        out_row_pitch: rp,
        a_chan_pitch: 1,
        b_chan_pitch: 1,
        out_chan_pitch: 1,
        out_pix_pitch: pp,
        pix_count: a.h * a.w,
        c_count: a.c,
        a_signed: true,
        b_signed: true,
        out_signed: true,
        a_mult: 1 << 30,
        b_mult: 1 << 30,
        a_shift: 30,
        b_shift: 30,
        ..Eltwise::default()
    })
}

fn network() -> Vec<Instr> {
    let mut v = Vec::new();
    let (c1, mut x) = conv(
        &Act {
            addr: 0,
            h: 224,
            w: 224,
            c: 3,
        },
        buf(0),
        64,
        7,
        2,
        3,
        true,
    );
    v.push(c1);
    for (blocks, mid, outc, stride) in [
        (3, 64, 256, 1),
        (4, 128, 512, 2),
        (6, 256, 1024, 2),
        (3, 512, 2048, 2),
    ] {
        for b in 0..blocks {
            let s = if b == 0 { stride } else { 1 };
            let inb = (x.addr - ACT) / 0x10_0000;
            let others: Vec<u32> = (0..5).filter(|&i| i != inb).collect();
            let (i1, a) = conv(&x, buf(others[0]), mid, 1, 1, 0, false);
            let (i2, bb) = conv(&a, buf(others[1]), mid, 3, s, 1, false);
            let (i3, c) = conv(&bb, buf(others[2]), outc, 1, 1, 0, false);
            v.extend([i1, i2, i3]);
            let short = if b == 0 {
                let (ds, _) = conv(&x, buf(others[3]), outc, 1, s, 0, false);
                v.push(ds);
                buf(others[3])
            } else {
                x.addr
            };
            v.push(add(&c, short, buf(others[0])));
            x = Act {
                addr: buf(others[0]),
                ..c
            };
        }
    }
    let fc = DotProduct {
        simd: requant(),
        in_addr: x.addr,
        w_addr: WEIGHTS,
        out_addr: buf(4) + 0x8_0000,
        in_h: 1,
        in_w: 1,
        in_c: 2048,
        out_h: 1,
        out_w: 1,
        out_c: 1000,
        in_row_pitch: 2048,
        in_pix_pitch: 2048,
        out_row_pitch: 1000,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        out_pix_pitch: 1000,
        pix_count: 1,
        oc_count: 1000,
        kernel_h: 1,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        in_signed: true,
        w_signed: true,
        out_signed: true,
        ..DotProduct::default()
    };
    v.push(Instr::InnerProduct(fc));
    v
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let mut instrs = network();
    let n = instrs.len();
    *instrs[0].flags_mut() = FlagOps::new().wait(0).clear(0);
    *instrs[n - 1].flags_mut() = FlagOps::new().set(1);
    let mut all = vec![
        Instr::DmaRead(Dma {
            flags: FlagOps::new().set(0),
            dram_addr: 0,
            sram_addr: WEIGHTS,
            rows: 3,
            row_len: WEIGHT_BYTES / 3,
            dram_stride: u64::from(WEIGHT_BYTES / 3),
            sram_stride: WEIGHT_BYTES / 3,
        }),
        Instr::DmaRead(Dma {
            flags: FlagOps::new(),
            dram_addr: u64::from(WEIGHT_BYTES),
            sram_addr: 0,
            rows: 1,
            row_len: 224 * 224 * 3,
            ..Dma::default()
        }),
    ];
    // The input DMA must complete before conv1: put it first.
    all.swap(0, 1);
    if let Instr::DmaRead(d) = &mut all[0] {
        d.flags = FlagOps::new();
    }
    if let Instr::DmaRead(d) = &mut all[1] {
        d.flags = FlagOps::new().set(0);
    }
    all.extend(instrs);
    all.push(Instr::DmaWrite(Dma {
        flags: FlagOps::new().wait(1).clear(1),
        dram_addr: u64::from(WEIGHT_BYTES) + 224 * 224 * 3,
        sram_addr: buf(4) + 0x8_0000,
        rows: 1,
        row_len: 1000,
        ..Dma::default()
    }));
    all.push(Instr::Stop(Stop::default()));
    let mut seed = 1u64;
    let dram: Vec<u8> = (0..WEIGHT_BYTES as usize + 224 * 224 * 3)
        .map(|_| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 40) % 9) as u8 // small weights: no accumulator overflow
        })
        .collect();
    let program = Program {
        instrs: all,
        dram: DramImage {
            base: 0,
            bytes: dram,
        },
        io: vec![IoDesc {
            name: "logits".into(),
            dir: IoDir::Output,
            dtype: IoDtype::Int8,
            shape: vec![1, 1000],
            dram_addr: u64::from(WEIGHT_BYTES) + 224 * 224 * 3,
            layout: IoLayout::Dense,
            scale: 1.0,
            zero_point: 0,
        }],
        host_ops: None,
        layers: None,
        body_start: None,
        meta: Metadata::default(),
    };
    let sim = Simulator::new(
        &program,
        &RunOptions {
            schedule: Schedule::Eager,
            hw: None,
        },
    )
    .expect("valid program");
    let mut best = f64::MAX;
    for i in 0..runs {
        let t = Instant::now();
        let r = sim.run(&[]).expect("runs");
        let ms = t.elapsed().as_secs_f64() * 1e3;
        best = best.min(ms);
        println!(
            "run {i}: {ms:.1} ms ({} instructions, {:.2} GMAC, {} overflows, threads {})",
            r.stats.instructions,
            r.stats.macs as f64 / 1e9,
            r.stats.acc_overflows,
            rayon::current_num_threads()
        );
    }
    println!("best: {best:.1} ms");
}
