//! Field descriptions and the typed values that live in instruction fields.
//!
//! Every field of every instruction is described by a [`FieldSpec`] (name, bit offset,
//! width, legal range, display format). The specs come from the tables in
//! [`crate::instr`] and [`crate::simd`]; encoding, decoding, the listing, the
//! assembler and the docs check all read them.

use crate::bits;
use crate::error::{DecodeError, EncodeError, FieldError};

/// How a field's value is written in listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// Decimal integer.
    Dec,
    /// Hexadecimal integer (addresses).
    Hex,
    /// SIMD register `r0`..`r15`.
    Reg,
    /// Boolean `0`/`1`.
    Bool,
    /// One of a fixed set of names (see [`FieldSpec::names`]).
    Enum,
    /// 32-bit immediate; shown as a float literal for floating-point SIMD ops.
    Imm,
    /// A flag list: 7-bit slots holding flag+1 (see [`crate::flags`]).
    Flags,
}

/// Static description of one instruction field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    pub name: &'static str,
    /// Bit offset from the start of the instruction.
    pub offset: u32,
    /// Width in bits (1..=63).
    pub width: u32,
    /// Two's-complement signed field.
    pub signed: bool,
    /// Smallest legal value.
    pub min: i64,
    /// Largest legal value.
    pub max: i64,
    pub fmt: Fmt,
    /// Names of the values `0..names.len()` for enum fields (empty otherwise).
    pub names: &'static [&'static str],
    /// One-line meaning.
    pub doc: &'static str,
}

/// Smallest value a `width`-bit field can hold.
pub const fn default_min(signed: bool, width: u32) -> i64 {
    if signed {
        -(1i64 << (width - 1))
    } else {
        0
    }
}

/// Largest value a `width`-bit field can hold.
pub const fn default_max(signed: bool, width: u32) -> i64 {
    if signed {
        (1i64 << (width - 1)) - 1
    } else {
        bits::low_mask(width) as i64
    }
}

impl FieldSpec {
    /// Header field that is not part of a layout table (opcode, SIMD length).
    pub const fn header(name: &'static str, offset: u32, width: u32, doc: &'static str) -> Self {
        FieldSpec {
            name,
            offset,
            width,
            signed: false,
            min: 0,
            max: bits::low_mask(width) as i64,
            fmt: Fmt::Dec,
            names: &[],
            doc,
        }
    }

    /// Errs unless `value` is in the field's range.
    pub fn check(&self, mnemonic: &'static str, value: i64) -> Result<(), EncodeError> {
        if value < self.min || value > self.max {
            return Err(EncodeError::new(
                mnemonic,
                format!(
                    "field {} = {value} is out of range {}..={}",
                    self.name, self.min, self.max
                ),
            ));
        }
        Ok(())
    }

    /// Checks the range and writes `value` into `buf`.
    pub fn pack(
        &self,
        buf: &mut [u8],
        mnemonic: &'static str,
        value: i64,
    ) -> Result<(), EncodeError> {
        self.check(mnemonic, value)?;
        bits::put(buf, self.offset, self.width, value as u64);
        Ok(())
    }

    /// Reads and range-checks the field; `base` is the instruction's stream offset.
    pub fn unpack(&self, buf: &[u8], base: usize, mnemonic: &str) -> Result<i64, DecodeError> {
        let raw = bits::get(buf, self.offset, self.width);
        let v = if self.signed {
            bits::sign_extend(raw, self.width)
        } else {
            raw as i64
        };
        if v < self.min || v > self.max {
            return Err(DecodeError::new(
                base + (self.offset / 8) as usize,
                format!(
                    "{mnemonic}: field {} = {v} is out of range {}..={}",
                    self.name, self.min, self.max
                ),
            ));
        }
        Ok(v)
    }

    /// The same spec shown as a flag list.
    pub const fn flag_list(mut self) -> Self {
        self.fmt = Fmt::Flags;
        self
    }

    /// The legal range as text, for docs.
    pub fn range_text(&self) -> String {
        if self.fmt == Fmt::Flags {
            return format!(
                "{} slots: flag+1, 0=empty",
                self.width / crate::flags::SLOT_BITS
            );
        }
        if !self.names.is_empty() {
            return self
                .names
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{i}={n}"))
                .collect::<Vec<_>>()
                .join(", ");
        }
        format!("{}..={}", self.min, self.max)
    }
}

/// A Rust type that can be stored in an instruction field.
pub trait FieldValue: Sized + Copy {
    const SIGNED: bool;
    const NAMES: &'static [&'static str] = &[];
    fn to_i64(self) -> i64;
    /// `None` if `v` is not a value of this type.
    fn from_i64(v: i64) -> Option<Self>;
}

macro_rules! int_field_value {
    ($($t:ty => $signed:expr),*) => {$(
        impl FieldValue for $t {
            const SIGNED: bool = $signed;
            fn to_i64(self) -> i64 { self as i64 }
            fn from_i64(v: i64) -> Option<Self> { <$t>::try_from(v).ok() }
        }
    )*};
}
int_field_value!(u8 => false, u16 => false, u32 => false, u64 => false, i8 => true, i16 => true, i32 => true);

impl FieldValue for bool {
    const SIGNED: bool = false;
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_i64(v: i64) -> Option<Self> {
        match v {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

/// Declares a C-like enum stored in an instruction field, with listing names.
/// The first variant is the default.
macro_rules! field_enum {
    ($(#[doc = $doc:literal])* $name:ident { $first:ident = $fname:literal $(, $var:ident = $vname:literal)* $(,)? }) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub enum $name {
            #[default]
            $first,
            $($var,)*
        }
        impl $crate::field::FieldValue for $name {
            const SIGNED: bool = false;
            const NAMES: &'static [&'static str] = &[$fname $(, $vname)*];
            fn to_i64(self) -> i64 { self as i64 }
            fn from_i64(v: i64) -> Option<Self> {
                const ALL: &[$name] = &[$name::$first $(, $name::$var)*];
                usize::try_from(v).ok().and_then(|i| ALL.get(i).copied())
            }
        }
    };
}
pub(crate) use field_enum;

/// Object-safe access to the table fields of one instruction layout.
pub trait Fields {
    /// Mnemonic used in error messages.
    fn layout_name(&self) -> &'static str;
    /// The field table of this layout.
    fn specs(&self) -> &'static [FieldSpec];
    /// Current values, in table order.
    fn values(&self) -> Vec<i64>;
    /// Sets one field by name; range-checked.
    fn set(&mut self, name: &str, value: i64) -> Result<(), FieldError>;
    /// Packs all table fields into `buf` (the instruction's bytes).
    fn pack(&self, buf: &mut [u8], mnemonic: &'static str) -> Result<(), EncodeError>;
    /// The range checks of [`Fields::pack`] (the same first error), without packing.
    fn check_ranges(&self, mnemonic: &'static str) -> Result<(), EncodeError> {
        self.specs()
            .iter()
            .zip(self.values())
            .try_for_each(|(spec, v)| spec.check(mnemonic, v))
    }
}

/// Converts a field value read from the wire or the assembler into its type.
pub fn typed<T: FieldValue>(spec: &FieldSpec, v: i64) -> Result<T, FieldError> {
    if v < spec.min || v > spec.max {
        return Err(FieldError::OutOfRange {
            field: spec.name,
            value: v,
            min: spec.min,
            max: spec.max,
        });
    }
    T::from_i64(v).ok_or(FieldError::NotRepresentable {
        field: spec.name,
        value: v,
    })
}

/// Declares one instruction layout: a struct with one public member per field and
/// its [`FieldSpec`] table. `extra` members (flags, SIMD program) are added verbatim.
///
/// Field syntax: `/// doc` `name: Type = [bit_offset, width, Fmt]` or
/// `[bit_offset, width, Fmt, min..=max]`.
macro_rules! layout {
    (
        $(#[doc = $sdoc:literal])*
        $name:ident, size $size:literal, extra { $($extra:tt)* }
        {
            $( #[doc = $fdoc:literal] $f:ident : $t:ty = [$off:literal, $w:literal, $fmt:ident $(, $lo:literal ..= $hi:literal)?] ; )*
        }
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $($extra)*
            $( #[doc = $fdoc] pub $f: $t, )*
        }

        impl $name {
            /// Encoded size in bytes.
            pub const SIZE: usize = $size;
            /// The field table (offsets are from the start of the instruction).
            pub const FIELDS: &'static [$crate::field::FieldSpec] = &[
                $( $crate::field::FieldSpec {
                    name: stringify!($f),
                    offset: $off,
                    width: $w,
                    signed: <$t as $crate::field::FieldValue>::SIGNED,
                    min: layout!(@pick $crate::field::default_min(<$t as $crate::field::FieldValue>::SIGNED, $w) $(, $lo)?),
                    max: layout!(@pick $crate::field::default_max(<$t as $crate::field::FieldValue>::SIGNED, $w) $(, $hi)?),
                    fmt: if <$t as $crate::field::FieldValue>::NAMES.is_empty() { $crate::field::Fmt::$fmt } else { $crate::field::Fmt::Enum },
                    names: <$t as $crate::field::FieldValue>::NAMES,
                    doc: $fdoc,
                }, )*
            ];

            /// Decodes the table fields from an instruction's bytes (`base` = stream offset).
            #[allow(unused_assignments, unused_mut, unused_variables)]
            pub fn unpack(buf: &[u8], base: usize, mnemonic: &str) -> Result<Self, $crate::error::DecodeError> {
                let mut s = Self::default();
                let mut i = 0;
                $(
                    let spec = &Self::FIELDS[i];
                    let v = spec.unpack(buf, base, mnemonic)?;
                    s.$f = $crate::field::typed::<$t>(spec, v).map_err(|m| {
                        $crate::error::DecodeError::new(base + (spec.offset / 8) as usize, format!("{mnemonic}: {m}"))
                    })?;
                    i += 1;
                )*
                Ok(s)
            }
        }

        impl $crate::field::Fields for $name {
            fn layout_name(&self) -> &'static str { stringify!($name) }
            fn specs(&self) -> &'static [$crate::field::FieldSpec] { Self::FIELDS }
            fn values(&self) -> Vec<i64> {
                vec![ $( $crate::field::FieldValue::to_i64(self.$f) ),* ]
            }
            #[allow(unused_assignments, unused_mut, unused_variables)]
            fn set(&mut self, name: &str, value: i64) -> Result<(), $crate::error::FieldError> {
                let mut i = 0;
                $(
                    if name == stringify!($f) {
                        self.$f = $crate::field::typed::<$t>(&Self::FIELDS[i], value)?;
                        return Ok(());
                    }
                    i += 1;
                )*
                let _ = value;
                Err($crate::error::FieldError::Unknown { field: name.to_string() })
            }
            fn pack(&self, buf: &mut [u8], mnemonic: &'static str) -> Result<(), $crate::error::EncodeError> {
                let values = self.values();
                for (spec, v) in Self::FIELDS.iter().zip(values) {
                    spec.pack(buf, mnemonic, v)?;
                }
                Ok(())
            }
        }
    };
    (@pick $d:expr) => { $d };
    (@pick $d:expr, $v:literal) => { $v };
}
pub(crate) use layout;
