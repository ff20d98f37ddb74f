//! Dot products that read the same input pixels one after the other reuse the first
//! one's gathered patches (`exec::patch_cache`); a write into that input between them
//! must make the second one gather again.

mod common;
use common::*;
use nnac_isa::*;
use nnac_runtime_sim::{run, RunOptions, Schedule};

const INPUT: u32 = 0x000;
const WEIGHTS: u32 = 0x100;
const OUT_A: u32 = 0x200;
const OUT_B: u32 = 0x280;
/// The image is loaded at SRAM 0; the replacement input lies in DRAM after it.
const IMAGE_LEN: u32 = 0x180;
const NEW_INPUT_DRAM: u64 = 0x180;
const OUT_DRAM: u64 = 0x400;

fn flags() -> FlagOps {
    FlagOps::new()
}

/// Input codes at INPUT, weights at WEIGHTS (the image's first 0x180 bytes), and the
/// replacement input after them.
fn image(seed: u64) -> (Vec<u8>, Vec<u8>) {
    let mut rng = Lcg(seed);
    let mut image = rng.bytes(IMAGE_LEN as usize);
    let new_input = rng.bytes(128);
    image.extend_from_slice(&new_input);
    (image, new_input)
}

/// Runs `conv(OUT_A)`, then a DMA that overwrites the input when `overwrite`, then
/// `conv(OUT_B)`; returns both outputs.
fn two_convs(image: &[u8], overwrite: bool, schedule: Schedule) -> (Vec<u8>, Vec<u8>) {
    let mut instrs = vec![
        Instr::DmaRead(dma(1, IMAGE_LEN, 0, 0, 0, 0, flags().set(0))),
        conv4x4x8(INPUT, WEIGHTS, OUT_A, flags().wait(0).clear(0).set(1)),
    ];
    if overwrite {
        instrs.push(Instr::DmaRead(dma(
            1,
            128,
            NEW_INPUT_DRAM,
            0,
            INPUT,
            0,
            flags().wait(1).clear(1).set(2),
        )));
        instrs.push(conv4x4x8(
            INPUT,
            WEIGHTS,
            OUT_B,
            flags().wait(2).clear(2).set(3),
        ));
    } else {
        instrs.push(conv4x4x8(
            INPUT,
            WEIGHTS,
            OUT_B,
            flags().wait(1).clear(1).set(3),
        ));
    }
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

#[test]
fn a_write_into_the_input_between_two_convolutions_is_seen_by_the_second() {
    for seed in [1, 2, 3] {
        let (image, new_input) = image(seed);
        let mut replaced = image[..IMAGE_LEN as usize].to_vec();
        replaced[..128].copy_from_slice(&new_input);
        let before = one_conv(&image[..IMAGE_LEN as usize]);
        let after = one_conv(&replaced);
        assert_ne!(
            before, after,
            "seed {seed}: the new input must change the output"
        );
        for schedule in [Schedule::Eager, Schedule::Serial, Schedule::Random { seed }] {
            let (a, b) = two_convs(&image, true, schedule);
            assert_eq!(a, before, "seed {seed} {schedule:?}: first convolution");
            assert_eq!(b, after, "seed {seed} {schedule:?}: second, after the DMA");
            let (a, b) = two_convs(&image, false, schedule);
            assert_eq!(
                (&a, &b),
                (&before, &before),
                "seed {seed} {schedule:?}: reuse"
            );
        }
    }
}
