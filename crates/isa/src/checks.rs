//! Semantic rules of compute instructions beyond field ranges (docs/ISA.md section 5):
//! shapes, groups, pooling and tile bounds. Shared by the backend (to assert what it
//! emits) and the simulator (to refuse bad programs).

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
    pub fn check(&self, kind: DotKind) -> Result<(), String> {
        let mut scratch = [0u8; DotProduct::SIZE];
        self.pack(&mut scratch, "CONV").map_err(|e| e.message)?;
        self.check_pool_fields()?;
        if !self.in_c.is_multiple_of(self.groups) || !self.out_c.is_multiple_of(self.groups) {
            return Err(format!(
                "in_c {} and out_c {} must be divisible by groups {}",
                self.in_c, self.out_c, self.groups
            ));
        }
        if self.expected_out_hw(kind) != Some((self.out_h, self.out_w)) {
            return Err(format!(
                "out_h x out_w = {}x{} does not match the input geometry ({:?})",
                self.out_h,
                self.out_w,
                self.expected_out_hw(kind)
            ));
        }
        check_tile(
            self.pix_start,
            self.pix_count,
            u64::from(self.out_h) * u64::from(self.out_w),
            "pixel",
        )?;
        check_tile(self.oc_start, self.oc_count, self.out_c.into(), "channel")?;
        check_pitch(
            self.in_pix_pitch,
            self.in_c,
            self.in_row_pitch,
            self.in_w,
            "input",
        )?;
        let (_, sw) = self
            .stored_hw()
            .ok_or("pooling window larger than the padded output")?;
        check_pitch(
            self.out_pix_pitch,
            self.out_c,
            self.out_row_pitch,
            sw,
            "output",
        )
    }

    fn check_pool_fields(&self) -> Result<(), String> {
        match self.pool {
            PoolKind::None
                if self.pool_win != 0 || self.pool_stride != 0 || self.pool_pads() != 0 =>
            {
                Err("pool=none needs pool_win, pool_stride and pool pads of 0".into())
            }
            PoolKind::None => Ok(()),
            _ if !(2..=3).contains(&self.pool_win) || !(1..=2).contains(&self.pool_stride) => {
                Err("pooling needs pool_win 2 or 3 and pool_stride 1 or 2".into())
            }
            _ => Ok(()),
        }
    }

    fn pool_pads(&self) -> u32 {
        self.pool_pad_top + self.pool_pad_left + self.pool_pad_bottom + self.pool_pad_right
    }
}

fn check_tile(start: u32, count: u32, total: u64, what: &str) -> Result<(), String> {
    if u64::from(start) + u64::from(count) > total {
        return Err(format!("{what} tile {start}+{count} exceeds {total}"));
    }
    Ok(())
}

fn check_pitch(pix: u32, c: u32, row: u32, w: u32, what: &str) -> Result<(), String> {
    if pix < c || u64::from(row) < u64::from(w) * u64::from(pix) {
        return Err(format!(
            "{what} pitches too small: pix_pitch {pix} < C {c} or row_pitch {row} < W*pix_pitch"
        ));
    }
    Ok(())
}

impl Scale {
    pub fn check(&self) -> Result<(), String> {
        let mut scratch = [0u8; Scale::SIZE];
        self.pack(&mut scratch, "SCALE").map_err(|e| e.message)?;
        check_tile(
            self.pix_start,
            self.pix_count,
            u64::from(self.h) * u64::from(self.w),
            "pixel",
        )?;
        check_tile(self.c_start, self.c_count, self.c.into(), "channel")?;
        check_pitch(
            self.in_pix_pitch,
            self.c,
            self.in_row_pitch,
            self.w,
            "input",
        )?;
        check_pitch(
            self.out_pix_pitch,
            self.c,
            self.out_row_pitch,
            self.w,
            "output",
        )
    }
}

impl Eltwise {
    pub fn check(&self) -> Result<(), String> {
        let mut scratch = [0u8; Eltwise::SIZE];
        self.pack(&mut scratch, "ELTWISE").map_err(|e| e.message)?;
        check_tile(
            self.pix_start,
            self.pix_count,
            u64::from(self.h) * u64::from(self.w),
            "pixel",
        )?;
        check_tile(self.c_start, self.c_count, self.c.into(), "channel")?;
        check_pitch(self.a_pix_pitch, self.c, self.a_row_pitch, self.w, "A")?;
        check_pitch(self.b_pix_pitch, self.c, self.b_row_pitch, self.w, "B")?;
        check_pitch(
            self.out_pix_pitch,
            self.c,
            self.out_row_pitch,
            self.w,
            "output",
        )
    }
}

/// Checks one instruction's semantic rules and its flags against `hw`.
pub fn check_instr(ins: &Instr, hw: &HwConfig) -> Result<(), String> {
    if let Some(f) = ins.flags().all().highest() {
        if f >= hw.flags {
            return Err(format!(
                "uses flag F{f} but the hardware has {} flags",
                hw.flags
            ));
        }
    }
    match ins {
        Instr::Conv(d) => d.check(DotKind::Conv),
        Instr::Deconv(d) => d.check(DotKind::Deconv),
        Instr::InnerProduct(d) => d.check(DotKind::InnerProduct),
        Instr::Scale(s) => s.check(),
        Instr::Eltwise(e) => e.check(),
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
            out_row_pitch: 128,
            out_pix_pitch: 16,
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
        assert!(bad.check(DotKind::Conv).unwrap_err().contains("geometry"));
        let mut g = c.clone();
        g.groups = 2;
        assert!(g.check(DotKind::Conv).unwrap_err().contains("groups"));
        let mut t = c.clone();
        t.pix_start = 1;
        assert!(t.check(DotKind::Conv).unwrap_err().contains("tile"));
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
}
