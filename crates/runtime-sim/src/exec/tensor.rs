//! Addressing of HWC activation tensors in SRAM: element (y, x, c) of a tensor at
//! `addr` lives at `addr + y * row_pitch + x * pix_pitch + c`.

/// A pitched HWC tensor view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hwc {
    pub addr: u64,
    pub row_pitch: u64,
    pub pix_pitch: u64,
}

impl Hwc {
    pub fn new(addr: u32, row_pitch: u32, pix_pitch: u32) -> Hwc {
        Hwc {
            addr: u64::from(addr),
            row_pitch: u64::from(row_pitch),
            pix_pitch: u64::from(pix_pitch),
        }
    }

    /// Address of channel `c` of pixel (y, x).
    pub fn at(&self, y: u64, x: u64, c: u64) -> u64 {
        self.addr + y * self.row_pitch + x * self.pix_pitch + c
    }
}

/// The flattened pixel range of a tile, with its first and last (y, x).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixRange {
    pub start: u64,
    pub count: u64,
    pub width: u64,
}

impl PixRange {
    pub fn end(&self) -> u64 {
        self.start + self.count
    }
    /// First and last row touched.
    pub fn rows(&self) -> (u64, u64) {
        (self.start / self.width, (self.end() - 1) / self.width)
    }
    pub fn yx(&self, p: u64) -> (u64, u64) {
        (p / self.width, p % self.width)
    }
}
