//! External tensor data (`data_location = EXTERNAL`): `location`, `offset` and
//! `length` keys name a byte range of a file relative to the model's directory.
//! Absolute paths and paths that leave the directory (`..`, symlinks) are rejected.

use crate::proto::onnx::TensorProto;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

/// Reads the `expected` bytes of a tensor stored outside the model.
pub fn read_external(
    t: &TensorProto,
    base_dir: Option<&Path>,
    expected: usize,
) -> Result<Vec<u8>, String> {
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
    let location = location.ok_or("external data without a 'location' key")?;
    let base = base_dir
        .ok_or("the tensor's data is in an external file, but no model directory is known")?;
    let path = resolve(base, location)?;
    if let Some(len) = length {
        if len != expected as u64 {
            return Err(format!(
                "external data length {len} does not match the {expected} bytes the tensor needs"
            ));
        }
    }
    read_range(&path, offset, expected)
}

fn parse_u64(s: &str, key: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("external data {key} '{s}' is not a non-negative integer"))
}

/// Joins `location` to `base` after checking it stays inside `base`.
fn resolve(base: &Path, location: &str) -> Result<PathBuf, String> {
    let rel = Path::new(location);
    if location.is_empty() || rel.is_absolute() {
        return Err(format!(
            "external data location '{location}' must be a relative path"
        ));
    }
    for c in rel.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            _ => {
                return Err(format!(
                    "external data location '{location}' leaves the model's directory"
                ))
            }
        }
    }
    let path = base.join(rel);
    let canon_base = base
        .canonicalize()
        .map_err(|e| format!("model directory {}: {e}", base.display()))?;
    let canon = path
        .canonicalize()
        .map_err(|e| format!("external data file {}: {e}", path.display()))?;
    if !canon.starts_with(&canon_base) {
        return Err(format!(
            "external data location '{location}' resolves outside the model's directory"
        ));
    }
    Ok(canon)
}

fn read_range(path: &Path, offset: u64, len: usize) -> Result<Vec<u8>, String> {
    let err = |e: std::io::Error| format!("external data file {}: {e}", path.display());
    let mut f = File::open(path).map_err(err)?;
    let size = f.metadata().map_err(err)?.len();
    let end = offset.checked_add(len as u64);
    if end.is_none_or(|end| end > size) {
        return Err(format!(
            "external data file {} has {size} bytes; the tensor needs {len} bytes at offset {offset}",
            path.display()
        ));
    }
    f.seek(SeekFrom::Start(offset)).map_err(err)?;
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf).map_err(err)?;
    Ok(buf)
}
