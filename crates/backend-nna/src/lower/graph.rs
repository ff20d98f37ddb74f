//! The graph walk: every node in topological order becomes SRAM buffers (with their
//! live ranges in steps), DRAM image parts and jobs, through the op lowerings of this
//! folder. Step 0 loads the graph inputs, node `k` of the order is step `k + 1`, the
//! last step stores the outputs. Entry: [`run`].

use crate::base::act::Act;
use crate::base::act::Placed;
use crate::base::buffer::DRAM_ALIGN;
use crate::base::job::{Job, JobKind};
use crate::base::spill_state::Src;
use crate::base::walk::{ConcatSlot, Lowered, Walk};
use crate::error::Refusal;
use crate::error::{BackendError, UnsupportedNode};
use crate::lower::{depth_to_space, dot, host, shuffle, strided, upsample};
use crate::place::{spill, split_px};
use nnac_ir::{NnaOp, NodeId, Op, Value};
use nnac_isa::{IoDesc, IoDir, IoDtype, IoLayout};

/// Finds the concatenation inputs whose producers can write into the
/// concatenation in place (NNA compute ops and upsamplings used only by it, same
/// quantization).
fn plan_concats<'g>(walk: &mut Walk<'g>) {
    for id in walk.g.node_ids() {
        let Op::Nna(NnaOp::Concat { axis: 1 }) = walk.g.node(id).op else {
            continue;
        };
        let out_t = &walk.g.node(id).outputs[0];
        let mut c_off = 0u32;
        for v in walk.g.node_inputs(id) {
            let t = walk.g.value_type(v);
            let prod = &walk.g.node(v.node).op;
            let spilled = &walk.out.sp.plan.spilled;
            let ok = matches!(
                prod,
                Op::Nna(
                    NnaOp::Dot(_) | NnaOp::Scale(_) | NnaOp::Eltwise(_) | NnaOp::Upsample { .. }
                )
            ) && !spilled.contains(&id)
                && !spilled.contains(&v.node)
                && walk.g.users(v).len() == 1
                && !walk.g.is_output(v)
                && t.shape.len() == 4
                && out_t.shape.len() == 4
                && t.dtype == out_t.dtype
                && t.quant == out_t.quant;
            if ok {
                walk.slots.insert(v.node, ConcatSlot { concat: id, c_off });
            }
            c_off += t.shape.get(1).copied().unwrap_or(0) as u32;
        }
    }
}

/// Chooses the values stored HWC: the output of an NNA compute op, or of a channel
/// concatenation of such outputs, read by one global pool of alike channels
/// (`gap.rs`) and otherwise only by ELTWISE ops, when the value stays in SRAM
/// whole (not a graph output, not a concatenation slot, nothing spilled, no
/// reader split by the plan). Every other value is planar.
fn plan_hwc<'g>(walk: &mut Walk<'g>) {
    let plan = &walk.out.sp.plan;
    let computed = |id: NodeId| {
        matches!(
            walk.g.node(id).op,
            Op::Nna(NnaOp::Dot(_) | NnaOp::Scale(_) | NnaOp::Eltwise(_))
        ) && !plan.spilled.contains(&id)
            && !plan.budget.contains_key(&id)
    };
    for id in walk.g.node_ids() {
        let eligible = match walk.g.node(id).op {
            Op::Nna(NnaOp::Concat { axis: 1 }) => {
                walk.g.node_inputs(id).iter().all(|v| computed(v.node))
            }
            _ => computed(id),
        };
        if !eligible {
            continue;
        }
        let v = Value::new(id, 0);
        let users = walk.g.users(v);
        let whole = !walk.g.is_output(v)
            && !walk.slots.contains_key(&id)
            && !plan.spilled.contains(&id)
            && users.iter().all(|(u, _)| !plan.budget.contains_key(u));
        if !whole {
            continue;
        }
        // One global pool, and ELTWISE ops, which read any layout through their
        // pitches (they feed no activation packets, so the slice rule does not
        // apply): a squeeze-and-excitation product next to its pool.
        let mut pools = 0;
        let readers_ok = users.iter().all(|&(u, _)| match walk.g.node(u).op {
            Op::Nna(NnaOp::Eltwise(_)) => true,
            Op::Nna(NnaOp::Dot(_)) if pools == 0 && dot::is_channel_pool(walk, u) => {
                pools += 1;
                true
            }
            _ => false,
        });
        if readers_ok && pools == 1 {
            walk.hwc.insert(id);
        }
    }
}

/// A channel concatenation: the in-place producers already wrote their slots;
/// every other input is copied into its slot by a SCALE (`r0 = code - zp + zp`).
fn concat<'g>(walk: &mut Walk<'g>, id: NodeId, axis: usize) -> Result<(), Refusal> {
    if axis != 1 || walk.g.node(id).outputs[0].shape.len() != 4 {
        return Err(Refusal::ConcatAxis { axis });
    }
    if spill::concat_via_dram(walk, id)? {
        return Ok(());
    }
    if !walk.vals.contains_key(&id) {
        let name = walk.g.node(id).name.clone();
        let act = walk.act_of(id).map_err(Refusal::from)?;
        let buf = walk.new_buf(&name, act.bytes());
        walk.out.sp.value_bufs.insert(buf, id);
        walk.vals.insert(id, Placed { act, buf, off: 0 });
    }
    let cat = walk.use_value(Value::new(id, 0)).expect("placed above");
    let mut c_off = 0u32;
    for v in walk.g.node_inputs(id) {
        let src = walk
            .use_value(v)
            .ok_or(Refusal::NotActivation { operand: "input" })?;
        if walk.slots.get(&v.node) != Some(&ConcatSlot { concat: id, c_off }) {
            walk.copy_into(id, &src, &cat, c_off)?;
        }
        c_off += src.act.c;
    }
    Ok(())
}

fn unsupported<'g>(walk: &mut Walk<'g>, id: NodeId, why: Refusal) {
    let name = walk.g.node(id).name.clone();
    walk.unsupported.push(UnsupportedNode::new(name, why));
    // Keep walking so that every unsupported node is reported at once.
    let _ = walk.define(id);
}

/// Walks the whole graph.
pub(crate) fn run<'g>(mut walk: Walk<'g>) -> Result<Lowered, BackendError> {
    let order = walk
        .g
        .topo_order()
        .map_err(|e| BackendError::Invalid(vec![format!("{}: {}", e.node, e.msg)]))?;
    plan_concats(&mut walk);
    plan_hwc(&mut walk);
    for &id in &order {
        if matches!(walk.g.node(id).op, Op::Input) {
            input(&mut walk, id)?;
        }
    }
    for &id in &order {
        walk.step += 1;
        lower_node(&mut walk, id)?;
    }
    if !walk.unsupported.is_empty() {
        return Err(BackendError::Unsupported(walk.unsupported));
    }
    walk.step += 1;
    walk.mark_step();
    outputs(&mut walk)?;
    spill::place_spill_area(&mut walk);
    place_io(&mut walk);
    spill::resolve_homes(&mut walk);
    walk.out.host_ops = host::finish_host(&mut walk);
    Ok(walk.out)
}

/// Puts the I/O tensors after the DRAM image, in descriptor order.
fn place_io<'g>(walk: &mut Walk<'g>) {
    let mut end = walk.out.dram.len() as u64;
    for (d, jobs) in walk.out.io.iter_mut().zip(&walk.io_jobs) {
        d.dram_addr = end.div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
        end = d.dram_addr + io_bytes(d);
        for &j in jobs {
            if let JobKind::Read { dma, .. } | JobKind::Write { dma, .. } =
                &mut walk.out.jobs[j].kind
            {
                dma.dram_addr += d.dram_addr;
            }
        }
    }
}

fn lower_node<'g>(walk: &mut Walk<'g>, id: NodeId) -> Result<(), BackendError> {
    let op = walk.g.node(id).op.clone();
    if spill::prepare(walk, id) {
        if split_px::px_decide(walk, id) {
            walk.out.sp.px_split = true;
        } else {
            spill::materialize_inputs(walk, id);
        }
    }
    let res = match &op {
        Op::Input | Op::Constant(_) => return Ok(()),
        Op::Reshape { .. } => host::reshape_any(walk, id),
        Op::Slice { .. } => host::slice_any(walk, id),
        Op::StridedSlice { .. } => strided::strided_slice(walk, id),
        Op::Nna(NnaOp::Dot(d)) => dot::dot(walk, id, d),
        Op::Nna(NnaOp::Scale(s)) => dot::scale(walk, id, s),
        Op::Nna(NnaOp::Eltwise(e)) => dot::eltwise(walk, id, e),
        Op::Nna(NnaOp::Concat { axis }) => concat(walk, id, *axis),
        Op::Nna(NnaOp::ChannelShuffle { groups }) => shuffle::channel_shuffle(walk, id, *groups),
        Op::Nna(NnaOp::Upsample { factors }) => upsample::upsample(walk, id, *factors),
        Op::Nna(NnaOp::DepthToSpace { block, crd }) => {
            depth_to_space::depth_to_space(walk, id, *block, *crd)
        }
        Op::Nna(NnaOp::Host(inner)) => host::host_op(walk, id, inner),
        other => Err(Refusal::NotNnaOp {
            mnemonic: other.mnemonic().to_string(),
        }),
    };
    spill::settle(walk, id);
    match res {
        Ok(()) => Ok(()),
        Err(why) => {
            unsupported(walk, id, why);
            Ok(())
        }
    }
}

/// A reshape to `[1, K]` of a tensor that only inner products read (they read the
/// activation in place with `kernel = H x W`), or of a 1x1 tensor: an alias.
pub(crate) fn reshape<'g>(walk: &mut Walk<'g>, id: NodeId) -> Result<(), Refusal> {
    let src = walk.g.node_inputs(id)[0];
    let s = spill::source(walk, src).ok_or(Refusal::NotActivation { operand: "input" })?;
    let a = s.act().clone();
    let out_t = &walk.g.node(id).outputs[0];
    let numel = u64::from(a.c) * u64::from(a.pixels());
    if out_t.shape.as_slice() != [1, numel as usize] {
        return Err(Refusal::ReshapeShape {
            shape: out_t.shape.clone(),
        });
    }
    let only_inner = walk.g.users(Value::new(id, 0)).iter().all(|&(u, _)| {
        matches!(&walk.g.node(u).op, Op::Nna(NnaOp::Dot(d)) if d.kind == nnac_ir::DotKind::Inner)
    }) && !walk.g.is_output(Value::new(id, 0));
    if a.pixels() != 1 && !only_inner {
        return Err(Refusal::FlattenSpatial);
    }
    if out_t.quant != walk.g.value_type(src).quant || out_t.dtype != walk.g.value_type(src).dtype {
        return Err(Refusal::QuantizationChange { op: "reshape" });
    }
    match s {
        Src::Sram(p) => walk.vals.insert(id, p).map(|_| ()),
        Src::Dram(h) => walk.out.sp.homes.insert(id, h).map(|_| ()),
    };
    Ok(())
}

fn input<'g>(walk: &mut Walk<'g>, id: NodeId) -> Result<(), BackendError> {
    // An input no NNA op reads, or one that cannot be an NNA activation (another
    // rank, a batch): the NNA ops reading the latter are refused in turn and the
    // partitioner moves them to the host.
    let node = walk.g.node(id);
    let odd = matches!(
        Act::of(&node.name, &node.outputs[0]),
        Err(BackendError::Unsupported(_))
    );
    if odd || !host::needs_sram(walk, id) {
        let name = walk.g.node(id).name.clone();
        return host::dram_input(walk, id)
            .map_err(|r| BackendError::Unsupported(vec![UnsupportedNode::new(name, r)]));
    }
    if walk.out.sp.plan.spilled.contains(&id) {
        let name = walk.g.node(id).name.clone();
        let act = Act::of(&name, &walk.g.node(id).outputs[0])?;
        let shape = walk.g.node(id).outputs[0].shape.clone();
        let desc = io_desc(&name, IoDir::Input, &act, &shape);
        walk.out.io.push(desc);
        walk.io_jobs.push(Vec::new());
        spill::spilled_input(walk, id, act, walk.out.io.len() - 1);
        return Ok(());
    }
    let p = walk.define(id)?;
    let name = walk.g.node(id).name.clone();
    let desc = io_desc(
        &name,
        IoDir::Input,
        &p.act,
        &walk.g.node(id).outputs[0].shape,
    );
    let dma = Walk::act_dma(&p.act, 0);
    walk.out.io.push(desc);
    walk.io_jobs.push(vec![walk.next_job()]);
    walk.out.jobs.push(Job {
        node: name,
        kind: JobKind::Read { loc: p.loc(), dma },
    });
    host::read_cand(walk, &p);
    Ok(())
}

fn outputs<'g>(walk: &mut Walk<'g>) -> Result<(), BackendError> {
    for (k, o) in walk.g.outputs().to_vec().into_iter().enumerate() {
        if host::host_graph_output(walk, &o.name, o.value) {
            walk.io_jobs.push(Vec::new());
            continue;
        }
        let src = spill::source(walk, o.value).ok_or_else(|| {
            BackendError::Unsupported(vec![UnsupportedNode::new(
                o.name.clone(),
                Refusal::NotActivation {
                    operand: "graph output",
                },
            )])
        })?;
        let shape = walk.g.value_type(o.value).shape.clone();
        let p = match src {
            Src::Sram(p) => p,
            Src::Dram(h) => {
                let desc = io_desc(&o.name, IoDir::Output, &h.act, &shape);
                let dma = Walk::act_dma(&h.act, 0);
                walk.out.io.push(desc);
                let j = spill::spilled_output(walk, k, &h, dma);
                walk.io_jobs.push(j.into_iter().collect());
                continue;
            }
        };
        let desc = io_desc(&o.name, IoDir::Output, &p.act, &shape);
        walk.out.io.push(desc);
        let jobs = host::dma_bands(walk, &o.name, &p);
        walk.io_jobs.push(jobs);
    }
    Ok(())
}

/// Descriptor of a graph input/output (its DRAM address is set by `place_io`).
fn io_desc(name: &str, dir: IoDir, a: &Act, shape: &[usize]) -> IoDesc {
    // The planar SRAM layout is dense NCHW: one DMA moves the tensor.
    let layout = IoLayout::Dense;
    IoDesc {
        name: name.to_string(),
        dir,
        dtype: if a.signed {
            IoDtype::Int8
        } else {
            IoDtype::Uint8
        },
        shape: shape.iter().map(|&d| d as u32).collect(),
        dram_addr: 0,
        layout,
        scale: a.scale,
        zero_point: a.zero_point,
    }
}

/// DRAM bytes an I/O tensor spans (full rows).
fn io_bytes(d: &IoDesc) -> u64 {
    match d.layout {
        IoLayout::Dense => d.shape.iter().map(|&s| u64::from(s)).product(),
        IoLayout::Hwc { row_pitch, .. } => {
            let h = d.shape.iter().rev().nth(1).copied().unwrap_or(1);
            u64::from(h) * u64::from(row_pitch)
        }
    }
}
