//! Error types for encoding and decoding instructions.

use std::fmt;

/// An instruction could not be encoded: a field value does not fit its encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError {
    /// Index of the instruction in the program, when known.
    pub index: Option<usize>,
    /// Mnemonic of the instruction (or SIMD instruction).
    pub mnemonic: &'static str,
    /// What is wrong, naming the field.
    pub message: String,
}

impl EncodeError {
    pub fn new(mnemonic: &'static str, message: impl Into<String>) -> Self {
        EncodeError {
            index: None,
            mnemonic,
            message: message.into(),
        }
    }
    pub fn at_index(mut self, index: usize) -> Self {
        self.index.get_or_insert(index);
        self
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError {
                index: Some(i),
                mnemonic,
                message,
            } => write!(f, "instruction {i} ({mnemonic}): {message}"),
            EncodeError {
                index: None,
                mnemonic,
                message,
            } => write!(f, "{mnemonic}: {message}"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// An instruction stream could not be decoded. `offset` is the byte offset (within
/// the instruction stream) of the offending instruction or byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub offset: usize,
    pub message: String,
}

impl DecodeError {
    pub fn new(offset: usize, message: impl Into<String>) -> Self {
        DecodeError {
            offset,
            message: message.into(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte offset {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for DecodeError {}

/// A field value that does not fit its field (docs/ISA.md section 3): read from the
/// wire, given in a listing or set by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// The value lies outside the field's range.
    OutOfRange {
        field: &'static str,
        value: i64,
        min: i64,
        max: i64,
    },
    /// The value is in range but names no member of the field's type (an enum).
    NotRepresentable { field: &'static str, value: i64 },
    /// The layout has no field of this name.
    Unknown { field: String },
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldError::OutOfRange {
                field,
                value,
                min,
                max,
            } => write!(f, "field {field} = {value} is out of range {min}..={max}"),
            FieldError::NotRepresentable { field, value } => {
                write!(f, "field {field} cannot hold {value}")
            }
            FieldError::Unknown { field } => write!(f, "unknown field '{field}'"),
        }
    }
}

impl std::error::Error for FieldError {}

/// A flag index or flag-set text that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagError {
    /// The flag index is at least [`crate::flags::MAX_FLAGS`].
    OutOfRange { flag: u32 },
    /// One element of a flag list is not `F<number>`.
    Syntax { part: String },
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlagError::OutOfRange { flag } => write!(
                f,
                "flag F{flag} is out of range F0..F{}",
                crate::flags::MAX_FLAGS - 1
            ),
            FlagError::Syntax { part } => write!(f, "bad flag '{part}' (expected F<number>)"),
        }
    }
}

impl std::error::Error for FlagError {}

/// One instruction breaks a semantic rule of docs/ISA.md section 5 (its index is
/// added by the caller, which knows it). `tensor` names the operand ("input",
/// "output", "A", "B").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckError {
    /// A field is outside its encodable range (the message names the field).
    Field(EncodeError),
    /// `groups` divides neither channel count.
    Groups { in_c: u32, out_c: u32, groups: u32 },
    /// The output size disagrees with the input geometry (`expected` is what the
    /// geometry implies, `None` when it implies no output).
    Geometry {
        out_h: u32,
        out_w: u32,
        expected: Option<(u32, u32)>,
    },
    /// `pool=none` with a non-zero pooling window, stride or padding.
    PoolFieldsWithoutPool,
    /// Pooling with a window other than 2 or 3 or a stride other than 1 or 2.
    PoolShape { win: u32, stride: u32 },
    /// The pooling window is larger than the padded output.
    PoolWindow,
    /// A `what` ("pixel", "channel") tile `start + count` beyond `total`.
    Tile {
        what: &'static str,
        start: u32,
        count: u32,
        total: u64,
    },
    /// Two elements of a tensor share a byte: `pitch_name`'s pitch is below the
    /// `span` of the smaller dimensions.
    Overlap {
        tensor: &'static str,
        pitch_name: &'static str,
        pitch: u32,
        span: u64,
        layout: crate::checks::ActLayout,
    },
    /// A tensor ends beyond the SRAM.
    BeyondSram {
        tensor: &'static str,
        addr: u32,
        end: u64,
        sram_bytes: u64,
    },
    /// A flag index at or above the hardware's flag count.
    Flag { flag: u32, hw_flags: u32 },
    /// `w_pitch` below the tile's channel count: its weight vectors would overlap.
    WeightPitch { w_pitch: u32, oc_count: u32 },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Field(e) => write!(f, "{}", e.message),
            CheckError::Groups {
                in_c,
                out_c,
                groups,
            } => write!(
                f,
                "in_c {in_c} and out_c {out_c} must be divisible by groups {groups}"
            ),
            CheckError::Geometry {
                out_h,
                out_w,
                expected,
            } => write!(
                f,
                "out_h x out_w = {out_h}x{out_w} does not match the input geometry ({expected:?})"
            ),
            CheckError::PoolFieldsWithoutPool => {
                write!(f, "pool=none needs pool_win, pool_stride and pool pads of 0")
            }
            CheckError::PoolShape { .. } => {
                write!(f, "pooling needs pool_win 2 or 3 and pool_stride 1 or 2")
            }
            CheckError::PoolWindow => write!(f, "pooling window larger than the padded output"),
            CheckError::Tile {
                what,
                start,
                count,
                total,
            } => write!(f, "{what} tile {start}+{count} exceeds {total}"),
            CheckError::Overlap {
                tensor,
                pitch_name,
                pitch,
                span,
                layout: l,
            } => write!(
                f,
                "{tensor} pitches overlap: {pitch_name}_pitch {pitch} < {span} bytes of the smaller \
                 dimensions (row {}, pix {}, chan {}; H {} W {} C {})",
                l.row, l.pix, l.chan, l.h, l.w, l.c
            ),
            CheckError::BeyondSram {
                tensor,
                addr,
                end,
                sram_bytes,
            } => write!(
                f,
                "{tensor} tensor at 0x{addr:x} ends at 0x{end:x}, beyond the SRAM ({sram_bytes} bytes)"
            ),
            CheckError::Flag { flag, hw_flags } => write!(
                f,
                "uses flag F{flag} but the hardware has {hw_flags} flags"
            ),
            CheckError::WeightPitch { w_pitch, oc_count } => write!(
                f,
                "w_pitch {w_pitch} is below oc_count {oc_count}: the tile's weight vectors overlap"
            ),
        }
    }
}

impl std::error::Error for CheckError {}

/// A program (its instruction list as a whole) that breaks a rule of docs/ISA.md
/// section 2: the STOP rule, the hardware it was compiled for, the prologue split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgramError {
    /// The last instruction is not STOP (or there is none).
    NoFinalStop,
    /// Instruction `index` uses a flag at or above the hardware's flag count.
    Flag {
        index: usize,
        mnemonic: &'static str,
        flag: u32,
        hw_flags: u32,
    },
    /// The program was compiled for another hardware configuration.
    HwMismatch { program: u64, target: u64 },
    /// `body_start` leaves the prologue or the body empty.
    BodyStartRange { body_start: usize, instrs: usize },
    /// The instruction before `body_start` is not a STOP.
    BodyStartNotAfterStop {
        body_start: usize,
        mnemonic: &'static str,
    },
    /// A host op runs after a prologue segment.
    HostOpInPrologue {
        name: String,
        segment: u32,
        first_body_segment: usize,
    },
}

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgramError::NoFinalStop => write!(f, "program does not end with STOP"),
            ProgramError::Flag {
                index,
                mnemonic,
                flag,
                hw_flags,
            } => write!(
                f,
                "instruction {index} ({mnemonic}) uses flag F{flag} but the hardware has {hw_flags} flags"
            ),
            ProgramError::HwMismatch { program, target } => write!(
                f,
                "program was compiled for a different hardware configuration (fingerprint {program:#018x}, this target {target:#018x})"
            ),
            ProgramError::BodyStartRange { body_start, instrs } => write!(
                f,
                "body_start {body_start} must lie in 1..{instrs} (a non-empty prologue and body)"
            ),
            ProgramError::BodyStartNotAfterStop {
                body_start,
                mnemonic,
            } => write!(
                f,
                "body_start {body_start}: instruction {} is {mnemonic}, not the STOP ending the prologue",
                body_start - 1
            ),
            ProgramError::HostOpInPrologue {
                name,
                segment,
                first_body_segment,
            } => write!(
                f,
                "host op '{name}' runs after segment {segment}, which is in the prologue (segments 0..{first_body_segment}); the prologue has no host ops"
            ),
        }
    }
}

impl std::error::Error for ProgramError {}

/// An I/O descriptor (program input/output or host-op operand) the reader would
/// refuse. Every variant but [`DescError::EmptyName`] names the descriptor.
#[derive(Debug, Clone, PartialEq)]
pub enum DescError {
    /// The descriptor has no name.
    EmptyName,
    /// More dimensions than [`crate::container::MAX_RANK`].
    Rank { name: String, rank: usize },
    /// The scale is not a finite positive number.
    Scale { name: String, scale: f32 },
    /// The zero point lies outside the dtype's range.
    ZeroPoint {
        name: String,
        zero_point: i32,
        lo: i32,
        hi: i32,
        dtype: &'static str,
    },
    /// The hwc layout needs an 8-bit dtype.
    HwcDtype { name: String, dtype: &'static str },
    /// The hwc layout needs shape `[1,C,H,W]` or `[C,H,W]`.
    HwcShape { name: String },
    /// A program input or output that is not int8 or uint8.
    NotCode { name: String, dtype: &'static str },
}

impl fmt::Display for DescError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DescError::EmptyName => write!(f, "descriptor name is empty"),
            DescError::Rank { name, rank } => {
                write!(f, "{name}: rank {rank} > {}", crate::container::MAX_RANK)
            }
            DescError::Scale { name, scale } => {
                write!(f, "{name}: scale {scale} must be finite and > 0")
            }
            DescError::ZeroPoint {
                name,
                zero_point,
                lo,
                hi,
                dtype,
            } => write!(
                f,
                "{name}: zero point {zero_point} outside {lo}..={hi} for {dtype}"
            ),
            DescError::HwcDtype { name, dtype } => {
                write!(f, "{name}: hwc layout needs an 8-bit dtype, not {dtype}")
            }
            DescError::HwcShape { name } => {
                write!(f, "{name}: hwc layout needs shape [1,C,H,W] or [C,H,W]")
            }
            DescError::NotCode { name, dtype } => write!(
                f,
                "{name}: program inputs and outputs must be int8 or uint8, not {dtype}"
            ),
        }
    }
}

impl std::error::Error for DescError {}

/// A host-op record the reader would refuse; `op` is the host op's (layer's) name.
#[derive(Debug, Clone, PartialEq)]
pub enum HostOpError {
    /// The op has no name.
    EmptyName,
    /// The op text is empty.
    EmptyOpText { op: String },
    /// It runs after a segment the program does not have.
    Segment {
        op: String,
        segment: u32,
        segments: usize,
    },
    /// More operands than [`crate::container::MAX_HOST_INPUTS`].
    TooManyInputs { op: String, inputs: usize },
    /// An operand descriptor is invalid.
    Input { op: String, error: DescError },
    /// An operand descriptor is marked as an output.
    InputIsOutput { op: String, input: String },
    /// The output descriptor is invalid.
    Output { op: String, error: DescError },
    /// The output is not an 8-bit or float32 output descriptor.
    OutputKind { op: String, output: String },
    /// The op comes after one with a later segment.
    Order {
        op: String,
        segment: u32,
        after: u32,
    },
}

impl fmt::Display for HostOpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostOpError::EmptyName => write!(f, "host op with an empty name"),
            HostOpError::EmptyOpText { op } => write!(f, "host op '{op}': empty op text"),
            HostOpError::Segment {
                op,
                segment,
                segments,
            } => write!(
                f,
                "host op '{op}': runs after segment {segment} but the program has {segments} segments"
            ),
            HostOpError::TooManyInputs { op, inputs } => write!(
                f,
                "host op '{op}': {inputs} inputs (at most {})",
                crate::container::MAX_HOST_INPUTS
            ),
            HostOpError::Input { op, error } => write!(f, "host op '{op}': input {error}"),
            HostOpError::InputIsOutput { op, input } => {
                write!(f, "host op '{op}': input '{input}' is marked as an output")
            }
            HostOpError::Output { op, error } => write!(f, "host op '{op}': output {error}"),
            HostOpError::OutputKind { op, output } => write!(
                f,
                "host op '{op}': the output '{output}' must be an 8-bit or float32 output descriptor"
            ),
            HostOpError::Order { op, segment, after } => write!(
                f,
                "host op '{op}': segment {segment} after segment {after} (ops must be in execution order)"
            ),
        }
    }
}

impl std::error::Error for HostOpError {}

/// A layer table that is not the canonical one for its program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerTableError {
    /// The table covers another number of instructions than the program has.
    Length { table: usize, instrs: usize },
    /// Instruction `index` names a layer out of first-use order or out of range.
    Order {
        index: usize,
        layer: u32,
        next: u32,
        names: usize,
    },
    /// Names no instruction uses.
    Unused { names: usize, used: u32 },
    /// A name given twice.
    Duplicate { name: String },
}

impl fmt::Display for LayerTableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerTableError::Length { table, instrs } => write!(
                f,
                "layer table covers {table} instructions, the program has {instrs}"
            ),
            LayerTableError::Order {
                index,
                layer,
                next,
                names,
            } => write!(
                f,
                "instruction {index}: layer index {layer} is not the next new layer ({next} of {names} names)"
            ),
            LayerTableError::Unused { names, used } => {
                write!(f, "{names} layer names, {used} used by instructions")
            }
            LayerTableError::Duplicate { name } => write!(f, "layer name {name:?} given twice"),
        }
    }
}

impl std::error::Error for LayerTableError {}

/// A value in a text listing that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueError {
    /// Not a value of the field's format.
    Field {
        field: &'static str,
        text: String,
        /// The names an enum field accepts (empty for other formats).
        expected: &'static [&'static str],
    },
    /// Not a double-quoted string.
    NotQuoted,
    /// A `\u{..}` escape that is no character.
    BadUnicodeEscape,
    /// An unknown escape.
    BadEscape,
    /// Hex data with an odd number of digits (or non-ASCII).
    OddHex,
    /// A pair of characters that is no hex byte.
    BadHexByte { text: String },
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::Field {
                field,
                text,
                expected,
            } if !expected.is_empty() => write!(
                f,
                "bad value '{text}' for field {field} (expected one of {})",
                expected.join(", ")
            ),
            ValueError::Field { field, text, .. } => {
                write!(f, "bad value '{text}' for field {field}")
            }
            ValueError::NotQuoted => write!(f, "expected a double-quoted string"),
            ValueError::BadUnicodeEscape => write!(f, "bad \\u{{..}} escape"),
            ValueError::BadEscape => write!(f, "bad escape in string"),
            ValueError::OddHex => write!(f, "hex data must have an even number of hex digits"),
            ValueError::BadHexByte { text } => write!(f, "bad hex byte '{text}'"),
        }
    }
}

impl std::error::Error for ValueError {}
