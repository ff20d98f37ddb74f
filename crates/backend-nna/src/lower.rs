//! The graph walk: every node in topological order becomes SRAM buffers (with their
//! live ranges in steps), DRAM image parts and [`Job`]s. Step 0 loads the graph
//! inputs, node `k` of the order is step `k + 1`, the last step stores the outputs.

use crate::act::Act;
use crate::alloc::Buffer;
use crate::error::BackendError;
use crate::job::{Job, JobKind};
use nnac_ir::{Graph, NnaOp, NodeId, Op, Value};
use nnac_isa::{Dma, HwConfig, IoDesc, IoDir, IoDtype, IoLayout};
use std::collections::BTreeMap;

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
}

/// An activation value: its layout and buffer.
#[derive(Clone)]
pub struct Placed {
    pub act: Act,
    pub buf: usize,
}

pub struct Walk<'g> {
    pub g: &'g Graph,
    pub hw: &'g HwConfig,
    pub tile_pixels: u32,
    pub out: Lowered,
    pub vals: BTreeMap<NodeId, Placed>,
    pub step: usize,
    pub unsupported: Vec<(String, String)>,
    /// Job index of the DMA of every I/O descriptor.
    io_jobs: Vec<usize>,
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
            },
            vals: BTreeMap::new(),
            step: 0,
            unsupported: Vec::new(),
            io_jobs: Vec::new(),
        }
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
    fn dram_part(&mut self, bytes: &[u8]) -> u64 {
        let at = self.out.dram.len() as u64;
        self.out.dram.extend_from_slice(bytes);
        let end = (self.out.dram.len() as u64).div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
        self.out.dram.resize(end as usize, 0);
        at
    }

    /// A parameter buffer of the current layer, loaded from the DRAM image.
    pub fn param(&mut self, node: &str, bytes: &[u8]) -> usize {
        let buf = self.new_buf(node, bytes.len() as u64);
        let at = self.dram_part(bytes);
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
                kind: JobKind::Read { buf, dma },
            });
            off += len;
        }
        buf
    }

    /// The output activation of `id`, in a new buffer.
    pub fn define(&mut self, id: NodeId) -> Result<Placed, BackendError> {
        let node = self.g.node(id);
        let act = Act::of(&node.name, &node.outputs[0])?;
        let buf = self.new_buf(&node.name, act.bytes());
        let p = Placed { act, buf };
        self.vals.insert(id, p.clone());
        Ok(p)
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
        self.outputs()?;
        self.place_io();
        Ok(self.out)
    }

    /// Puts the I/O tensors after the DRAM image, in descriptor order.
    fn place_io(&mut self) {
        let mut end = self.out.dram.len() as u64;
        for (d, &j) in self.out.io.iter_mut().zip(&self.io_jobs) {
            d.dram_addr = end.div_ceil(DRAM_ALIGN) * DRAM_ALIGN;
            end = d.dram_addr + io_bytes(d);
            if let JobKind::Read { dma, .. } | JobKind::Write { dma, .. } = &mut self.out.jobs[j].kind {
                dma.dram_addr = d.dram_addr;
            }
        }
    }

    fn node(&mut self, id: NodeId) -> Result<(), BackendError> {
        let op = self.g.node(id).op.clone();
        let res = match &op {
            Op::Input | Op::Constant(_) => return Ok(()),
            Op::Reshape { .. } => self.reshape(id),
            Op::Nna(NnaOp::Dot(d)) => self.dot(id, d),
            Op::Nna(NnaOp::Scale(s)) => self.scale(id, s),
            Op::Nna(NnaOp::Eltwise(e)) => self.eltwise(id, e),
            Op::Nna(other) => Err(format!("{} is not lowered yet", other.mnemonic())),
            other => Err(format!("{} is not an op of the quantized NNA IR", other.mnemonic())),
        };
        match res {
            Ok(()) => Ok(()),
            Err(why) => {
                self.unsupported(id, why);
                Ok(())
            }
        }
    }

    /// A reshape to `[1, K]` of a tensor that only inner products read (they read the
    /// HWC tensor in place with `kernel = H x W`), or of a 1x1 tensor: an alias.
    fn reshape(&mut self, id: NodeId) -> Result<(), String> {
        let src = self.g.node_inputs(id)[0];
        let p = self.use_value(src).ok_or("input is not an activation")?;
        let out_t = &self.g.node(id).outputs[0];
        let numel = u64::from(p.act.c) * u64::from(p.act.pixels());
        if out_t.shape.as_slice() != [1, numel as usize] {
            return Err(format!("reshape to {:?} (only [1, C*H*W])", out_t.shape));
        }
        let only_inner = self.g.users(Value::new(id, 0)).iter().all(|&(u, _)| {
            matches!(&self.g.node(u).op, Op::Nna(NnaOp::Dot(d)) if d.kind == nnac_ir::DotKind::Inner)
        }) && !self.g.is_output(Value::new(id, 0));
        if p.act.pixels() != 1 && !only_inner {
            return Err("flatten of a spatial tensor read by a non-inner-product op".into());
        }
        if out_t.quant != self.g.value_type(src).quant || out_t.dtype != self.g.value_type(src).dtype {
            return Err("reshape changes the quantization".into());
        }
        self.vals.insert(id, p);
        Ok(())
    }

    fn input(&mut self, id: NodeId) -> Result<(), BackendError> {
        let p = self.define(id)?;
        let name = self.g.node(id).name.clone();
        let desc = self.io_desc(&name, IoDir::Input, &p.act, &self.g.node(id).outputs[0].shape);
        let dma = Self::act_dma(&p.act, desc.dram_addr);
        self.out.io.push(desc);
        self.io_jobs.push(self.out.jobs.len());
        self.out.jobs.push(Job {
            node: name,
            kind: JobKind::Read { buf: p.buf, dma },
        });
        Ok(())
    }

    fn outputs(&mut self) -> Result<(), BackendError> {
        for o in self.g.outputs().to_vec() {
            let p = self.use_value(o.value).ok_or_else(|| {
                BackendError::Unsupported(vec![(o.name.clone(), "graph output is not an activation".into())])
            })?;
            let shape = self.g.value_type(o.value).shape.clone();
            let desc = self.io_desc(&o.name, IoDir::Output, &p.act, &shape);
            let dma = Self::act_dma(&p.act, desc.dram_addr);
            self.out.io.push(desc);
            self.io_jobs.push(self.out.jobs.len());
            self.out.jobs.push(Job {
                node: o.name.clone(),
                kind: JobKind::Write { buf: p.buf, dma },
            });
        }
        Ok(())
    }

    /// The DMA moving a whole activation between DRAM (same pitches) and SRAM.
    fn act_dma(a: &Act, dram_addr: u64) -> Dma {
        Dma {
            dram_addr,
            sram_addr: 0,
            rows: a.h,
            row_len: a.row_data_len(),
            dram_stride: u64::from(a.row_pitch),
            sram_stride: a.row_pitch,
            ..Dma::default()
        }
    }

    /// Descriptor of a graph input/output (its DRAM address is set by `place_io`).
    fn io_desc(&self, name: &str, dir: IoDir, a: &Act, shape: &[usize]) -> IoDesc {
        let layout = if a.rank == 4 {
            IoLayout::Hwc {
                row_pitch: a.row_pitch,
                pix_pitch: a.pix_pitch,
            }
        } else {
            IoLayout::Dense
        };
        IoDesc {
            name: name.to_string(),
            dir,
            dtype: if a.signed { IoDtype::Int8 } else { IoDtype::Uint8 },
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
