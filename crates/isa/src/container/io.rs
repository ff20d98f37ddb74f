//! Input/output descriptors.

use super::wire::{Reader, Writer};
use super::ContainerError;
use crate::error::DescError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoDir {
    Input = 0,
    Output = 1,
}

/// Element type of a described tensor. Program inputs and outputs are 8-bit codes;
/// the wider types only describe constant operands of host ops in the DRAM image
/// (little-endian, `Dense` layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoDtype {
    Int8 = 0,
    Uint8 = 1,
    Float32 = 2,
    Int64 = 3,
}

impl IoDtype {
    pub const ALL: [IoDtype; 4] = [
        IoDtype::Int8,
        IoDtype::Uint8,
        IoDtype::Float32,
        IoDtype::Int64,
    ];
    pub fn name(self) -> &'static str {
        match self {
            IoDtype::Int8 => "int8",
            IoDtype::Uint8 => "uint8",
            IoDtype::Float32 => "float32",
            IoDtype::Int64 => "int64",
        }
    }
    pub fn from_name(s: &str) -> Option<IoDtype> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
    pub fn from_u8(v: u8) -> Option<IoDtype> {
        Self::ALL.into_iter().find(|d| *d as u8 == v)
    }
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            IoDtype::Int8 | IoDtype::Uint8 => 1,
            IoDtype::Float32 => 4,
            IoDtype::Int64 => 8,
        }
    }
    /// True for the 8-bit code types (the only ones a program input/output may have).
    pub fn is_code(self) -> bool {
        self.size() == 1
    }
    /// Legal zero points (0 only for float32 / int64).
    pub fn zero_range(self) -> (i32, i32) {
        match self {
            IoDtype::Int8 => (-128, 127),
            IoDtype::Uint8 => (0, 255),
            IoDtype::Float32 | IoDtype::Int64 => (0, 0),
        }
    }
}

/// How a tensor is laid out in DRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoLayout {
    /// Row-major in the order of `shape`, no padding.
    Dense,
    /// The NNA activation layout (docs/ISA.md): `shape` is `[1, C, H, W]` or `[C, H, W]`;
    /// element (c, y, x) is at `dram_addr + y*row_pitch + x*pix_pitch + c`.
    Hwc { row_pitch: u32, pix_pitch: u32 },
}

/// One program input or output.
#[derive(Debug, Clone, PartialEq)]
pub struct IoDesc {
    pub name: String,
    pub dir: IoDir,
    pub dtype: IoDtype,
    /// Logical shape (model order, e.g. NCHW).
    pub shape: Vec<u32>,
    pub dram_addr: u64,
    pub layout: IoLayout,
    /// Quantization: real = scale * (code - zero_point). Finite and > 0.
    pub scale: f32,
    pub zero_point: i32,
}

/// Largest tensor rank a descriptor may have.
pub const MAX_RANK: usize = 8;

impl IoDesc {
    /// Bytes of the tensor's elements (shape x element size).
    pub fn bytes(&self) -> u64 {
        self.shape.iter().map(|&d| u64::from(d)).product::<u64>() * self.dtype.size()
    }

    /// Checks the rules the reader enforces.
    pub fn validate(&self) -> Result<(), DescError> {
        let name = || self.name.clone();
        if self.name.is_empty() {
            return Err(DescError::EmptyName);
        }
        if self.shape.len() > MAX_RANK {
            return Err(DescError::Rank {
                name: name(),
                rank: self.shape.len(),
            });
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(DescError::Scale {
                name: name(),
                scale: self.scale,
            });
        }
        let (lo, hi) = self.dtype.zero_range();
        if self.zero_point < lo || self.zero_point > hi {
            return Err(DescError::ZeroPoint {
                name: name(),
                zero_point: self.zero_point,
                lo,
                hi,
                dtype: self.dtype.name(),
            });
        }
        if let IoLayout::Hwc { .. } = self.layout {
            if !self.dtype.is_code() {
                return Err(DescError::HwcDtype {
                    name: name(),
                    dtype: self.dtype.name(),
                });
            }
            if !(self.shape.len() == 3 || (self.shape.len() == 4 && self.shape[0] == 1)) {
                return Err(DescError::HwcShape { name: name() });
            }
        }
        Ok(())
    }

    pub(super) fn write(&self, w: &mut Writer) {
        w.u8(self.dir as u8);
        w.u8(self.dtype as u8);
        let (code, rp, pp) = match self.layout {
            IoLayout::Dense => (0, 0, 0),
            IoLayout::Hwc {
                row_pitch,
                pix_pitch,
            } => (1, row_pitch, pix_pitch),
        };
        w.u8(code);
        w.u8(self.shape.len() as u8);
        w.string(&self.name);
        for &d in &self.shape {
            w.u32(d);
        }
        w.u64(self.dram_addr);
        w.u32(rp);
        w.u32(pp);
        w.u32(self.scale.to_bits());
        w.i32(self.zero_point);
    }

    pub(super) fn read(r: &mut Reader) -> Result<IoDesc, ContainerError> {
        let dir = match r.u8()? {
            0 => IoDir::Input,
            1 => IoDir::Output,
            v => return Err(r.error(format!("bad direction {v}"))),
        };
        let dt = r.u8()?;
        let dtype = IoDtype::from_u8(dt).ok_or_else(|| r.error(format!("bad dtype {dt}")))?;
        let layout_code = r.u8()?;
        let rank = r.u8()? as usize;
        if rank > MAX_RANK {
            return Err(r.error(format!("rank {rank} > {MAX_RANK}")));
        }
        let name = r.string()?;
        let mut shape = Vec::with_capacity(rank);
        for _ in 0..rank {
            shape.push(r.u32()?);
        }
        let dram_addr = r.u64()?;
        let (row_pitch, pix_pitch) = (r.u32()?, r.u32()?);
        let layout = match (layout_code, row_pitch, pix_pitch) {
            (0, 0, 0) => IoLayout::Dense,
            (1, row_pitch, pix_pitch) => IoLayout::Hwc {
                row_pitch,
                pix_pitch,
            },
            (0, _, _) => return Err(r.error("dense layout with non-zero pitches")),
            (v, _, _) => return Err(r.error(format!("bad layout {v}"))),
        };
        let scale = f32::from_bits(r.u32()?);
        let zero_point = r.i32()?;
        let d = IoDesc {
            name,
            dir,
            dtype,
            shape,
            dram_addr,
            layout,
            scale,
            zero_point,
        };
        d.validate().map_err(|m| r.error(m))?;
        Ok(d)
    }
}
