//! Cost of CONV / DECONV / INNER_PRODUCT: the 96x96 slices ("passes") the MAC array
//! computes, each with its MAC cycles (one per dot-product term, more when the
//! activation packet needs more loads than the wide port serves in a cycle) and its
//! unload cycles through the SIMD unit.

use super::packet::packet_loads;
use super::params::TimingParams;
use nnac_isa::checks::DotKind;
use nnac_isa::{DotProduct, Order};

/// One pass of the MAC array: a group of at most `rows` output pixels times the
/// output channels of one conv group inside one group of `cols` weight columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Cycles the MAC array is occupied (terms plus SRAM-port stalls).
    pub mac: u64,
    /// Dot-product terms (cycles of useful MAC work).
    pub terms: u64,
    /// Cycles to unload the pass's accumulator rows through the SIMD unit.
    pub unload: u64,
}

/// Passes in execution order, run-length encoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Passes(pub Vec<(Pass, u64)>);

impl Passes {
    fn push(&mut self, p: Pass) {
        match self.0.last_mut() {
            Some((last, n)) if *last == p => *n += 1,
            _ => self.0.push((p, 1)),
        }
    }
    /// Every pass in order.
    pub fn iter(&self) -> impl Iterator<Item = Pass> + '_ {
        self.0
            .iter()
            .flat_map(|&(p, n)| std::iter::repeat_n(p, n as usize))
    }
    pub fn count(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }
}

/// The layer shape a dot-product instruction belongs to (for the shape bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DotShape {
    pub kind: u8,
    pub out_h: u64,
    pub out_w: u64,
    pub out_c: u64,
    /// Terms per output value: `in_c / groups * kernel_h * kernel_w`.
    pub terms: u64,
    pub groups: u64,
}

/// Everything the scheduler and the profiler need about one dot-product instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotCost {
    /// Multiply-accumulates: tile pixels x tile channels x terms (padded and
    /// zero-stuffed positions included: the array computes them).
    pub macs: u64,
    pub passes: Passes,
    /// Activation slices that break the 256-byte rule, over all terms.
    pub broken_slices: u64,
    pub shape: DotShape,
    /// Tile pixels `[start, end)` and channels `[start, end)`.
    pub pix: (u64, u64),
    pub chans: (u64, u64),
    /// Cycles its SIMD program takes per accumulator row (`simd_row_cycles`).
    pub simd_row: u64,
}

/// Cycles a SIMD program of `len` instructions spends per accumulator row.
pub fn simd_row_cycles(len: usize) -> u64 {
    (len as u64).max(1)
}

fn kind_code(kind: DotKind) -> u8 {
    match kind {
        DotKind::Conv => 0,
        DotKind::Deconv => 1,
        DotKind::InnerProduct => 2,
    }
}

/// Input row (or column) read by output coordinate `o` at kernel tap `k`, if any.
fn src_coord(
    kind: DotKind,
    o: u64,
    k: u64,
    stride: u64,
    pad: u64,
    dil: u64,
    len: u64,
) -> Option<u64> {
    let pos = match kind {
        DotKind::Deconv => {
            let t = (o + pad).checked_sub(k * dil)?;
            if t % stride != 0 {
                return None;
            }
            t / stride
        }
        _ => (o * stride + k * dil).checked_sub(pad)?,
    };
    (pos < len).then_some(pos)
}

/// MAC cycles of one input channel's terms for the pixel group `[p0, p0+n)`: the sum
/// over kernel taps of each packet's term cycles, and the rule-breaking slices. The
/// channel adds `ic * in_chan_pitch` to every address of a packet, and the load count
/// depends only on address differences, so channel 0 stands for all of them.
fn group_cycles(d: &DotProduct, kind: DotKind, prm: &TimingParams, p0: u64, n: u64) -> (u64, u64) {
    let u = u64::from;
    let out_w = u(d.out_w);
    let (mut cycles, mut broken) = (0, 0);
    let mut addrs = Vec::with_capacity(n as usize);
    for ky in 0..u(d.kernel_h) {
        for kx in 0..u(d.kernel_w) {
            addrs.clear();
            addrs.extend((p0..p0 + n).map(|p| {
                let y = src_coord(
                    kind,
                    p / out_w,
                    ky,
                    u(d.stride_h),
                    u(d.pad_top),
                    u(d.dil_h),
                    u(d.in_h),
                )?;
                let x = src_coord(
                    kind,
                    p % out_w,
                    kx,
                    u(d.stride_w),
                    u(d.pad_left),
                    u(d.dil_w),
                    u(d.in_w),
                )?;
                Some(u(d.in_addr) + y * u(d.in_row_pitch) + x * u(d.in_pix_pitch))
            }));
            let l = packet_loads(&addrs, prm.load_window);
            cycles += prm.term_cycles(l.loads);
            broken += l.broken_slices;
        }
    }
    (cycles, broken)
}

/// Channel counts of the passes of one pixel group: per group of `cols` weight
/// columns, one pass per conv group whose channels it holds.
fn channel_passes(oc0: u64, oc1: u64, ocpg: u64, cols: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut q = oc0 / cols;
    while q * cols < oc1 {
        let (lo, hi) = ((q * cols).max(oc0), ((q + 1) * cols).min(oc1));
        let mut g = lo / ocpg;
        while g * ocpg < hi {
            out.push(((g + 1) * ocpg).min(hi) - (g * ocpg).max(lo));
            g += 1;
        }
        q += 1;
    }
    out
}

/// The cost of a dot-product instruction that passed `checks::check_instr`.
pub fn dot_cost(d: &DotProduct, kind: DotKind, prm: &TimingParams) -> DotCost {
    let u = u64::from;
    let icpg = u(d.in_c) / u(d.groups).max(1);
    let ocpg = (u(d.out_c) / u(d.groups).max(1)).max(1);
    let taps = u(d.kernel_h) * u(d.kernel_w);
    let terms = icpg * taps;
    let (p0, pn) = (u(d.pix_start), u(d.pix_count));
    let (c0, cn) = (u(d.oc_start), u(d.oc_count));
    let chans = channel_passes(c0, c0 + cn, ocpg, prm.cols);
    let row = simd_row_cycles(d.simd.len());
    let mut groups = Vec::new();
    let mut broken_slices = 0;
    let mut p = p0;
    while p < p0 + pn {
        let n = prm.rows.min(p0 + pn - p);
        let (cyc, broken) = group_cycles(d, kind, prm, p, n);
        broken_slices += broken * icpg * chans.len() as u64;
        groups.push((n, cyc * icpg));
        p += n;
    }
    let pass = |(n, mac): (u64, u64), ch: u64| Pass {
        mac,
        terms,
        unload: prm.unload_cycles(ch, n, row),
    };
    let mut passes = Passes::default();
    match d.order {
        Order::PixelMajor => groups
            .iter()
            .for_each(|&g| chans.iter().for_each(|&ch| passes.push(pass(g, ch)))),
        Order::ChannelMajor => chans
            .iter()
            .for_each(|&ch| groups.iter().for_each(|&g| passes.push(pass(g, ch)))),
    }
    DotCost {
        macs: pn.saturating_mul(cn).saturating_mul(terms),
        passes,
        broken_slices,
        shape: DotShape {
            kind: kind_code(kind),
            out_h: u(d.out_h),
            out_w: u(d.out_w),
            out_c: u(d.out_c),
            terms,
            groups: u(d.groups),
        },
        pix: (p0, p0 + pn),
        chans: (c0, c0 + cn),
        simd_row: row,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nnac_isa::HwConfig;

    /// A `k`x`k` stride-1 "same" conv over an `hw`x`hw` HWC input with pixel pitch
    /// `pix_pitch`, the whole output as one tile.
    fn conv(in_c: u32, out_c: u32, hw: u32, k: u32, pix_pitch: u32) -> DotProduct {
        let pad = k / 2;
        DotProduct {
            in_h: hw,
            in_w: hw,
            in_c,
            out_h: hw,
            out_w: hw,
            out_c,
            in_pix_pitch: pix_pitch,
            in_row_pitch: pix_pitch * hw,
            out_pix_pitch: out_c,
            out_row_pitch: out_c * hw,
            in_chan_pitch: 1,
            out_chan_pitch: 1,
            pix_count: hw * hw,
            oc_count: out_c,
            kernel_h: k,
            kernel_w: k,
            pad_top: pad,
            pad_left: pad,
            pad_bottom: pad,
            pad_right: pad,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            groups: 1,
            ..DotProduct::default()
        }
    }

    fn prm() -> TimingParams {
        TimingParams::new(&HwConfig::fsd())
    }

    #[test]
    fn one_full_slice_takes_one_cycle_per_term() {
        // 1x1 conv, 64 input channels, 96 output channels, 96 pixels (a 96-wide row
        // would need in_w = 96; use a 1-pixel-pitch layout so every packet is one load).
        let mut d = conv(64, 96, 96, 1, 1);
        d.in_pix_pitch = 64;
        d.in_row_pitch = 64 * 96;
        d.pix_count = 96;
        let c = dot_cost(&d, DotKind::Conv, &prm());
        assert_eq!(c.macs, 96 * 96 * 64);
        // Pixel pitch 64 breaks the rule: 2 loads per slice, 24 per packet, 2 cycles.
        assert_eq!(
            c.passes.0,
            vec![(
                Pass {
                    mac: 128,
                    terms: 64,
                    unload: 96
                },
                1
            )]
        );
        assert_eq!(c.broken_slices, 12 * 64);
        // Pixel pitch 16 obeys it (7*16 = 112 < 256): one cycle per term.
        d.in_pix_pitch = 16;
        d.in_c = 16;
        d.in_row_pitch = 16 * 96;
        let c = dot_cost(&d, DotKind::Conv, &prm());
        assert_eq!(
            c.passes.0,
            vec![(
                Pass {
                    mac: 16,
                    terms: 16,
                    unload: 96
                },
                1
            )]
        );
        assert_eq!(c.broken_slices, 0);
    }

    #[test]
    fn slices_of_a_layer_round_up_to_96() {
        // 10x10 output (100 pixels) x 100 channels, 3x3 kernel, 8 input channels at
        // pixel pitch 8: 2 pixel groups x 2 channel groups = 4 passes of 72 terms.
        let d = conv(8, 100, 10, 3, 8);
        let c = dot_cost(&d, DotKind::Conv, &prm());
        assert_eq!(c.passes.count(), 4);
        assert_eq!(c.macs, 100 * 100 * 72);
        let unloads: Vec<u64> = c.passes.iter().map(|p| p.unload).collect();
        // Pixel-major: (group 0: 96 ch, 4 ch), (group 1: 96 ch, 4 ch).
        assert_eq!(unloads, vec![96, 4, 96, 4]);
        assert!(c.passes.iter().all(|p| p.terms == 72 && p.mac == 72));
    }

    #[test]
    fn longer_simd_programs_unload_proportionally_slower() {
        let mut d = conv(8, 96, 10, 1, 8);
        d.simd = vec![nnac_isa::SimdInstr::from_mnemonic("MOV").unwrap(); 4];
        let c = dot_cost(&d, DotKind::Conv, &prm());
        assert!(c.passes.iter().all(|p| p.unload == 96 * 4));
    }

    #[test]
    fn depthwise_runs_one_pass_per_group() {
        // 3x3 depthwise, 96 channels: 96 passes of 9 terms per pixel group.
        let mut d = conv(96, 96, 8, 3, 96);
        d.groups = 96;
        let c = dot_cost(&d, DotKind::Conv, &prm());
        assert_eq!(c.passes.count(), 96);
        assert!(c.passes.iter().all(|p| p.terms == 9 && p.unload == 1));
        assert_eq!(c.macs, 64 * 96 * 9);
    }

    #[test]
    fn stride_two_needs_a_pixel_pitch_of_at_most_18() {
        // 1x1 stride 2 over 16x16: an 8x8 output, one slice per output row.
        let strided = |c: u32| {
            let mut d = conv(c, 96, 16, 1, c);
            d.stride_h = 2;
            d.stride_w = 2;
            d.out_h = 8;
            d.out_w = 8;
            d.pix_count = 64;
            dot_cost(&d, DotKind::Conv, &prm())
        };
        // Pitch 16: a slice spans 7*2*16 = 224 bytes, 8 loads per packet, 1 cycle.
        let c = strided(16);
        assert_eq!((c.passes.0[0].0.mac, c.broken_slices), (16, 0));
        // Pitch 32: 448 bytes, 2 loads per slice, 16 per packet, 2 cycles per term.
        let c = strided(32);
        assert_eq!((c.passes.0[0].0.mac, c.broken_slices), (64, 8 * 32));
    }

    #[test]
    fn channel_passes_split_at_weight_groups_and_conv_groups() {
        assert_eq!(channel_passes(0, 128, 128, 96), vec![96, 32]);
        assert_eq!(channel_passes(96, 128, 128, 96), vec![32]);
        assert_eq!(channel_passes(0, 8, 4, 96), vec![4, 4]);
        assert_eq!(channel_passes(0, 192, 64, 96), vec![64, 32, 32, 64]);
    }

    #[test]
    fn deconv_taps_read_only_real_input_positions() {
        assert_eq!(src_coord(DotKind::Deconv, 0, 0, 2, 0, 1, 4), Some(0));
        assert_eq!(src_coord(DotKind::Deconv, 1, 0, 2, 0, 1, 4), None);
        assert_eq!(src_coord(DotKind::Deconv, 3, 1, 2, 0, 1, 4), Some(1));
        assert_eq!(src_coord(DotKind::Conv, 0, 0, 1, 1, 1, 4), None);
        assert_eq!(src_coord(DotKind::Conv, 3, 2, 1, 1, 1, 4), None);
        assert_eq!(src_coord(DotKind::Conv, 2, 2, 1, 1, 1, 4), Some(3));
    }
}
