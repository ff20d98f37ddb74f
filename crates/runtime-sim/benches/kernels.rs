//! Throughput of the simulator's i16 pair kernel (`exec::gemm`, any x86-64 with AVX2)
//! on its own, on the blocks ResNet-50's tiles give each of two threads (48 of a
//! 96-pixel tile's pixels, 25 of a 7 x 7 plane's 49; 96 channels; K = 64..4608
//! terms). Prints GMAC/s per thread, the number to hold against the CPU's peak
//! (docs/PERFORMANCE.md 9), twice: with one tile's weights reused (hot in the
//! caches) and cycling through 64 MiB of them (every call streams its weights from
//! memory, as a frame does).
//!
//! `cargo bench -p nnac-runtime-sim --bench kernels`

use nnac_runtime_sim::exec::gemm::{gemm, pack_pair, padded_len, PairWeights};
use std::time::Instant;

/// A reproducible value in -128..=127.
fn value(seed: &mut u32) -> i16 {
    *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    ((*seed >> 16) % 256) as i16 - 128
}

/// Random int8 weight codes for `cols` channels and `kpad` terms.
fn weights(cols: usize, kpad: usize, seed: &mut u32) -> PairWeights {
    let mut w = PairWeights::zeroed(cols, kpad, true);
    for pair in w.data.iter_mut() {
        *pair = pack_pair(value(seed) as u8, value(seed) as u8);
    }
    w
}

/// Best GMAC/s of `rows` pixels x `cols` channels over the weight sets in turn.
fn gmacs(a: &[i16], rows: usize, ws: &[PairWeights], cols: usize) -> f64 {
    let mut out = vec![0i32; rows * cols];
    let macs = (rows * cols * ws[0].kpad) as f64;
    let reps = ((5e8 / macs).ceil() as usize).max(ws.len());
    let mut best = f64::INFINITY;
    for _ in 0..15 {
        let t = Instant::now();
        for i in 0..reps {
            gemm(a, rows, &ws[i % ws.len()], 0, cols, &mut out, cols);
            std::hint::black_box(&mut out);
        }
        best = best.min(t.elapsed().as_secs_f64() / reps as f64);
    }
    macs / best / 1e9
}

fn main() {
    let cols = 96usize;
    let mut seed = 1u32;
    let shapes = [64usize, 256, 576, 1024, 2304, 4608]
        .map(|k| (48usize, k))
        .into_iter()
        .chain([(25, 512), (25, 4608)]);
    println!("pair kernel (i16), pixels x {cols} channels, GMAC/s per thread:");
    for (rows, k) in shapes {
        let kpad = padded_len(k);
        let a: Vec<i16> = (0..rows * kpad).map(|_| value(&mut seed)).collect();
        let w = weights(cols, kpad, &mut seed);
        let bytes = std::mem::size_of_val(&w.data[..]);
        let hot = gmacs(&a, rows, std::slice::from_ref(&w), cols);
        let cold: Vec<PairWeights> = (0..(64usize << 20).div_ceil(bytes))
            .map(|_| weights(cols, kpad, &mut seed))
            .collect();
        let cold = gmacs(&a, rows, &cold, cols);
        println!(
            "  {rows:>2} pixels, K = {k:>4}: {hot:>5.1} hot, {cold:>5.1} streaming its weights"
        );
    }
}
