//! Helpers shared by the simulator tests: small programs built with the isa crate's
//! API, and plain reference computations written from docs/ISA.md.

#![allow(dead_code)]

use nnac_isa::*;
use nnac_runtime_sim::{run, RunOptions, RunResult, Schedule, SimError};

/// A small machine: 8x8 MAC array, 1 MiB SRAM, 16 flags.
pub fn small_hw() -> HwConfig {
    HwConfig::from_toml_str(
        "mac_rows = 8\nmac_cols = 8\nsimd_width = 8\nsram_bytes = 1048576\nflags = 16\n",
    )
    .unwrap()
}

/// Deterministic pseudo-random bytes.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    pub fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo + 1) as u32) as i32
    }
}

pub fn dma(
    rows: u32,
    row_len: u32,
    dram: u64,
    dstride: u64,
    sram: u32,
    sstride: u32,
    flags: FlagOps,
) -> Dma {
    Dma {
        flags,
        dram_addr: dram,
        sram_addr: sram,
        rows,
        row_len,
        dram_stride: dstride,
        sram_stride: sstride,
    }
}

/// Builds the program `DMA_READ sram_image -> compute -> DMA_WRITE out region` and
/// runs it: SRAM `[0, image.len())` is loaded from the DRAM image (base 0), the
/// compute instruction runs, and SRAM `[out_addr, out_addr + out_len)` comes back.
pub fn run_one(
    hw: &HwConfig,
    image: &[u8],
    compute: Instr,
    out_addr: u32,
    out_len: u32,
) -> Result<(Vec<u8>, RunResult), SimError> {
    let mut compute = compute;
    *compute.flags_mut() = FlagOps::new().wait(0).clear(0).set(1);
    let n = image.len() as u32;
    let instrs = vec![
        Instr::DmaRead(dma(1, n, 0, 0, 0, 0, FlagOps::new().set(0))),
        compute,
        Instr::DmaWrite(dma(
            1,
            out_len,
            u64::from(n),
            0,
            out_addr,
            0,
            FlagOps::new().wait(1).clear(1),
        )),
        Instr::Stop(Stop::default()),
    ];
    let prog = one_output_program(hw, instrs, image, u64::from(n), out_len);
    let r = run(
        &prog,
        &[],
        &RunOptions {
            schedule: Schedule::Eager,
            hw: None,
        },
    )?;
    Ok((r.outputs[0].data.clone(), r))
}

/// A program of `instrs` on `hw` whose DRAM image is `image` (base 0) and whose one
/// output, "out", is `out_len` int8 codes at DRAM `out_dram`.
pub fn one_output_program(
    hw: &HwConfig,
    instrs: Vec<Instr>,
    image: &[u8],
    out_dram: u64,
    out_len: u32,
) -> Program {
    Program {
        instrs,
        dram: DramImage {
            base: 0,
            bytes: image.to_vec().into(),
        },
        io: vec![IoDesc {
            name: "out".into(),
            dir: IoDir::Output,
            dtype: IoDtype::Int8,
            shape: vec![out_len],
            dram_addr: out_dram,
            layout: IoLayout::Dense,
            scale: 1.0,
            zero_point: 0,
        }],
        host_ops: None,
        layers: None,
        body_start: None,
        meta: Metadata {
            hw: hw.clone(),
            ..Metadata::default()
        },
    }
}

/// Writes `bytes` at `addr` of a growable SRAM image.
pub fn put(image: &mut Vec<u8>, addr: usize, bytes: &[u8]) {
    if image.len() < addr + bytes.len() {
        image.resize(addr + bytes.len(), 0);
    }
    image[addr..addr + bytes.len()].copy_from_slice(bytes);
}

/// Packs `w[oc][ic][ky][kx]` (flattened) into the docs/ISA.md weight layout for the
/// tile `oc_start .. oc_start+oc_count`, `cols` channels per group.
#[allow(clippy::too_many_arguments)]
pub fn pack_weights(
    w: &[i8],
    out_c: usize,
    icpg: usize,
    kh: usize,
    kw: usize,
    oc_start: usize,
    oc_count: usize,
    cols: usize,
) -> Vec<u8> {
    let k = icpg * kh * kw;
    let q0 = oc_start / cols;
    let q1 = (oc_start + oc_count - 1) / cols;
    let mut out = vec![0u8; (q1 - q0 + 1) * k * cols];
    for q in q0..=q1 {
        for t in 0..k {
            for j in 0..cols {
                let oc = q * cols + j;
                if oc < out_c {
                    out[(q - q0) * k * cols + t * cols + j] = w[oc * k + t] as u8;
                }
            }
        }
    }
    out
}

/// Plain requantization: FUSED_RELU written out from docs/ISA.md section 7.
pub fn requant(acc: i64, mult: i32, shift: u32, zp: i32, lo: i32, hi: i32, signed: bool) -> u8 {
    let p = i128::from(acc) * i128::from(mult);
    let r = if shift == 0 {
        p
    } else {
        (p + (1i128 << (shift - 1))) >> shift
    };
    let y = (r + i128::from(zp)).max(i128::from(lo)).min(i128::from(hi));
    let y = y.clamp(i32::MIN as i128, i32::MAX as i128) as i64;
    if signed {
        y.clamp(-128, 127) as i8 as u8
    } else {
        y.clamp(0, 255) as u8
    }
}

/// Wrap to 30 bits as docs/ISA.md section 6 states.
pub fn wrap30(v: i64) -> i64 {
    (v + (1 << 29)).rem_euclid(1 << 30) - (1 << 29)
}

pub fn fused_relu(mult: i32, shift: u32, zp: i16, lo: i16, hi: i16) -> SimdInstr {
    SimdInstr::FusedRelu(Requant {
        dst: 0,
        src: 0,
        per_channel: false,
        shift,
        act_min: lo,
        act_max: hi,
        zero_point: zp,
        multiplier: mult,
    })
}

pub fn per_channel_relu(zp: i16, lo: i16, hi: i16) -> SimdInstr {
    SimdInstr::FusedRelu(Requant {
        dst: 0,
        src: 0,
        per_channel: true,
        shift: 0,
        act_min: lo,
        act_max: hi,
        zero_point: zp,
        multiplier: 0,
    })
}

pub fn chan_entry(c: [i32; 4]) -> [u8; 16] {
    ChanParams(c).to_bytes()
}

/// A 1x1 convolution 4x4x8 -> 4x4x8 (signed, FusedReLU requantization), weights at
/// `w` (64 bytes), input and output 128 bytes each.
pub fn conv4x4x8(input: u32, w: u32, out: u32, flags: FlagOps) -> Instr {
    Instr::Conv(DotProduct {
        flags,
        simd: vec![fused_relu(1 << 30, 33, 0, -128, 127)],
        in_addr: input,
        w_addr: w,
        out_addr: out,
        in_h: 4,
        in_w: 4,
        in_c: 8,
        out_h: 4,
        out_w: 4,
        out_c: 8,
        in_row_pitch: 32,
        in_pix_pitch: 8,
        out_row_pitch: 32,
        out_pix_pitch: 8,
        in_chan_pitch: 1,
        out_chan_pitch: 1,
        pix_count: 16,
        oc_count: 8,
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
    })
}
