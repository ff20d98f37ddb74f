//! ELTWISE's combine over runs of code bytes:
//! `out[i] = eltwise_combine(op, ta[a[i]], tb[b[i]])`, where `ta` / `tb` tabulate each
//! input's rescale ([`nnac_isa::arith::eltwise_rescale`]) by code byte. On x86-64 with
//! AVX2 eight table entries are gathered at a time (`vpgatherdd`) and combined in
//! 64-bit lanes: the entries are i32, so the i64 sum, product (`vpmuldq`) and maximum
//! of two are the exact values the definition gives.

use nnac_isa::arith::{code_value, eltwise_combine, eltwise_rescale};
use nnac_isa::{EltOp, Eltwise};

/// An input's rescaled value for each of the 256 code bytes.
pub type RescaleTable = [i32; 256];

/// One ELTWISE input's rescale parameters: a code byte's rescaled value is
/// `eltwise_rescale(code_value(code, signed), zero, mult, shift)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rescale {
    pub signed: bool,
    pub zero: i32,
    pub mult: i32,
    pub shift: u32,
}

impl Rescale {
    /// The rescales of an instruction's inputs A and B.
    pub fn of(e: &Eltwise) -> [Rescale; 2] {
        [
            Rescale {
                signed: e.a_signed,
                zero: i32::from(e.a_zero),
                mult: e.a_mult,
                shift: e.a_shift,
            },
            Rescale {
                signed: e.b_signed,
                zero: i32::from(e.b_zero),
                mult: e.b_mult,
                shift: e.b_shift,
            },
        ]
    }

    /// The rescaled value of every code byte (it depends on nothing else).
    pub fn table(&self) -> RescaleTable {
        std::array::from_fn(|b| {
            let code = code_value(b as u8, self.signed);
            eltwise_rescale(code, self.zero, self.mult, self.shift)
        })
    }

    /// [`Rescale::table`], taken from the last few this thread made where one of them
    /// is of the same rescale (the tiles of one ELTWISE layer share their inputs').
    pub fn recent_table(&self) -> RescaleTable {
        /// Rescales remembered per thread.
        const KEEP: usize = 4;
        thread_local! {
            static RECENT: std::cell::RefCell<Vec<(Rescale, RescaleTable)>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        RECENT.with(|recent| {
            let mut recent = recent.borrow_mut();
            if let Some((_, t)) = recent.iter().find(|(r, _)| r == self) {
                return *t;
            }
            let t = self.table();
            if recent.len() == KEEP {
                recent.remove(0);
            }
            recent.push((*self, t));
            t
        })
    }
}

/// `out[i] = eltwise_combine(op, ta[a[i]], tb[b[i]])` for `i < out.len()`
/// (`a` and `b` at least as long).
pub fn combine_codes(
    op: EltOp,
    (ta, tb): (&RescaleTable, &RescaleTable),
    a: &[u8],
    b: &[u8],
    out: &mut [i64],
) {
    assert!(a.len() >= out.len() && b.len() >= out.len());
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available (checked just above); the assert above bounds
            // the reads of `a` and `b`, every gather index is a byte (< 256 entries).
            unsafe { avx2::combine(op, (ta, tb), a, b, out) };
            return;
        }
    }
    portable(op, (ta, tb), a, b, out);
}

/// The definition, value by value.
fn portable(
    op: EltOp,
    (ta, tb): (&RescaleTable, &RescaleTable),
    a: &[u8],
    b: &[u8],
    out: &mut [i64],
) {
    for (o, (&va, &vb)) in out.iter_mut().zip(a.iter().zip(b)) {
        *o = eltwise_combine(op, ta[usize::from(va)], tb[usize::from(vb)]);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{portable, RescaleTable};
    use nnac_isa::EltOp;
    use std::arch::x86_64::*;

    /// Eight entries of `table` at the code bytes `codes[..8]`.
    #[target_feature(enable = "avx2")]
    unsafe fn gather8(table: &RescaleTable, codes: &[u8]) -> __m256i {
        let idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(codes.as_ptr() as *const __m128i));
        _mm256_i32gather_epi32::<4>(table.as_ptr(), idx)
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn combine(
        op: EltOp,
        (ta, tb): (&RescaleTable, &RescaleTable),
        a: &[u8],
        b: &[u8],
        out: &mut [i64],
    ) {
        let full = out.len() / 8 * 8;
        for i in (0..full).step_by(8) {
            let (va, vb) = (gather8(ta, &a[i..i + 8]), gather8(tb, &b[i..i + 8]));
            // The four low and the four high entries, sign-extended to i64 lanes.
            let halves = [
                (_mm256_castsi256_si128(va), _mm256_castsi256_si128(vb)),
                (
                    _mm256_extracti128_si256::<1>(va),
                    _mm256_extracti128_si256::<1>(vb),
                ),
            ];
            for (h, (xa, xb)) in halves.into_iter().enumerate() {
                let (wa, wb) = (_mm256_cvtepi32_epi64(xa), _mm256_cvtepi32_epi64(xb));
                let v = match op {
                    EltOp::Add => _mm256_add_epi64(wa, wb),
                    // The signed product of the low 32 bits of each lane: exact.
                    EltOp::Mul => _mm256_mul_epi32(wa, wb),
                    EltOp::Max => _mm256_blendv_epi8(wa, wb, _mm256_cmpgt_epi64(wb, wa)),
                };
                let dst = out[i + 4 * h..i + 4 * h + 4].as_mut_ptr();
                _mm256_storeu_si256(dst as *mut __m256i, v);
            }
        }
        portable(op, (ta, tb), &a[full..], &b[full..], &mut out[full..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::arith::eltwise_rescale;

    #[test]
    fn recent_tables_are_the_tables() {
        // More rescales than are remembered, asked again in another order.
        let rescales: Vec<Rescale> = (0..7)
            .map(|i| Rescale {
                signed: i % 2 == 0,
                zero: i - 3,
                mult: 300_000_007 * (i + 1),
                shift: 20 + i as u32,
            })
            .collect();
        for r in rescales
            .iter()
            .chain(rescales.iter().rev())
            .chain(&rescales[2..4])
        {
            assert_eq!(r.recent_table(), r.table(), "{r:?}");
        }
    }

    /// Every pair of code bytes, for tables at the i32 edges and ordinary ones.
    #[test]
    fn equals_the_definition_for_every_code_pair() {
        let table = |zero: i32, mult: i32, shift: u32| -> RescaleTable {
            std::array::from_fn(|c| eltwise_rescale(c as i32 - 128, zero, mult, shift))
        };
        let tables = [
            table(3, 1 << 20, 11),
            table(-128, i32::MAX, 0),
            table(-128, i32::MIN, 0),
            table(0, -977_123, 30),
            std::array::from_fn(|c| [i32::MIN, i32::MAX, -1, 0][c % 4]),
        ];
        let a: Vec<u8> = (0..=255u8).flat_map(|x| [x; 256]).collect();
        let b: Vec<u8> = (0..256).flat_map(|_| 0..=255u8).collect();
        for op in [EltOp::Add, EltOp::Mul, EltOp::Max] {
            for ta in &tables {
                for tb in &tables {
                    // Lengths not a multiple of eight leave a tail to the portable loop.
                    for n in [a.len(), 8 * 1000 + 5, 7] {
                        let mut got = vec![0i64; n];
                        combine_codes(op, (ta, tb), &a, &b, &mut got);
                        let mut want = vec![0i64; n];
                        portable(op, (ta, tb), &a, &b, &mut want);
                        assert_eq!(got, want, "{op:?} n={n}");
                    }
                }
            }
        }
        assert_eq!(tables[1][255], i32::MAX);
        assert_eq!(tables[2][255], i32::MIN);
    }
}
