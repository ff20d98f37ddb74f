//! DRAM spill and fill of activations.
//!
//! An activation the [`crate::base::plan::Plan`] marks as spilled does not stay in SRAM between layers:
//! its producer writes it (whole, or band by band when the producer is split) to a
//! DRAM home, and every consumer brings it back in (whole into a buffer live only for
//! that consumer, or band by band). A home is the graph's own input or output tensor
//! when the value is one, otherwise a spill region of the spill area that is appended
//! to the DRAM image (docs/ISA.md: spill space lies inside the image). Regions are
//! placed like SRAM buffers (liveness first fit over steps); every spill and fill is a
//! DMA, the DMA queue runs them in program order, and only parameter loads (constant
//! DRAM) are ever moved by [`crate::place::prefetch`], so a region is reused only after its
//! last fill.
//!
//! [`prepare`] (with [`materialize_inputs`]) and [`settle`] run around every node:
//! the first brings the spilled inputs of an unsplit node into SRAM, the second
//! writes a spilled output to its home and drops the temporary copies.

use crate::base::act::Act;
use crate::base::act::Placed;
use crate::base::buffer::Buffer;
use crate::base::buffer::DRAM_ALIGN;
use crate::base::job::{BufId, Job, JobId, JobKind, Loc};
use crate::base::spill_state::{Base, DramAct, HomeFixup, SpillArea, Src};
use crate::base::walk::{ConcatSlot, Walk};
use crate::error::Refusal;
use crate::place::alloc;
use nnac_ir::{NnaOp, NodeId, Op, Value};
use nnac_isa::{Dma, IoDir};

/// A concatenation copies codes: its inputs must share its quantization.
fn same_quant(a: &Act, b: &Act) -> Result<(), Refusal> {
    if a.signed != b.signed || a.zero_point != b.zero_point || a.scale != b.scale {
        return Err(Refusal::ConcatQuantization);
    }
    Ok(())
}

/// Whether buffers of `id`'s step may be live from the previous step (prefetch).
pub(crate) fn prefetch_ok(walk: &Walk<'_>, id: Option<NodeId>) -> bool {
    id.is_none_or(|n| !walk.out.sp.plan.no_prefetch.contains(&n))
}

/// A buffer streamed by the current step: live from the previous working step
/// when prefetching is allowed, so its DMA overlaps that step's compute.
pub(crate) fn stream_buf(walk: &mut Walk<'_>, id: NodeId, size: u64) -> BufId {
    let name = walk.g.node(id).name.clone();
    let b = walk.new_buf(&name, size);
    if prefetch_ok(walk, Some(id)) {
        walk.out.bufs[b].first = walk.prev_work_step();
    }
    b
}

/// The activation `v`, resident (marked live now) or in DRAM.
pub(crate) fn source(walk: &mut Walk<'_>, v: Value) -> Option<Src> {
    if let Some(p) = walk.use_value(v) {
        return Some(Src::Sram(p));
    }
    let h = walk.out.sp.homes.get(&v.node)?.clone();
    if let Base::Spill(r) = h.base {
        let reg = &mut walk.out.sp.regions[r];
        reg.last = reg.last.max(walk.step);
    }
    Some(Src::Dram(h))
}

/// A new DRAM home for the output of `id`: the graph output tensor if the value
/// is exactly one graph output, else a spill region.
pub(crate) fn new_home(walk: &mut Walk<'_>, id: NodeId, act: Act) -> DramAct {
    let outs: Vec<usize> = (0..walk.g.outputs().len())
        .filter(|&k| walk.g.outputs()[k].value == Value::new(id, 0))
        .collect();
    let base = match outs.as_slice() {
        [k] => Base::Output(*k),
        _ => {
            let name = walk.g.node(id).name.clone();
            walk.out.sp.regions.push(Buffer {
                owner: name,
                size: act.bytes(),
                first: walk.step,
                last: walk.step,
            });
            Base::Spill(walk.out.sp.regions.len() - 1)
        }
    };
    DramAct { act, base }
}

/// DMA of rows `y0..y0+rows` of `home` between DRAM and SRAM at `loc` (a buffer
/// holding just those rows: channel pitch `rows * row_pitch`).
pub(crate) fn move_rows(
    walk: &mut Walk<'_>,
    node: &str,
    to_sram: bool,
    home: &DramAct,
    y0: u32,
    loc: Loc,
    rows: u32,
) {
    let a = &home.act;
    let dma = a.rows_dma(y0, rows, a.band_chan_pitch(rows));
    push_home_dma(walk, node, to_sram, home, loc, dma);
}

/// Pushes a fill (`to_sram`) or spill DMA whose `dram_addr` is relative to
/// `home` (rebased by [`resolve_homes`]), counting its bytes.
fn push_home_dma(
    walk: &mut Walk<'_>,
    node: &str,
    to_sram: bool,
    home: &DramAct,
    loc: Loc,
    dma: Dma,
) {
    let bytes = u64::from(dma.rows) * u64::from(dma.row_len);
    walk.out.sp.fixups.push(HomeFixup {
        job: walk.next_job(),
        base: home.base,
    });
    let kind = if to_sram {
        walk.out.sp.fill_bytes += bytes;
        JobKind::Read { loc, dma }
    } else {
        walk.out.sp.spill_bytes += bytes;
        JobKind::Write { loc, dma }
    };
    walk.out.jobs.push(Job {
        node: node.to_string(),
        kind,
    });
}

/// Before node `id`: starts its step. Returns whether its spilled inputs come into
/// SRAM whole ([`materialize_inputs`]) unless it runs in bands
/// ([`crate::place::split_px::px_decide`]); dot-product layers bring theirs in
/// themselves (band by band when they are split), and a reshape of a spilled value
/// is a spilled alias.
pub(crate) fn prepare(walk: &mut Walk<'_>, id: NodeId) -> bool {
    walk.mark_step();
    walk.out.sp.overlap = prefetch_ok(walk, Some(id));
    match &walk.g.node(id).op {
        Op::Nna(NnaOp::Dot(_) | NnaOp::Concat { .. }) | Op::Reshape { .. } => false,
        Op::Nna(NnaOp::Scale(s)) if s.pool.is_some() => false,
        _ => true,
    }
}

/// Brings every spilled input of `id` into SRAM whole (after [`prepare`]).
pub(crate) fn materialize_inputs(walk: &mut Walk<'_>, id: NodeId) {
    for v in walk.g.node_inputs(id) {
        materialize(walk, id, v);
    }
}

/// Brings spilled `v` into a buffer live for the current step (read by `id`).
pub(crate) fn materialize(walk: &mut Walk<'_>, id: NodeId, v: Value) {
    if walk.out.sp.temps.contains(&v.node) || walk.vals.contains_key(&v.node) {
        return;
    }
    let Some(h) = walk.out.sp.homes.get(&v.node).cloned() else {
        return;
    };
    let _ = source(walk, v);
    let buf = stream_buf(walk, id, h.act.bytes());
    let name = walk.g.node(id).name.clone();
    move_rows(walk, &name, true, &h, 0, Loc::start(buf), h.act.h);
    walk.vals.insert(
        v.node,
        Placed {
            act: h.act,
            buf,
            off: 0,
        },
    );
    walk.out.sp.temps.push(v.node);
}

/// After node `id`: drops the temporary copies and spills its output if planned.
pub(crate) fn settle(walk: &mut Walk<'_>, id: NodeId) {
    walk.out.sp.px_split = false;
    for t in std::mem::take(&mut walk.out.sp.temps) {
        walk.vals.remove(&t);
    }
    let spill = walk.out.sp.plan.spilled.contains(&id)
        && !walk.out.sp.homes.contains_key(&id)
        && !matches!(walk.g.node(id).op, Op::Input | Op::Constant(_));
    if !spill {
        return;
    }
    let Some(p) = walk.vals.remove(&id) else {
        return;
    };
    let home = new_home(walk, id, p.act.clone());
    let name = walk.g.node(id).name.clone();
    move_rows(walk, &name, false, &home, 0, p.loc(), p.act.h);
    walk.out.sp.homes.insert(id, home);
}

/// A channel concatenation with a spilled output or spilled inputs: the spilled
/// parts move by DMA, one channel plane per DMA row, straight between the
/// input's home and the concatenation's buffer, or between the input's buffer
/// and the concatenation's home; a spilled input of a spilled concatenation
/// passes through a buffer of its own step. `false`: nothing is spilled.
pub(crate) fn concat_via_dram(walk: &mut Walk<'_>, id: NodeId) -> Result<bool, Refusal> {
    let ins = walk.g.node_inputs(id);
    let out_spilled = walk.out.sp.plan.spilled.contains(&id);
    let in_spilled = ins.iter().any(|v| !walk.vals.contains_key(&v.node));
    if !out_spilled && !in_spilled {
        return Ok(false);
    }
    let name = walk.g.node(id).name.clone();
    let cat_act = Act::of(&name, &walk.g.node(id).outputs[0]).map_err(Refusal::from)?;
    let out = if out_spilled {
        Src::Dram(new_home(walk, id, cat_act))
    } else {
        if !walk.vals.contains_key(&id) {
            let p = walk.whole_value(id, cat_act);
            walk.vals.insert(id, p);
        }
        Src::Sram(walk.use_value(Value::new(id, 0)).expect("placed above"))
    };
    let mut c_off = 0u32;
    for (k, v) in ins.into_iter().enumerate() {
        if k > 0 && out_spilled {
            walk.step += 1;
            walk.mark_step();
        }
        let src = source(walk, v).ok_or(Refusal::NotActivation { operand: "input" })?;
        same_quant(src.act(), out.act())?;
        match (&src, &out) {
            (Src::Sram(p), Src::Sram(o)) => {
                if walk.slots.get(&v.node) != Some(&ConcatSlot { concat: id, c_off }) {
                    walk.copy_into(id, p, o, c_off)?;
                }
            }
            (Src::Dram(h), Src::Sram(o)) => {
                let at = Loc::new(
                    o.buf,
                    o.off + u64::from(c_off) * u64::from(o.act.chan_pitch),
                );
                move_pixels(walk, &name, true, h, 0, at, &o.act)?;
            }
            (Src::Sram(p), Src::Dram(home)) => {
                move_pixels(walk, &name, false, home, c_off, p.loc(), &p.act)?;
            }
            (Src::Dram(h), Src::Dram(home)) => {
                let buf = stream_buf(walk, id, h.act.bytes());
                move_rows(walk, &name, true, h, 0, Loc::start(buf), h.act.h);
                move_pixels(walk, &name, false, home, c_off, Loc::start(buf), &h.act)?;
            }
        }
        c_off += src.act().c;
    }
    if let Src::Dram(home) = out {
        walk.out.sp.homes.insert(id, home);
    }
    Ok(true)
}

/// DMA of the channel planes of a `C`-channel tensor between SRAM at `loc` (laid
/// out as `sram`) and channels `c_off..c_off+C` of `home` (or all of `home`'s
/// channels into SRAM at `loc` when filling: `sram` is then the wider layout and
/// `home` the input). Planes are contiguous, so one DMA row per channel.
fn move_pixels(
    walk: &mut Walk<'_>,
    node: &str,
    to_sram: bool,
    home: &DramAct,
    c_off: u32,
    loc: Loc,
    sram: &Act,
) -> Result<(), Refusal> {
    let (d, c) = (&home.act, if to_sram { home.act.c } else { sram.c });
    let plane = d.pixels();
    if d.chan_pitch != plane || sram.chan_pitch != plane || sram.pixels() != plane {
        return Err(Refusal::ConcatNotDense);
    }
    let dma = Dma {
        dram_addr: u64::from(c_off) * u64::from(d.chan_pitch),
        sram_addr: 0,
        rows: c,
        row_len: plane,
        dram_stride: u64::from(d.chan_pitch),
        sram_stride: sram.chan_pitch,
        ..Dma::default()
    };
    push_home_dma(walk, node, to_sram, home, loc, dma);
    Ok(())
}

/// A spilled input: its home is the input tensor itself (descriptor `desc`).
pub(crate) fn spilled_input(walk: &mut Walk<'_>, id: NodeId, act: Act, desc: usize) {
    let home = DramAct {
        act,
        base: Base::Io(desc),
    };
    walk.out.sp.homes.insert(id, home);
}

/// A graph output held in DRAM: `None` if the producer wrote it straight into
/// the output tensor, else the job writing it out (after a fill through a
/// buffer of the current step).
pub(crate) fn spilled_output(
    walk: &mut Walk<'_>,
    k: usize,
    home: &DramAct,
    desc_dma: Dma,
) -> Option<JobId> {
    if home.base == Base::Output(k) {
        return None;
    }
    let name = walk.g.outputs()[k].name.clone();
    let buf = walk.new_buf(&name, home.act.bytes());
    move_rows(walk, &name, true, home, 0, Loc::start(buf), home.act.h);
    let job = walk.next_job();
    walk.out.jobs.push(Job {
        node: name,
        kind: JobKind::Write {
            loc: Loc::start(buf),
            dma: desc_dma,
        },
    });
    Some(job)
}

/// Places the spill regions and appends the spill area (zeros) to the DRAM
/// image. Runs before the I/O tensors are placed after the image.
pub(crate) fn place_spill_area(walk: &mut Walk<'_>) {
    let placed = alloc::place(&walk.out.sp.regions, u64::MAX / 4, DRAM_ALIGN)
        .expect("an unbounded DRAM area always fits");
    let area = (walk.out.dram.len() as u64).div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
    if placed.peak > 0 {
        walk.out.dram.resize((area + placed.peak) as usize, 0);
    }
    walk.out.sp.area = SpillArea {
        addr: area,
        bytes: placed.peak,
    };
    walk.out.sp.region_addrs = placed.addrs;
}

/// Rebases every spill/fill DMA on its home. Runs after the I/O tensors are placed.
pub(crate) fn resolve_homes(walk: &mut Walk<'_>) {
    let outputs: Vec<String> = walk.g.outputs().iter().map(|o| o.name.clone()).collect();
    let (io, sp) = (&walk.out.io, &walk.out.sp);
    let base_addr = |b: Base| -> u64 {
        match b {
            Base::Spill(r) => sp.area.addr + sp.region_addrs[r],
            Base::Io(i) => io[i].dram_addr,
            Base::Output(k) => io
                .iter()
                .find(|d| d.dir == IoDir::Output && d.name == outputs[k])
                .map_or(0, |d| d.dram_addr),
        }
    };
    let fixes: Vec<(JobId, u64)> = sp
        .fixups
        .iter()
        .map(|f| (f.job, base_addr(f.base)))
        .collect();
    for (j, at) in fixes {
        if let JobKind::Read { dma, .. } | JobKind::Write { dma, .. } = &mut walk.out.jobs[j].kind {
            dma.dram_addr += at;
        }
    }
}

/// The output of a split layer: its DRAM home if planned spilled, else resident.
pub(crate) fn split_output(walk: &mut Walk<'_>, id: NodeId) -> Result<Src, Refusal> {
    if walk.out.sp.plan.spilled.contains(&id) {
        let node = walk.g.node(id);
        let act = Act::of(&node.name, &node.outputs[0]).map_err(Refusal::from)?;
        Ok(Src::Dram(new_home(walk, id, act)))
    } else {
        Ok(Src::Sram(walk.define(id).map_err(Refusal::from)?))
    }
}
