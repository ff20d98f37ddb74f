//! The graph walk: every node in topological order becomes SRAM buffers (with their
//! live ranges in steps), DRAM image parts and [`Job`]s. Step 0 loads the graph
//! inputs, node `k` of the order is step `k + 1`, the last step stores the outputs.

use crate::base::act::Act;
use crate::base::job::{Job, JobKind, Loc};
use crate::error::BackendError;
use crate::lower::host::HostState;
use crate::place::alloc::Buffer;
use crate::place::plan::Plan;
use crate::place::spill::{SpillState, Src};
use nnac_ir::{Graph, NnaOp, NodeId, Op, Value};
use nnac_isa::{Dma, HostOp, HwConfig, IoDesc, IoDir, IoDtype, IoLayout};
use std::collections::{BTreeMap, BTreeSet};

/// Largest DMA row the backend emits (the field allows 2^20 - 1).
const DMA_CHUNK: u64 = 1 << 19;
/// Alignment of DRAM image parts and I/O tensors.
pub const DRAM_ALIGN: u64 = 64;

/// Everything the walk produces.
pub struct Lowered {
    pub bufs: Vec<Buffer>,
    pub jobs: Vec<Job>,
    pub dram: Vec<u8>,
    pub io: Vec<IoDesc>,
    /// `(layer, mnemonic, tiles)` of every compute layer.
    pub layers: Vec<(String, String, usize)>,
    /// Dot-product layers whose worst-case accumulator (any input codes) exceeds
    /// `acc_bits`.
    pub acc_risk: Vec<String>,
    /// Spill / split bookkeeping (`spill.rs`).
    pub sp: SpillState,
    /// Host ops, in execution order (`lower_host.rs`).
    pub host_ops: Vec<HostOp>,
    /// Buffers written to DRAM by several DMAs of bands of rows
    /// ([`Walk::dma_bands`]): the instructions touching them are ordered by their
    /// exact bytes (`sync::Access::bytes`), so each band's DMA waits only for the
    /// tiles of that band.
    pub banded: BTreeSet<usize>,
    /// Buffers read whole from DRAM (the graph input, host-op results) that
    /// `bands::reads` may read in bands of rows instead, with their layout.
    pub read_cands: Vec<(usize, Act)>,
}

/// An activation value: its layout and buffer.
#[derive(Clone)]
pub struct Placed {
    pub act: Act,
    pub buf: usize,
    /// Byte offset of the tensor in its buffer (a concatenation slot).
    pub off: u64,
}

impl Placed {
    pub fn loc(&self) -> Loc {
        (self.buf, self.off)
    }
}

pub struct Walk<'g> {
    pub g: &'g Graph,
    pub hw: &'g HwConfig,
    pub tile_pixels: u32,
    pub out: Lowered,
    pub vals: BTreeMap<NodeId, Placed>,
    pub step: usize,
    pub unsupported: Vec<(String, String)>,
    /// Job indices of the DMAs of every I/O descriptor (none: the tensor is the DRAM
    /// home of a spilled value, no DMA); their `dram_addr` is relative to the tensor.
    io_jobs: Vec<Vec<usize>>,
    /// Producers that write straight into a concatenation: `(concat, channel offset)`.
    pub(crate) slots: BTreeMap<NodeId, (NodeId, u32)>,
    /// Values in DRAM, host ops and scratch tensors (`lower_host.rs`).
    pub host: HostState,
    /// Values stored HWC for the global pool that is their one reader (`gap.rs`).
    hwc: BTreeSet<NodeId>,
}

impl<'g> Walk<'g> {
    pub fn new(g: &'g Graph, hw: &'g HwConfig, tile_pixels: u32) -> Self {
        Walk {
            g,
            hw,
            tile_pixels,
            out: Lowered {
                bufs: Vec::new(),
                jobs: Vec::new(),
                dram: Vec::new(),
                io: Vec::new(),
                layers: Vec::new(),
                acc_risk: Vec::new(),
                sp: SpillState::default(),
                host_ops: Vec::new(),
                banded: BTreeSet::new(),
                read_cands: Vec::new(),
            },
            vals: BTreeMap::new(),
            step: 0,
            unsupported: Vec::new(),
            io_jobs: Vec::new(),
            slots: BTreeMap::new(),
            hwc: BTreeSet::new(),
            host: HostState::default(),
        }
    }

    /// Walks with `plan` (values to spill, layer budgets) instead of the empty plan.
    pub fn with_plan(mut self, plan: Plan) -> Self {
        self.out.sp.plan = plan;
        self
    }

    pub fn new_buf(&mut self, owner: &str, size: u64) -> usize {
        self.out.bufs.push(Buffer {
            owner: owner.to_string(),
            size,
            first: self.step,
            last: self.step,
        });
        self.out.bufs.len() - 1
    }

    /// Marks `v`'s buffer live at the current step; returns its activation.
    pub fn use_value(&mut self, v: Value) -> Option<Placed> {
        let p = self.vals.get(&v.node)?.clone();
        let b = &mut self.out.bufs[p.buf];
        b.last = b.last.max(self.step);
        Some(p)
    }

    /// Appends `bytes` to the DRAM image; returns its address.
    pub(crate) fn dram_part(&mut self, bytes: &[u8]) -> u64 {
        let at = self.out.dram.len() as u64;
        self.out.dram.extend_from_slice(bytes);
        let end = (self.out.dram.len() as u64).div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
        self.out.dram.resize(end as usize, 0);
        at
    }

    /// A parameter buffer of the current layer, loaded from the DRAM image. It is
    /// live from the previous working step on (`prev_work_step`: the previous layer,
    /// or the previous band or weight group of a split layer), so that it does not
    /// reuse that step's buffers and its DMA can run while it computes (prefetch).
    pub fn param(&mut self, node: &str, bytes: &[u8]) -> usize {
        let buf = self.new_buf(node, bytes.len() as u64);
        if self.out.sp.overlap {
            self.out.bufs[buf].first = self.prev_work_step();
        }
        let at = self.dram_part(bytes);
        let first_job = self.out.jobs.len();
        let mut off = 0u64;
        while off < bytes.len() as u64 {
            let len = DMA_CHUNK.min(bytes.len() as u64 - off);
            let dma = Dma {
                dram_addr: at + off,
                sram_addr: off as u32,
                rows: 1,
                row_len: len as u32,
                dram_stride: len,
                sram_stride: len as u32,
                ..Dma::default()
            };
            self.out.jobs.push(Job {
                node: node.to_string(),
                kind: JobKind::Read { loc: (buf, 0), dma },
            });
            off += len;
        }
        let loads = (first_job..self.out.jobs.len()).collect();
        self.out.sp.param_bufs.push((buf, loads));
        buf
    }

    /// The output activation of `id`: a new buffer, or its slot in a concatenation.
    pub fn define(&mut self, id: NodeId) -> Result<Placed, BackendError> {
        let node = self.g.node(id);
        let mut act = Act::of(&node.name, &node.outputs[0])?;
        let p = match self.slots.get(&id).copied() {
            Some((cat, c_off)) => {
                if !self.vals.contains_key(&cat) {
                    let cat_act = self.act_of(cat)?;
                    let buf = self.new_buf(&self.g.node(cat).name.clone(), cat_act.bytes());
                    self.out.sp.value_bufs.insert(buf, cat);
                    let whole = Placed {
                        act: cat_act,
                        buf,
                        off: 0,
                    };
                    self.vals.insert(cat, whole);
                }
                let whole = self.use_value(Value::new(cat, 0)).expect("just placed");
                act.pix_pitch = whole.act.pix_pitch;
                act.row_pitch = whole.act.row_pitch;
                act.chan_pitch = whole.act.chan_pitch;
                Placed {
                    act,
                    buf: whole.buf,
                    off: u64::from(c_off) * u64::from(whole.act.chan_pitch),
                }
            }
            None => {
                act = self.act_of(id)?;
                let buf = self.new_buf(&node.name, act.bytes());
                self.out.sp.value_bufs.insert(buf, id);
                Placed { act, buf, off: 0 }
            }
        };
        self.vals.insert(id, p.clone());
        Ok(p)
    }

    /// The SRAM layout of value `id`: planar, or HWC when [`Walk::plan_hwc`] chose it.
    fn act_of(&self, id: NodeId) -> Result<Act, BackendError> {
        let node = self.g.node(id);
        let act = Act::of(&node.name, &node.outputs[0])?;
        Ok(if self.hwc.contains(&id) {
            act.hwc()
        } else {
            act
        })
    }

    /// Finds the concatenation inputs whose producers can write into the
    /// concatenation in place (NNA compute ops and upsamplings used only by it, same
    /// quantization).
    fn plan_concats(&mut self) {
        for id in self.g.node_ids() {
            let Op::Nna(NnaOp::Concat { axis: 1 }) = self.g.node(id).op else {
                continue;
            };
            let out_t = &self.g.node(id).outputs[0];
            let mut c_off = 0u32;
            for v in self.g.node_inputs(id) {
                let t = self.g.value_type(v);
                let prod = &self.g.node(v.node).op;
                let spilled = &self.out.sp.plan.spilled;
                let ok = matches!(
                    prod,
                    Op::Nna(
                        NnaOp::Dot(_)
                            | NnaOp::Scale(_)
                            | NnaOp::Eltwise(_)
                            | NnaOp::Upsample { .. }
                    )
                ) && !spilled.contains(&id)
                    && !spilled.contains(&v.node)
                    && self.g.users(v).len() == 1
                    && !self.g.is_output(v)
                    && t.shape.len() == 4
                    && out_t.shape.len() == 4
                    && t.dtype == out_t.dtype
                    && t.quant == out_t.quant;
                if ok {
                    self.slots.insert(v.node, (id, c_off));
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
    fn plan_hwc(&mut self) {
        let plan = &self.out.sp.plan;
        let computed = |id: NodeId| {
            matches!(
                self.g.node(id).op,
                Op::Nna(NnaOp::Dot(_) | NnaOp::Scale(_) | NnaOp::Eltwise(_))
            ) && !plan.spilled.contains(&id)
                && !plan.budget.contains_key(&id)
        };
        for id in self.g.node_ids() {
            let eligible = match self.g.node(id).op {
                Op::Nna(NnaOp::Concat { axis: 1 }) => {
                    self.g.node_inputs(id).iter().all(|v| computed(v.node))
                }
                _ => computed(id),
            };
            if !eligible {
                continue;
            }
            let v = Value::new(id, 0);
            let users = self.g.users(v);
            let whole = !self.g.is_output(v)
                && !self.slots.contains_key(&id)
                && !plan.spilled.contains(&id)
                && users.iter().all(|(u, _)| !plan.budget.contains_key(u));
            if !whole {
                continue;
            }
            // One global pool, and ELTWISE ops, which read any layout through their
            // pitches (they feed no activation packets, so the slice rule does not
            // apply): a squeeze-and-excitation product next to its pool.
            let mut pools = 0;
            let readers_ok = users.iter().all(|&(u, _)| match self.g.node(u).op {
                Op::Nna(NnaOp::Eltwise(_)) => true,
                Op::Nna(NnaOp::Dot(_)) if pools == 0 && self.is_channel_pool(u) => {
                    pools += 1;
                    true
                }
                _ => false,
            });
            if readers_ok && pools == 1 {
                self.hwc.insert(id);
            }
        }
    }

    /// A channel concatenation: the in-place producers already wrote their slots;
    /// every other input is copied into its slot by a SCALE (`r0 = code - zp + zp`).
    fn concat(&mut self, id: NodeId, axis: usize) -> Result<(), String> {
        if axis != 1 || self.g.node(id).outputs[0].shape.len() != 4 {
            return Err(format!(
                "nna.concat on axis {axis} (only channels of a 4-D tensor)"
            ));
        }
        if self.concat_via_dram(id)? {
            return Ok(());
        }
        if !self.vals.contains_key(&id) {
            let name = self.g.node(id).name.clone();
            let act = self.act_of(id).map_err(|e| e.detail())?;
            let buf = self.new_buf(&name, act.bytes());
            self.out.sp.value_bufs.insert(buf, id);
            self.vals.insert(id, Placed { act, buf, off: 0 });
        }
        let cat = self.use_value(Value::new(id, 0)).expect("placed above");
        let mut c_off = 0u32;
        for v in self.g.node_inputs(id) {
            let src = self.use_value(v).ok_or("input is not an activation")?;
            if self.slots.get(&v.node) != Some(&(id, c_off)) {
                self.copy_into(id, &src, &cat, c_off)?;
            }
            c_off += src.act.c;
        }
        Ok(())
    }

    /// SCALE copying `src` into channels `c_off..` of `dst`.
    pub(crate) fn copy_into(
        &mut self,
        id: NodeId,
        src: &Placed,
        dst: &Placed,
        c_off: u32,
    ) -> Result<(), String> {
        let (a, d) = (&src.act, &dst.act);
        if a.signed != d.signed || a.zero_point != d.zero_point || a.scale != d.scale {
            return Err("concatenation input with a different quantization".into());
        }
        let zp = nnac_isa::Alu {
            bsrc: nnac_isa::BSrc::Imm,
            imm: a.zero_point,
            ..nnac_isa::Alu::default()
        };
        let t = nnac_isa::Scale {
            h: a.h,
            w: a.w,
            c: a.c,
            in_row_pitch: a.row_pitch,
            in_pix_pitch: a.pix_pitch,
            in_chan_pitch: a.chan_pitch,
            out_row_pitch: d.row_pitch,
            out_pix_pitch: d.pix_pitch,
            out_chan_pitch: d.chan_pitch,
            in_signed: a.signed,
            out_signed: d.signed,
            in_zero: i16::try_from(a.zero_point).map_err(|_| "zero point out of range")?,
            simd: vec![nnac_isa::SimdInstr::Iadd(zp)],
            ..nnac_isa::Scale::default()
        };
        let tiles = crate::base::job::tiles(a.pixels(), a.c, self.tile_pixels, self.hw.mac_cols);
        let name = self.g.node(id).name.clone();
        // The SCALE reads no channel table; any buffer will do for its address.
        let at = dst.off + u64::from(c_off) * u64::from(d.chan_pitch);
        let bufs = [src.loc(), (dst.buf, at), src.loc()];
        self.out
            .layers
            .push((name.clone(), "SCALE".into(), tiles.len()));
        self.out.jobs.push(Job {
            node: name,
            kind: JobKind::Scale { t, bufs, tiles },
        });
        Ok(())
    }

    fn unsupported(&mut self, id: NodeId, why: impl Into<String>) {
        let name = self.g.node(id).name.clone();
        self.unsupported.push((name, why.into()));
        // Keep walking so that every unsupported node is reported at once.
        let _ = self.define(id);
    }

    /// Walks the whole graph.
    pub fn run(mut self) -> Result<Lowered, BackendError> {
        let order = self
            .g
            .topo_order()
            .map_err(|e| BackendError::Invalid(vec![format!("{}: {}", e.node, e.msg)]))?;
        self.plan_concats();
        self.plan_hwc();
        for &id in &order {
            if matches!(self.g.node(id).op, Op::Input) {
                self.input(id)?;
            }
        }
        for &id in &order {
            self.step += 1;
            self.node(id)?;
        }
        if !self.unsupported.is_empty() {
            return Err(BackendError::Unsupported(self.unsupported));
        }
        self.step += 1;
        self.mark_step();
        self.outputs()?;
        self.place_spill_area();
        self.place_io();
        self.resolve_homes();
        self.out.host_ops = self.finish_host();
        Ok(self.out)
    }

    /// Puts the I/O tensors after the DRAM image, in descriptor order.
    fn place_io(&mut self) {
        let mut end = self.out.dram.len() as u64;
        for (d, jobs) in self.out.io.iter_mut().zip(&self.io_jobs) {
            d.dram_addr = end.div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
            end = d.dram_addr + io_bytes(d);
            for &j in jobs {
                if let JobKind::Read { dma, .. } | JobKind::Write { dma, .. } =
                    &mut self.out.jobs[j].kind
                {
                    dma.dram_addr += d.dram_addr;
                }
            }
        }
    }

    fn node(&mut self, id: NodeId) -> Result<(), BackendError> {
        let op = self.g.node(id).op.clone();
        self.prepare(id);
        let res = match &op {
            Op::Input | Op::Constant(_) => return Ok(()),
            Op::Reshape { .. } => self.reshape_any(id),
            Op::Slice { .. } => self.slice_any(id),
            Op::Nna(NnaOp::Dot(d)) => self.dot(id, d),
            Op::Nna(NnaOp::Scale(s)) => self.scale(id, s),
            Op::Nna(NnaOp::Eltwise(e)) => self.eltwise(id, e),
            Op::Nna(NnaOp::Concat { axis }) => self.concat(id, *axis),
            Op::Nna(NnaOp::ChannelShuffle { groups }) => self.channel_shuffle(id, *groups),
            Op::Nna(NnaOp::Upsample { factors }) => self.upsample(id, *factors),
            Op::Nna(NnaOp::Host(inner)) => self.host_op(id, inner),
            other => Err(format!(
                "{} is not an op of the quantized NNA IR",
                other.mnemonic()
            )),
        };
        self.settle(id);
        match res {
            Ok(()) => Ok(()),
            Err(why) => {
                self.unsupported(id, why);
                Ok(())
            }
        }
    }

    /// A reshape to `[1, K]` of a tensor that only inner products read (they read the
    /// activation in place with `kernel = H x W`), or of a 1x1 tensor: an alias.
    pub(crate) fn reshape(&mut self, id: NodeId) -> Result<(), String> {
        let src = self.g.node_inputs(id)[0];
        let s = self.source(src).ok_or("input is not an activation")?;
        let a = s.act().clone();
        let out_t = &self.g.node(id).outputs[0];
        let numel = u64::from(a.c) * u64::from(a.pixels());
        if out_t.shape.as_slice() != [1, numel as usize] {
            return Err(format!("reshape to {:?} (only [1, C*H*W])", out_t.shape));
        }
        let only_inner = self.g.users(Value::new(id, 0)).iter().all(|&(u, _)| {
            matches!(&self.g.node(u).op, Op::Nna(NnaOp::Dot(d)) if d.kind == nnac_ir::DotKind::Inner)
        }) && !self.g.is_output(Value::new(id, 0));
        if a.pixels() != 1 && !only_inner {
            return Err("flatten of a spatial tensor read by a non-inner-product op".into());
        }
        if out_t.quant != self.g.value_type(src).quant
            || out_t.dtype != self.g.value_type(src).dtype
        {
            return Err("reshape changes the quantization".into());
        }
        match s {
            Src::Sram(p) => self.vals.insert(id, p).map(|_| ()),
            Src::Dram(h) => self.out.sp.homes.insert(id, h).map(|_| ()),
        };
        Ok(())
    }

    fn input(&mut self, id: NodeId) -> Result<(), BackendError> {
        if self.out.sp.plan.spilled.contains(&id) {
            let name = self.g.node(id).name.clone();
            let act = Act::of(&name, &self.g.node(id).outputs[0])?;
            let shape = self.g.node(id).outputs[0].shape.clone();
            let desc = self.io_desc(&name, IoDir::Input, &act, &shape);
            self.out.io.push(desc);
            self.io_jobs.push(Vec::new());
            self.spilled_input(id, act, self.out.io.len() - 1);
            return Ok(());
        }
        let p = self.define(id)?;
        let name = self.g.node(id).name.clone();
        let desc = self.io_desc(
            &name,
            IoDir::Input,
            &p.act,
            &self.g.node(id).outputs[0].shape,
        );
        let dma = Self::act_dma(&p.act, 0);
        self.out.io.push(desc);
        self.io_jobs.push(vec![self.out.jobs.len()]);
        self.out.jobs.push(Job {
            node: name,
            kind: JobKind::Read { loc: p.loc(), dma },
        });
        self.read_cand(&p);
        Ok(())
    }

    fn outputs(&mut self) -> Result<(), BackendError> {
        for (k, o) in self.g.outputs().to_vec().into_iter().enumerate() {
            if self.host_graph_output(&o.name, o.value) {
                self.io_jobs.push(Vec::new());
                continue;
            }
            let src = self.source(o.value).ok_or_else(|| {
                BackendError::Unsupported(vec![(
                    o.name.clone(),
                    "graph output is not an activation".into(),
                )])
            })?;
            let shape = self.g.value_type(o.value).shape.clone();
            let p = match src {
                Src::Sram(p) => p,
                Src::Dram(h) => {
                    let desc = self.io_desc(&o.name, IoDir::Output, &h.act, &shape);
                    let dma = Self::act_dma(&h.act, 0);
                    self.out.io.push(desc);
                    let j = self.spilled_output(k, &h, dma);
                    self.io_jobs.push(j.into_iter().collect());
                    continue;
                }
            };
            let desc = self.io_desc(&o.name, IoDir::Output, &p.act, &shape);
            self.out.io.push(desc);
            let jobs = self.dma_bands(&o.name, &p);
            self.io_jobs.push(jobs);
        }
        Ok(())
    }

    /// DMAs writing the whole activation `p` to a dense DRAM tensor (`dram_addr`
    /// relative to the tensor): a value whose producers finish it in several pixel
    /// tiles goes out in bands of rows ([`Act::band_dmas`]), so that band `i` moves
    /// while band `i + 1` computes; otherwise one DMA. Returns the job indices.
    pub(crate) fn dma_bands(&mut self, node: &str, p: &Placed) -> Vec<usize> {
        let n = crate::schedule::bands::write_count(&self.out.jobs, p, self.hw);
        if n > 1 {
            self.out.banded.insert(p.buf);
        }
        let (loc, mut jobs) = (p.loc(), Vec::new());
        for dma in p.act.band_dmas(p.act.h.div_ceil(n)) {
            jobs.push(self.out.jobs.len());
            self.out.jobs.push(Job {
                node: node.to_string(),
                kind: JobKind::Write { loc, dma },
            });
        }
        jobs
    }

    /// Records `p`, read whole from DRAM by one DMA, for `bands::reads`.
    pub(crate) fn read_cand(&mut self, p: &Placed) {
        if p.off == 0 && crate::schedule::bands::planar(&p.act) {
            self.out.read_cands.push((p.buf, p.act.clone()));
        }
    }

    /// The DMA moving a whole activation between DRAM (dense NCHW, the same layout)
    /// and SRAM.
    pub(crate) fn act_dma(a: &Act, dram_addr: u64) -> Dma {
        Dma {
            dram_addr,
            ..a.rows_dma(0, a.h, a.chan_pitch)
        }
    }

    /// Descriptor of a graph input/output (its DRAM address is set by `place_io`).
    fn io_desc(&self, name: &str, dir: IoDir, a: &Act, shape: &[usize]) -> IoDesc {
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
