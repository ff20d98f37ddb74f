//! NumPy `.npy` files: read (versions 1.0, 2.0 and 3.0; little-endian float32,
//! float64 (converted to float32), int8, uint8, int32, int64; C order) and write
//! (version 1.0, or 2.0 when the header needs it).
//!
//! Reading never panics on malformed input: every error names the byte offset at
//! which the file stops making sense.

use nnac_ir::{DType, Tensor, TensorData};
use std::fmt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

#[derive(Debug)]
pub enum NpyError {
    /// The file could not be read or written.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The bytes are not a supported `.npy` file.
    Format {
        path: Option<PathBuf>,
        offset: usize,
        msg: String,
    },
}

impl NpyError {
    fn at(offset: usize, msg: impl Into<String>) -> Self {
        NpyError::Format {
            path: None,
            offset,
            msg: msg.into(),
        }
    }

    fn with_path(self, p: &Path) -> Self {
        match self {
            NpyError::Format { offset, msg, .. } => NpyError::Format {
                path: Some(p.to_path_buf()),
                offset,
                msg,
            },
            e => e,
        }
    }
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NpyError::Io { path, source } => write!(f, "'{}': {source}", path.display()),
            NpyError::Format {
                path: Some(p),
                offset,
                msg,
            } => write!(f, "'{}': byte {offset}: {msg}", p.display()),
            NpyError::Format {
                path: None,
                offset,
                msg,
            } => write!(f, "byte {offset}: {msg}"),
        }
    }
}

impl std::error::Error for NpyError {}

pub fn read_npy(path: impl AsRef<Path>) -> Result<Tensor, NpyError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_npy(&bytes).map_err(|e| e.with_path(path))
}

pub fn write_npy(path: impl AsRef<Path>, t: &Tensor) -> Result<(), NpyError> {
    let path = path.as_ref();
    std::fs::write(path, encode_npy(t)).map_err(|source| NpyError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The element type stored in a file.
#[derive(Clone, Copy, Debug, PartialEq)]
enum FileType {
    F32,
    F64,
    I8,
    U8,
    I32,
    I64,
}

impl FileType {
    fn size(self) -> usize {
        match self {
            FileType::I8 | FileType::U8 => 1,
            FileType::F32 | FileType::I32 => 4,
            FileType::F64 | FileType::I64 => 8,
        }
    }

    /// Parses a `descr` such as `<f4` or `|u1`: `None` for an unknown type,
    /// `Some(None)` for a known type stored big-endian (not supported).
    fn from_descr(d: &str) -> Option<Option<FileType>> {
        let (order, code) = d.split_at_checked(1)?;
        let ty = match code {
            "f4" => FileType::F32,
            "f8" => FileType::F64,
            "i1" => FileType::I8,
            "u1" => FileType::U8,
            "i4" => FileType::I32,
            "i8" => FileType::I64,
            _ => return None,
        };
        Some(match order {
            "<" | "=" | "|" => Some(ty),
            ">" if ty.size() == 1 => Some(ty),
            ">" => None,
            _ => return None,
        })
    }
}

/// Parses the bytes of a `.npy` file.
pub fn parse_npy(bytes: &[u8]) -> Result<Tensor, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(NpyError::at(
            0,
            "not a .npy file (missing the \\x93NUMPY magic)",
        ));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len_size, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        _ => {
            return Err(NpyError::at(
                6,
                format!("unsupported .npy version {major}.{minor}"),
            ))
        }
    };
    if bytes.len() < 8 + len_size {
        return Err(NpyError::at(8, "file ends inside the header length"));
    }
    let header_len = bytes[8..8 + len_size]
        .iter()
        .rev()
        .fold(0usize, |acc, &b| acc * 256 + b as usize);
    let start = 8 + len_size;
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| {
            NpyError::at(
                8,
                format!(
                    "header of {header_len} bytes runs past the end of the file ({} bytes)",
                    bytes.len()
                ),
            )
        })?;
    let header = decode_header(&bytes[start..end], start, utf8)?;
    let meta = parse_header(header, start)?;
    decode_data(&meta, &bytes[end..], end)
}

fn decode_header(raw: &[u8], start: usize, utf8: bool) -> Result<&str, NpyError> {
    if !utf8 {
        if let Some(i) = raw.iter().position(|b| !b.is_ascii()) {
            return Err(NpyError::at(start + i, "header is not ASCII"));
        }
    }
    std::str::from_utf8(raw)
        .map_err(|e| NpyError::at(start + e.valid_up_to(), "header is not valid UTF-8"))
}

/// The parsed header dictionary.
struct Meta {
    ty: FileType,
    shape: Vec<usize>,
}

/// A header value.
enum Lit {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

/// Parses `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
fn parse_header(h: &str, base: usize) -> Result<Meta, NpyError> {
    let mut p = Lexer {
        s: h.as_bytes(),
        pos: 0,
        base,
    };
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key_at = p.offset();
        let Lit::Str(key) = p.literal()? else {
            return Err(NpyError::at(key_at, "header key is not a string"));
        };
        p.expect(b':')?;
        p.skip_ws();
        let val_at = p.offset();
        let val = p.literal()?;
        match (key.as_str(), val) {
            ("descr", Lit::Str(d)) => descr = Some((d, val_at)),
            ("fortran_order", Lit::Bool(b)) => fortran = Some(b),
            ("shape", Lit::Tuple(s)) => shape = Some(s),
            (k @ ("descr" | "fortran_order" | "shape"), _) => {
                return Err(NpyError::at(
                    val_at,
                    format!("header field '{k}' has the wrong type"),
                ))
            }
            _ => {}
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    let end = p.offset();
    let (descr, descr_at) = descr.ok_or_else(|| NpyError::at(end, "header has no 'descr'"))?;
    let ty = match FileType::from_descr(&descr) {
        Some(Some(t)) => t,
        Some(None) => {
            return Err(NpyError::at(
                descr_at,
                format!("big-endian data '{descr}' is not supported"),
            ))
        }
        None => {
            return Err(NpyError::at(
                descr_at,
                format!(
                "unsupported element type '{descr}' (float32, float64, int8, uint8, int32, int64)"
            ),
            ))
        }
    };
    if fortran.ok_or_else(|| NpyError::at(end, "header has no 'fortran_order'"))? {
        return Err(NpyError::at(
            base,
            "Fortran-order arrays are not supported; save with C order",
        ));
    }
    let shape = shape.ok_or_else(|| NpyError::at(end, "header has no 'shape'"))?;
    Ok(Meta { ty, shape })
}

/// A cursor over the header with file offsets for errors.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
    base: usize,
}

impl Lexer<'_> {
    fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), NpyError> {
        self.skip_ws();
        if self.eat(c) {
            Ok(())
        } else {
            Err(NpyError::at(
                self.offset(),
                format!("malformed header: expected '{}'", c as char),
            ))
        }
    }

    fn literal(&mut self) -> Result<Lit, NpyError> {
        self.skip_ws();
        let at = self.offset();
        match self.s.get(self.pos) {
            Some(&q @ (b'\'' | b'"')) => {
                self.pos += 1;
                let len = self.s[self.pos..]
                    .iter()
                    .position(|&c| c == q)
                    .ok_or_else(|| NpyError::at(at, "unterminated string in header"))?;
                let text = String::from_utf8_lossy(&self.s[self.pos..self.pos + len]).into_owned();
                self.pos += len + 1;
                Ok(Lit::Str(text))
            }
            Some(b'(') | Some(b'[') => self.tuple().map(Lit::Tuple),
            _ => {
                let word: Vec<u8> = self.s[self.pos..]
                    .iter()
                    .copied()
                    .take_while(|c| c.is_ascii_alphabetic())
                    .collect();
                self.pos += word.len();
                match word.as_slice() {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    _ => Err(NpyError::at(
                        at,
                        "malformed header: expected a string, True/False or a tuple",
                    )),
                }
            }
        }
    }

    fn tuple(&mut self) -> Result<Vec<usize>, NpyError> {
        let close = if self.s[self.pos] == b'(' { b')' } else { b']' };
        self.pos += 1;
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(close) {
                return Ok(dims);
            }
            let at = self.offset();
            let digits: Vec<u8> = self.s[self.pos..]
                .iter()
                .copied()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            self.pos += digits.len();
            // Strip a Python 2 long suffix.
            self.eat(b'L');
            let text = std::str::from_utf8(&digits).unwrap_or("");
            let d: usize = text.parse().map_err(|_| {
                NpyError::at(at, "malformed shape: expected a non-negative integer")
            })?;
            dims.push(d);
            self.skip_ws();
            if !self.eat(b',') {
                self.skip_ws();
                if self.eat(close) {
                    return Ok(dims);
                }
                return Err(NpyError::at(
                    self.offset(),
                    format!("malformed shape: expected ',' or '{}'", close as char),
                ));
            }
        }
    }
}

fn decode_data(meta: &Meta, data: &[u8], offset: usize) -> Result<Tensor, NpyError> {
    let count = meta.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let need = count.and_then(|c| c.checked_mul(meta.ty.size()));
    let (Some(count), Some(need)) = (count, need) else {
        return Err(NpyError::at(
            offset,
            format!("shape {:?} is too large", meta.shape),
        ));
    };
    if data.len() < need {
        return Err(NpyError::at(
            offset + data.len(),
            format!(
                "file is truncated: shape {:?} needs {need} data bytes, found {}",
                meta.shape,
                data.len()
            ),
        ));
    }
    if data.len() > need {
        return Err(NpyError::at(
            offset + need,
            format!(
                "{} unexpected bytes after the array data",
                data.len() - need
            ),
        ));
    }
    let le4 = |c: &[u8]| [c[0], c[1], c[2], c[3]];
    let le8 = |c: &[u8]| [c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]];
    let values = match meta.ty {
        FileType::F32 => TensorData::F32(
            data.chunks_exact(4)
                .map(|c| f32::from_le_bytes(le4(c)))
                .collect(),
        ),
        FileType::F64 => TensorData::F32(
            data.chunks_exact(8)
                .map(|c| f64::from_le_bytes(le8(c)) as f32)
                .collect(),
        ),
        FileType::I8 => TensorData::I8(data.iter().map(|&b| b as i8).collect()),
        FileType::U8 => TensorData::U8(data.to_vec()),
        FileType::I32 => TensorData::I32(
            data.chunks_exact(4)
                .map(|c| i32::from_le_bytes(le4(c)))
                .collect(),
        ),
        FileType::I64 => TensorData::I64(
            data.chunks_exact(8)
                .map(|c| i64::from_le_bytes(le8(c)))
                .collect(),
        ),
    };
    debug_assert_eq!(values.len(), count);
    Tensor::new(meta.shape.clone(), values)
        .ok_or_else(|| NpyError::at(offset, "element count does not match the shape"))
}

/// Encodes a tensor as a `.npy` file (C order, little-endian).
pub fn encode_npy(t: &Tensor) -> Vec<u8> {
    let descr = match t.dtype() {
        DType::F32 => "<f4",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
    };
    let shape = match t.shape.as_slice() {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        s => format!(
            "({})",
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Pad so the data starts on a 64-byte boundary; the header ends with '\n'.
    let v1 = (10 + header.len() + 1).div_ceil(64) * 64 - 10 <= u16::MAX as usize;
    let prefix = if v1 { 10 } else { 12 };
    let total = (prefix + header.len() + 1).div_ceil(64) * 64;
    header.extend(std::iter::repeat_n(' ', total - prefix - header.len() - 1));
    header.push('\n');
    let mut out = Vec::with_capacity(total + t.numel() * t.dtype().size());
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    match &t.data {
        TensorData::F32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        TensorData::I8(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        TensorData::U8(v) => out.extend_from_slice(v),
        TensorData::I32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        TensorData::I64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[version, 0]);
        if version == 1 {
            b.extend_from_slice(&(header.len() as u16).to_le_bytes());
        } else {
            b.extend_from_slice(&(header.len() as u32).to_le_bytes());
        }
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn round_trips_every_dtype() {
        let tensors = [
            Tensor::f32(vec![2, 3], vec![1.0, -2.5, 3.0, 4.0, 5.0, f32::MAX]).unwrap(),
            Tensor::new(vec![3], TensorData::I8(vec![-128, 0, 127])).unwrap(),
            Tensor::new(vec![1, 2], TensorData::U8(vec![0, 255])).unwrap(),
            Tensor::new(vec![2], TensorData::I32(vec![i32::MIN, 7])).unwrap(),
            Tensor::new(vec![1], TensorData::I64(vec![i64::MAX])).unwrap(),
            Tensor::scalar_f32(0.5),
            Tensor::f32(vec![0, 4], vec![]).unwrap(),
        ];
        for t in tensors {
            let bytes = encode_npy(&t);
            assert_eq!(
                bytes.len() % 64,
                (t.numel() * t.dtype().size()) % 64,
                "data is 64-byte aligned"
            );
            assert_eq!(parse_npy(&bytes).unwrap(), t);
        }
    }

    #[test]
    fn reads_numpy_written_headers() {
        // Exactly what numpy 1.x/2.x writes for np.arange(3, dtype='<f8').
        let mut h = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }".to_string();
        h.extend(std::iter::repeat_n(' ', 117 - h.len()));
        h.push('\n');
        let data: Vec<u8> = [0.0f64, 1.0, 2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let t = parse_npy(&raw(1, &h, &data)).unwrap();
        assert_eq!(t, Tensor::f32(vec![3], vec![0.0, 1.0, 2.0]).unwrap());
        for v in [2, 3] {
            let t = parse_npy(&raw(
                v,
                "{\"shape\": [2], \"fortran_order\": False, \"descr\": \"|u1\"}\n",
                &[1, 2],
            ))
            .unwrap();
            assert_eq!(t.data, TensorData::U8(vec![1, 2]));
        }
    }

    #[test]
    fn rejects_unsupported_files_with_offsets() {
        let cases: [(Vec<u8>, usize, &str); 6] = [
            (b"NOTNPY".to_vec(), 0, "magic"),
            (
                raw(
                    1,
                    "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                    &[0; 4],
                ),
                10,
                "Fortran",
            ),
            (
                raw(
                    1,
                    "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                    &[0; 4],
                ),
                20,
                "big-endian",
            ),
            (
                raw(
                    1,
                    "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                    &[0; 8],
                ),
                20,
                "unsupported element type",
            ),
            (
                raw(
                    1,
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                    &[0; 4],
                ),
                71,
                "truncated",
            ),
            (raw(9, "{}", &[]), 6, "version"),
        ];
        for (bytes, offset, what) in cases {
            match parse_npy(&bytes) {
                Err(NpyError::Format { offset: o, msg, .. }) => {
                    assert!(msg.contains(what), "{msg} should mention {what}");
                    assert_eq!(o, offset, "{msg}");
                }
                other => panic!("{what}: expected a format error, got {other:?}"),
            }
        }
    }

    #[test]
    fn never_panics_on_truncated_or_corrupted_files() {
        let good = encode_npy(&Tensor::f32(vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap());
        for n in 0..good.len() {
            assert!(parse_npy(&good[..n]).is_err(), "truncated to {n} bytes");
        }
        let mut state = 0x1234_5678u64;
        for _ in 0..5000 {
            let mut b = good.clone();
            for _ in 0..3 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (state >> 33) as usize % b.len();
                b[i] = (state >> 20) as u8;
            }
            let _ = parse_npy(&b);
        }
    }

    #[test]
    fn file_errors_name_the_path() {
        let tmp = tempfile::Builder::new()
            .prefix("nnac-npy-test-")
            .tempdir()
            .unwrap();
        let dir = tmp.path();
        let p = dir.join("bad.npy");
        std::fs::write(&p, b"garbage").unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(e.contains("bad.npy") && e.contains("byte 0"), "{e}");
        let t = Tensor::f32(vec![1], vec![3.0]).unwrap();
        write_npy(dir.join("ok.npy"), &t).unwrap();
        assert_eq!(read_npy(dir.join("ok.npy")).unwrap(), t);
    }
}
