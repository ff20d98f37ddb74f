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
//! whole walk (`place_io`); tensors are named by index until [`finish_host`]
//! resolves them.

use crate::base::act::Act;
use crate::base::act::Placed;
use crate::base::buffer::DRAM_ALIGN;
use crate::base::host_state::{DramRef, DramVal, HostRec, IoAlias, TensorFixup};
use crate::base::job::{Job, JobId, JobKind};
use crate::base::walk::{LayerTiles, ReadCand, Walk};
use crate::error::{wide, Limit, Refusal};
use crate::lower::graph;
use crate::place::spill;
use nnac_ir::{DType, NnaOp, NodeId, Op, TensorData, TensorType, Value};
use nnac_isa::{HostOp, IoDesc, IoDir, IoDtype, IoLayout};

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

fn shape_u32(shape: &[usize]) -> Result<Vec<u32>, Refusal> {
    shape
        .iter()
        .map(|&d| {
            u32::try_from(d).map_err(|_| Refusal::range("dimension", wide(d), Limit::TooLarge))
        })
        .collect()
}

/// The descriptor of an 8-bit quantized value of type `t`, in `layout`.
fn code_desc(name: &str, t: &TensorType, layout: IoLayout) -> Result<IoDesc, Refusal> {
    let dtype = match t.dtype {
        DType::I8 => IoDtype::Int8,
        DType::U8 => IoDtype::Uint8,
        d => return Err(Refusal::HostDtype { dtype: d }),
    };
    let (scale, zero_point) = match t.quant {
        Some(nnac_ir::Quant::PerTensor { scale, zero_point }) => (scale, zero_point),
        _ => return Err(Refusal::HostQuantization),
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

/// The dense float32 descriptor of a host op's result that stays float (a layer kept
/// in float whose value only host ops read, `nnac_passes` `float_layers`).
fn float_desc(name: &str, t: &TensorType) -> Result<IoDesc, Refusal> {
    Ok(IoDesc {
        name: name.to_string(),
        dir: IoDir::Output,
        dtype: IoDtype::Float32,
        shape: shape_u32(&t.shape)?,
        dram_addr: 0,
        layout: IoLayout::Dense,
        scale: 1.0,
        zero_point: 0,
    })
}

/// True if some user of `id`'s value reads it from SRAM (an NNA op).
pub(crate) fn needs_sram(walk: &Walk<'_>, id: NodeId) -> bool {
    walk.g.users(Value::new(id, 0)).iter().any(|&(u, _)| {
        !matches!(
            walk.g.node(u).op,
            Op::Nna(NnaOp::Host(_)) | Op::Reshape { .. }
        )
    })
}

/// A reshape: an SRAM alias when the NNA can read it in place, a DRAM alias of a
/// dense host tensor no NNA op reads, else a host op.
pub(crate) fn reshape_any(walk: &mut Walk<'_>, id: NodeId) -> Result<(), Refusal> {
    let src = walk.g.node_inputs(id)[0];
    let shape = walk.g.node(id).outputs[0].shape.clone();
    let on_nna = walk.vals.contains_key(&src.node) || walk.out.sp.homes.contains_key(&src.node);
    if on_nna && graph::reshape(walk, id).is_ok() {
        return Ok(());
    }
    // The quantized interpreter copies a reshape's codes: the host's dequantize /
    // quantize round trip is exact only for the same quantization.
    let (a, b) = (walk.g.value_type(src), &walk.g.node(id).outputs[0]);
    if a.quant != b.quant || a.dtype != b.dtype {
        return Err(Refusal::QuantizationChange { op: "reshape" });
    }
    if let Some(v) = walk.host.vals.get(&src.node).cloned() {
        if !on_nna && v.desc.layout == IoLayout::Dense && !needs_sram(walk, id) {
            let mut desc = v.desc.clone();
            desc.shape = shape_u32(&shape)?;
            desc.name = walk.g.node(id).name.clone();
            let alias = DramVal {
                tensor: v.tensor,
                desc,
            };
            walk.host.vals.insert(id, alias);
            return Ok(());
        }
    }
    host_op(walk, id, &Op::Reshape { shape })
}

/// A Slice: a block of channels of an activation in SRAM is a view of it (the same
/// buffer at an offset of `start` channel pitches, the same pitches, fewer
/// channels); any other slice, or of a spilled activation, runs on the host. The
/// output shares the input's quantization (the quantizer guarantees it).
pub(crate) fn slice_any(walk: &mut Walk<'_>, id: NodeId) -> Result<(), Refusal> {
    let src = walk.g.node_inputs(id)[0];
    let op = walk.g.node(id).op.clone();
    let Op::Slice { axes, starts, ends } = &op else {
        return Err(Refusal::NotSlice);
    };
    let (a, b) = (walk.g.value_type(src), &walk.g.node(id).outputs[0]);
    if a.quant != b.quant || a.dtype != b.dtype {
        return Err(Refusal::QuantizationChange { op: "slice" });
    }
    if let ([1], [start], [end], true) = (
        axes.as_slice(),
        starts.as_slice(),
        ends.as_slice(),
        walk.vals.contains_key(&src.node),
    ) {
        if let Some(p) = walk.use_value(src) {
            let (start, end) = (
                u32::try_from(*start)
                    .map_err(|_| Refusal::range("slice start", wide(*start), Limit::TooLarge))?,
                u32::try_from(*end)
                    .map_err(|_| Refusal::range("slice end", wide(*end), Limit::TooLarge))?,
            );
            let view = Placed {
                act: Act {
                    c: end - start,
                    ..p.act.clone()
                },
                buf: p.buf,
                off: p.off + u64::from(start) * u64::from(p.act.chan_pitch),
            };
            walk.vals.insert(id, view);
            return Ok(());
        }
    }
    host_op(walk, id, &op)
}

/// DRAM copy of operand `v` of host node `id`; `wrote` is set if a DMA_WRITE
/// was needed (the STOP must then follow it). A spilled activation comes back
/// through SRAM first (`spill.rs`).
fn host_operand(
    walk: &mut Walk<'_>,
    id: NodeId,
    v: Value,
    wrote: &mut bool,
) -> Result<DramVal, Refusal> {
    if let Some(d) = walk.host.vals.get(&v.node) {
        return Ok(d.clone());
    }
    let node = walk.g.node(v.node);
    let name = node.name.clone();
    let d = if let Op::Constant(c) = node.op {
        host_constant(
            walk,
            &name,
            walk.g.constant(c).data.clone(),
            walk.g.value_type(v),
        )?
    } else {
        spill::materialize(walk, id, v);
        let p = walk
            .use_value(v)
            .ok_or(Refusal::NotActivation { operand: "operand" })?;
        let t = walk.g.value_type(v).clone();
        // The planar SRAM layout is dense NCHW: one DMA moves it.
        let desc = code_desc(&name, &t, IoLayout::Dense)?;
        let tensor = walk.host.scratch(span(&desc));
        for j in dma_bands(walk, &name, &p) {
            walk.host.fixups.push(TensorFixup { job: j, tensor });
        }
        *wrote = true;
        DramVal { tensor, desc }
    };
    walk.host.vals.insert(v.node, d.clone());
    Ok(d)
}

/// A constant operand, stored in the DRAM image: float32, 8-bit codes with their
/// quantization, or other integers as int64.
fn host_constant(
    walk: &mut Walk<'_>,
    name: &str,
    data: TensorData,
    t: &TensorType,
) -> Result<DramVal, Refusal> {
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
    desc.validate().map_err(Refusal::Descriptor)?;
    let at = walk.dram_part(&bytes);
    let tensor = walk.host.tensor(DramRef::Image(at));
    Ok(DramVal { tensor, desc })
}

/// Ends the current segment with a STOP.
fn stop(walk: &mut Walk<'_>, node: &str) {
    walk.out.jobs.push(Job {
        node: node.to_string(),
        kind: JobKind::Stop,
    });
    walk.host.stops += 1;
}

/// Lowers host node `id` running `op` (see the module docs).
pub(crate) fn host_op(walk: &mut Walk<'_>, id: NodeId, op: &Op) -> Result<(), Refusal> {
    let name = walk.g.node(id).name.clone();
    let mut wrote = false;
    let inputs = walk
        .g
        .node_inputs(id)
        .into_iter()
        .map(|v| host_operand(walk, id, v, &mut wrote))
        .collect::<Result<Vec<_>, _>>()?;
    if wrote || walk.host.stops == 0 {
        stop(walk, &name);
    }
    let out_t = walk.g.node(id).outputs[0].clone();
    let sram = needs_sram(walk, id);
    let placed = if sram {
        Some(walk.define(id).map_err(Refusal::from)?)
    } else {
        None
    };
    let mut desc = if out_t.dtype == DType::F32 && !sram {
        float_desc(&name, &out_t)?
    } else {
        code_desc(&name, &out_t, IoLayout::Dense)?
    };
    desc.dir = IoDir::Output;
    let tensor = walk.host.scratch(span(&desc));
    let output = DramVal { tensor, desc };
    walk.host.recs.push(HostRec {
        segment: walk.host.stops - 1,
        name: name.clone(),
        op: nnac_ir::op_to_text(op),
        inputs,
        output: output.clone(),
    });
    walk.host.vals.insert(id, output);
    if let Some(p) = placed {
        let dma = Walk::act_dma(&p.act, 0);
        walk.host.fixups.push(TensorFixup {
            job: walk.next_job(),
            tensor,
        });
        walk.out.jobs.push(Job {
            node: name.clone(),
            kind: JobKind::Read { loc: p.loc(), dma },
        });
        read_cand(walk, &p);
    }
    walk.out.layers.push(LayerTiles {
        layer: name,
        mnemonic: format!("HOST {}", op.mnemonic()),
        tiles: 0,
    });
    Ok(())
}

/// A graph input that only host ops (and reshapes) read: it stays in its DRAM I/O
/// tensor, dense, and the host ops read it there (no DMA into SRAM and back), so an
/// input of any rank the host ops take compiles.
pub(crate) fn dram_input(walk: &mut Walk<'_>, id: NodeId) -> Result<(), Refusal> {
    let node = walk.g.node(id);
    let desc = code_desc(&node.name, &node.outputs[0], IoLayout::Dense)?;
    let k = walk.out.io.len();
    walk.out.io.push(desc.clone());
    walk.io_jobs.push(Vec::new());
    let tensor = walk.host.tensor(DramRef::Io(k));
    walk.host.vals.insert(id, DramVal { tensor, desc });
    Ok(())
}

/// A graph output whose value a host op left in DRAM: its descriptor points at
/// that DRAM (no DMA). Returns false if the value is not in DRAM.
pub(crate) fn host_graph_output(walk: &mut Walk<'_>, name: &str, v: Value) -> bool {
    let Some(d) = walk.host.vals.get(&v.node).cloned() else {
        return false;
    };
    let k = walk.out.io.len();
    match walk.host.tensors[d.tensor] {
        DramRef::Scratch(_) => walk.host.tensors[d.tensor] = DramRef::Io(k),
        DramRef::Io(first) => walk.host.io_alias.push(IoAlias {
            alias: k,
            target: first,
        }),
        DramRef::Image(_) => return false,
    }
    walk.out.io.push(IoDesc {
        name: name.to_string(),
        dir: IoDir::Output,
        ..d.desc
    });
    true
}

/// Resolves every tensor address (scratch after the DRAM image and the I/O
/// tensors), patches the DMA jobs and I/O aliases, and returns the host ops.
pub(crate) fn finish_host(walk: &mut Walk<'_>) -> Vec<HostOp> {
    let io_end = walk
        .out
        .io
        .iter()
        .map(|d| d.dram_addr + span(d))
        .fold(walk.out.dram.len() as u64, u64::max);
    let st = &walk.host;
    for &IoAlias {
        alias: k,
        target: first,
    } in &st.io_alias
    {
        walk.out.io[k].dram_addr = walk.out.io[first].dram_addr;
    }
    let base = io_end.div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
    let addr = |t: usize| match st.tensors[t] {
        DramRef::Image(a) => a,
        DramRef::Scratch(off) => base + off,
        DramRef::Io(k) => walk.out.io[k].dram_addr,
    };
    let resolved: Vec<u64> = (0..st.tensors.len()).map(addr).collect();
    for &TensorFixup { job: j, tensor: t } in &st.fixups {
        if let JobKind::Read { dma, .. } | JobKind::Write { dma, .. } = &mut walk.out.jobs[j].kind {
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

/// DMAs writing the whole activation `p` to a dense DRAM tensor (`dram_addr`
/// relative to the tensor): a value whose producers finish it in several pixel
/// tiles goes out in bands of rows ([`Act::band_dmas`]), so that band `i` moves
/// while band `i + 1` computes; otherwise one DMA. Returns the job indices.
pub(crate) fn dma_bands(walk: &mut Walk<'_>, node: &str, p: &Placed) -> Vec<JobId> {
    let n = crate::schedule::bands::write_count(&walk.out.jobs, p, walk.hw);
    if n > 1 {
        walk.out.banded.insert(p.buf);
    }
    let (loc, mut jobs) = (p.loc(), Vec::new());
    for dma in p.act.band_dmas(p.act.h.div_ceil(n)) {
        jobs.push(walk.next_job());
        walk.out.jobs.push(Job {
            node: node.to_string(),
            kind: JobKind::Write { loc, dma },
        });
    }
    jobs
}

/// Records `p`, read whole from DRAM by one DMA, for `bands::reads`.
pub(crate) fn read_cand(walk: &mut Walk<'_>, p: &Placed) {
    if p.off == 0 && crate::schedule::bands::planar(&p.act) {
        walk.out.read_cands.push(ReadCand {
            buf: p.buf,
            act: p.act.clone(),
        });
    }
}
