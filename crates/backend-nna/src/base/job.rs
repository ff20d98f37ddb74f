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

/// A place in SRAM: buffer index and byte offset in it.
pub type Loc = (usize, u64);

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
    /// STOP: ends a segment; the host ops after it run on DRAM (`lower_host.rs`).
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
    pub fn access(&self) -> (Vec<usize>, Vec<usize>) {
        match self {
            JobKind::Read { loc, .. } => (vec![], vec![loc.0]),
            JobKind::Write { loc, .. } => (vec![loc.0], vec![]),
            JobKind::Dot { bufs, .. } => (
                vec![bufs[0].0, bufs[1].0, bufs[3].0, bufs[4].0],
                vec![bufs[2].0],
            ),
            JobKind::Scale { bufs, .. } => (vec![bufs[0].0, bufs[2].0], vec![bufs[1].0]),
            JobKind::Eltwise { bufs, .. } => {
                (vec![bufs[0].0, bufs[1].0, bufs[3].0], vec![bufs[2].0])
            }
            JobKind::Stop => (vec![], vec![]),
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
pub fn tiles(pixels: u32, channels: u32, tp: u32, tc: u32) -> Vec<Tile> {
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
