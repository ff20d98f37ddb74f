//! A CONV with `w_pitch` and `params_by_pixel` (docs/ISA.md section 4: a 1x1
//! convolution run with its output channels on the rows) against plain reference
//! code: the weight matrix `[ic][oc]` is the instruction's input, the planar
//! activation's planes its weight vectors, bias and requantization per instruction
//! pixel. Also the footprint's weight reads: `K` runs of `oc_count` bytes.

mod common;
use common::*;
use nnac_isa::hazard::footprint::footprint;
use nnac_isa::*;

const WT_ADDR: usize = 0;
const X_ADDR: usize = 256;
const B_ADDR: usize = 512;
const C_ADDR: usize = 640;
const O_ADDR: u32 = 1024;

/// A 1x1 convolution of `x` (`cin` planes of `pixels` uint8 codes) with weights
/// `w[oc][ic]` (int8), turned: tile of output channels `oc0..oc0+ocn` (instruction
/// pixels) and pixels `p0..p0+pn` (instruction channels).
struct Turned {
    cin: usize,
    cout: usize,
    pixels: usize,
    oc0: usize,
    ocn: usize,
    p0: usize,
    pn: usize,
}

#[test]
fn turned_conv_matches_the_reference() {
    for (seed, c) in [
        Turned {
            cin: 6,
            cout: 11,
            pixels: 15,
            oc0: 2,
            ocn: 9,
            p0: 5,
            pn: 7,
        },
        Turned {
            cin: 3,
            cout: 20,
            pixels: 8,
            oc0: 0,
            ocn: 20,
            p0: 0,
            pn: 8,
        },
    ]
    .into_iter()
    .enumerate()
    {
        let mut rng = Lcg(seed as u64 + 11);
        let x = rng.bytes(c.cin * c.pixels);
        let w: Vec<i8> = rng
            .bytes(c.cout * c.cin)
            .into_iter()
            .map(|b| b as i8)
            .collect();
        let bias: Vec<i32> = (0..c.cout).map(|_| rng.range(-3000, 3000)).collect();
        let chan: Vec<(i32, u32)> = (0..c.cout)
            .map(|_| (rng.range(1 << 20, 1 << 30), rng.range(38, 42) as u32))
            .collect();
        let mut image = Vec::new();
        let mut wt = vec![0u8; c.cin * c.cout];
        for oc in 0..c.cout {
            for ic in 0..c.cin {
                wt[ic * c.cout + oc] = w[oc * c.cin + ic] as u8;
            }
        }
        put(&mut image, WT_ADDR, &wt);
        put(&mut image, X_ADDR, &x);
        let b: Vec<u8> = bias.iter().flat_map(|v| v.to_le_bytes()).collect();
        put(&mut image, B_ADDR, &b);
        let t: Vec<u8> = chan
            .iter()
            .flat_map(|&(m, s)| ChanParams([m, s as i32, 0, 0]).to_bytes())
            .collect();
        put(&mut image, C_ADDR, &t);
        put(&mut image, O_ADDR as usize, &vec![0u8; c.cout * c.pixels]);

        let d = DotProduct {
            in_addr: WT_ADDR as u32,
            w_addr: (X_ADDR + c.p0) as u32,
            out_addr: O_ADDR,
            bias_addr: (B_ADDR + 4 * c.oc0) as u32,
            chan_addr: (C_ADDR + 16 * c.oc0) as u32,
            in_h: 1,
            in_w: c.cout as u32,
            in_c: c.cin as u32,
            out_h: 1,
            out_w: c.cout as u32,
            out_c: c.pixels as u32,
            in_row_pitch: 0,
            in_pix_pitch: 1,
            in_chan_pitch: c.cout as u32,
            out_row_pitch: 0,
            out_pix_pitch: c.pixels as u32,
            out_chan_pitch: 1,
            pix_start: c.oc0 as u32,
            pix_count: c.ocn as u32,
            oc_start: c.p0 as u32,
            oc_count: c.pn as u32,
            kernel_h: 1,
            kernel_w: 1,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            groups: 1,
            in_signed: true,
            w_signed: false,
            out_signed: true,
            bias_en: true,
            out_zero: -5,
            w_pitch: c.pixels as u32,
            params_by_pixel: true,
            simd: vec![per_channel_relu(-5, -128, 127)],
            ..DotProduct::default()
        };
        // The weight reads: one run of the tile's pixels per input channel.
        let hw = small_hw();
        let fp = footprint(&Instr::Conv(d.clone()), &hw);
        for ic in 0..c.cin {
            let run = (
                (X_ADDR + ic * c.pixels + c.p0) as u64,
                (X_ADDR + ic * c.pixels + c.p0 + c.pn) as u64,
            );
            assert!(
                fp.sram_reads
                    .ranges()
                    .iter()
                    .any(|&(lo, hi)| lo <= run.0 && run.1 <= hi),
                "weight run {run:?} not read: {:?}",
                fp.sram_reads.ranges()
            );
        }
        let after = (X_ADDR + (c.cin - 1) * c.pixels + c.p0 + c.pn) as u64;
        let w_reads =
            fp.sram_reads
                .intersect(&nnac_isa::hazard::intervals::Intervals::from_ranges(vec![
                    (X_ADDR as u64, (X_ADDR + c.cin * c.pixels) as u64),
                ]));
        let read: u64 = w_reads.ranges().iter().map(|(lo, hi)| hi - lo).sum();
        assert_eq!(
            read,
            (c.cin * c.pn) as u64,
            "only the tile's pixels are read"
        );
        assert!(w_reads.hull().unwrap().1 <= after);

        let out_len = (c.cout * c.pixels) as u32;
        let (got, _) = run_one(&hw, &image, Instr::Conv(d), O_ADDR, out_len).unwrap();
        let mut want = vec![0u8; c.cout * c.pixels];
        for oc in c.oc0..c.oc0 + c.ocn {
            for p in c.p0..c.p0 + c.pn {
                let acc: i64 = i64::from(bias[oc])
                    + (0..c.cin)
                        .map(|ic| i64::from(w[oc * c.cin + ic]) * i64::from(x[ic * c.pixels + p]))
                        .sum::<i64>();
                let (m, s) = chan[oc];
                want[oc * c.pixels + p] = requant(wrap30(acc), m, s, -5, -128, 127, true);
            }
        }
        assert_eq!(got, want, "case {seed}");
        assert!(want.iter().filter(|&&v| v != 0).count() > c.ocn * c.pn / 2);
    }
}

#[test]
fn a_pitch_below_the_tile_is_refused() {
    let d = DotProduct {
        in_h: 1,
        in_w: 4,
        in_c: 2,
        out_h: 1,
        out_w: 4,
        out_c: 8,
        in_pix_pitch: 1,
        in_chan_pitch: 4,
        out_pix_pitch: 8,
        out_chan_pitch: 1,
        pix_count: 4,
        oc_count: 8,
        kernel_h: 1,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        w_pitch: 5,
        ..DotProduct::default()
    };
    let e = d.check(nnac_isa::checks::DotKind::Conv).unwrap_err();
    assert!(
        e.to_string().contains("w_pitch 5 is below oc_count 8"),
        "{e}"
    );
}
