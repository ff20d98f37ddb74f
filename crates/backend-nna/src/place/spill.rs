//! DRAM spill and fill of activations.
//!
//! An activation the [`Plan`] marks as spilled does not stay in SRAM between layers:
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
//! [`Walk::prepare`] and [`Walk::settle`] run around every node: the first brings
//! the spilled inputs of an unsplit node into SRAM, the second writes a spilled
//! output to its home and drops the temporary copies.

use crate::base::act::Act;
use crate::base::job::{Job, JobKind, Loc};
use crate::base::walk::{Placed, Walk, DRAM_ALIGN};
use crate::place::alloc::{self, Buffer};
use crate::place::plan::Plan;
use nnac_ir::{NnaOp, NodeId, Op, Value};
use nnac_isa::{Dma, IoDir};
use std::collections::BTreeMap;

/// A concatenation copies codes: its inputs must share its quantization.
fn same_quant(a: &Act, b: &Act) -> Result<(), String> {
    if a.signed != b.signed || a.zero_point != b.zero_point || a.scale != b.scale {
        return Err("concatenation input with a different quantization".into());
    }
    Ok(())
}

/// Where a DRAM home lies; resolved to an address after the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// Spill region `r`.
    Spill(usize),
    /// I/O descriptor `i` (a graph input).
    Io(usize),
    /// The graph output with this index in `Graph::outputs`.
    Output(usize),
}

/// A spilled activation: its layout (the same pitches as in SRAM) and home.
#[derive(Debug, Clone)]
pub struct DramAct {
    pub act: Act,
    pub base: Base,
}

/// An activation a layer reads: resident in SRAM or spilled to DRAM.
#[derive(Clone)]
pub enum Src {
    Sram(Placed),
    Dram(DramAct),
}

impl Src {
    pub fn act(&self) -> &Act {
        match self {
            Src::Sram(p) => &p.act,
            Src::Dram(d) => &d.act,
        }
    }
}

/// A layer lowered in pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitLayer {
    pub layer: String,
    /// Bands of output rows.
    pub bands: usize,
    /// Groups of output channels whose weights are streamed one after another.
    pub groups: usize,
}

/// The walk's spill/split bookkeeping (part of [`crate::base::walk::Lowered`]).
#[derive(Debug, Clone, Default)]
pub struct SpillState {
    pub plan: Plan,
    /// DRAM homes of the spilled values.
    pub homes: BTreeMap<NodeId, DramAct>,
    /// Spill regions (size and live steps).
    pub regions: Vec<Buffer>,
    /// `(job, base)`: the job's DMA `dram_addr` is relative to `base`.
    pub fixups: Vec<(usize, Base)>,
    pub spill_bytes: u64,
    pub fill_bytes: u64,
    pub splits: Vec<SplitLayer>,
    /// SRAM buffers holding a whole activation, and the value they hold.
    pub value_bufs: BTreeMap<usize, NodeId>,
    /// Buffers loaded from the DRAM image (parameters): `(buffer, its load jobs)`.
    pub param_bufs: Vec<(usize, Vec<usize>)>,
    /// `(step, index of the step's first job)`, ascending.
    pub step_start: Vec<(usize, usize)>,
    /// Smallest working set of every splittable layer (one row band, one group).
    pub min_ws: BTreeMap<NodeId, u64>,
    /// The spill area in the DRAM image: `(address, bytes)`.
    pub area: (u64, u64),
    region_addrs: Vec<u64>,
    /// Whether the current step's parameter buffers may be live from the previous
    /// step (prefetch / double buffering).
    pub overlap: bool,
    /// The current node is a pixel-wise layer running in bands (`split_px.rs`).
    pub px_split: bool,
    /// Spilled values copied into SRAM for the current node.
    temps: Vec<NodeId>,
}

impl Walk<'_> {
    /// Whether buffers of `id`'s step may be live from the previous step (prefetch).
    pub fn prefetch_ok(&self, id: Option<NodeId>) -> bool {
        id.is_none_or(|n| !self.out.sp.plan.no_prefetch.contains(&n))
    }

    /// A buffer streamed by the current step: live from the previous working step
    /// when prefetching is allowed, so its DMA overlaps that step's compute.
    pub fn stream_buf(&mut self, id: NodeId, size: u64) -> usize {
        let name = self.g.node(id).name.clone();
        let b = self.new_buf(&name, size);
        if self.prefetch_ok(Some(id)) {
            self.out.bufs[b].first = self.prev_work_step();
        }
        b
    }

    /// The last step before the current one that has jobs (0 if none). Steps of
    /// nodes that emit nothing (constants, the weights and biases between two layers;
    /// aliases) are skipped: a buffer live from such a step would not overlap the
    /// previous layer, and its load could not run while that layer computes.
    pub fn prev_work_step(&self) -> usize {
        let starts = &self.out.sp.step_start;
        let jobs = self.out.jobs.len();
        (0..starts.len())
            .rev()
            .find(|&i| {
                let end = starts.get(i + 1).map_or(jobs, |&(_, j)| j);
                starts[i].0 < self.step && end > starts[i].1
            })
            .map_or(0, |i| starts[i].0)
    }

    /// Marks the start of the current step (for [`crate::place::prefetch`]).
    pub fn mark_step(&mut self) {
        let at = (self.step, self.out.jobs.len());
        self.out.sp.step_start.push(at);
    }

    /// The activation `v`, resident (marked live now) or in DRAM.
    pub fn source(&mut self, v: Value) -> Option<Src> {
        if let Some(p) = self.use_value(v) {
            return Some(Src::Sram(p));
        }
        let h = self.out.sp.homes.get(&v.node)?.clone();
        if let Base::Spill(r) = h.base {
            let reg = &mut self.out.sp.regions[r];
            reg.last = reg.last.max(self.step);
        }
        Some(Src::Dram(h))
    }

    /// A new DRAM home for the output of `id`: the graph output tensor if the value
    /// is exactly one graph output, else a spill region.
    pub fn new_home(&mut self, id: NodeId, act: Act) -> DramAct {
        let outs: Vec<usize> = (0..self.g.outputs().len())
            .filter(|&k| self.g.outputs()[k].value == Value::new(id, 0))
            .collect();
        let base = match outs.as_slice() {
            [k] => Base::Output(*k),
            _ => {
                let name = self.g.node(id).name.clone();
                self.out.sp.regions.push(Buffer {
                    owner: name,
                    size: act.bytes(),
                    first: self.step,
                    last: self.step,
                });
                Base::Spill(self.out.sp.regions.len() - 1)
            }
        };
        DramAct { act, base }
    }

    /// DMA of rows `y0..y0+rows` of `home` between DRAM and SRAM at `loc` (a buffer
    /// holding just those rows: channel pitch `rows * row_pitch`).
    pub fn move_rows(
        &mut self,
        node: &str,
        to_sram: bool,
        home: &DramAct,
        y0: u32,
        loc: Loc,
        rows: u32,
    ) {
        let a = &home.act;
        let dma = a.rows_dma(y0, rows, a.band_chan_pitch(rows));
        self.push_home_dma(node, to_sram, home, loc, dma);
    }

    /// Pushes a fill (`to_sram`) or spill DMA whose `dram_addr` is relative to
    /// `home` (rebased by [`Walk::resolve_homes`]), counting its bytes.
    fn push_home_dma(&mut self, node: &str, to_sram: bool, home: &DramAct, loc: Loc, dma: Dma) {
        let bytes = u64::from(dma.rows) * u64::from(dma.row_len);
        self.out.sp.fixups.push((self.out.jobs.len(), home.base));
        let kind = if to_sram {
            self.out.sp.fill_bytes += bytes;
            JobKind::Read { loc, dma }
        } else {
            self.out.sp.spill_bytes += bytes;
            JobKind::Write { loc, dma }
        };
        self.out.jobs.push(Job {
            node: node.to_string(),
            kind,
        });
    }

    /// Before node `id`: its spilled inputs come into SRAM whole (dot-product layers
    /// do this themselves, band by band when they are split); a reshape of a spilled
    /// value is a spilled alias.
    pub fn prepare(&mut self, id: NodeId) {
        self.mark_step();
        self.out.sp.overlap = self.prefetch_ok(Some(id));
        match &self.g.node(id).op {
            Op::Input | Op::Constant(_) => {}
            Op::Nna(NnaOp::Dot(_) | NnaOp::Concat { .. }) | Op::Reshape { .. } => return,
            Op::Nna(NnaOp::Scale(s)) if s.pool.is_some() => return,
            _ => {}
        }
        if self.px_decide(id) {
            self.out.sp.px_split = true;
            return;
        }
        for v in self.g.node_inputs(id) {
            self.materialize(id, v);
        }
    }

    /// Brings spilled `v` into a buffer live for the current step (read by `id`).
    pub fn materialize(&mut self, id: NodeId, v: Value) {
        if self.out.sp.temps.contains(&v.node) || self.vals.contains_key(&v.node) {
            return;
        }
        let Some(h) = self.out.sp.homes.get(&v.node).cloned() else {
            return;
        };
        let _ = self.source(v);
        let buf = self.stream_buf(id, h.act.bytes());
        let name = self.g.node(id).name.clone();
        self.move_rows(&name, true, &h, 0, (buf, 0), h.act.h);
        self.vals.insert(
            v.node,
            Placed {
                act: h.act,
                buf,
                off: 0,
            },
        );
        self.out.sp.temps.push(v.node);
    }

    /// After node `id`: drops the temporary copies and spills its output if planned.
    pub fn settle(&mut self, id: NodeId) {
        self.out.sp.px_split = false;
        for t in std::mem::take(&mut self.out.sp.temps) {
            self.vals.remove(&t);
        }
        let spill = self.out.sp.plan.spilled.contains(&id)
            && !self.out.sp.homes.contains_key(&id)
            && !matches!(self.g.node(id).op, Op::Input | Op::Constant(_));
        if !spill {
            return;
        }
        let Some(p) = self.vals.remove(&id) else {
            return;
        };
        let home = self.new_home(id, p.act.clone());
        let name = self.g.node(id).name.clone();
        self.move_rows(&name, false, &home, 0, p.loc(), p.act.h);
        self.out.sp.homes.insert(id, home);
    }

    /// A channel concatenation with a spilled output or spilled inputs: the spilled
    /// parts move by DMA, one channel plane per DMA row, straight between the
    /// input's home and the concatenation's buffer, or between the input's buffer
    /// and the concatenation's home; a spilled input of a spilled concatenation
    /// passes through a buffer of its own step. `false`: nothing is spilled.
    pub(crate) fn concat_via_dram(&mut self, id: NodeId) -> Result<bool, String> {
        let ins = self.g.node_inputs(id);
        let out_spilled = self.out.sp.plan.spilled.contains(&id);
        let in_spilled = ins.iter().any(|v| !self.vals.contains_key(&v.node));
        if !out_spilled && !in_spilled {
            return Ok(false);
        }
        let name = self.g.node(id).name.clone();
        let cat_act = Act::of(&name, &self.g.node(id).outputs[0]).map_err(|e| e.detail())?;
        let out = if out_spilled {
            Src::Dram(self.new_home(id, cat_act))
        } else {
            if !self.vals.contains_key(&id) {
                let buf = self.new_buf(&name, cat_act.bytes());
                self.out.sp.value_bufs.insert(buf, id);
                let p = Placed {
                    act: cat_act,
                    buf,
                    off: 0,
                };
                self.vals.insert(id, p);
            }
            Src::Sram(self.use_value(Value::new(id, 0)).expect("placed above"))
        };
        let mut c_off = 0u32;
        for (k, v) in ins.into_iter().enumerate() {
            if k > 0 && out_spilled {
                self.step += 1;
                self.mark_step();
            }
            let src = self.source(v).ok_or("input is not an activation")?;
            same_quant(src.act(), out.act())?;
            match (&src, &out) {
                (Src::Sram(p), Src::Sram(o)) => {
                    if self.slots.get(&v.node) != Some(&(id, c_off)) {
                        self.copy_into(id, p, o, c_off)?;
                    }
                }
                (Src::Dram(h), Src::Sram(o)) => {
                    let at = (
                        o.buf,
                        o.off + u64::from(c_off) * u64::from(o.act.chan_pitch),
                    );
                    self.move_pixels(&name, true, h, 0, at, &o.act)?;
                }
                (Src::Sram(p), Src::Dram(home)) => {
                    self.move_pixels(&name, false, home, c_off, p.loc(), &p.act)?;
                }
                (Src::Dram(h), Src::Dram(home)) => {
                    let buf = self.stream_buf(id, h.act.bytes());
                    self.move_rows(&name, true, h, 0, (buf, 0), h.act.h);
                    self.move_pixels(&name, false, home, c_off, (buf, 0), &h.act)?;
                }
            }
            c_off += src.act().c;
        }
        if let Src::Dram(home) = out {
            self.out.sp.homes.insert(id, home);
        }
        Ok(true)
    }

    /// DMA of the channel planes of a `C`-channel tensor between SRAM at `loc` (laid
    /// out as `sram`) and channels `c_off..c_off+C` of `home` (or all of `home`'s
    /// channels into SRAM at `loc` when filling: `sram` is then the wider layout and
    /// `home` the input). Planes are contiguous, so one DMA row per channel.
    fn move_pixels(
        &mut self,
        node: &str,
        to_sram: bool,
        home: &DramAct,
        c_off: u32,
        loc: Loc,
        sram: &Act,
    ) -> Result<(), String> {
        let (d, c) = (&home.act, if to_sram { home.act.c } else { sram.c });
        let plane = d.pixels();
        if d.chan_pitch != plane || sram.chan_pitch != plane || sram.pixels() != plane {
            return Err("concatenation through DRAM needs dense channel planes".into());
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
        self.push_home_dma(node, to_sram, home, loc, dma);
        Ok(())
    }

    /// A spilled input: its home is the input tensor itself (descriptor `desc`).
    pub fn spilled_input(&mut self, id: NodeId, act: Act, desc: usize) {
        let home = DramAct {
            act,
            base: Base::Io(desc),
        };
        self.out.sp.homes.insert(id, home);
    }

    /// A graph output held in DRAM: `None` if the producer wrote it straight into
    /// the output tensor, else the job writing it out (after a fill through a
    /// buffer of the current step).
    pub fn spilled_output(&mut self, k: usize, home: &DramAct, desc_dma: Dma) -> Option<usize> {
        if home.base == Base::Output(k) {
            return None;
        }
        let name = self.g.outputs()[k].name.clone();
        let buf = self.new_buf(&name, home.act.bytes());
        self.move_rows(&name, true, home, 0, (buf, 0), home.act.h);
        self.out.jobs.push(Job {
            node: name,
            kind: JobKind::Write {
                loc: (buf, 0),
                dma: desc_dma,
            },
        });
        Some(self.out.jobs.len() - 1)
    }

    /// Places the spill regions and appends the spill area (zeros) to the DRAM
    /// image. Runs before the I/O tensors are placed after the image.
    pub fn place_spill_area(&mut self) {
        let placed = alloc::place(&self.out.sp.regions, u64::MAX / 4, DRAM_ALIGN)
            .expect("an unbounded DRAM area always fits");
        let area = (self.out.dram.len() as u64).div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
        if placed.peak > 0 {
            self.out.dram.resize((area + placed.peak) as usize, 0);
        }
        self.out.sp.area = (area, placed.peak);
        self.out.sp.region_addrs = placed.addrs;
    }

    /// Rebases every spill/fill DMA on its home. Runs after the I/O tensors are placed.
    pub fn resolve_homes(&mut self) {
        let outputs: Vec<String> = self.g.outputs().iter().map(|o| o.name.clone()).collect();
        let (io, sp) = (&self.out.io, &self.out.sp);
        let base_addr = |b: Base| -> u64 {
            match b {
                Base::Spill(r) => sp.area.0 + sp.region_addrs[r],
                Base::Io(i) => io[i].dram_addr,
                Base::Output(k) => io
                    .iter()
                    .find(|d| d.dir == IoDir::Output && d.name == outputs[k])
                    .map_or(0, |d| d.dram_addr),
            }
        };
        let fixes: Vec<(usize, u64)> = sp.fixups.iter().map(|&(j, b)| (j, base_addr(b))).collect();
        for (j, at) in fixes {
            if let JobKind::Read { dma, .. } | JobKind::Write { dma, .. } =
                &mut self.out.jobs[j].kind
            {
                dma.dram_addr += at;
            }
        }
    }
}
