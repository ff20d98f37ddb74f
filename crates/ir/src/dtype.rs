//! Element types of IR tensors.

use std::fmt;

/// Element type of a tensor. Importers convert float16/float64 to `F32`; `I64` exists
/// for shape tensors that importers fold away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    I8,
    U8,
    I32,
    I64,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::F32, DType::I8, DType::U8, DType::I32, DType::I64];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::F32 | DType::I32 => 4,
            DType::I64 => 8,
        }
    }

    /// The name used by the IR text form.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::I64 => "i64",
        }
    }

    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
