//! Single-precision matrix multiplication: `C += alpha * A * B`.
//!
//! The large-`m` path is a Goto-style blocked GEMM: `A` is packed into strips of
//! [`MR`] rows and `B` into strips of [`NR`] columns (both zero-padded), and a
//! register-blocked `MR x NR` micro-kernel runs over `KC`-deep slices of them so the
//! `B` strip stays in L1 and the `A` block in L2. The micro-kernel is plain Rust that
//! LLVM vectorises; on x86-64 it is compiled a second time with AVX2+FMA enabled and
//! picked at run time. Row blocks of `C` run in parallel on rayon.
//!
//! Products with fewer than `MR` rows (fully connected layers on one frame) use a
//! dot-product or axpy formulation instead, which reads `B` once and wastes no work
//! on padding.
//!
//! Producers that can write `B` directly in packed form (im2col) build a [`PackedB`]
//! with [`PackedB::from_strips`] and skip a copy.

use rayon::prelude::*;

/// Rows of the micro-kernel tile.
pub const MR: usize = 6;
/// Columns of the micro-kernel tile (two AVX registers).
pub const NR: usize = 16;
/// Depth of one cache block.
const KC: usize = 256;
/// Largest row block handed to one task.
const MC_MAX: usize = 96;

/// A read-only strided matrix view: element `(r, c)` is `data[r * rs + c * cs]`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a> MatRef<'a> {
    /// A contiguous row-major matrix.
    pub fn row_major(data: &'a [f32], rows: usize, cols: usize) -> Self {
        MatRef {
            data,
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }

    /// The transposed view (no copy).
    pub fn t(self) -> Self {
        MatRef {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }

    #[inline]
    fn at(&self, r: usize, c: usize) -> f32 {
        self.data[r * self.rs + c * self.cs]
    }
}

/// `A` packed into `ceil(m / MR)` strips; strip `i` holds, for each `kk`, the `MR`
/// values `A[i * MR + r][kk]` (zero past the last row).
pub struct PackedA {
    m: usize,
    k: usize,
    data: Vec<f32>,
}

impl PackedA {
    /// Packs `alpha * a`.
    pub fn pack(a: MatRef<'_>, alpha: f32) -> Self {
        let (m, k) = (a.rows, a.cols);
        let mut data = vec![0.0f32; m.div_ceil(MR) * MR * k];
        if k > 0 {
            data.par_chunks_mut(MR * k)
                .enumerate()
                .for_each(|(s, strip)| {
                    let r0 = s * MR;
                    let rows = MR.min(m - r0);
                    for (kk, lane) in strip.chunks_exact_mut(MR).enumerate() {
                        for (r, v) in lane[..rows].iter_mut().enumerate() {
                            *v = alpha * a.at(r0 + r, kk);
                        }
                    }
                });
        }
        PackedA { m, k, data }
    }

    fn strip(&self, s: usize) -> &[f32] {
        &self.data[s * MR * self.k..(s + 1) * MR * self.k]
    }
}

/// `B` packed into `ceil(n / NR)` strips; strip `j` holds, for each `kk`, the `NR`
/// values `B[kk][j * NR + c]` (zero past the last column).
pub struct PackedB {
    k: usize,
    n: usize,
    data: Vec<f32>,
}

impl PackedB {
    /// Builds the packed form strip by strip (in parallel): `fill(j, strip)` writes
    /// strip `j` (`k * NR` values, zero-initialised) for columns `j*NR..`.
    pub fn from_strips(k: usize, n: usize, fill: impl Fn(usize, &mut [f32]) + Sync) -> Self {
        let mut data = vec![0.0f32; n.div_ceil(NR) * NR * k];
        if k > 0 {
            data.par_chunks_mut(NR * k)
                .enumerate()
                .for_each(|(j, strip)| fill(j, strip));
        }
        PackedB { k, n, data }
    }

    pub fn pack(b: MatRef<'_>) -> Self {
        PackedB::from_strips(b.rows, b.cols, |j, strip| {
            let c0 = j * NR;
            let cols = NR.min(b.cols - c0);
            for (kk, lane) in strip.chunks_exact_mut(NR).enumerate() {
                if b.cs == 1 {
                    let start = kk * b.rs + c0;
                    lane[..cols].copy_from_slice(&b.data[start..start + cols]);
                } else {
                    for (c, v) in lane[..cols].iter_mut().enumerate() {
                        *v = b.at(kk, c0 + c);
                    }
                }
            }
        })
    }

    fn strip(&self, j: usize) -> &[f32] {
        &self.data[j * NR * self.k..(j + 1) * NR * self.k]
    }
}

/// `c` (`m x n`, row-major, contiguous) `+= alpha * a * b`.
pub fn matmul_acc(a: MatRef<'_>, b: MatRef<'_>, c: &mut [f32], alpha: f32) {
    debug_assert_eq!(a.cols, b.rows);
    debug_assert_eq!(c.len(), a.rows * b.cols);
    if a.rows < MR {
        small_m(a, b, c, alpha);
    } else {
        gemm_packed(&PackedA::pack(a, alpha), &PackedB::pack(b), c);
    }
}

/// `c` (`m x n`, row-major) `+= A * B` for packed operands.
pub fn gemm_packed(a: &PackedA, b: &PackedB, c: &mut [f32]) {
    assert!(
        a.k == b.k && c.len() == a.m * b.n,
        "gemm operands do not match"
    );
    let (m, n) = (a.m, b.n);
    if m == 0 || n == 0 || a.k == 0 {
        return;
    }
    let mc = row_block(m);
    c.par_chunks_mut(mc * n)
        .enumerate()
        .for_each(|(blk, cblk)| {
            block(a, b, cblk, blk * mc / MR);
        });
}

/// Rows per task: a multiple of `MR`, small enough to give every thread several
/// tasks, at most `MC_MAX` so the packed `A` block stays in L2.
fn row_block(m: usize) -> usize {
    let tasks = 2 * rayon::current_num_threads().max(1);
    m.div_ceil(tasks).div_ceil(MR).clamp(1, MC_MAX / MR) * MR
}

/// One row block of `C`, starting at `A` strip `s0`.
fn block(a: &PackedA, b: &PackedB, c: &mut [f32], s0: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        unsafe { block_avx2_fma(a, b, c, s0) };
        return;
    }
    block_generic::<Separate>(a, b, c, s0);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2_fma(a: &PackedA, b: &PackedB, c: &mut [f32], s0: usize) {
    block_generic::<Fused>(a, b, c, s0);
}

/// How the micro-kernel forms `a * b + c`.
trait MulAdd {
    fn mul_add(a: f32, b: f32, c: f32) -> f32;
}

/// A fused multiply-add instruction (only used where FMA is enabled).
struct Fused;
impl MulAdd for Fused {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

/// A multiply then an add (portable).
struct Separate;
impl MulAdd for Separate {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
}

#[inline(always)]
fn block_generic<F: MulAdd>(a: &PackedA, b: &PackedB, c: &mut [f32], s0: usize) {
    let n = b.n;
    let rows = c.len() / n;
    let strips = rows.div_ceil(MR);
    let k = a.k;
    for pc in (0..k).step_by(KC) {
        let kc = KC.min(k - pc);
        for j in 0..n.div_ceil(NR) {
            let bs = &b.strip(j)[pc * NR..(pc + kc) * NR];
            let c0 = j * NR;
            let cols = NR.min(n - c0);
            for s in 0..strips {
                let as_ = &a.strip(s0 + s)[pc * MR..(pc + kc) * MR];
                let acc = micro_kernel::<F>(as_, bs);
                let r0 = s * MR;
                for (r, acc_row) in acc.iter().enumerate().take(MR.min(rows - r0)) {
                    let crow = &mut c[(r0 + r) * n + c0..(r0 + r) * n + c0 + cols];
                    for (cv, av) in crow.iter_mut().zip(acc_row) {
                        *cv += av;
                    }
                }
            }
        }
    }
}

/// `sum_kk a[kk][0..MR]^T x b[kk][0..NR]` over one `KC` slice.
#[inline(always)]
fn micro_kernel<F: MulAdd>(a: &[f32], b: &[f32]) -> [[f32; NR]; MR] {
    let mut acc = [[0.0f32; NR]; MR];
    for (ak, bk) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        let ak: &[f32; MR] = ak.try_into().expect("chunk of MR");
        let bk: &[f32; NR] = bk.try_into().expect("chunk of NR");
        for i in 0..MR {
            let ai = ak[i];
            for j in 0..NR {
                acc[i][j] = F::mul_add(ai, bk[j], acc[i][j]);
            }
        }
    }
    acc
}

/// Few rows: per row of `A`, either dot products against the columns of `B` (when
/// `B`'s columns are contiguous, e.g. a transposed FC weight) or axpy updates with
/// the rows of `B`.
fn small_m(a: MatRef<'_>, b: MatRef<'_>, c: &mut [f32], alpha: f32) {
    let (k, n) = (a.cols, b.cols);
    for (i, crow) in c.chunks_exact_mut(n.max(1)).enumerate().take(a.rows) {
        let arow: Vec<f32> = (0..k).map(|kk| alpha * a.at(i, kk)).collect();
        if b.rs == 1 && n > 1 {
            crow.par_iter_mut()
                .enumerate()
                .with_min_len(16)
                .for_each(|(j, cv)| {
                    let col = &b.data[j * b.cs..j * b.cs + k];
                    *cv += dot(&arow, col);
                });
        } else {
            let chunk = 256;
            crow.par_chunks_mut(chunk)
                .enumerate()
                .for_each(|(cj, cpart)| {
                    let j0 = cj * chunk;
                    for (kk, &av) in arow.iter().enumerate() {
                        if b.cs == 1 {
                            let brow = &b.data[kk * b.rs + j0..kk * b.rs + j0 + cpart.len()];
                            for (cv, bv) in cpart.iter_mut().zip(brow) {
                                *cv += av * bv;
                            }
                        } else {
                            for (jj, cv) in cpart.iter_mut().enumerate() {
                                *cv += av * b.at(kk, j0 + jj);
                            }
                        }
                    }
                });
        }
    }
}

/// A dot product with eight independent partial sums (vectorisable).
pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    const L: usize = 8;
    let mut acc = [0.0f32; L];
    let (xc, yc) = (x.chunks_exact(L), y.chunks_exact(L));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (xs, ys) in xc.zip(yc) {
        for l in 0..L {
            acc[l] += xs[l] * ys[l];
        }
    }
    let tail: f32 = xr.iter().zip(yr).map(|(a, b)| a * b).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::{assert_close, Rng};

    fn naive(a: MatRef<'_>, b: MatRef<'_>, alpha: f32) -> Vec<f32> {
        let mut c = vec![0.0f32; a.rows * b.cols];
        for i in 0..a.rows {
            for j in 0..b.cols {
                let mut s = 0.0f64;
                for kk in 0..a.cols {
                    s += a.at(i, kk) as f64 * b.at(kk, j) as f64;
                }
                c[i * b.cols + j] = alpha * s as f32;
            }
        }
        c
    }

    #[test]
    fn matches_naive_for_many_shapes_and_layouts() {
        let mut rng = Rng::new(7);
        let shapes = [
            (1, 1, 1),
            (1, 300, 17),
            (5, 9, 33),
            (6, 16, 16),
            (7, 300, 18),
            (13, 1, 40),
            (64, 147, 50),
            (100, 513, 37),
        ];
        for &(m, k, n) in &shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let ad = rng.vec(m * k);
                let bd = rng.vec(k * n);
                let a = if ta {
                    MatRef::row_major(&ad, k, m).t()
                } else {
                    MatRef::row_major(&ad, m, k)
                };
                let b = if tb {
                    MatRef::row_major(&bd, n, k).t()
                } else {
                    MatRef::row_major(&bd, k, n)
                };
                let init = rng.vec(m * n);
                let mut c = init.clone();
                matmul_acc(a, b, &mut c, 0.5);
                let want: Vec<f32> = naive(a, b, 0.5)
                    .iter()
                    .zip(&init)
                    .map(|(x, y)| x + y)
                    .collect();
                assert_close(
                    &c,
                    &want,
                    1e-4,
                    &format!("m={m} k={k} n={n} ta={ta} tb={tb}"),
                );
            }
        }
    }

    #[test]
    fn packed_b_from_strips_equals_pack() {
        let mut rng = Rng::new(3);
        let (k, n) = (11, 37);
        let bd = rng.vec(k * n);
        let b = MatRef::row_major(&bd, k, n);
        let p1 = PackedB::pack(b);
        let p2 = PackedB::from_strips(k, n, |j, strip| {
            for kk in 0..k {
                for c in 0..NR.min(n - j * NR) {
                    strip[kk * NR + c] = bd[kk * n + j * NR + c];
                }
            }
        });
        assert_eq!(p1.data, p2.data);
    }

    #[test]
    fn dot_handles_remainders() {
        let x: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let want: f32 = x.iter().map(|v| v * v).sum();
        assert_eq!(dot(&x, &x), want);
    }
}
