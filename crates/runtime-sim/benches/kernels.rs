//! Throughput of the simulator's dot-product kernels on their own, on the tile shapes
//! ResNet-50 compiles to (96 pixels x 96 channels; K = 64..4608 terms): the pair
//! kernel (`exec::gemm`, i16 x i16, any x86-64 with AVX2) and, where the CPU has
//! AVX-512 VNNI, the byte kernel (`exec::quad`). Prints GMAC/s per thread, the
//! number to hold against the CPU's peak (docs/PERFORMANCE.md 9).
//!
//! `cargo bench -p nnac-runtime-sim --bench kernels`

use nnac_runtime_sim::exec::gemm::{gemm, padded_len, PairWeights};
use std::time::Instant;

/// A reproducible value in -128..=127.
fn value(seed: &mut u32) -> i16 {
    *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    ((*seed >> 16) % 256) as i16 - 128
}

fn main() {
    let cols = 96usize;
    let mut seed = 1u32;
    // 96-pixel tiles, and the 25-pixel half of a 7 x 7 plane's tile on two threads.
    let shapes = [64usize, 256, 576, 1024, 2304, 4608]
        .map(|k| (96usize, k))
        .into_iter()
        .chain([(25, 512), (25, 4608)]);
    println!("pair kernel (i16), pixels x {cols} channels:");
    for (rows, k) in shapes {
        let kpad = padded_len(k);
        let a: Vec<i16> = (0..rows * kpad).map(|_| value(&mut seed)).collect();
        let mut w = PairWeights::zeroed(cols, kpad);
        for word in w.data.iter_mut() {
            *word = (value(&mut seed) as u16 as u32) | ((value(&mut seed) as u16 as u32) << 16);
        }
        let mut out = vec![0i32; rows * cols];
        let macs = (rows * cols * kpad) as f64;
        let reps = (5e8 / macs).ceil() as usize;
        let mut best = f64::INFINITY;
        for _ in 0..15 {
            let t = Instant::now();
            for _ in 0..reps {
                gemm(&a, rows, &w, 0, cols, &mut out, cols);
                std::hint::black_box(&mut out);
            }
            best = best.min(t.elapsed().as_secs_f64() / reps as f64);
        }
        println!(
            "  {rows:>2} pixels, K = {k:>4}: {:>7.1} us per tile, {:>5.1} GMAC/s",
            best * 1e6,
            macs / best / 1e9
        );
    }
}
