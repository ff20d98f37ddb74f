//! What the engine keeps from one dot product for the next: input patches
//! (`exec::patch_cache`, reused by an instruction that reads the same input pixels)
//! and converted weights (`exec::weight_cache`, shared by instructions that read the
//! same weights). A write into the input or the weights between two convolutions must
//! make the second one gather or convert again.

mod common;
use common::*;
use nnac_isa::*;
use nnac_runtime_sim::{run, RunOptions, Schedule};

const INPUT: u32 = 0x000;
const WEIGHTS: u32 = 0x100;
const OUT_A: u32 = 0x200;
const OUT_B: u32 = 0x280;
/// The image is loaded at SRAM 0; the replacement bytes lie in DRAM after it.
const IMAGE_LEN: u32 = 0x180;
const NEW_BYTES_DRAM: u64 = 0x180;
const OUT_DRAM: u64 = 0x400;

fn flags() -> FlagOps {
    FlagOps::new()
}

/// Input codes at INPUT, weights at WEIGHTS (the image's first 0x180 bytes), and 64
/// replacement bytes after them.
fn image(seed: u64) -> (Vec<u8>, Vec<u8>) {
    let mut rng = Lcg(seed);
    let mut image = rng.bytes(IMAGE_LEN as usize);
    let new_bytes = rng.bytes(64);
    image.extend_from_slice(&new_bytes);
    (image, new_bytes)
}

/// Runs `conv(OUT_A)`, then a DMA that copies the replacement bytes to `overwrite`
/// (SRAM) if given, then `conv(OUT_B)`; returns both outputs.
fn two_convs(image: &[u8], overwrite: Option<u32>, schedule: Schedule) -> (Vec<u8>, Vec<u8>) {
    let mut instrs = vec![
        Instr::DmaRead(dma(1, IMAGE_LEN, 0, 0, 0, 0, flags().set(0))),
        conv4x4x8(INPUT, WEIGHTS, OUT_A, flags().wait(0).clear(0).set(1)),
    ];
    // The second convolution waits for the DMA if there is one, else for the first.
    let mut ready = 1;
    if let Some(at) = overwrite {
        instrs.push(Instr::DmaRead(dma(
            1,
            64,
            NEW_BYTES_DRAM,
            0,
            at,
            0,
            flags().wait(1).clear(1).set(2),
        )));
        ready = 2;
    }
    instrs.push(conv4x4x8(
        INPUT,
        WEIGHTS,
        OUT_B,
        flags().wait(ready).clear(ready).set(3),
    ));
    instrs.push(Instr::DmaWrite(dma(
        1,
        0x100,
        OUT_DRAM,
        0,
        OUT_A,
        0,
        flags().wait(3).clear(3),
    )));
    instrs.push(Instr::Stop(Stop::default()));
    let prog = one_output_program(&small_hw(), instrs, image, OUT_DRAM, 0x100);
    let out = run(&prog, &[], &RunOptions { schedule, hw: None })
        .unwrap()
        .outputs
        .remove(0)
        .data;
    (out[..128].to_vec(), out[128..].to_vec())
}

/// The convolution alone on an SRAM holding `image`.
fn one_conv(image: &[u8]) -> Vec<u8> {
    run_one(
        &small_hw(),
        image,
        conv4x4x8(INPUT, WEIGHTS, OUT_A, flags()),
        OUT_A,
        128,
    )
    .unwrap()
    .0
}

/// The first convolution's output, and the second's after the 64 bytes at `at` are
/// replaced, each computed alone.
fn expected(seed: u64, at: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let (image, new_bytes) = image(seed);
    let mut replaced = image[..IMAGE_LEN as usize].to_vec();
    replaced[at..at + 64].copy_from_slice(&new_bytes);
    let before = one_conv(&image[..IMAGE_LEN as usize]);
    let after = one_conv(&replaced);
    assert_ne!(
        before, after,
        "seed {seed}: the new bytes must change the output"
    );
    (image, before, after)
}

#[test]
fn a_write_into_the_input_or_the_weights_between_two_convolutions_is_seen() {
    for seed in [1, 2, 3] {
        for at in [INPUT, INPUT + 64, WEIGHTS] {
            let (image, before, after) = expected(seed, at as usize);
            for schedule in [Schedule::Eager, Schedule::Serial, Schedule::Random { seed }] {
                let what = format!("seed {seed}, bytes at {at:#x}, {schedule:?}");
                let (a, b) = two_convs(&image, Some(at), schedule);
                assert_eq!(a, before, "{what}: first convolution");
                assert_eq!(b, after, "{what}: second, after the DMA");
                let (a, b) = two_convs(&image, None, schedule);
                assert_eq!((&a, &b), (&before, &before), "{what}: reuse");
            }
        }
    }
}
