//! Semantic rules of compute instructions beyond field ranges (docs/ISA.md section 5):
//! shapes, groups, pooling and tile bounds. Shared by the backend (to assert what it
//! emits) and the simulator (to refuse bad programs).

use crate::error::CheckError;
use crate::field::Fields;
use crate::hw::HwConfig;
use crate::instr::Instr;
use crate::layouts::{DotProduct, Eltwise, PoolKind, Scale};

/// Which dot-product instruction a [`DotProduct`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotKind {
    Conv,
    Deconv,
    InnerProduct,
}

fn span(
    stride: u32,
    pad_a: u32,
    pad_b: u32,
    dil: u32,
    k: u32,
    len: u32,
    deconv: bool,
) -> Option<u32> {
    let reach = dil * (k - 1) + 1;
    if deconv {
        ((len - 1) * stride + reach).checked_sub(pad_a + pad_b)
    } else {
        (len + pad_a + pad_b)
            .checked_sub(reach)
            .map(|v| v / stride + 1)
    }
}

impl DotProduct {
    /// The output height and width the input geometry implies, if any.
    pub fn expected_out_hw(&self, kind: DotKind) -> Option<(u32, u32)> {
        let deconv = kind == DotKind::Deconv;
        let h = span(
            self.stride_h,
            self.pad_top,
            self.pad_bottom,
            self.dil_h,
            self.kernel_h,
            self.in_h,
            deconv,
        )?;
        let w = span(
            self.stride_w,
            self.pad_left,
            self.pad_right,
            self.dil_w,
            self.kernel_w,
            self.in_w,
            deconv,
        )?;
        (h > 0 && w > 0).then_some((h, w))
    }

    /// Dot-product terms per output value: `in_c / groups * kernel_h * kernel_w` (the
    /// weight vectors of one channel group).
    pub fn k_terms(&self) -> u64 {
        u64::from(self.in_c / self.groups.max(1))
            * u64::from(self.kernel_h)
            * u64::from(self.kernel_w)
    }

    /// Bias and channel-parameter entries the tile reads: one per output channel, or
    /// with `params_by_pixel` one per output pixel.
    pub fn param_entries(&self) -> u32 {
        if self.params_by_pixel {
            self.pix_count
        } else {
            self.oc_count
        }
    }

    /// Height and width of the stored tensor (pooled when pooling is fused).
    pub fn stored_hw(&self) -> Option<(u32, u32)> {
        if self.pool == PoolKind::None {
            return Some((self.out_h, self.out_w));
        }
        let h = (self.out_h + self.pool_pad_top + self.pool_pad_bottom)
            .checked_sub(self.pool_win)?
            / self.pool_stride
            + 1;
        let w = (self.out_w + self.pool_pad_left + self.pool_pad_right)
            .checked_sub(self.pool_win)?
            / self.pool_stride
            + 1;
        Some((h, w))
    }

    /// Checks the rules of docs/ISA.md section 5 for this instruction (field ranges
    /// first, so no arithmetic below can overflow or divide by zero).
    pub fn check(&self, kind: DotKind) -> Result<(), CheckError> {
        self.check_ranges("CONV").map_err(CheckError::Field)?;
        self.check_pool_fields()?;
        if !self.in_c.is_multiple_of(self.groups) || !self.out_c.is_multiple_of(self.groups) {
            return Err(CheckError::Groups {
                in_c: self.in_c,
                out_c: self.out_c,
                groups: self.groups,
            });
        }
        if self.expected_out_hw(kind) != Some((self.out_h, self.out_w)) {
            return Err(CheckError::Geometry {
                out_h: self.out_h,
                out_w: self.out_w,
                expected: self.expected_out_hw(kind),
            });
        }
        check_tile(
            self.pix_start,
            self.pix_count,
            u64::from(self.out_h) * u64::from(self.out_w),
            "pixel",
        )?;
        check_tile(self.oc_start, self.oc_count, self.out_c.into(), "channel")?;
        if self.w_pitch != 0 && self.w_pitch < self.oc_count {
            return Err(CheckError::WeightPitch {
                w_pitch: self.w_pitch,
                oc_count: self.oc_count,
            });
        }
        let [i, o] = self.act_layouts()?;
        i.check("input")?;
        o.check("output")
    }

    /// The input and the stored output tensor.
    pub fn act_layouts(&self) -> Result<[ActLayout; 2], CheckError> {
        let (sh, sw) = self.stored_hw().ok_or(CheckError::PoolWindow)?;
        Ok([
            ActLayout::new(
                (self.in_h, self.in_w, self.in_c),
                self.in_addr,
                (self.in_row_pitch, self.in_pix_pitch, self.in_chan_pitch),
            ),
            ActLayout::new(
                (sh, sw, self.out_c),
                self.out_addr,
                (self.out_row_pitch, self.out_pix_pitch, self.out_chan_pitch),
            ),
        ])
    }

    fn check_pool_fields(&self) -> Result<(), CheckError> {
        match self.pool {
            PoolKind::None
                if self.pool_win != 0 || self.pool_stride != 0 || self.pool_pads() != 0 =>
            {
                Err(CheckError::PoolFieldsWithoutPool)
            }
            PoolKind::None => Ok(()),
            _ if !(2..=3).contains(&self.pool_win) || !(1..=2).contains(&self.pool_stride) => {
                Err(CheckError::PoolShape {
                    win: self.pool_win,
                    stride: self.pool_stride,
                })
            }
            _ => Ok(()),
        }
    }

    fn pool_pads(&self) -> u32 {
        self.pool_pad_top + self.pool_pad_left + self.pool_pad_bottom + self.pool_pad_right
    }
}

fn check_tile(start: u32, count: u32, total: u64, what: &'static str) -> Result<(), CheckError> {
    if u64::from(start) + u64::from(count) > total {
        return Err(CheckError::Tile {
            what,
            start,
            count,
            total,
        });
    }
    Ok(())
}

/// The layout of one activation operand: element (y, x, c) at
/// `addr + y*row + x*pix + c*chan` (docs/ISA.md section 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActLayout {
    pub addr: u32,
    pub h: u32,
    pub w: u32,
    pub c: u32,
    pub row: u32,
    pub pix: u32,
    pub chan: u32,
}

impl ActLayout {
    /// The `(h, w, c)` tensor at `addr` with `(row, pix, chan)` pitches.
    pub fn new((h, w, c): (u32, u32, u32), addr: u32, (row, pix, chan): (u32, u32, u32)) -> Self {
        ActLayout {
            addr,
            h,
            w,
            c,
            row,
            pix,
            chan,
        }
    }

    /// One past the highest byte address of the tensor. All values are at most 28 bits
    /// times 16 bits, so the sum cannot overflow u64.
    pub fn end(&self) -> u64 {
        let u = u64::from;
        u(self.addr)
            + u(self.h.saturating_sub(1)) * u(self.row)
            + u(self.w.saturating_sub(1)) * u(self.pix)
            + u(self.c.saturating_sub(1)) * u(self.chan)
            + 1
    }

    /// No two elements share a byte: the dimensions of extent > 1, ordered by pitch,
    /// are nested (each pitch is at least the span of the smaller ones).
    pub fn check(&self, what: &'static str) -> Result<(), CheckError> {
        self.check_dims(what, false)
    }

    /// [`ActLayout::check`] for a tensor that is only read (ELTWISE's operands): a row
    /// or pixel pitch of 0 broadcasts along that dimension (every row or pixel reads
    /// the same bytes); the other dimensions must still not overlap.
    pub fn check_read(&self, what: &'static str) -> Result<(), CheckError> {
        self.check_dims(what, true)
    }

    fn check_dims(&self, what: &'static str, broadcast: bool) -> Result<(), CheckError> {
        let extent = |pitch: u32, n: u32| if broadcast && pitch == 0 { 1 } else { n };
        let mut dims = [
            (self.row, extent(self.row, self.h), "row"),
            (self.pix, extent(self.pix, self.w), "pix"),
            (self.chan, self.c, "chan"),
        ];
        dims.sort_by_key(|&(p, n, _)| (p, n));
        let mut span = 1u64;
        for (pitch, n, name) in dims {
            if n <= 1 {
                continue;
            }
            if u64::from(pitch) < span {
                return Err(CheckError::Overlap {
                    tensor: what,
                    pitch_name: name,
                    pitch,
                    span,
                    layout: *self,
                });
            }
            span += u64::from(n - 1) * u64::from(pitch);
        }
        Ok(())
    }

    /// The tensor lies inside an SRAM of `sram_bytes` (the instruction's own `check`
    /// has checked its pitches).
    pub fn check_in(&self, what: &'static str, sram_bytes: u64) -> Result<(), CheckError> {
        if self.end() > sram_bytes {
            return Err(CheckError::BeyondSram {
                tensor: what,
                addr: self.addr,
                end: self.end(),
                sram_bytes,
            });
        }
        Ok(())
    }
}

impl Scale {
    /// Checks the rules of docs/ISA.md section 5 for this instruction.
    pub fn check(&self) -> Result<(), CheckError> {
        self.check_ranges("SCALE").map_err(CheckError::Field)?;
        check_tile(
            self.pix_start,
            self.pix_count,
            u64::from(self.h) * u64::from(self.w),
            "pixel",
        )?;
        check_tile(self.c_start, self.c_count, self.c.into(), "channel")?;
        let [i, o] = self.act_layouts();
        i.check("input")?;
        o.check("output")
    }

    /// The input and output tensors.
    pub fn act_layouts(&self) -> [ActLayout; 2] {
        let d = (self.h, self.w, self.c);
        [
            ActLayout::new(
                d,
                self.in_addr,
                (self.in_row_pitch, self.in_pix_pitch, self.in_chan_pitch),
            ),
            ActLayout::new(
                d,
                self.out_addr,
                (self.out_row_pitch, self.out_pix_pitch, self.out_chan_pitch),
            ),
        ]
    }
}

impl Eltwise {
    /// Checks the rules of docs/ISA.md section 5 for this instruction.
    pub fn check(&self) -> Result<(), CheckError> {
        self.check_ranges("ELTWISE").map_err(CheckError::Field)?;
        check_tile(
            self.pix_start,
            self.pix_count,
            u64::from(self.h) * u64::from(self.w),
            "pixel",
        )?;
        check_tile(self.c_start, self.c_count, self.c.into(), "channel")?;
        let [a, b, o] = self.act_layouts();
        a.check_read("A")?;
        b.check_read("B")?;
        o.check("output")
    }

    /// Tensors A, B and the output.
    pub fn act_layouts(&self) -> [ActLayout; 3] {
        let d = (self.h, self.w, self.c);
        [
            ActLayout::new(
                d,
                self.a_addr,
                (self.a_row_pitch, self.a_pix_pitch, self.a_chan_pitch),
            ),
            ActLayout::new(
                d,
                self.b_addr,
                (self.b_row_pitch, self.b_pix_pitch, self.b_chan_pitch),
            ),
            ActLayout::new(
                d,
                self.out_addr,
                (self.out_row_pitch, self.out_pix_pitch, self.out_chan_pitch),
            ),
        ]
    }
}

/// Checks one instruction's semantic rules and its flags against `hw`.
pub fn check_instr(ins: &Instr, hw: &HwConfig) -> Result<(), CheckError> {
    if let Some(f) = ins.flags().all().highest() {
        if f >= hw.flags {
            return Err(CheckError::Flag {
                flag: f,
                hw_flags: hw.flags,
            });
        }
    }
    let sram = hw.sram_bytes;
    let named = |v: &[ActLayout], names: &[&'static str]| -> Result<(), CheckError> {
        v.iter()
            .zip(names)
            .try_for_each(|(l, n)| l.check_in(n, sram))
    };
    match ins {
        Instr::Conv(d) | Instr::Deconv(d) | Instr::InnerProduct(d) => {
            let kind = match ins {
                Instr::Conv(_) => DotKind::Conv,
                Instr::Deconv(_) => DotKind::Deconv,
                _ => DotKind::InnerProduct,
            };
            d.check(kind)?;
            named(&d.act_layouts()?, &["input", "output"])
        }
        Instr::Scale(s) => {
            s.check()?;
            named(&s.act_layouts(), &["input", "output"])
        }
        Instr::Eltwise(e) => {
            e.check()?;
            named(&e.act_layouts(), &["A", "B", "output"])
        }
        Instr::DmaRead(_) | Instr::DmaWrite(_) | Instr::Stop(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv3x3() -> DotProduct {
        DotProduct {
            in_h: 8,
            in_w: 8,
            in_c: 3,
            out_h: 8,
            out_w: 8,
            out_c: 16,
            in_row_pitch: 32,
            in_pix_pitch: 4,
            in_chan_pitch: 1,
            out_row_pitch: 128,
            out_pix_pitch: 16,
            out_chan_pitch: 1,
            pix_count: 64,
            oc_count: 16,
            kernel_h: 3,
            kernel_w: 3,
            pad_top: 1,
            pad_left: 1,
            pad_bottom: 1,
            pad_right: 1,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            groups: 1,
            ..DotProduct::default()
        }
    }

    #[test]
    fn conv_geometry() {
        let c = conv3x3();
        assert_eq!(c.check(DotKind::Conv), Ok(()));
        let mut bad = c.clone();
        bad.out_h = 7;
        let e = bad.check(DotKind::Conv).unwrap_err();
        assert_eq!(
            e,
            CheckError::Geometry {
                out_h: 7,
                out_w: 8,
                expected: Some((8, 8))
            }
        );
        assert!(e.to_string().contains("geometry"), "{e}");
        let mut g = c.clone();
        g.groups = 2;
        assert!(matches!(
            g.check(DotKind::Conv),
            Err(CheckError::Groups { groups: 2, .. })
        ));
        let mut t = c.clone();
        t.pix_start = 1;
        assert_eq!(
            t.check(DotKind::Conv),
            Err(CheckError::Tile {
                what: "pixel",
                start: 1,
                count: 64,
                total: 64
            })
        );
    }

    #[test]
    fn pooling_and_deconv_geometry() {
        let mut p = conv3x3();
        p.pool = PoolKind::Max;
        p.pool_win = 2;
        p.pool_stride = 2;
        assert_eq!(p.stored_hw(), Some((4, 4)));
        assert_eq!(p.check(DotKind::Conv), Ok(()));
        p.pool_stride = 0;
        assert!(p.check(DotKind::Conv).is_err());
        let d = DotProduct {
            in_h: 4,
            in_w: 4,
            kernel_h: 2,
            kernel_w: 2,
            stride_h: 2,
            stride_w: 2,
            dil_h: 1,
            dil_w: 1,
            ..DotProduct::default()
        };
        assert_eq!(d.expected_out_hw(DotKind::Deconv), Some((8, 8)));
    }

    #[test]
    fn out_of_range_fields_error_instead_of_panicking() {
        let mut z = conv3x3();
        z.stride_h = 0;
        z.groups = 0;
        assert!(z.check(DotKind::Conv).is_err());
        assert!(Scale::default().check().is_err());
        assert!(Eltwise::default().check().is_err());
    }

    #[test]
    fn planar_layouts_are_checked_for_overlap_zero_pitch_and_sram_bounds() {
        let mut p = conv3x3();
        (p.in_row_pitch, p.in_pix_pitch, p.in_chan_pitch) = (8, 1, 64);
        (p.out_row_pitch, p.out_pix_pitch, p.out_chan_pitch) = (8, 1, 64);
        assert_eq!(p.check(DotKind::Conv), Ok(()));
        let hw = HwConfig::default();
        assert_eq!(check_instr(&Instr::Conv(p.clone()), &hw), Ok(()));
        // Channel planes overlapping the rows of the previous one.
        let mut o = p.clone();
        o.in_chan_pitch = 63;
        let e = o.check(DotKind::Conv).unwrap_err();
        assert!(
            matches!(
                e,
                CheckError::Overlap {
                    tensor: "input",
                    pitch_name: "chan",
                    pitch: 63,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("overlap"), "{e}");
        // A zero channel pitch with several channels puts them on one byte.
        o.in_chan_pitch = 0;
        assert!(o.check(DotKind::Conv).is_err());
        // One channel needs no channel pitch.
        let mut one = p.clone();
        (one.in_c, one.in_chan_pitch) = (1, 0);
        assert_eq!(one.check(DotKind::Conv), Ok(()));
        // The output's last channel plane beyond the SRAM.
        let mut far = p.clone();
        far.out_addr = (hw.sram_bytes - 64) as u32;
        let e = check_instr(&Instr::Conv(far), &hw).unwrap_err();
        assert!(
            matches!(
                e,
                CheckError::BeyondSram {
                    tensor: "output",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("beyond the SRAM"), "{e}");
        // Hostile maximal pitches and sizes: an error, no overflow.
        let mut big = p;
        (big.in_h, big.in_w, big.in_c) = (65535, 65535, 65535);
        (big.in_row_pitch, big.in_pix_pitch, big.in_chan_pitch) =
            ((1 << 24) - 1, 65535, (1 << 28) - 1);
        big.in_addr = (1 << 28) - 1;
        assert!(check_instr(&Instr::Conv(big), &hw).is_err());
    }
}
