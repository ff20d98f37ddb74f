//! The assembler: text listing (`.s`) to [`Program`]. Errors name line and column.

use super::lexer::{words, Word};
use super::value::{from_hex, parse_int, parse_value, parse_wide, unquote};
use crate::container::{
    DramImage, HostOp, HostOps, IoDesc, IoDir, IoDtype, IoLayout, LayerTable, Program,
};
use crate::crc32::crc32;
use crate::field::Fields;
use crate::flags::{FlagSet, LIST_NAMES};
use crate::hw::HwConfig;
use crate::instr::{encode_program, Instr};
use crate::simd::SimdInstr;
use std::fmt;

/// An assembly error at `line`:`col` (both 1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsmError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.col, self.message
        )
    }
}

impl std::error::Error for AsmError {}

/// Loads a side file named in the listing (name as written, relative to the listing).
pub type Loader<'a> = dyn FnMut(&str) -> std::io::Result<Vec<u8>> + 'a;

struct Asm<'a> {
    p: Program,
    line: usize,
    instr_lines: Vec<usize>,
    hw_lines: Vec<String>,
    hw_line: usize,
    seen: Vec<&'static str>,
    load: &'a mut Loader<'a>,
    /// `.layers` given: the program has a layer table.
    has_layers: bool,
    /// The layer set by the last `.layer` line.
    layer: Option<String>,
    /// The layer of every instruction so far.
    layer_of: Vec<Option<String>>,
    /// The host op being read (`.hostop` seen, `.hostout` maybe not yet) and its line.
    host: Option<(PendingHost, usize)>,
    /// The `.body` line, if any: the prologue/body split is checked at the end.
    body_line: usize,
}

/// A host op whose `.hostin` / `.hostout` lines are still being read.
struct PendingHost {
    segment: u32,
    name: String,
    op: String,
    inputs: Vec<IoDesc>,
    output: Option<IoDesc>,
}

/// Assembles a listing. `load` reads side files named by `.dram ... file=`.
pub fn assemble<'a>(text: &str, load: &'a mut Loader<'a>) -> Result<Program, AsmError> {
    let mut a = Asm {
        p: Program::default(),
        line: 0,
        instr_lines: Vec::new(),
        hw_lines: Vec::new(),
        hw_line: 0,
        seen: Vec::new(),
        load,
        has_layers: false,
        layer: None,
        layer_of: Vec::new(),
        host: None,
        body_line: 0,
    };
    for (i, line) in text.lines().enumerate() {
        a.line = i + 1;
        a.line_(line)?;
    }
    a.finish()
}

/// The `key=value` words after the first word of a line.
struct Args {
    words: Vec<Word>,
    line: usize,
}

impl Args {
    fn err(&self, col: usize, message: impl fmt::Display) -> AsmError {
        AsmError {
            line: self.line,
            col,
            message: message.to_string(),
        }
    }
    /// Removes and returns the value of `key` and its column.
    fn take(&mut self, key: &str) -> Result<Option<(String, usize)>, AsmError> {
        let Some(p) = self.words.iter().position(|w| w.key == key) else {
            return Ok(None);
        };
        let w = self.words.remove(p);
        match w.value {
            Some(v) => Ok(Some((v, w.value_col))),
            None => Err(self.err(w.col, format!("expected {key}=value"))),
        }
    }
    fn need(&mut self, key: &str, at: usize) -> Result<(String, usize), AsmError> {
        self.take(key)?
            .ok_or_else(|| self.err(at, format!("missing {key}=")))
    }
    fn int(&mut self, key: &str, at: usize) -> Result<i64, AsmError> {
        let (v, col) = self.need(key, at)?;
        parse_int(&v).ok_or_else(|| self.err(col, format!("bad integer '{v}' for {key}")))
    }
    fn num<T: TryFrom<i128>>(&mut self, key: &str, at: usize) -> Result<T, AsmError> {
        let (v, col) = self.need(key, at)?;
        parse_wide(&v)
            .and_then(|i| T::try_from(i).ok())
            .ok_or_else(|| self.err(col, format!("bad or out-of-range value '{v}' for {key}")))
    }
    fn string(&mut self, key: &str, at: usize) -> Result<String, AsmError> {
        let (v, col) = self.need(key, at)?;
        unquote(&v).map_err(|m| self.err(col, m))
    }
    fn hex(&mut self, key: &str, at: usize) -> Result<Vec<u8>, AsmError> {
        let s = self.string(key, at)?;
        from_hex(&s).map_err(|m| self.err(at, m))
    }
    /// Errs on any word not consumed.
    fn done(&self) -> Result<(), AsmError> {
        match self.words.first() {
            Some(w) => Err(self.err(w.col, format!("unexpected '{}'", w.key))),
            None => Ok(()),
        }
    }
}

impl Asm<'_> {
    fn err(&self, col: usize, message: impl fmt::Display) -> AsmError {
        AsmError {
            line: self.line,
            col,
            message: message.to_string(),
        }
    }

    fn line_(&mut self, line: &str) -> Result<(), AsmError> {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(".hw ") {
            if self.hw_lines.is_empty() {
                self.hw_line = self.line;
            }
            let rest = rest.split(';').next().unwrap_or("");
            self.hw_lines.push(rest.trim().to_string());
            return Ok(());
        }
        let mut ws = words(line).map_err(|(c, m)| self.err(c, m))?;
        if ws.is_empty() {
            return Ok(());
        }
        let head = ws.remove(0);
        let args = Args {
            words: ws,
            line: self.line,
        };
        if head.key.starts_with('.') {
            self.directive(&head, args)
        } else if head.key == "+" {
            self.simd(&head, args)
        } else {
            self.instr(&head, args)
        }
    }

    fn once(&mut self, head: &Word, name: &'static str) -> Result<(), AsmError> {
        if self.seen.contains(&name) {
            return Err(self.err(head.col, format!("{name} given twice")));
        }
        self.seen.push(name);
        Ok(())
    }

    fn directive(&mut self, head: &Word, mut a: Args) -> Result<(), AsmError> {
        let at = head.col;
        match head.key.as_str() {
            ".model" | ".compiler" => {
                let name = if head.key == ".model" {
                    ".model"
                } else {
                    ".compiler"
                };
                self.once(head, name)?;
                let w = a
                    .words
                    .first()
                    .cloned()
                    .ok_or_else(|| self.err(at, "expected a string"))?;
                a.words.remove(0);
                let s = unquote(&w.key).map_err(|m| self.err(w.col, m))?;
                if name == ".model" {
                    self.p.meta.source_model = s;
                } else {
                    self.p.meta.compiler_version = s;
                }
            }
            ".note" => {
                let mut text = Vec::new();
                for _ in 0..2 {
                    let w =
                        a.words.first().cloned().ok_or_else(|| {
                            self.err(at, ".note expects a key and a value string")
                        })?;
                    a.words.remove(0);
                    text.push(unquote(&w.key).map_err(|m| self.err(w.col, m))?);
                }
                let value = text.pop().unwrap_or_default();
                let key = text.pop().unwrap_or_default();
                self.p.meta.notes.push(crate::MetaNote { key, value });
            }
            ".dram" => {
                self.once(head, ".dram")?;
                self.p.dram = self.dram(&mut a, at)?;
            }
            ".input" | ".output" => {
                let dir = if head.key == ".input" {
                    IoDir::Input
                } else {
                    IoDir::Output
                };
                let d = io_desc(&mut a, dir, at)?;
                self.p.io.push(d);
            }
            ".hostops" => {
                self.once(head, ".hostops")?;
                self.p.host_ops = Some(HostOps::default());
            }
            ".hostop" => {
                if self.p.host_ops.is_none() {
                    return Err(self.err(at, ".hostop before .hostops"));
                }
                self.flush_host()?;
                let pending = PendingHost {
                    segment: a.num::<u32>("segment", at)?,
                    name: a.string("name", at)?,
                    op: a.string("op", at)?,
                    inputs: Vec::new(),
                    output: None,
                };
                self.host = Some((pending, self.line));
            }
            ".hostin" | ".hostout" => {
                let (dir, what) = if head.key == ".hostin" {
                    (IoDir::Input, ".hostin")
                } else {
                    (IoDir::Output, ".hostout")
                };
                let d = io_desc(&mut a, dir, at)?;
                let e = self.err(at, format!("{what} outside a .hostop"));
                let (h, _) = self.host.as_mut().ok_or(e)?;
                if h.output.is_some() {
                    return Err(self.err(at, format!("{what} after the op's .hostout")));
                }
                if dir == IoDir::Input {
                    h.inputs.push(d);
                } else {
                    h.output = Some(d);
                }
            }
            ".body" => {
                self.once(head, ".body")?;
                self.p.body_start = Some(self.p.instrs.len());
                self.body_line = self.line;
            }
            ".layers" => {
                self.once(head, ".layers")?;
                self.has_layers = true;
            }
            ".layer" => {
                if !self.has_layers {
                    return Err(self.err(at, ".layer before .layers"));
                }
                let w = a
                    .words
                    .first()
                    .cloned()
                    .ok_or_else(|| self.err(at, "expected a layer name string or `none`"))?;
                a.words.remove(0);
                self.layer = match w.key.as_str() {
                    "none" => None,
                    q => Some(unquote(q).map_err(|m| self.err(w.col, m))?),
                };
            }
            other => return Err(self.err(at, format!("unknown directive '{other}'"))),
        }
        a.done()
    }

    fn dram(&mut self, a: &mut Args, at: usize) -> Result<DramImage, AsmError> {
        let base = a.num::<u64>("base", at)?;
        if a.words.iter().any(|w| w.key == "hex") {
            return Ok(DramImage {
                base,
                bytes: a.hex("hex", at)?.into(),
            });
        }
        let size = a.num::<usize>("size", at)?;
        let crc = a.num::<u32>("crc", at)?;
        let (file, col) = a.need("file", at)?;
        let file = unquote(&file).map_err(|m| self.err(col, m))?;
        let bytes =
            (self.load)(&file).map_err(|m| self.err(col, format!("cannot read {file}: {m}")))?;
        if bytes.len() != size || crc32(&bytes) != crc {
            return Err(self.err(
                col,
                format!(
                    "{file}: size or CRC does not match (expected {size} bytes, crc {crc:#010x})"
                ),
            ));
        }
        Ok(DramImage {
            base,
            bytes: bytes.into(),
        })
    }

    fn instr(&mut self, head: &Word, mut a: Args) -> Result<(), AsmError> {
        let mut ins = Instr::from_mnemonic(&head.key)
            .ok_or_else(|| self.err(head.col, format!("unknown instruction '{}'", head.key)))?;
        for (i, name) in LIST_NAMES.iter().enumerate() {
            if let Some((v, col)) = a.take(name)? {
                let set = FlagSet::parse(&v).map_err(|m| a.err(col, m))?;
                *ins.flags_mut().list_mut(i) = set;
            }
        }
        set_fields(ins.body_mut(), &mut a)?;
        self.p.instrs.push(ins);
        self.instr_lines.push(self.line);
        self.layer_of.push(self.layer.clone());
        Ok(())
    }

    fn simd(&mut self, head: &Word, mut a: Args) -> Result<(), AsmError> {
        if a.words.is_empty() {
            return Err(self.err(head.col, "expected a SIMD instruction after '+'"));
        }
        let m = a.words.remove(0);
        let mut s = SimdInstr::from_mnemonic(&m.key)
            .ok_or_else(|| self.err(m.col, format!("unknown SIMD instruction '{}'", m.key)))?;
        set_fields(s.body_mut(), &mut a)?;
        let line = self.line;
        let prog = self
            .p
            .instrs
            .last_mut()
            .and_then(|i| i.body_mut().simd_mut())
            .ok_or(AsmError {
                line,
                col: head.col,
                message: "SIMD instruction does not follow a compute instruction".into(),
            })?;
        prog.push(s);
        Ok(())
    }

    /// Completes the pending host op (it needs its `.hostout`).
    fn flush_host(&mut self) -> Result<(), AsmError> {
        let Some((h, line)) = self.host.take() else {
            return Ok(());
        };
        let output = h.output.ok_or(AsmError {
            line,
            col: 1,
            message: format!("host op '{}' has no .hostout line", h.name),
        })?;
        let op = HostOp {
            segment: h.segment,
            name: h.name,
            op: h.op,
            inputs: h.inputs,
            output,
        };
        if let Some(ops) = self.p.host_ops.as_mut() {
            ops.ops.push(op);
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Program, AsmError> {
        self.flush_host()?;
        if self.has_layers {
            self.p.layers = Some(LayerTable::from_names(
                self.layer_of.iter().map(|l| l.as_deref()),
            ));
        }
        if !self.hw_lines.is_empty() {
            self.p.meta.hw =
                HwConfig::from_toml_str(&self.hw_lines.join("\n")).map_err(|e| AsmError {
                    line: self.hw_line,
                    col: 1,
                    message: e.to_string(),
                })?;
        }
        if let Err(e) = encode_program(&self.p.instrs) {
            let line = e
                .index
                .and_then(|i| self.instr_lines.get(i).copied())
                .unwrap_or(self.line);
            return Err(AsmError {
                line,
                col: 1,
                message: e.to_string(),
            });
        }
        if let Err(m) = crate::instr::check_program(&self.p.instrs) {
            let line = self.instr_lines.last().copied().unwrap_or(self.line);
            return Err(AsmError {
                line,
                col: 1,
                message: m.to_string(),
            });
        }
        if let Some(h) = &self.p.host_ops {
            let segments = crate::instr::segments(&self.p.instrs).len();
            h.validate(segments).map_err(|m| AsmError {
                line: self.line,
                col: 1,
                message: m.to_string(),
            })?;
        }
        if let Some(b) = self.p.body_start {
            crate::container::check_body_start(b, &self.p.instrs, self.p.host_ops.as_ref())
                .map_err(|m| AsmError {
                    line: self.body_line,
                    col: 1,
                    message: format!(".body: {m}"),
                })?;
        }
        Ok(self.p)
    }
}

/// Sets every `key=value` word as a field of `body`.
fn set_fields(body: &mut dyn Fields, a: &mut Args) -> Result<(), AsmError> {
    for w in std::mem::take(&mut a.words) {
        let spec = body
            .specs()
            .iter()
            .find(|s| s.name == w.key)
            .ok_or_else(|| {
                a.err(
                    w.col,
                    format!("unknown field '{}' for {}", w.key, body.layout_name()),
                )
            })?;
        let text = w
            .value
            .as_deref()
            .ok_or_else(|| a.err(w.col, format!("expected {}=value", w.key)))?;
        let v = parse_value(spec, text).map_err(|m| a.err(w.value_col, m))?;
        body.set(&w.key, v).map_err(|m| a.err(w.value_col, m))?;
    }
    Ok(())
}

fn io_desc(a: &mut Args, dir: IoDir, at: usize) -> Result<IoDesc, AsmError> {
    let name = a.string("name", at)?;
    let (dt, col) = a.need("dtype", at)?;
    let dtype = IoDtype::from_name(&dt).ok_or_else(|| {
        a.err(
            col,
            format!("bad dtype '{dt}' (int8, uint8, float32 or int64)"),
        )
    })?;
    let (sh, col) = a.need("shape", at)?;
    let shape = parse_shape(&sh)
        .ok_or_else(|| a.err(col, format!("bad shape '{sh}' (expected [d0,d1,...])")))?;
    let dram_addr = a.num::<u64>("dram", at)?;
    let (lay, col) = a.need("layout", at)?;
    let layout = match lay.as_str() {
        "dense" => IoLayout::Dense,
        "hwc" => IoLayout::Hwc {
            row_pitch: a.num("row_pitch", at)?,
            pix_pitch: a.num("pix_pitch", at)?,
        },
        _ => return Err(a.err(col, format!("bad layout '{lay}' (dense or hwc)"))),
    };
    let (sc, col) = a.need("scale", at)?;
    let scale: f32 = sc
        .parse()
        .map_err(|_| a.err(col, format!("bad scale '{sc}'")))?;
    let zero_point = i32::try_from(a.int("zero_point", at)?)
        .map_err(|_| a.err(at, "zero_point out of range"))?;
    let d = IoDesc {
        name,
        dir,
        dtype,
        shape,
        dram_addr,
        layout,
        scale,
        zero_point,
    };
    d.validate().map_err(|m| a.err(at, m))?;
    Ok(d)
}

fn parse_shape(s: &str) -> Option<Vec<u32>> {
    let inner = s.strip_prefix('[')?.strip_suffix(']')?;
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner.split(',').map(|d| d.parse().ok()).collect()
}
