//! Activation tensors in SRAM: the planar (CHW) layout of docs/ISA.md section 4.1,
//! element (y, x, c) at `y*W + x + c*H*W` (`pix_pitch = 1`, `row_pitch = W`,
//! `chan_pitch = H*W`): byte for byte the dense NCHW tensor, so one DMA moves a whole
//! activation between SRAM and DRAM. A band of `n` rows held on its own (split
//! layers) is the same layout with `H = n`.

use crate::base::job::{BufId, Loc};
use crate::error::{wide, Limit, Refusal};
use crate::error::{BackendError, UnsupportedNode};
use nnac_ir::{DType, Quant, TensorType};
use nnac_isa::{Dma, Scale};

/// Most bytes one DMA row moves (the `row_len` field is 20 bits).
pub(crate) const MAX_DMA_ROW: u64 = (1 << 20) - 1;

/// Geometry and quantization of one activation tensor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Act {
    pub h: u32,
    pub w: u32,
    pub c: u32,
    pub pix_pitch: u32,
    pub row_pitch: u32,
    pub chan_pitch: u32,
    pub signed: bool,
    pub zero_point: i32,
    pub scale: f32,
    /// Logical rank: 4 (`[1, C, H, W]`) or 2 (`[1, K]`, stored as 1x1xK).
    pub rank: usize,
}

impl Act {
    /// The default layout of a quantized `[1, C, H, W]` or `[1, K]` tensor.
    pub(crate) fn of(node: &str, t: &TensorType) -> Result<Act, BackendError> {
        let not_q = |detail: String| BackendError::NotQuantized {
            node: node.to_string(),
            detail,
        };
        let signed = match t.dtype {
            DType::I8 => true,
            DType::U8 => false,
            d => return Err(not_q(format!("dtype {d:?} is not int8/uint8"))),
        };
        let Some(Quant::PerTensor { scale, zero_point }) = t.quant else {
            return Err(not_q("no per-tensor quantization".into()));
        };
        let unsupported =
            |reason: Refusal| BackendError::Unsupported(vec![UnsupportedNode::new(node, reason)]);
        let (c, h, w) = match t.shape.as_slice() {
            [1, c, h, w] => (*c, *h, *w),
            [1, k] => (*k, 1, 1),
            s => return Err(unsupported(Refusal::ActivationShape { shape: s.to_vec() })),
        };
        let dim = |v: usize| {
            u32::try_from(v)
                .ok()
                .filter(|&v| (1..=65535).contains(&v))
                .ok_or_else(|| unsupported(Refusal::range("dimension", wide(v), Limit::Dimension)))
        };
        let (c, h, w) = (dim(c)?, dim(h)?, dim(w)?);
        // A plane larger than one DMA row is moved in several DMAs ([`split_rows`]).
        let chan_pitch = u32::try_from(u64::from(h) * u64::from(w))
            .ok()
            .filter(|&p| p < 1 << 28)
            .ok_or_else(|| unsupported(Refusal::PlanePitch { h, w }))?;
        Ok(Act {
            h,
            w,
            c,
            pix_pitch: 1,
            row_pitch: w,
            chan_pitch,
            signed,
            zero_point,
            scale,
            rank: t.shape.len(),
        })
    }

    /// The same tensor stored HWC (`pix_pitch = C`, `row_pitch = W*C`,
    /// `chan_pitch = 1`): only for a value whose one reader is a global pool run with
    /// the channels as output pixels (`gap.rs`); never DMA'd, spilled or split.
    pub(crate) fn hwc(self) -> Act {
        Act {
            pix_pitch: self.c,
            row_pitch: self.w * self.c,
            chan_pitch: 1,
            ..self
        }
    }

    /// Bytes the tensor occupies in SRAM (up to its last element).
    pub(crate) fn bytes(&self) -> u64 {
        let u = u64::from;
        u(self.c - 1) * u(self.chan_pitch)
            + u(self.h - 1) * u(self.row_pitch)
            + u(self.w - 1) * u(self.pix_pitch)
            + 1
    }

    /// Bytes of one row over all channels: a band buffer of `n` rows holds
    /// `n * row_bytes()`. Planar, a row of each channel; stored HWC (channels
    /// interleaved within a row, [`Act::hwc`]), one row pitch.
    pub(crate) fn row_bytes(&self) -> u64 {
        if self.chan_pitch < self.row_pitch {
            u64::from(self.row_pitch)
        } else {
            u64::from(self.c) * u64::from(self.row_pitch)
        }
    }

    /// Channel pitch of a band of `rows` rows held on its own.
    pub(crate) fn band_chan_pitch(&self, rows: u32) -> u32 {
        rows * self.row_pitch
    }

    pub(crate) fn pixels(&self) -> u32 {
        self.h * self.w
    }

    /// Whether this tensor (ELTWISE's B) is one value per channel broadcast over the
    /// pixels of `full`: it is read with row and pixel pitch 0, and whole by every
    /// band of a banded layer.
    pub(crate) fn broadcast_over(&self, full: &Act) -> bool {
        self.pixels() == 1 && full.pixels() > 1
    }

    /// The DMA (addresses relative to the tensors) moving rows `y0..y0+rows` of every
    /// channel between a DRAM tensor of this layout and an SRAM buffer holding just
    /// those rows with channel pitch `sram_chan_pitch`: one DMA row per channel, or a
    /// single row when both sides are contiguous. A row longer than one DMA row
    /// (a plane above 1 MiB) is cut into several DMAs at emission ([`split_rows`]).
    pub(crate) fn rows_dma(&self, y0: u32, rows: u32, sram_chan_pitch: u32) -> Dma {
        let len = u64::from(rows) * u64::from(self.row_pitch);
        let dense = len == u64::from(sram_chan_pitch);
        let (n, len, d_stride, s_stride) =
            if dense && rows == self.h && u64::from(self.c) * len <= MAX_DMA_ROW {
                (1, u64::from(self.c) * len, 0, 0)
            } else {
                (self.c, len, u64::from(self.chan_pitch), sram_chan_pitch)
            };
        Dma {
            dram_addr: u64::from(y0) * u64::from(self.row_pitch),
            sram_addr: 0,
            rows: n,
            row_len: len as u32,
            dram_stride: if n == 1 { len } else { d_stride },
            sram_stride: if n == 1 { len as u32 } else { s_stride },
            ..Dma::default()
        }
    }

    /// The DMAs moving the whole tensor between a DRAM tensor of this layout and an
    /// SRAM buffer of it in bands of `rows` rows (the last band may be shorter): band
    /// `y0..` is [`Act::rows_dma`] with the channel pitch on both sides, both
    /// addresses `y0 * row_pitch` relative to the tensors. With `rows >= h`, the one
    /// DMA of the whole tensor.
    pub(crate) fn band_dmas(&self, rows: u32) -> impl Iterator<Item = Dma> + '_ {
        let rows = rows.max(1);
        (0..self.h).step_by(rows as usize).map(move |y0| Dma {
            sram_addr: y0 * self.row_pitch,
            ..self.rows_dma(y0, rows.min(self.h - y0), self.chan_pitch)
        })
    }
}

/// `d` as DMAs whose rows fit the 20-bit `row_len` field: each row of `d` cut into
/// chunks of at most [`MAX_DMA_ROW`] bytes, one DMA per chunk (the same rows and
/// strides, addresses advanced by the chunk's offset). A DMA that fits is returned
/// as it is. Together the DMAs move exactly the bytes of `d`.
pub(crate) fn split_rows(d: Dma) -> Vec<Dma> {
    let len = u64::from(d.row_len);
    if len <= MAX_DMA_ROW {
        return vec![d];
    }
    let mut out = Vec::new();
    let mut off = 0u64;
    while off < len {
        let n = MAX_DMA_ROW.min(len - off);
        out.push(Dma {
            dram_addr: d.dram_addr + off,
            sram_addr: d.sram_addr + off as u32,
            row_len: n as u32,
            // One row: the strides are unused; keep them equal to the length, as a
            // single-row DMA of the backend has them.
            dram_stride: if d.rows == 1 { n } else { d.dram_stride },
            sram_stride: if d.rows == 1 { n as u32 } else { d.sram_stride },
            ..d.clone()
        });
        off += n;
    }
    out
}

/// A SCALE over all of `x` (its shape, pitches and signedness), writing through the
/// output pitches `(row, pix, chan)` as codes of signedness `out_signed`; the caller
/// sets the program, zero point and tiles.
pub(crate) fn scale_over(x: &Act, (row, pix, chan): (u32, u32, u32), out_signed: bool) -> Scale {
    Scale {
        h: x.h,
        w: x.w,
        c: x.c,
        in_row_pitch: x.row_pitch,
        in_pix_pitch: x.pix_pitch,
        in_chan_pitch: x.chan_pitch,
        out_row_pitch: row,
        out_pix_pitch: pix,
        out_chan_pitch: chan,
        in_signed: x.signed,
        out_signed,
        ..Scale::default()
    }
}

/// An activation value: its layout and buffer.
#[derive(Clone)]
pub(crate) struct Placed {
    pub act: Act,
    pub buf: BufId,
    /// Byte offset of the tensor in its buffer (a concatenation slot).
    pub off: u64,
}

impl Placed {
    pub(crate) fn loc(&self) -> Loc {
        Loc::new(self.buf, self.off)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_rows_cuts_long_rows_and_keeps_every_byte() {
        // Three channel planes of 1920x1080 (2,073,600 bytes each): 2 chunks per row.
        let d = Dma {
            dram_addr: 64,
            sram_addr: 128,
            rows: 3,
            row_len: 2_073_600,
            dram_stride: 2_073_600,
            sram_stride: 2_073_600,
            ..Dma::default()
        };
        let parts = split_rows(d.clone());
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| u64::from(p.row_len) <= MAX_DMA_ROW));
        let bytes: u64 = parts
            .iter()
            .map(|p| u64::from(p.rows) * u64::from(p.row_len))
            .sum();
        assert_eq!(bytes, 3 * 2_073_600);
        assert_eq!(parts[1].dram_addr, 64 + MAX_DMA_ROW);
        assert_eq!(parts[1].sram_addr, 128 + MAX_DMA_ROW as u32);
        assert!(parts.iter().all(|p| p.dram_stride == d.dram_stride));
        assert_eq!(
            split_rows(Dma {
                row_len: 100,
                ..d.clone()
            })
            .len(),
            1
        );
    }
}
