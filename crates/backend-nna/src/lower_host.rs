//! Host ops (docs/ISA.md 2.1): ops the NNA has no instruction for (`nna.host`:
//! Softmax, LRN, Transpose, Resize, ...) and reshapes the NNA cannot alias run on the
//! host CPU between segments.
//!
//! For a host node the walk emits: a DMA_WRITE of every activation operand from SRAM
//! to DRAM scratch (after the I/O area), a STOP, the host-op record (it runs after
//! that STOP and reads and writes DRAM only), and a DMA_READ of the result into an
//! SRAM buffer only if an NNA op consumes it. Values already in DRAM (results of
//! earlier host ops, constants in the DRAM image) are read where they are, so chains
//! of host ops stay in DRAM, and a host op whose operands are all in DRAM runs after
//! the latest STOP without a new one. A host op producing a graph output writes
//! straight into the output's DRAM. A reshape of a dense DRAM tensor that no NNA op
//! reads is an alias; any other reshape the NNA cannot alias is a host op.
//!
//! DRAM addresses of scratch tensors and I/O descriptors are known only after the
//! whole walk (`place_io`); tensors are named by index until [`Walk::finish_host`]
//! resolves them.

use crate::act::Act;
use crate::job::{Job, JobKind};
use crate::lower::{Placed, Walk, DRAM_ALIGN};
use nnac_ir::{DType, NnaOp, NodeId, Op, TensorData, TensorType, Value};
use nnac_isa::{HostOp, IoDesc, IoDir, IoDtype, IoLayout};
use std::collections::BTreeMap;

/// Where a DRAM tensor lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DramRef {
    /// At this address of the DRAM image (constants).
    Image(u64),
    /// At this offset of the scratch area (after the I/O tensors).
    Scratch(u64),
    /// At the address of I/O descriptor `k` (a graph output written by a host op).
    Io(usize),
}

/// A value in DRAM: its tensor and its descriptor (address filled in at the end).
#[derive(Debug, Clone)]
struct DramVal {
    tensor: usize,
    desc: IoDesc,
}

/// One host op before its addresses are known.
#[derive(Debug, Clone)]
struct HostRec {
    segment: u32,
    name: String,
    op: String,
    inputs: Vec<DramVal>,
    output: DramVal,
}

/// The host-op state of the walk.
#[derive(Debug, Default)]
pub struct HostState {
    tensors: Vec<DramRef>,
    vals: BTreeMap<NodeId, DramVal>,
    recs: Vec<HostRec>,
    /// DMA jobs whose DRAM address is relative to that of a tensor.
    fixups: Vec<(usize, usize)>,
    /// I/O descriptors that alias another one's DRAM: `(alias, target)`.
    io_alias: Vec<(usize, usize)>,
    scratch_end: u64,
    /// STOP jobs emitted so far.
    stops: u32,
}

impl HostState {
    fn tensor(&mut self, at: DramRef) -> usize {
        self.tensors.push(at);
        self.tensors.len() - 1
    }

    fn scratch(&mut self, bytes: u64) -> usize {
        let off = self.scratch_end.div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
        self.scratch_end = off + bytes;
        self.tensor(DramRef::Scratch(off))
    }
}

/// Bytes a descriptor spans in DRAM.
fn span(d: &IoDesc) -> u64 {
    let n: u64 = d.shape.iter().map(|&s| u64::from(s)).product();
    match d.layout {
        IoLayout::Dense => n * d.dtype.size(),
        IoLayout::Hwc { row_pitch, .. } => {
            let h = d.shape.iter().rev().nth(1).copied().unwrap_or(1);
            u64::from(h) * u64::from(row_pitch)
        }
    }
}

fn shape_u32(shape: &[usize]) -> Result<Vec<u32>, String> {
    shape
        .iter()
        .map(|&d| u32::try_from(d).map_err(|_| format!("dimension {d} too large")))
        .collect()
}

/// The descriptor of an 8-bit quantized value of type `t`, in `layout`.
fn code_desc(name: &str, t: &TensorType, layout: IoLayout) -> Result<IoDesc, String> {
    let dtype = match t.dtype {
        DType::I8 => IoDtype::Int8,
        DType::U8 => IoDtype::Uint8,
        d => return Err(format!("host-op tensor of dtype {d:?} (int8/uint8 only)")),
    };
    let (scale, zero_point) = match t.quant {
        Some(nnac_ir::Quant::PerTensor { scale, zero_point }) => (scale, zero_point),
        _ => return Err("host-op tensor without per-tensor quantization".into()),
    };
    Ok(IoDesc {
        name: name.to_string(),
        dir: IoDir::Input,
        dtype,
        shape: shape_u32(&t.shape)?,
        dram_addr: 0,
        layout,
        scale,
        zero_point,
    })
}

impl Walk<'_> {
    /// True if some user of `id`'s value reads it from SRAM (an NNA op).
    fn needs_sram(&self, id: NodeId) -> bool {
        self.g.users(Value::new(id, 0)).iter().any(|&(u, _)| {
            !matches!(
                self.g.node(u).op,
                Op::Nna(NnaOp::Host(_)) | Op::Reshape { .. }
            )
        })
    }

    /// A reshape: an SRAM alias when the NNA can read it in place, a DRAM alias of a
    /// dense host tensor no NNA op reads, else a host op.
    pub(crate) fn reshape_any(&mut self, id: NodeId) -> Result<(), String> {
        let src = self.g.node_inputs(id)[0];
        let shape = self.g.node(id).outputs[0].shape.clone();
        let on_nna = self.vals.contains_key(&src.node) || self.out.sp.homes.contains_key(&src.node);
        if on_nna && self.reshape(id).is_ok() {
            return Ok(());
        }
        // The quantized interpreter copies a reshape's codes: the host's dequantize /
        // quantize round trip is exact only for the same quantization.
        let (a, b) = (self.g.value_type(src), &self.g.node(id).outputs[0]);
        if a.quant != b.quant || a.dtype != b.dtype {
            return Err("reshape changes the quantization".into());
        }
        if let Some(v) = self.host.vals.get(&src.node).cloned() {
            if !on_nna && v.desc.layout == IoLayout::Dense && !self.needs_sram(id) {
                let mut desc = v.desc.clone();
                desc.shape = shape_u32(&shape)?;
                desc.name = self.g.node(id).name.clone();
                let alias = DramVal {
                    tensor: v.tensor,
                    desc,
                };
                self.host.vals.insert(id, alias);
                return Ok(());
            }
        }
        self.host_op(id, &Op::Reshape { shape })
    }

    /// A Slice: a block of channels of an activation in SRAM is a view of it (the same
    /// buffer at an offset of `start` channel pitches, the same pitches, fewer
    /// channels); any other slice, or of a spilled activation, runs on the host. The
    /// output shares the input's quantization (the quantizer guarantees it).
    pub(crate) fn slice_any(&mut self, id: NodeId) -> Result<(), String> {
        let src = self.g.node_inputs(id)[0];
        let op = self.g.node(id).op.clone();
        let Op::Slice { axes, starts, ends } = &op else {
            return Err("not a slice".into());
        };
        let (a, b) = (self.g.value_type(src), &self.g.node(id).outputs[0]);
        if a.quant != b.quant || a.dtype != b.dtype {
            return Err("slice changes the quantization".into());
        }
        if let ([1], [start], [end], true) = (
            axes.as_slice(),
            starts.as_slice(),
            ends.as_slice(),
            self.vals.contains_key(&src.node),
        ) {
            if let Some(p) = self.use_value(src) {
                let (start, end) = (
                    u32::try_from(*start).map_err(|_| "slice start")?,
                    u32::try_from(*end).map_err(|_| "slice end")?,
                );
                let view = Placed {
                    act: Act {
                        c: end - start,
                        ..p.act.clone()
                    },
                    buf: p.buf,
                    off: p.off + u64::from(start) * u64::from(p.act.chan_pitch),
                };
                self.vals.insert(id, view);
                return Ok(());
            }
        }
        self.host_op(id, &op)
    }

    /// DRAM copy of operand `v` of host node `id`; `wrote` is set if a DMA_WRITE
    /// was needed (the STOP must then follow it). A spilled activation comes back
    /// through SRAM first (`spill.rs`).
    fn host_operand(&mut self, id: NodeId, v: Value, wrote: &mut bool) -> Result<DramVal, String> {
        if let Some(d) = self.host.vals.get(&v.node) {
            return Ok(d.clone());
        }
        let node = self.g.node(v.node);
        let name = node.name.clone();
        let d = if let Op::Constant(c) = node.op {
            self.host_constant(&name, self.g.constant(c).data.clone(), self.g.value_type(v))?
        } else {
            self.materialize(id, v);
            let p = self.use_value(v).ok_or("operand is not an activation")?;
            let t = self.g.value_type(v).clone();
            // The planar SRAM layout is dense NCHW: one DMA moves it.
            let desc = code_desc(&name, &t, IoLayout::Dense)?;
            let tensor = self.host.scratch(span(&desc));
            for j in self.dma_bands(&name, &p) {
                self.host.fixups.push((j, tensor));
            }
            *wrote = true;
            DramVal { tensor, desc }
        };
        self.host.vals.insert(v.node, d.clone());
        Ok(d)
    }

    /// A constant operand, stored in the DRAM image: float32, 8-bit codes with their
    /// quantization, or other integers as int64.
    fn host_constant(
        &mut self,
        name: &str,
        data: TensorData,
        t: &TensorType,
    ) -> Result<DramVal, String> {
        let (scale, zero_point) = match t.quant {
            Some(nnac_ir::Quant::PerTensor { scale, zero_point }) => (scale, zero_point),
            _ => (1.0, 0),
        };
        let (dtype, bytes): (IoDtype, Vec<u8>) = match data {
            TensorData::F32(v) => (
                IoDtype::Float32,
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
            TensorData::I8(v) => (IoDtype::Int8, v.iter().map(|&x| x as u8).collect()),
            TensorData::U8(v) => (IoDtype::Uint8, v),
            TensorData::I32(v) => (
                IoDtype::Int64,
                v.iter().flat_map(|&x| i64::from(x).to_le_bytes()).collect(),
            ),
            TensorData::I64(v) => (
                IoDtype::Int64,
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
        };
        let (scale, zero_point) = if dtype == IoDtype::Float32 {
            (1.0, 0)
        } else {
            (scale, zero_point)
        };
        let desc = IoDesc {
            name: name.to_string(),
            dir: IoDir::Input,
            dtype,
            shape: shape_u32(&t.shape)?,
            dram_addr: 0,
            layout: IoLayout::Dense,
            scale,
            zero_point,
        };
        desc.validate().map_err(|e| e.to_string())?;
        let at = self.dram_part(&bytes);
        let tensor = self.host.tensor(DramRef::Image(at));
        Ok(DramVal { tensor, desc })
    }

    /// Ends the current segment with a STOP.
    fn stop(&mut self, node: &str) {
        self.out.jobs.push(Job {
            node: node.to_string(),
            kind: JobKind::Stop,
        });
        self.host.stops += 1;
    }

    /// Lowers host node `id` running `op` (see the module docs).
    pub(crate) fn host_op(&mut self, id: NodeId, op: &Op) -> Result<(), String> {
        let name = self.g.node(id).name.clone();
        let mut wrote = false;
        let inputs = self
            .g
            .node_inputs(id)
            .into_iter()
            .map(|v| self.host_operand(id, v, &mut wrote))
            .collect::<Result<Vec<_>, _>>()?;
        if wrote || self.host.stops == 0 {
            self.stop(&name);
        }
        let out_t = self.g.node(id).outputs[0].clone();
        let sram = self.needs_sram(id);
        let placed = if sram {
            Some(self.define(id).map_err(|e| e.detail())?)
        } else {
            None
        };
        let mut desc = code_desc(&name, &out_t, IoLayout::Dense)?;
        desc.dir = IoDir::Output;
        let tensor = self.host.scratch(span(&desc));
        let output = DramVal { tensor, desc };
        self.host.recs.push(HostRec {
            segment: self.host.stops - 1,
            name: name.clone(),
            op: nnac_ir::op_to_text(op),
            inputs,
            output: output.clone(),
        });
        self.host.vals.insert(id, output);
        if let Some(p) = placed {
            let dma = Self::act_dma(&p.act, 0);
            self.host.fixups.push((self.out.jobs.len(), tensor));
            self.out.jobs.push(Job {
                node: name.clone(),
                kind: JobKind::Read { loc: p.loc(), dma },
            });
            self.read_cand(&p);
        }
        self.out
            .layers
            .push((name, format!("HOST {}", op.mnemonic()), 0));
        Ok(())
    }

    /// A graph output whose value a host op left in DRAM: its descriptor points at
    /// that DRAM (no DMA). Returns false if the value is not in DRAM.
    pub(crate) fn host_graph_output(&mut self, name: &str, v: Value) -> bool {
        let Some(d) = self.host.vals.get(&v.node).cloned() else {
            return false;
        };
        let k = self.out.io.len();
        match self.host.tensors[d.tensor] {
            DramRef::Scratch(_) => self.host.tensors[d.tensor] = DramRef::Io(k),
            DramRef::Io(first) => self.host.io_alias.push((k, first)),
            DramRef::Image(_) => return false,
        }
        self.out.io.push(IoDesc {
            name: name.to_string(),
            dir: IoDir::Output,
            ..d.desc
        });
        true
    }

    /// Resolves every tensor address (scratch after the DRAM image and the I/O
    /// tensors), patches the DMA jobs and I/O aliases, and returns the host ops.
    pub(crate) fn finish_host(&mut self) -> Vec<HostOp> {
        let io_end = self
            .out
            .io
            .iter()
            .map(|d| d.dram_addr + span(d))
            .fold(self.out.dram.len() as u64, u64::max);
        let st = &self.host;
        for &(k, first) in &st.io_alias {
            self.out.io[k].dram_addr = self.out.io[first].dram_addr;
        }
        let base = io_end.div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
        let addr = |t: usize| match st.tensors[t] {
            DramRef::Image(a) => a,
            DramRef::Scratch(off) => base + off,
            DramRef::Io(k) => self.out.io[k].dram_addr,
        };
        let resolved: Vec<u64> = (0..st.tensors.len()).map(addr).collect();
        for &(j, t) in &st.fixups {
            if let JobKind::Read { dma, .. } | JobKind::Write { dma, .. } =
                &mut self.out.jobs[j].kind
            {
                dma.dram_addr += resolved[t];
            }
        }
        let desc = |v: &DramVal, dir: IoDir| IoDesc {
            dram_addr: resolved[v.tensor],
            dir,
            ..v.desc.clone()
        };
        st.recs
            .iter()
            .map(|r| HostOp {
                segment: r.segment,
                name: r.name.clone(),
                op: r.op.clone(),
                inputs: r.inputs.iter().map(|v| desc(v, IoDir::Input)).collect(),
                output: desc(&r.output, IoDir::Output),
            })
            .collect()
    }
}
