//! Activation tensors in SRAM: the HWC layout of docs/ISA.md section 4 with the
//! backend default pitches (`PP = C` rounded up to 8, `RP = W * PP`).

use crate::error::BackendError;
use nnac_ir::{DType, Quant, TensorType};

/// Pixel pitch alignment of the backend's default layout.
pub const PIX_ALIGN: u32 = 8;

/// Geometry and quantization of one activation tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Act {
    pub h: u32,
    pub w: u32,
    pub c: u32,
    pub pix_pitch: u32,
    pub row_pitch: u32,
    pub signed: bool,
    pub zero_point: i32,
    pub scale: f32,
    /// Logical rank: 4 (`[1, C, H, W]`) or 2 (`[1, K]`, stored as 1x1xK).
    pub rank: usize,
}

impl Act {
    /// The default layout of a quantized `[1, C, H, W]` or `[1, K]` tensor.
    pub fn of(node: &str, t: &TensorType) -> Result<Act, BackendError> {
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
            |detail: String| BackendError::Unsupported(vec![(node.to_string(), detail)]);
        let (c, h, w) = match t.shape.as_slice() {
            [1, c, h, w] => (*c, *h, *w),
            [1, k] => (*k, 1, 1),
            s => {
                return Err(unsupported(format!(
                    "activation shape {s:?} is not [1,C,H,W] or [1,K]"
                )))
            }
        };
        let dim = |v: usize| {
            u32::try_from(v)
                .ok()
                .filter(|&v| (1..=65535).contains(&v))
                .ok_or_else(|| unsupported(format!("dimension {v} out of 1..=65535")))
        };
        let (c, h, w) = (dim(c)?, dim(h)?, dim(w)?);
        let pix_pitch = c.div_ceil(PIX_ALIGN) * PIX_ALIGN;
        Ok(Act {
            h,
            w,
            c,
            pix_pitch,
            row_pitch: w * pix_pitch,
            signed,
            zero_point,
            scale,
            rank: t.shape.len(),
        })
    }

    /// Bytes the tensor occupies in SRAM.
    pub fn bytes(&self) -> u64 {
        u64::from(self.h) * u64::from(self.row_pitch)
    }

    /// Bytes of one row that hold data (the last pixel ends at its C-th channel).
    pub fn row_data_len(&self) -> u32 {
        (self.w - 1) * self.pix_pitch + self.c
    }

    pub fn pixels(&self) -> u32 {
        self.h * self.w
    }
}
