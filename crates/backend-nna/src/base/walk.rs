//! The graph walk: every node in topological order becomes SRAM buffers (with their
//! live ranges in steps), DRAM image parts and [`Job`]s. Step 0 loads the graph
//! inputs, node `k` of the order is step `k + 1`, the last step stores the outputs.

use crate::base::act::Act;
use crate::base::act::Placed;
use crate::base::buffer::Buffer;
use crate::base::buffer::DRAM_ALIGN;
use crate::base::host_state::HostState;
use crate::base::job::{BufId, Job, JobId, JobKind, Loc};
use crate::base::plan::Plan;
use crate::base::spill_state::{ParamBuf, SpillState, StepStart};
use crate::error::{BackendError, UnsupportedNode};
use crate::error::{Limit, Refusal};
use nnac_ir::{Graph, NodeId, Value};
use nnac_isa::{Dma, HostOp, HwConfig, IoDesc};
use std::collections::{BTreeMap, BTreeSet};

/// Largest DMA row the backend emits (the field allows 2^20 - 1).
const DMA_CHUNK: u64 = 1 << 19;
/// Where a producer writes straight into a concatenation: the concatenation and the
/// channel offset of its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConcatSlot {
    pub concat: NodeId,
    pub c_off: u32,
}

/// A compute layer and how many tiles (instructions) it emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LayerTiles {
    pub layer: String,
    pub mnemonic: String,
    pub tiles: usize,
}

/// A buffer read whole from DRAM that `bands::reads` may read in bands of rows
/// instead, with its layout.
#[derive(Debug, Clone)]
pub(crate) struct ReadCand {
    pub buf: BufId,
    pub act: Act,
}

/// Everything the walk produces.
pub(crate) struct Lowered {
    pub bufs: Vec<Buffer>,
    pub jobs: Vec<Job>,
    pub dram: Vec<u8>,
    pub io: Vec<IoDesc>,
    /// `(layer, mnemonic, tiles)` of every compute layer.
    pub layers: Vec<LayerTiles>,
    /// Dot-product layers whose worst-case accumulator (any input codes) exceeds
    /// `acc_bits`.
    pub acc_risk: Vec<String>,
    /// Spill / split bookkeeping (`spill.rs`).
    pub sp: SpillState,
    /// Host ops, in execution order (`lower/host.rs`).
    pub host_ops: Vec<HostOp>,
    /// Buffers written to DRAM by several DMAs of bands of rows
    /// ([`crate::lower::host::dma_bands`]): the instructions touching them are ordered by their
    /// exact bytes (`sync::Access::bytes`), so each band's DMA waits only for the
    /// tiles of that band.
    pub banded: BTreeSet<BufId>,
    /// Buffers read whole from DRAM (the graph input, host-op results) that
    /// `bands::reads` may read in bands of rows instead, with their layout.
    pub read_cands: Vec<ReadCand>,
    /// Layers lowered with their output channels on the rows
    /// (`lower/channels_on_rows.rs`).
    pub turned: Vec<String>,
}

pub(crate) struct Walk<'g> {
    pub g: &'g Graph,
    pub hw: &'g HwConfig,
    pub tile_pixels: u32,
    pub out: Lowered,
    pub vals: BTreeMap<NodeId, Placed>,
    pub step: usize,
    pub(crate) unsupported: Vec<UnsupportedNode>,
    /// Job indices of the DMAs of every I/O descriptor (none: the tensor is the DRAM
    /// home of a spilled value, no DMA); their `dram_addr` is relative to the tensor.
    pub(crate) io_jobs: Vec<Vec<JobId>>,
    /// Producers that write straight into a concatenation.
    pub(crate) slots: BTreeMap<NodeId, ConcatSlot>,
    /// Values in DRAM, host ops and scratch tensors (`lower/host.rs`).
    pub host: HostState,
    /// Values stored HWC for the global pool that is their one reader (`gap.rs`).
    pub(crate) hwc: BTreeSet<NodeId>,
}

impl<'g> Walk<'g> {
    pub(crate) fn new(g: &'g Graph, hw: &'g HwConfig, tile_pixels: u32) -> Self {
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
                turned: Vec::new(),
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
    pub(crate) fn with_plan(mut self, plan: Plan) -> Self {
        self.out.sp.plan = plan;
        self
    }

    pub(crate) fn new_buf(&mut self, owner: &str, size: u64) -> BufId {
        self.out.bufs.push(Buffer {
            owner: owner.to_string(),
            size,
            first: self.step,
            last: self.step,
        });
        BufId::new(self.out.bufs.len() - 1)
    }

    /// Marks `v`'s buffer live at the current step; returns its activation.
    pub(crate) fn use_value(&mut self, v: Value) -> Option<Placed> {
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
    pub(crate) fn param(&mut self, node: &str, bytes: &[u8]) -> BufId {
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
                kind: JobKind::Read {
                    loc: Loc::start(buf),
                    dma,
                },
            });
            off += len;
        }
        let loads = (first_job..self.out.jobs.len()).map(JobId::new).collect();
        self.out.sp.param_bufs.push(ParamBuf { buf, loads });
        buf
    }

    /// A new buffer holding the whole value `id` of layout `act` (recorded as that
    /// value's buffer for the spill plan); the caller records the value.
    pub(crate) fn whole_value(&mut self, id: NodeId, act: Act) -> Placed {
        let name = self.g.node(id).name.clone();
        let buf = self.new_buf(&name, act.bytes());
        self.out.sp.value_bufs.insert(buf, id);
        Placed { act, buf, off: 0 }
    }

    /// The output activation of `id`: a new buffer, or its slot in a concatenation.
    pub(crate) fn define(&mut self, id: NodeId) -> Result<Placed, BackendError> {
        let node = self.g.node(id);
        let mut act = Act::of(&node.name, &node.outputs[0])?;
        let p = match self.slots.get(&id).copied() {
            Some(ConcatSlot { concat: cat, c_off }) => {
                if !self.vals.contains_key(&cat) {
                    let cat_act = self.act_of(cat)?;
                    let whole = self.whole_value(cat, cat_act);
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
            None => self.whole_value(id, self.act_of(id)?),
        };
        self.vals.insert(id, p.clone());
        Ok(p)
    }

    /// The SRAM layout of value `id`: planar, or HWC when `lower::graph::plan_hwc` chose it.
    pub(crate) fn act_of(&self, id: NodeId) -> Result<Act, BackendError> {
        let node = self.g.node(id);
        let act = Act::of(&node.name, &node.outputs[0])?;
        Ok(if self.hwc.contains(&id) {
            act.hwc()
        } else {
            act
        })
    }

    /// SCALE copying `src` into channels `c_off..` of `dst`.
    pub(crate) fn copy_into(
        &mut self,
        id: NodeId,
        src: &Placed,
        dst: &Placed,
        c_off: u32,
    ) -> Result<(), Refusal> {
        let (a, d) = (&src.act, &dst.act);
        if a.signed != d.signed || a.zero_point != d.zero_point || a.scale != d.scale {
            return Err(Refusal::ConcatQuantization);
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
            in_zero: i16::try_from(a.zero_point)
                .map_err(|_| Refusal::range("zero point", a.zero_point, Limit::Int16))?,
            simd: vec![nnac_isa::SimdInstr::Iadd(zp)],
            ..nnac_isa::Scale::default()
        };
        let tiles = crate::base::job::tiles(a.pixels(), a.c, self.tile_pixels, self.hw.mac_cols);
        let name = self.g.node(id).name.clone();
        // The SCALE reads no channel table; any buffer will do for its address.
        let at = dst.off + u64::from(c_off) * u64::from(d.chan_pitch);
        let bufs = [src.loc(), Loc::new(dst.buf, at), src.loc()];
        self.out.layers.push(LayerTiles {
            layer: name.clone(),
            mnemonic: "SCALE".into(),
            tiles: tiles.len(),
        });
        self.out.jobs.push(Job {
            node: name,
            kind: JobKind::Scale { t, bufs, tiles },
        });
        Ok(())
    }

    /// The DMA moving a whole activation between DRAM (dense NCHW, the same layout)
    /// and SRAM.
    pub(crate) fn act_dma(a: &Act, dram_addr: u64) -> Dma {
        Dma {
            dram_addr,
            ..a.rows_dma(0, a.h, a.chan_pitch)
        }
    }

    /// The last step before the current one that has jobs (0 if none). Steps of
    /// nodes that emit nothing (constants, the weights and biases between two layers;
    /// aliases) are skipped: a buffer live from such a step would not overlap the
    /// previous layer, and its load could not run while that layer computes.
    pub(crate) fn prev_work_step(&self) -> usize {
        let starts = &self.out.sp.step_start;
        let jobs = self.out.jobs.len();
        (0..starts.len())
            .rev()
            .find(|&i| {
                let end = starts.get(i + 1).map_or(jobs, |s| s.job.index());
                starts[i].step < self.step && end > starts[i].job.index()
            })
            .map_or(0, |i| starts[i].step)
    }

    /// Marks the start of the current step (for [`crate::place::prefetch`]).
    /// The job the next push to `out.jobs` creates.
    pub(crate) fn next_job(&self) -> JobId {
        JobId::new(self.out.jobs.len())
    }

    pub(crate) fn mark_step(&mut self) {
        self.out.sp.step_start.push(StepStart {
            step: self.step,
            job: self.next_job(),
        });
    }
}
