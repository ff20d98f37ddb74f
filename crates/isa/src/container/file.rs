//! Reading and writing `.nnab` bytes.

use super::wire::{Reader, Writer};
use super::{
    ContainerError, DramImage, HostOps, IoDesc, LayerTable, Metadata, Program, SectionKind,
    FORMAT_VERSION, MAGIC,
};
use crate::crc32::{crc32, crc32_beside};
use crate::hw::HwConfig;
use crate::instr::{check_program, decode_program, encode_program};

const HEADER_SIZE: usize = 16;
const ENTRY_SIZE: usize = 24;
const CRC_SIZE: usize = 4;

impl Program {
    /// Serializes the program. Deterministic: equal programs give equal bytes.
    pub fn write(&self) -> Result<Vec<u8>, ContainerError> {
        check_program(&self.instrs).map_err(ContainerError::new)?;
        for d in &self.io {
            d.validate().map_err(ContainerError::new)?;
            check_io_dtype(d).map_err(ContainerError::new)?;
        }
        if let Some(h) = &self.host_ops {
            h.validate(crate::instr::segments(&self.instrs).len())
                .map_err(ContainerError::new)?;
        }
        self.meta
            .hw
            .validate()
            .map_err(|e| ContainerError::new(e.to_string()))?;
        let code = encode_program(&self.instrs).map_err(|e| ContainerError::new(e.to_string()))?;
        let dram_base = self.dram.base.to_le_bytes();
        let io = write_io(&self.io);
        let host_ops = self.host_ops.as_ref().map(HostOps::write);
        let meta = write_meta(&self.meta);
        let layers = match &self.layers {
            Some(l) => {
                l.validate(self.instrs.len()).map_err(ContainerError::new)?;
                Some(l.write())
            }
            None => None,
        };
        let prologue = match self.body_start {
            Some(b) => {
                super::check_body_start(b, &self.instrs, self.host_ops.as_ref())
                    .map_err(ContainerError::new)?;
                Some(super::prologue::write(b))
            }
            None => None,
        };
        // Each section's payload as the pieces it is made of: the DRAM image (the
        // weights, most of the file) is copied once, straight into the output.
        let mut sections: Vec<(SectionKind, Vec<&[u8]>)> = vec![
            (SectionKind::Instructions, vec![&code]),
            (SectionKind::Dram, vec![&dram_base, &self.dram.bytes]),
            (SectionKind::Io, vec![&io]),
        ];
        if let Some(h) = &host_ops {
            sections.push((SectionKind::HostOps, vec![h]));
        }
        sections.push((SectionKind::Metadata, vec![&meta]));
        if let Some(l) = &layers {
            sections.push((SectionKind::Layers, vec![l]));
        }
        if let Some(p) = &prologue {
            sections.push((SectionKind::Prologue, vec![p]));
        }

        let len = |parts: &[&[u8]]| parts.iter().map(|p| p.len()).sum::<usize>();
        let body: usize = sections.iter().map(|(_, p)| len(p)).sum();
        let mut w = Writer(Vec::with_capacity(
            HEADER_SIZE + ENTRY_SIZE * sections.len() + body + CRC_SIZE,
        ));
        w.bytes(&MAGIC);
        w.u32(FORMAT_VERSION);
        w.u32(sections.len() as u32);
        let mut offset = (HEADER_SIZE + ENTRY_SIZE * sections.len()) as u64;
        for (kind, parts) in &sections {
            w.u32(*kind as u32);
            w.u32(0);
            w.u64(offset);
            w.u64(len(parts) as u64);
            offset += len(parts) as u64;
        }
        for part in sections.iter().flat_map(|(_, parts)| parts) {
            w.bytes(part);
        }
        let crc = crc32(&w.0);
        w.u32(crc);
        Ok(w.0)
    }

    /// Parses and validates a container. Never panics on any input.
    pub fn read(bytes: &[u8]) -> Result<Program, ContainerError> {
        let (mut program, image) = Program::parse(bytes)?;
        program.dram.bytes = bytes[image].to_vec().into();
        Ok(program)
    }

    /// [`Program::read`] of a container the caller gives away (a file just read):
    /// the DRAM image, most of a program's bytes, stays in the buffer instead of
    /// being copied out of it.
    pub fn read_owned(bytes: Vec<u8>) -> Result<Program, ContainerError> {
        Program::read_shared(std::sync::Arc::new(bytes))
    }

    /// [`Program::read`] of a container held in a shared buffer (a mapped file):
    /// the DRAM image is the buffer's range of it ([`super::ImageBytes`]), not a copy.
    pub fn read_shared(buffer: super::SharedBuffer) -> Result<Program, ContainerError> {
        let (mut program, image) = Program::parse((*buffer).as_ref())?;
        program.dram.bytes = super::ImageBytes::slice_of(buffer, image)
            .ok_or_else(|| ContainerError::new("dram image outside the container"))?;
        Ok(program)
    }

    /// The program of a container, with an empty DRAM image, and where the image's
    /// bytes are in `bytes`. A large container's checksum is computed on two more
    /// threads while its sections are parsed (the parser takes any bytes without
    /// panicking); a mismatch is reported before any error of the sections, as if
    /// it had been checked first.
    fn parse(bytes: &[u8]) -> Result<(Program, std::ops::Range<usize>), ContainerError> {
        let body = check_header(bytes)?;
        let stored = stored_crc(bytes);
        if body.len() < PARALLEL_CRC_BYTES {
            crc_matches(stored, crc32(body))?;
            return Program::parse_body(body);
        }
        // Two pieces: with the parse, three threads on a machine of two cores or more.
        let (computed, parsed) = crc32_beside(body, 2, || Program::parse_body(body));
        crc_matches(stored, computed)?;
        parsed
    }

    /// [`Program::parse`] of the body after the envelope's checks.
    fn parse_body(body: &[u8]) -> Result<(Program, std::ops::Range<usize>), ContainerError> {
        let sections = read_table(body)?;
        let get = |k: SectionKind| sections.iter().find(|(kind, _, _)| *kind == k);
        let need = |k: SectionKind| {
            get(k).ok_or_else(|| ContainerError::new(format!("missing {} section", k.name())))
        };

        let (_, off, data) = need(SectionKind::Instructions)?;
        let instrs: Vec<_> = decode_program(data)
            .map_err(|e| ContainerError::at(off + e.offset, "instructions", e.message))?
            .into_iter()
            .map(|l| l.instr)
            .collect();
        let (_, off, data) = need(SectionKind::Dram)?;
        let (base, image) = read_dram(&mut Reader::new(data, *off, "dram"))?;
        let dram = DramImage {
            base,
            bytes: Default::default(),
        };
        let (_, off, data) = need(SectionKind::Io)?;
        let io = read_io(&mut Reader::new(data, *off, "io"))?;
        let host_ops = match get(SectionKind::HostOps) {
            Some((_, off, data)) => Some(HostOps::read(
                &mut Reader::new(data, *off, "hostops"),
                crate::instr::segments(&instrs).len(),
            )?),
            None => None,
        };
        let (_, off, data) = need(SectionKind::Metadata)?;
        let meta = read_meta(&mut Reader::new(data, *off, "metadata"))?;
        let layers = match get(SectionKind::Layers) {
            Some((_, off, data)) => Some(LayerTable::read(
                &mut Reader::new(data, *off, "layers"),
                instrs.len(),
            )?),
            None => None,
        };
        let body_start = match get(SectionKind::Prologue) {
            Some((_, off, data)) => Some(super::prologue::read(
                &mut Reader::new(data, *off, "prologue"),
                &instrs,
                host_ops.as_ref(),
            )?),
            None => None,
        };
        let program = Program {
            instrs,
            dram,
            io,
            host_ops,
            meta,
            layers,
            body_start,
        };
        Ok((program, image))
    }
}

/// Containers from this size on have their checksum computed beside the parse
/// (a thread costs tens of microseconds; 30 MB of CRC-32 about 4 ms).
const PARALLEL_CRC_BYTES: usize = 1 << 20;

/// Checks magic and version; returns the bytes before the checksum.
fn check_header(bytes: &[u8]) -> Result<&[u8], ContainerError> {
    if bytes.len() < HEADER_SIZE + CRC_SIZE {
        return Err(ContainerError::new(format!(
            "file too short ({} bytes) to be an .nnab container",
            bytes.len()
        )));
    }
    if bytes[..8] != MAGIC {
        return Err(ContainerError::new("not an .nnab container (bad magic)"));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != FORMAT_VERSION {
        return Err(ContainerError::new(format!(
            "unsupported .nnab format version {version} (this nnac reads version {FORMAT_VERSION})"
        )));
    }
    Ok(&bytes[..bytes.len() - CRC_SIZE])
}

/// The checksum stored at the end of a container that passed [`check_header`].
fn stored_crc(bytes: &[u8]) -> u32 {
    let tail = &bytes[bytes.len() - CRC_SIZE..];
    u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]])
}

/// The checksum error, if the stored and computed checksums differ.
fn crc_matches(stored: u32, computed: u32) -> Result<(), ContainerError> {
    if stored != computed {
        return Err(ContainerError::new(format!(
            "checksum mismatch (stored {stored:#010x}, computed {computed:#010x}): file is corrupt or truncated"
        )));
    }
    Ok(())
}

/// A section: kind, file offset, payload.
type Section<'a> = (SectionKind, usize, &'a [u8]);

/// Parses the section table; sections must be in kind order and tile the body exactly.
fn read_table(body: &[u8]) -> Result<Vec<Section<'_>>, ContainerError> {
    let mut r = Reader::new(&body[12..], 12, "header");
    let count = r.u32()? as usize;
    if count > SectionKind::ALL.len() {
        return Err(r.error(format!(
            "{count} sections (at most {})",
            SectionKind::ALL.len()
        )));
    }
    let mut expected = (HEADER_SIZE + ENTRY_SIZE * count) as u64;
    let mut out = Vec::new();
    let mut last: Option<SectionKind> = None;
    for _ in 0..count {
        let kind_raw = r.u32()?;
        let kind = SectionKind::from_u32(kind_raw)
            .ok_or_else(|| r.error(format!("unknown section kind {kind_raw}")))?;
        if last.is_some_and(|l| l >= kind) {
            return Err(r.error(format!("section {} out of order or repeated", kind.name())));
        }
        last = Some(kind);
        if r.u32()? != 0 {
            return Err(r.error("reserved section-table word is not zero"));
        }
        let (offset, len) = (r.u64()?, r.u64()?);
        if offset != expected {
            return Err(r.error(format!(
                "section {} at offset {offset}, expected {expected}",
                kind.name()
            )));
        }
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= body.len() as u64)
            .ok_or_else(|| r.error(format!("section {} overruns the file", kind.name())))?;
        out.push((kind, offset as usize, &body[offset as usize..end as usize]));
        expected = end;
    }
    if expected != body.len() as u64 {
        return Err(ContainerError::new(format!(
            "{} bytes after the last section",
            body.len() as u64 - expected
        )));
    }
    Ok(out)
}

/// The DRAM image's base address and where its bytes are in the container.
fn read_dram(r: &mut Reader) -> Result<(u64, std::ops::Range<usize>), ContainerError> {
    let base = r.u64()?;
    let start = r.offset();
    let len = r.rest().len();
    if base.checked_add(len as u64).is_none() {
        return Err(r.error("DRAM image wraps around the address space"));
    }
    Ok((base, start..start + len))
}

fn write_io(io: &[IoDesc]) -> Vec<u8> {
    let mut w = Writer::default();
    w.u32(io.len() as u32);
    for d in io {
        d.write(&mut w);
    }
    w.0
}

fn read_io(r: &mut Reader) -> Result<Vec<IoDesc>, ContainerError> {
    let n = r.count(32)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let start = r.error("");
        let d = IoDesc::read(r)?;
        check_io_dtype(&d).map_err(|m| ContainerError {
            message: m.to_string(),
            ..start
        })?;
        v.push(d);
    }
    r.finish()?;
    Ok(v)
}

/// Program inputs and outputs are 8-bit codes (the wider dtypes describe host-op
/// constants only).
fn check_io_dtype(d: &IoDesc) -> Result<(), crate::error::DescError> {
    if d.dtype.is_code() {
        return Ok(());
    }
    Err(crate::error::DescError::NotCode {
        name: d.name.clone(),
        dtype: d.dtype.name(),
    })
}

fn write_meta(m: &Metadata) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(&m.source_model);
    w.string(&m.compiler_version);
    w.string(&m.hw.to_toml());
    w.u64(m.hw.fingerprint());
    if !m.notes.is_empty() {
        w.u32(m.notes.len() as u32);
        for n in &m.notes {
            w.string(&n.key);
            w.string(&n.value);
        }
    }
    w.0
}

fn read_meta(r: &mut Reader) -> Result<Metadata, ContainerError> {
    let source_model = r.string()?;
    let compiler_version = r.string()?;
    let toml = r.string()?;
    let hw = HwConfig::from_toml_str(&toml).map_err(|e| r.error(e.to_string()))?;
    if hw.to_toml() != toml {
        return Err(r.error("hardware config is not in canonical form"));
    }
    let fp = r.u64()?;
    if fp != hw.fingerprint() {
        return Err(r.error(format!(
            "hardware fingerprint {fp:#018x} does not match the config ({:#018x})",
            hw.fingerprint()
        )));
    }
    let mut notes = Vec::new();
    if r.finish().is_err() {
        // Optional notes: a count, then (key, value) strings (each at least 4 bytes).
        let n = r.count(8)?;
        if n == 0 {
            return Err(r.error("metadata notes with a count of 0 (omitted when empty)"));
        }
        for _ in 0..n {
            let key = r.string()?;
            let value = r.string()?;
            notes.push(super::MetaNote { key, value });
        }
    }
    r.finish()?;
    Ok(Metadata {
        source_model,
        compiler_version,
        hw,
        notes,
    })
}
