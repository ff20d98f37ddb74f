//! Throughput of the simulator's i16 pair kernel (`exec::gemm`, any x86-64 with AVX2)
//! on its own, on the blocks ResNet-50's tiles give each of two threads (48 of a
//! 96-pixel tile's pixels, 25 of a 7 x 7 plane's 49; 96 channels; K = 64..4608
//! terms). Prints GMAC/s per thread, the number to hold against the CPU's peak
//! (docs/PERFORMANCE.md 9): on converted weights (what a session keeps across
//! frames) with one tile's weights reused (hot in the caches) and cycling through
//! 64 MiB of them (every call streams its weights from memory, as a frame does), and
//! on codes read in place (what an instruction executed once uses), streaming.
//!
//! `cargo bench -p nnac-runtime-sim --bench kernels`

use nnac_runtime_sim::exec::gemm::{gemm, pack_pair, padded_len, PairWeights, Weights};
use nnac_runtime_sim::exec::weights::CodeLayout;
use std::time::Instant;

/// A reproducible value in -128..=127.
fn value(seed: &mut u32) -> i16 {
    *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    ((*seed >> 16) % 256) as i16 - 128
}

/// A tile's int8 weight codes as SRAM holds a 96-channel group's (term `kk`'s
/// vector of `cols` bytes at `kk * cols`), and converted into pairs.
struct Tile {
    codes: Vec<u8>,
    pairs: PairWeights,
}

fn tile(cols: usize, kpad: usize, seed: &mut u32) -> Tile {
    let codes: Vec<u8> = (0..kpad * cols).map(|_| value(seed) as u8).collect();
    let mut pairs = PairWeights::zeroed(cols, kpad, true);
    for k2 in 0..kpad / 2 {
        for c in 0..cols {
            let (lo, hi) = (codes[2 * k2 * cols + c], codes[(2 * k2 + 1) * cols + c]);
            pairs.data[k2 * pairs.ld + c] = pack_pair(lo, hi);
        }
    }
    Tile { codes, pairs }
}

/// Best GMAC/s of `rows` pixels x `cols` channels over the tiles in turn, on their
/// converted pairs or (`in_place`) their codes.
fn gmacs(a: &[i16], rows: usize, tiles: &[Tile], cols: usize, in_place: bool) -> f64 {
    let kpad = tiles[0].pairs.kpad;
    let term = (0..kpad).map(|kk| Some(kk * cols)).collect();
    let layout = CodeLayout::new(term, (0..cols).collect(), true);
    let mut out = vec![0i32; rows * cols];
    let macs = (rows * cols * kpad) as f64;
    let reps = ((5e8 / macs).ceil() as usize).max(tiles.len());
    let mut best = f64::INFINITY;
    for _ in 0..15 {
        let t = Instant::now();
        for i in 0..reps {
            let t = &tiles[i % tiles.len()];
            let w = match in_place {
                true => Weights::Codes(&layout, &t.codes),
                false => Weights::Pairs(&t.pairs),
            };
            gemm(a, rows, w, 0, cols, &mut out, cols);
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
    println!("                      converted: hot  streaming   in place: streaming");
    for (rows, k) in shapes {
        let kpad = padded_len(k);
        let a: Vec<i16> = (0..rows * kpad).map(|_| value(&mut seed)).collect();
        let one = [tile(cols, kpad, &mut seed)];
        let hot = gmacs(&a, rows, &one, cols, false);
        let bytes = one[0].codes.len() + std::mem::size_of_val(&one[0].pairs.data[..]);
        let many: Vec<Tile> = (0..(64usize << 20).div_ceil(bytes))
            .map(|_| tile(cols, kpad, &mut seed))
            .collect();
        let streaming = gmacs(&a, rows, &many, cols, false);
        let in_place = gmacs(&a, rows, &many, cols, true);
        println!("  {rows:>2} pixels, K = {k:>4}: {hot:>15.1} {streaming:>10.1} {in_place:>20.1}");
    }
}
