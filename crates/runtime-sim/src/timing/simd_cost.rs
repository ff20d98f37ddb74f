//! Cost of SCALE and ELTWISE: pure SIMD work. They feed no activation packets
//! (docs/ISA.md 4.1): the tile streams through the SIMD unit in memory order,
//! `rows` (96) elements per row, one row per `max(1, simd_len)` cycles. A row reads
//! at most `rows` bytes per operand (ELTWISE's two operands on the two read ports in
//! parallel; a B broadcast over the pixels counts as no operand) and writes `rows`
//! bytes; a port narrower than that slows the row.

use super::dot_cost::simd_row_cycles;
use super::packet::packet_loads;
use super::params::TimingParams;
use nnac_isa::{Eltwise, Scale};

/// Cycles of a SCALE or ELTWISE instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimdCost {
    /// Rows processed.
    pub rows: u64,
    /// Cycles of SIMD program execution (`rows x max(1, simd_len)`).
    pub work: u64,
    /// Extra cycles the read ports or the write path need beyond that.
    pub port_stall: u64,
}

impl SimdCost {
    pub fn cycles(&self) -> u64 {
        self.work + self.port_stall
    }
}

/// Cycles per row the ports need to read `operands` operands of `bytes` each.
fn read_cycles(prm: &TimingParams, operands: u64, bytes: u64) -> u64 {
    let wide = prm.load_window;
    match (operands, prm.separate_weight_port) {
        (1, _) => bytes.div_ceil(wide),
        (_, true) => bytes.div_ceil(wide).max(bytes.div_ceil(prm.weight_port)),
        _ => (operands * bytes).div_ceil(wide),
    }
}

/// An operand's row and pixel pitches.
type Pitches = (u32, u32);

/// Windows of `window` bytes that one row of the tile (its first `rows` pixels from
/// `pix_start`, `w` pixels per image row) reads through `pitches`, by the packet
/// rule (`packet::packet_loads`): 1 for contiguous or broadcast bytes, up to one per
/// element when the pixels lie a window or more apart (an HWC operand).
fn row_windows(t: (u32, u32, u32), (rp, pp): Pitches, rows: u64, window: u64) -> u64 {
    let (w, pix_start, pix_count) = (u64::from(t.0.max(1)), u64::from(t.1), u64::from(t.2));
    let addrs: Vec<Option<u64>> = (0..rows.min(pix_count))
        .map(|k| {
            let p = pix_start + k;
            Some((p / w) * u64::from(rp) + (p % w) * u64::from(pp))
        })
        .collect();
    packet_loads(&addrs, window).loads.max(1)
}

/// The layout facts of one SCALE / ELTWISE for its cost: the tile (`w`,
/// `pix_start`, `pix_count`) and its input pitches (one or two operands).
struct RowLayout<'a> {
    tile: (u32, u32, u32),
    inputs: &'a [Pitches],
}

fn cost(elements: u64, l: &RowLayout, simd_len: usize, prm: &TimingParams) -> SimdCost {
    let row = simd_row_cycles(simd_len);
    let rows = elements.div_ceil(prm.rows);
    // Bandwidth: `rows` bytes per operand; gathers: the windows each operand's row
    // touches, the wide port's loads per cycle as for a packet (the second operand on
    // the second port when there is one).
    let bytes = read_cycles(prm, l.inputs.len() as u64, prm.rows);
    let windows: Vec<u64> = l
        .inputs
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let window = if i > 0 && prm.separate_weight_port {
                prm.weight_port
            } else {
                prm.load_window
            };
            row_windows(l.tile, p, prm.rows, window)
        })
        .collect();
    let gathers = if prm.separate_weight_port {
        windows
            .iter()
            .map(|&n| prm.load_cycles(n))
            .max()
            .unwrap_or(1)
    } else {
        prm.load_cycles(windows.iter().sum())
    };
    // Stores are bytes through the write path, scattered or not, as for the dot
    // products' unloads (the SRAM's banks take scattered bytes in parallel).
    let writes = prm.write_cycles(prm.rows);
    let per_row = row.max(bytes).max(gathers).max(writes);
    SimdCost {
        rows,
        work: rows * row,
        port_stall: rows * (per_row - row),
    }
}

pub fn scale_cost(s: &Scale, prm: &TimingParams) -> SimdCost {
    let elements = u64::from(s.pix_count) * u64::from(s.c_count);
    let layout = RowLayout {
        tile: (s.w, s.pix_start, s.pix_count),
        inputs: &[(s.in_row_pitch, s.in_pix_pitch)],
    };
    cost(elements, &layout, s.simd.len(), prm)
}

/// Whether ELTWISE's B streams through the read ports: not when it is broadcast over
/// the pixels (row and pixel pitch 0), one byte per row of a channel's pixels, held
/// with the row, so that only A streams.
pub fn streams_b(e: &Eltwise) -> bool {
    !(e.b_row_pitch == 0 && e.b_pix_pitch == 0 && e.h * e.w > 1)
}

pub fn eltwise_cost(e: &Eltwise, prm: &TimingParams) -> SimdCost {
    let elements = u64::from(e.pix_count) * u64::from(e.c_count);
    let broadcast = !streams_b(e);
    let a = (e.a_row_pitch, e.a_pix_pitch);
    let both = [a, (e.b_row_pitch, e.b_pix_pitch)];
    let layout = RowLayout {
        tile: (e.w, e.pix_start, e.pix_count),
        inputs: if broadcast { &both[..1] } else { &both },
    };
    cost(elements, &layout, e.simd.len(), prm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::{HwConfig, SimdInstr};

    fn scale(c: u32, pix: u32, simd_len: usize) -> Scale {
        Scale {
            h: 1,
            w: pix,
            c,
            pix_count: pix,
            c_count: c,
            simd: vec![SimdInstr::from_mnemonic("MOV").unwrap(); simd_len],
            ..Scale::default()
        }
    }

    #[test]
    fn one_row_of_96_elements_per_cycle() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // 96 pixels x 64 channels = 64 rows.
        let c = scale_cost(&scale(64, 96, 1), &prm);
        assert_eq!(
            c,
            SimdCost {
                rows: 64,
                work: 64,
                port_stall: 0
            }
        );
        // 10 pixels x 10 channels = 100 elements = 2 rows.
        assert_eq!(scale_cost(&scale(10, 10, 0), &prm).rows, 2);
    }

    #[test]
    fn longer_programs_take_proportionally_longer() {
        let prm = TimingParams::new(&HwConfig::fsd());
        let c = scale_cost(&scale(16, 96, 5), &prm);
        assert_eq!((c.rows, c.work, c.port_stall), (16, 80, 0));
    }

    #[test]
    fn eltwise_reads_its_operands_on_both_ports() {
        let e = Eltwise {
            pix_count: 96,
            c_count: 8,
            simd: vec![SimdInstr::from_mnemonic("MOV").unwrap()],
            ..Eltwise::default()
        };
        let prm = TimingParams::new(&HwConfig::fsd());
        assert_eq!(
            eltwise_cost(&e, &prm),
            SimdCost {
                rows: 8,
                work: 8,
                port_stall: 0
            }
        );
        // One 128-byte port: 2 x 96 bytes per row take 2 cycles.
        let one = TimingParams::new(&HwConfig {
            sram_read_ports: vec![128],
            ..HwConfig::fsd()
        });
        assert_eq!(
            eltwise_cost(&e, &one),
            SimdCost {
                rows: 8,
                work: 8,
                port_stall: 8
            }
        );
        // A 64-byte write path: 2 cycles per row.
        let narrow = TimingParams::new(&HwConfig {
            sram_write_port: 64,
            ..HwConfig::fsd()
        });
        assert_eq!(eltwise_cost(&e, &narrow).port_stall, 8);
    }

    #[test]
    fn strided_operands_cost_their_windows_scattered_stores_do_not() {
        let prm = TimingParams::new(&HwConfig::fsd());
        // A stored HWC with 200 channels: a row's 96 pixels are 200 bytes apart, two
        // to a 256-byte window: 48 loads, 4 cycles at a packet's 12 loads per cycle.
        let hwc = Eltwise {
            h: 4,
            w: 96,
            pix_count: 96,
            c_count: 8,
            a_row_pitch: 96 * 200,
            a_pix_pitch: 200,
            b_row_pitch: 96,
            b_pix_pitch: 1,
            out_row_pitch: 96,
            out_pix_pitch: 1,
            simd: vec![SimdInstr::from_mnemonic("MOV").unwrap()],
            ..Eltwise::default()
        };
        assert_eq!(eltwise_cost(&hwc, &prm).port_stall, 8 * 3);
        // B broadcast over the pixels costs nothing extra.
        let bcast = Eltwise {
            a_row_pitch: 96,
            a_pix_pitch: 1,
            b_row_pitch: 0,
            b_pix_pitch: 0,
            ..hwc.clone()
        };
        assert_eq!(eltwise_cost(&bcast, &prm).port_stall, 0);
        // Stores are bytes through the write path, scattered or not (an upsampling
        // copy writes every 2nd byte): one cycle per row of 96.
        let copy = Scale {
            out_pix_pitch: 2,
            out_row_pitch: 192,
            in_pix_pitch: 1,
            in_row_pitch: 96,
            h: 1,
            ..scale(8, 96, 1)
        };
        assert_eq!(scale_cost(&copy, &prm).port_stall, 0);
    }
}
