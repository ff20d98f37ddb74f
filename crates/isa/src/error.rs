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
