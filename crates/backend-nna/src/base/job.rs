//! Jobs: what each layer emits, with SRAM buffers named by index (addresses are
//! filled in after placement, by `emit.rs`).

use nnac_isa::{Dma, DotProduct, Eltwise, Scale};

/// One output tile: pixels `pix_start..+pix_count`, channels `c_start..+c_count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    pub pix_start: u32,
    pub pix_count: u32,
    pub c_start: u32,
    pub c_count: u32,
}

/// A buffer of the walk: its index in `Lowered::bufs` (and in the placement's
/// addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufId(usize);

impl BufId {
    /// The buffer at `index` of `Lowered::bufs`.
    pub fn new(index: usize) -> Self {
        BufId(index)
    }

    /// Its index in `Lowered::bufs` and `Placement::addrs`.
    pub fn index(self) -> usize {
        self.0
    }
}

/// A job of the walk: its index in `Lowered::jobs` (instructions are emitted in
/// job order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(usize);

impl JobId {
    /// The job at `index` of `Lowered::jobs`.
    pub fn new(index: usize) -> Self {
        JobId(index)
    }

    /// Its index in `Lowered::jobs`.
    pub fn index(self) -> usize {
        self.0
    }
}

/// A place in SRAM: a buffer and a byte offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub buf: BufId,
    pub off: u64,
}

impl Loc {
    /// Byte `off` of buffer `buf`.
    pub fn new(buf: BufId, off: u64) -> Self {
        Loc { buf, off }
    }

    /// The start of buffer `buf`.
    pub fn start(buf: BufId) -> Self {
        Loc { buf, off: 0 }
    }
}

/// The buffers a job's instructions read and write (whole buffers: conservative).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BufAccess {
    pub reads: Vec<BufId>,
    pub writes: Vec<BufId>,
}

/// Which dot-product opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotOpcode {
    Conv,
    Deconv,
    Inner,
}

#[derive(Debug, Clone)]
pub enum JobKind {
    /// DRAM to SRAM at `loc` (plus the template's `sram_addr`).
    Read { loc: Loc, dma: Dma },
    /// SRAM at `loc` to DRAM.
    Write { loc: Loc, dma: Dma },
    Dot {
        opcode: DotOpcode,
        t: DotProduct,
        /// Buffers: input, weights, output, bias, channel table.
        bufs: [Loc; 5],
        /// Bytes of one weight block (`K * mac_cols`).
        block: u32,
        /// The first weight group (of `mac_cols` channels) the weight buffer holds
        /// (non-zero when a split layer streams its weights group by group).
        w_group0: u32,
        tiles: Vec<Tile>,
    },
    Scale {
        t: Scale,
        /// Buffers: input, output, channel table.
        bufs: [Loc; 3],
        tiles: Vec<Tile>,
    },
    Eltwise {
        t: Eltwise,
        /// Buffers: a, b, output, channel table.
        bufs: [Loc; 4],
        tiles: Vec<Tile>,
    },
    /// STOP: ends a segment; the host ops after it run on DRAM (`lower/host.rs`).
    Stop,
}

impl JobKind {
    /// How many instructions the job emits (one per tile; one DMA or STOP; a read
    /// split into bands by `bands::reads` is counted once).
    pub fn instr_count(&self) -> usize {
        if self.is_compute() {
            self.tiles().len()
        } else {
            1
        }
    }

    /// Whether the job runs on the compute queue (CONV, DECONV, INNER_PRODUCT,
    /// SCALE, ELTWISE).
    pub fn is_compute(&self) -> bool {
        matches!(
            self,
            JobKind::Dot { .. } | JobKind::Scale { .. } | JobKind::Eltwise { .. }
        )
    }

    /// The tiles of a compute job (none for the others).
    pub fn tiles(&self) -> &[Tile] {
        match self {
            JobKind::Dot { tiles, .. }
            | JobKind::Scale { tiles, .. }
            | JobKind::Eltwise { tiles, .. } => tiles,
            JobKind::Read { .. } | JobKind::Write { .. } | JobKind::Stop => &[],
        }
    }

    /// Buffers the job's instructions read and write (whole buffers: conservative).
    pub fn access(&self) -> BufAccess {
        let (reads, writes): (&[&Loc], &[&Loc]) = match self {
            JobKind::Read { loc, .. } => (&[], &[loc]),
            JobKind::Write { loc, .. } => (&[loc], &[]),
            JobKind::Dot { bufs, .. } => (&[&bufs[0], &bufs[1], &bufs[3], &bufs[4]], &[&bufs[2]]),
            JobKind::Scale { bufs, .. } => (&[&bufs[0], &bufs[2]], &[&bufs[1]]),
            JobKind::Eltwise { bufs, .. } => (&[&bufs[0], &bufs[1], &bufs[3]], &[&bufs[2]]),
            JobKind::Stop => (&[], &[]),
        };
        BufAccess {
            reads: reads.iter().map(|l| l.buf).collect(),
            writes: writes.iter().map(|l| l.buf).collect(),
        }
    }
}

/// A job and the layer it belongs to.
#[derive(Debug, Clone)]
pub struct Job {
    pub node: String,
    pub kind: JobKind,
}

/// Tiles of `pixels x channels` in pixel-major order (all channel groups of a pixel
/// group before the next pixel group), at most `tp` pixels and `tc` channels each.
pub(crate) fn tiles(pixels: u32, channels: u32, tp: u32, tc: u32) -> Vec<Tile> {
    let mut v = Vec::new();
    let mut p = 0;
    while p < pixels {
        let pc = tp.min(pixels - p);
        let mut c = 0;
        while c < channels {
            let cc = tc.min(channels - c);
            v.push(Tile {
                pix_start: p,
                pix_count: pc,
                c_start: c,
                c_count: cc,
            });
            c += cc;
        }
        p += pc;
    }
    v
}

impl std::ops::Index<JobId> for [Job] {
    type Output = Job;
    fn index(&self, id: JobId) -> &Job {
        &self[id.index()]
    }
}

impl std::ops::IndexMut<JobId> for [Job] {
    fn index_mut(&mut self, id: JobId) -> &mut Job {
        &mut self[id.index()]
    }
}

impl std::ops::Index<JobId> for Vec<Job> {
    type Output = Job;
    fn index(&self, id: JobId) -> &Job {
        &self[id.index()]
    }
}

impl std::ops::IndexMut<JobId> for Vec<Job> {
    fn index_mut(&mut self, id: JobId) -> &mut Job {
        &mut self[id.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_exactly_once() {
        let t = tiles(200, 100, 96, 96);
        assert_eq!(t.len(), 6);
        let px: u32 = t.iter().map(|t| t.pix_count * t.c_count).sum();
        assert_eq!(px, 200 * 100);
        assert_eq!(t[1].c_start, 96);
        assert_eq!(t[1].c_count, 4);
        assert_eq!(t[5].pix_count, 8);
    }
}
