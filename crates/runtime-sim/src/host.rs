//! Host ops (docs/ISA.md 2.1): after the STOP that ends a segment, the host runs the
//! ops attached to it, in order, reading and writing DRAM only. The semantics are
//! `nnac_interp::host::run_host_op` (the quantized reference interpreter calls the
//! same function), so the two agree bit for bit.

use crate::error::{IoError, MemError, SimError};
use crate::io::{dram_extent, numel, read_output, write_input};
use crate::memory::Dram;
use nnac_interp::host::{run_host_op, run_host_op_float, HostData, HostInput, HostOutput};
use nnac_ir::{DType, Op};
use nnac_isa::{HostOp, IoDesc, IoDtype, Program};

/// A host op with its op text parsed.
pub struct Prepared<'p> {
    pub rec: &'p HostOp,
    op: Op,
}

fn host_err(rec: &HostOp, message: impl std::fmt::Display) -> SimError {
    SimError::Host {
        name: rec.name.clone(),
        message: message.to_string(),
    }
}

/// Parses every host op of `program` and checks that its tensors have DRAM extents.
pub fn prepare(program: &Program) -> Result<Vec<Prepared<'_>>, SimError> {
    let Some(h) = &program.host_ops else {
        return Ok(Vec::new());
    };
    let segments = nnac_isa::instr::segments(&program.instrs).len();
    h.validate(segments)?;
    h.ops
        .iter()
        .map(|rec| {
            let op = nnac_ir::parse_op(&rec.op)
                .map_err(|e| host_err(rec, format!("op text '{}': {e}", rec.op)))?;
            if !nnac_interp::host::runs_on_host(&op) {
                return Err(host_err(
                    rec,
                    format!("{} is not an op the host runs", op.mnemonic()),
                ));
            }
            for d in rec.inputs.iter().chain([&rec.output]) {
                if numel(d) > 0 && dram_extent(d).is_none() {
                    return Err(host_err(
                        rec,
                        format!("'{}': DRAM extent overflows the address space", d.name),
                    ));
                }
            }
            Ok(Prepared { rec, op })
        })
        .collect()
}

/// DRAM spans every host-op tensor occupies (the simulator's DRAM must cover them).
pub fn spans(ops: &[Prepared]) -> Vec<(u64, u64)> {
    ops.iter()
        .flat_map(|p| p.rec.inputs.iter().chain([&p.rec.output]))
        .filter_map(dram_extent)
        .collect()
}

fn ir_dtype(d: IoDtype) -> DType {
    match d {
        IoDtype::Uint8 => DType::U8,
        _ => DType::I8,
    }
}

/// Reads one operand from DRAM.
fn read_operand(d: &IoDesc, dram: &mut Dram) -> Result<HostInput, IoError> {
    let n = numel(d) as usize;
    let dense = |dram: &mut Dram, size: u64| -> Result<Vec<u8>, MemError> {
        match dram_extent(d) {
            Some((lo, _)) => Ok(dram.slice(lo, n as u64 * size)?.to_vec()),
            None => Ok(Vec::new()),
        }
    };
    let data = match d.dtype {
        IoDtype::Int8 | IoDtype::Uint8 => {
            let bytes = read_output(d, dram)?;
            let codes = if d.dtype == IoDtype::Int8 {
                bytes.iter().map(|&b| i32::from(b as i8)).collect()
            } else {
                bytes.iter().map(|&b| i32::from(b)).collect()
            };
            HostData::Codes {
                codes,
                scale: d.scale,
                zero_point: d.zero_point,
            }
        }
        IoDtype::Float32 => HostData::F32(
            dense(dram, 4)?
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        // Integer constants are codes with scale 1 and zero point 0, narrowed to i32
        // exactly as the quantized interpreter narrows them.
        IoDtype::Int64 => HostData::Codes {
            codes: dense(dram, 8)?
                .chunks_exact(8)
                .map(|c| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(c);
                    i64::from_le_bytes(a) as i32
                })
                .collect(),
            scale: d.scale,
            zero_point: d.zero_point,
        },
    };
    Ok(HostInput {
        shape: d.shape.iter().map(|&s| s as usize).collect(),
        data,
    })
}

/// Runs one host op on DRAM.
pub fn run(p: &Prepared, dram: &mut Dram) -> Result<(), SimError> {
    let rec = p.rec;
    let inputs = rec
        .inputs
        .iter()
        .map(|d| read_operand(d, dram).map_err(|m| host_err(rec, format!("'{}': {m}", d.name))))
        .collect::<Result<Vec<_>, _>>()?;
    let o = &rec.output;
    if o.dtype == IoDtype::Float32 {
        return run_float_output(p, &inputs, dram);
    }
    let out = HostOutput {
        dtype: ir_dtype(o.dtype),
        scale: o.scale,
        zero_point: o.zero_point,
    };
    let (shape, codes) =
        run_host_op(&p.op, &inputs, &out).map_err(|e| host_err(rec, e.to_string()))?;
    let want: Vec<usize> = o.shape.iter().map(|&s| s as usize).collect();
    if shape != want {
        return Err(host_err(
            rec,
            format!(
                "{} produces shape {shape:?}, the output descriptor '{}' has {want:?}",
                p.op.mnemonic(),
                o.name
            ),
        ));
    }
    let bytes: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
    write_input(o, &bytes, dram).map_err(|m| host_err(rec, m))
}

/// A host op whose float32 result only other host ops read (a run of layers kept in
/// float): the values are stored as they are, little-endian, dense.
fn run_float_output(p: &Prepared, inputs: &[HostInput], dram: &mut Dram) -> Result<(), SimError> {
    let (rec, o) = (p.rec, &p.rec.output);
    let t = run_host_op_float(&p.op, inputs).map_err(|e| host_err(rec, e.to_string()))?;
    let want: Vec<usize> = o.shape.iter().map(|&s| s as usize).collect();
    if t.shape != want || o.layout != nnac_isa::IoLayout::Dense {
        return Err(host_err(
            rec,
            format!(
                "{} produces shape {:?}, the dense float32 output '{}' has {want:?}",
                p.op.mnemonic(),
                t.shape,
                o.name
            ),
        ));
    }
    let bytes: Vec<u8> = t
        .to_f32_vec()
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    if let Some((lo, hi)) = dram_extent(o) {
        let region = dram
            .slice_mut(lo, hi - lo)
            .map_err(|e| host_err(rec, e.to_string()))?;
        if region.len() != bytes.len() {
            return Err(host_err(
                rec,
                format!(
                    "'{}': {} bytes for {} values",
                    o.name,
                    region.len(),
                    t.numel()
                ),
            ));
        }
        region.copy_from_slice(&bytes);
    }
    Ok(())
}
