//! Little-endian byte reading and writing for the container.

use super::ContainerError;

/// Reads little-endian values from one section; errors carry file offsets.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// File offset of `data[0]`.
    base: usize,
    section: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], base: usize, section: &'static str) -> Self {
        Reader {
            data,
            pos: 0,
            base,
            section,
        }
    }

    /// An error at the current position.
    pub fn error(&self, message: impl std::fmt::Display) -> ContainerError {
        ContainerError::at(self.base + self.pos, self.section, message)
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], ContainerError> {
        let left = self.data.len() - self.pos;
        if n > left {
            return Err(self.error(format!("truncated: need {n} bytes, {left} left")));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// File offset of the current position.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.data[self.pos..];
        self.pos = self.data.len();
        s
    }

    pub fn u8(&mut self) -> Result<u8, ContainerError> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, ContainerError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn i32(&mut self) -> Result<i32, ContainerError> {
        Ok(self.u32()? as i32)
    }

    pub fn u64(&mut self) -> Result<u64, ContainerError> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A u32 count that must fit in the remaining bytes at `min_each` bytes per item.
    pub fn count(&mut self, min_each: usize) -> Result<usize, ContainerError> {
        let n = self.u32()? as usize;
        let left = self.data.len() - self.pos;
        if n.saturating_mul(min_each) > left {
            return Err(self.error(format!("count {n} does not fit in the {left} bytes left")));
        }
        Ok(n)
    }

    /// u32 length + UTF-8 bytes.
    pub fn string(&mut self) -> Result<String, ContainerError> {
        let n = self.count(1)?;
        let at = self.base + self.pos;
        let b = self.bytes(n)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| ContainerError::at(at, self.section, "string is not valid UTF-8"))
    }

    /// Errs unless every byte was consumed.
    pub fn finish(&self) -> Result<(), ContainerError> {
        if self.pos != self.data.len() {
            return Err(self.error(format!(
                "{} unexpected trailing bytes",
                self.data.len() - self.pos
            )));
        }
        Ok(())
    }
}

/// Little-endian writer.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    pub fn string(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.bytes(s.as_bytes());
    }
}
