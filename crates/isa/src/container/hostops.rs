//! The host-op section: operations the NNA has no instruction for, run by the host
//! CPU between segments (docs/ISA.md 2.1 and "Container").
//!
//! Layout (little-endian): magic `HOPS`, u32 version ([`HOSTOPS_VERSION`]), u32
//! count, then per op: u32 segment, string name, string op, u32 input count, the
//! input descriptors, the output descriptor (each in the I/O section's descriptor
//! encoding). The op text is nnac-ir's op syntax (`softmax{axis=1}`): opaque to this
//! crate, interpreted by the runtime.

use super::io::IoDesc;
use super::wire::{Reader, Writer};
use super::{ContainerError, IoDir};
use crate::error::HostOpError;

const HOSTOPS_MAGIC: [u8; 4] = *b"HOPS";
/// Version 2: typed records (segment, op text, tensor descriptors). Version 1 held
/// opaque `(kind, payload)` pairs and is no longer read.
pub const HOSTOPS_VERSION: u32 = 2;
/// Most inputs one host op may have.
pub const MAX_HOST_INPUTS: usize = 64;
/// Smallest encoded size of one record (segment, two empty strings, input count,
/// one descriptor), for the count check.
const MIN_RECORD: usize = 4 + 4 + 4 + 4 + MIN_DESC;
/// Smallest encoded size of one descriptor (empty name, rank 0).
const MIN_DESC: usize = 32;

/// One host op: after the STOP that ends segment `segment` (0-based) both queues have
/// drained and every flag is clear; then the host reads `inputs` from DRAM,
/// dequantizes the 8-bit ones, runs `op` in float32 and writes `output` quantized.
#[derive(Debug, Clone, PartialEq)]
pub struct HostOp {
    /// Index of the segment (= of its STOP) after which the op runs.
    pub segment: u32,
    /// The layer (graph node) it comes from.
    pub name: String,
    /// The op in nnac-ir's op text syntax.
    pub op: String,
    /// Operands in op order, `dir` = input.
    pub inputs: Vec<IoDesc>,
    /// The result, `dir` = output: 8-bit codes, or float32 when only host ops read
    /// it (a run of layers kept in float, `--float-layers`).
    pub output: IoDesc,
}

/// The host-op section: ops in execution order (segments non-decreasing).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostOps {
    pub ops: Vec<HostOp>,
}

impl HostOp {
    /// Checks the rules the reader enforces; `segments` is the program's STOP count.
    pub fn validate(&self, segments: usize) -> Result<(), HostOpError> {
        let op = || self.name.clone();
        if self.name.is_empty() {
            return Err(HostOpError::EmptyName);
        }
        if self.op.trim().is_empty() {
            return Err(HostOpError::EmptyOpText { op: op() });
        }
        if self.segment as usize >= segments {
            return Err(HostOpError::Segment {
                op: op(),
                segment: self.segment,
                segments,
            });
        }
        if self.inputs.len() > MAX_HOST_INPUTS {
            return Err(HostOpError::TooManyInputs {
                op: op(),
                inputs: self.inputs.len(),
            });
        }
        for d in &self.inputs {
            d.validate()
                .map_err(|error| HostOpError::Input { op: op(), error })?;
            if d.dir != IoDir::Input {
                return Err(HostOpError::InputIsOutput {
                    op: op(),
                    input: d.name.clone(),
                });
            }
        }
        self.output
            .validate()
            .map_err(|error| HostOpError::Output { op: op(), error })?;
        let kind_ok = self.output.dtype.is_code() || self.output.dtype == crate::IoDtype::Float32;
        if self.output.dir != IoDir::Output || !kind_ok {
            return Err(HostOpError::OutputKind {
                op: op(),
                output: self.output.name.clone(),
            });
        }
        Ok(())
    }
}

impl HostOps {
    /// Checks every op and the order of their segments.
    pub fn validate(&self, segments: usize) -> Result<(), HostOpError> {
        let mut last = 0;
        for op in &self.ops {
            op.validate(segments)?;
            if op.segment < last {
                return Err(HostOpError::Order {
                    op: op.name.clone(),
                    segment: op.segment,
                    after: last,
                });
            }
            last = op.segment;
        }
        Ok(())
    }

    /// The ops that run after segment `k`, in order.
    pub fn after(&self, k: usize) -> impl Iterator<Item = &HostOp> {
        self.ops.iter().filter(move |o| o.segment as usize == k)
    }

    pub(super) fn write(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.bytes(&HOSTOPS_MAGIC);
        w.u32(HOSTOPS_VERSION);
        w.u32(self.ops.len() as u32);
        for op in &self.ops {
            w.u32(op.segment);
            w.string(&op.name);
            w.string(&op.op);
            w.u32(op.inputs.len() as u32);
            for d in &op.inputs {
                d.write(&mut w);
            }
            op.output.write(&mut w);
        }
        w.0
    }

    /// Parses the section of a program with `segments` STOPs.
    pub(super) fn read(r: &mut Reader, segments: usize) -> Result<HostOps, ContainerError> {
        if r.bytes(4)? != HOSTOPS_MAGIC {
            return Err(r.error("bad host-op section magic"));
        }
        let v = r.u32()?;
        if v != HOSTOPS_VERSION {
            return Err(r.error(format!(
                "unsupported host-op section version {v} (this nnac reads version {HOSTOPS_VERSION})"
            )));
        }
        let n = r.count(MIN_RECORD)?;
        let mut ops: Vec<HostOp> = Vec::with_capacity(n);
        for _ in 0..n {
            let start = r.error("");
            let op = read_op(r)?;
            let prev = ops.last().map_or(0, |o| o.segment);
            let order = if op.segment < prev {
                Err(HostOpError::Order {
                    op: op.name.clone(),
                    segment: op.segment,
                    after: prev,
                })
            } else {
                op.validate(segments)
            };
            order.map_err(|m| ContainerError {
                message: m.to_string(),
                ..start
            })?;
            ops.push(op);
        }
        r.finish()?;
        Ok(HostOps { ops })
    }
}

fn read_op(r: &mut Reader) -> Result<HostOp, ContainerError> {
    let segment = r.u32()?;
    let name = r.string()?;
    let op = r.string()?;
    let n = r.count(MIN_DESC)?;
    if n > MAX_HOST_INPUTS {
        return Err(r.error(format!(
            "host op '{name}': {n} inputs (at most {MAX_HOST_INPUTS})"
        )));
    }
    let mut inputs = Vec::with_capacity(n);
    for _ in 0..n {
        inputs.push(IoDesc::read(r)?);
    }
    let output = IoDesc::read(r)?;
    Ok(HostOp {
        segment,
        name,
        op,
        inputs,
        output,
    })
}
