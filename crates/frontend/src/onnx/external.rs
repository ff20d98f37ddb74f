//! External tensor data (`data_location = EXTERNAL`): `location`, `offset` and
//! `length` keys name a byte range of a file relative to the model's directory.
//! Absolute paths and paths that leave the directory (`..`, symlinks) are rejected.

use super::error::ExternalError;
use crate::proto::onnx::TensorProto;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

/// Reads the `expected` bytes of a tensor stored outside the model.
pub fn read_external(
    t: &TensorProto,
    base_dir: Option<&Path>,
    expected: usize,
) -> Result<Vec<u8>, ExternalError> {
    let mut location = None;
    let mut offset: u64 = 0;
    let mut length: Option<u64> = None;
    for kv in &t.external_data {
        match kv.key() {
            "location" => location = Some(kv.value()),
            "offset" => offset = parse_u64(kv.value(), "offset")?,
            "length" => length = Some(parse_u64(kv.value(), "length")?),
            _ => {} // "checksum" and future keys do not affect the bytes
        }
    }
    let location = location.ok_or(ExternalError::NoLocation)?;
    let base = base_dir.ok_or(ExternalError::NoModelDir)?;
    let path = resolve(base, location)?;
    if let Some(len) = length {
        if len != expected as u64 {
            return Err(ExternalError::Length {
                declared: len,
                expected,
            });
        }
    }
    read_range(&path, offset, expected)
}

fn parse_u64(s: &str, key: &'static str) -> Result<u64, ExternalError> {
    s.trim().parse().map_err(|_| ExternalError::BadNumber {
        key,
        text: s.to_string(),
    })
}

/// Joins `location` to `base` after checking it stays inside `base`.
fn resolve(base: &Path, location: &str) -> Result<PathBuf, ExternalError> {
    let rel = Path::new(location);
    let location = || location.to_string();
    if location().is_empty() || rel.is_absolute() {
        return Err(ExternalError::NotRelative {
            location: location(),
        });
    }
    for c in rel.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            _ => {
                return Err(ExternalError::LeavesDir {
                    location: location(),
                })
            }
        }
    }
    let path = base.join(rel);
    let canon_base = base.canonicalize().map_err(|source| ExternalError::Io {
        what: "model directory",
        path: base.to_path_buf(),
        source,
    })?;
    let canon = path.canonicalize().map_err(|source| ExternalError::Io {
        what: "external data file",
        path: path.clone(),
        source,
    })?;
    if !canon.starts_with(&canon_base) {
        return Err(ExternalError::OutsideDir {
            location: location(),
        });
    }
    Ok(canon)
}

fn read_range(path: &Path, offset: u64, len: usize) -> Result<Vec<u8>, ExternalError> {
    let err = |source: std::io::Error| ExternalError::Io {
        what: "external data file",
        path: path.to_path_buf(),
        source,
    };
    let mut f = File::open(path).map_err(err)?;
    let size = f.metadata().map_err(err)?.len();
    let end = offset.checked_add(len as u64);
    if end.is_none_or(|end| end > size) {
        return Err(ExternalError::TooShort {
            path: path.to_path_buf(),
            size,
            len,
            offset,
        });
    }
    f.seek(SeekFrom::Start(offset)).map_err(err)?;
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf).map_err(err)?;
    Ok(buf)
}
