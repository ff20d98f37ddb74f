//! Host ops end to end: graphs with Softmax and LRN (ops the NNA has no instruction
//! for) compile to programs of several segments whose host ops run between them;
//! every output byte equals the quantized reference interpreter's under several
//! schedules. ShuffleNet's channel shuffle (5-D reshape, transpose, reshape) is not a
//! host op: it runs on the NNA as SCALE copies.

mod common;

use common::*;
use nnac_ir::{Graph, Op, Value};
use nnac_isa::{HwConfig, Instr};

fn lrn(g: &mut Graph, name: &str, x: Value) -> Value {
    let op = Op::Lrn {
        size: 5,
        alpha: 1e-2,
        beta: 0.75,
        bias: 1.0,
    };
    node(g, name, op, &[x])
}

fn softmax(g: &mut Graph, name: &str, x: Value) -> Value {
    node(g, name, Op::Softmax { axis: 1 }, &[x])
}

fn reshape(g: &mut Graph, name: &str, x: Value, shape: &[usize]) -> Value {
    let op = Op::Reshape {
        shape: shape.to_vec(),
    };
    node(g, name, op, &[x])
}

/// Compiles `g`, checks the program and runs it bit-exactly; returns the program.
fn compile_and_check(g: Graph, shape: &[usize]) -> nnac_isa::Program {
    let hw = HwConfig::fsd();
    let q = quantize_graph(g, shape);
    let (p, _) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    // Small models keep their weights resident: a prologue of one segment.
    assert_eq!(p.prologue_segments(), 1);
    // The container round trip keeps the host ops.
    let back = nnac_isa::Program::read(&p.write().unwrap()).unwrap();
    assert_eq!(back, p);
    for seed in [1, 2] {
        assert!(assert_bit_exact(&q, &p, seed, shape) > 0);
    }
    p
}

/// STOPs of the body (the prologue that loads the resident weights has one more).
fn stops(p: &nnac_isa::Program) -> usize {
    p.instrs[p.body_start()..]
        .iter()
        .filter(|i| matches!(i, Instr::Stop(_)))
        .count()
}

/// Host ops as `op@segment`, segments counted from the body's first (the
/// container numbers them from the prologue's, docs/ISA.md 10).
fn host_ops(p: &nnac_isa::Program) -> Vec<String> {
    let first_body = p.prologue_segments() as u32;
    p.host_ops
        .iter()
        .flat_map(|h| &h.ops)
        .map(|o| format!("{}@{}", o.op, o.segment - first_body))
        .collect()
}

#[test]
fn classifier_tail_softmax_writes_the_output_directly() {
    let mut rng = Rng(7);
    let mut g = Graph::new("cls");
    let x = input(&mut g, &[1, 3, 8, 8]);
    let c = conv(&mut g, &mut rng, "conv", x, 16, 3, 1, 1);
    let r = relu(&mut g, "relu", c);
    let f = reshape(&mut g, "flat", r, &[1, 16 * 64]);
    let fc = gemm(&mut g, &mut rng, "fc", f, 10);
    let s = softmax(&mut g, "prob", fc);
    g.add_output("prob", s);
    let p = compile_and_check(g, &[1, 3, 8, 8]);
    assert_eq!(host_ops(&p), vec!["softmax{axis=1}@0"]);
    // One STOP before the softmax, which is also the program's last instruction.
    assert_eq!(stops(&p), 1);
    let h = &p.host_ops.as_ref().unwrap().ops[0];
    assert_eq!(
        h.output.dram_addr, p.io[1].dram_addr,
        "writes the output tensor"
    );
}

#[test]
fn lrn_between_convolutions_round_trips_through_dram() {
    let mut rng = Rng(8);
    let mut g = Graph::new("lrn");
    let x = input(&mut g, &[1, 3, 12, 12]);
    let c = conv(&mut g, &mut rng, "conv1", x, 24, 3, 1, 1);
    let r = relu(&mut g, "relu1", c);
    let n = lrn(&mut g, "norm1", r);
    let m = maxpool(&mut g, "pool1", 3, 2, 1, n);
    let c2 = conv(&mut g, &mut rng, "conv2", m, 32, 3, 1, 1);
    let r2 = relu(&mut g, "relu2", c2);
    let n2 = lrn(&mut g, "norm2", r2);
    g.add_output("y", n2);
    let p = compile_and_check(g, &[1, 3, 12, 12]);
    let ops = host_ops(&p);
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert!(
        ops[0].starts_with("lrn{") && ops[0].ends_with("@0"),
        "{ops:?}"
    );
    assert!(ops[1].ends_with("@1"), "{ops:?}");
    // norm2 writes the graph output after the last STOP.
    assert_eq!(stops(&p), 2, "{ops:?}");
}

/// conv -> relu -> ShuffleNet's channel shuffle written as Reshape [1, a, C/a, H, W]
/// -> Transpose(0,2,1,3,4) -> Reshape back -> conv.
fn shuffle_graph(c: usize, a: usize, shape: [usize; 4]) -> Graph {
    let mut rng = Rng(9);
    let mut g = Graph::new("shuffle");
    let [_, _, h, w] = shape;
    let x = input(&mut g, &shape);
    let c1 = conv(&mut g, &mut rng, "conv1", x, c, 1, 1, 1);
    let r = relu(&mut g, "relu1", c1);
    let split = reshape(&mut g, "split", r, &[1, a, c / a, h, w]);
    let perm = vec![0, 2, 1, 3, 4];
    let t = node(&mut g, "shuffle", Op::Transpose { perm }, &[split]);
    let merged = reshape(&mut g, "merge", t, &[1, c, h, w]);
    let c2 = conv(&mut g, &mut rng, "conv2", merged, 8, 3, 1, 1);
    g.add_output("y", c2);
    g
}

#[test]
fn channel_shuffle_runs_on_the_nna_without_a_stop() {
    // 12 channels in 3 groups of 4 (3 copies of 4 planes), its inverse (4 groups of
    // 3: 3 copies of 4 planes seen from the output), 12 in 6 groups of 2 (2 copies of
    // 6), on a 6x6 and a 20x20 map (5 pixel tiles per copy).
    for (a, hw_, copies) in [(3, 6, 3), (4, 6, 3), (6, 6, 2), (3, 20, 3)] {
        let shape = [1, 8, hw_, hw_];
        let p = compile_and_check(shuffle_graph(12, a, shape), &shape);
        assert!(host_ops(&p).is_empty(), "{:?}", host_ops(&p));
        // Only the program's last STOP: no DRAM round trip.
        assert_eq!(stops(&p), 1);
        let body = &p.instrs[p.body_start()..];
        let scales: Vec<_> = body
            .iter()
            .filter_map(|i| match i {
                Instr::Scale(s) => Some(s),
                _ => None,
            })
            .collect();
        let tiles = (hw_ * hw_).div_ceil(96);
        assert_eq!(scales.len(), copies * tiles, "a={a} {hw_}x{hw_}");
        assert!(scales.iter().all(|s| s.c == 12 / copies as u32));
        // No DMA in the body but the input's and the output's (8 x H x W codes
        // each, in bands): no activation goes to DRAM and back.
        let bytes = |read: bool| -> u64 {
            body.iter()
                .filter_map(|i| match i {
                    Instr::DmaRead(d) if read => Some(d),
                    Instr::DmaWrite(d) if !read => Some(d),
                    _ => None,
                })
                .map(|d| u64::from(d.rows) * u64::from(d.row_len))
                .sum()
        };
        let tensor = 8 * (hw_ * hw_) as u64;
        assert_eq!(
            (bytes(true), bytes(false)),
            (tensor, tensor),
            "a={a} {hw_}x{hw_}"
        );
    }
}

#[test]
fn host_result_read_by_the_nna_and_output_too() {
    let mut rng = Rng(10);
    let mut g = Graph::new("both");
    let x = input(&mut g, &[1, 4, 8, 8]);
    let c = conv(&mut g, &mut rng, "conv1", x, 16, 3, 1, 1);
    let n = lrn(&mut g, "norm", c);
    let s = softmax(&mut g, "soft", n);
    let c2 = conv(&mut g, &mut rng, "conv2", s, 8, 1, 1, 1);
    g.add_output("soft", s);
    g.add_output("y", c2);
    let p = compile_and_check(g, &[1, 4, 8, 8]);
    assert_eq!(host_ops(&p).len(), 2);
}

/// For every DMA_WRITE of the body's first segment: the index of the latest earlier
/// compute instruction that sets a flag it waits for (its producer tile), and the
/// index of the segment's last compute instruction.
fn write_waits(p: &nnac_isa::Program) -> (Vec<Option<usize>>, usize) {
    let start = p.body_start();
    let end = start
        + p.instrs[start..]
            .iter()
            .position(|i| matches!(i, Instr::Stop(_)))
            .unwrap();
    let seg = &p.instrs[start..end];
    let compute = |i: &Instr| i.class() == nnac_isa::Class::Compute;
    let last = seg.iter().rposition(compute).unwrap();
    let waits = seg
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, Instr::DmaWrite(_)))
        .map(|(w, i)| {
            let want = &i.flags().wait_set;
            seg[..w]
                .iter()
                .rposition(|c| compute(c) && c.flags().set.iter().any(|f| want.contains(f)))
        })
        .collect();
    (waits, last)
}

#[test]
fn host_operand_in_row_tiles_is_written_band_by_band() {
    // conv1's 32 x 48 x 48 output is computed in 24 tiles of 96 pixels (two rows):
    // the LRN's operand goes to DRAM in several bands of rows, each DMA_WRITE
    // waiting only for the tiles of its band, so the writes overlap the conv.
    let mut rng = Rng(11);
    let mut g = Graph::new("bands");
    let x = input(&mut g, &[1, 16, 48, 48]);
    let c = conv(&mut g, &mut rng, "conv1", x, 32, 3, 1, 1);
    let r = relu(&mut g, "relu1", c);
    let n = lrn(&mut g, "norm1", r);
    let c2 = conv(&mut g, &mut rng, "conv2", n, 8, 1, 1, 1);
    g.add_output("y", c2);
    let p = compile_and_check(g, &[1, 16, 48, 48]);
    let (waits, last) = write_waits(&p);
    assert!(waits.len() > 1, "one DMA_WRITE: {waits:?}");
    // Each band waits for a producer tile; all but the last for one before the
    // conv's last tile, in band order.
    assert!(waits.iter().all(Option::is_some), "{waits:?}");
    let (body, tail) = waits.split_at(waits.len() - 1);
    assert_eq!(tail[0], Some(last), "{waits:?}");
    assert!(body.iter().all(|w| w.unwrap() < last), "{waits:?}");
    assert!(body.windows(2).all(|w| w[0] < w[1]), "{waits:?}");
    // The bands cover the operand exactly once: 32 channel rows each, 48x48 in all.
    let bytes: u64 = p.instrs[p.body_start()..]
        .iter()
        .take_while(|i| !matches!(i, Instr::Stop(_)))
        .filter_map(|i| match i {
            Instr::DmaWrite(d) => {
                assert_eq!((d.rows, d.dram_stride, d.sram_stride), (32, 2304, 2304));
                Some(u64::from(d.rows) * u64::from(d.row_len))
            }
            _ => None,
        })
        .sum();
    assert_eq!(bytes, 32 * 48 * 48);
}

#[test]
fn graph_output_in_row_tiles_is_written_band_by_band() {
    let mut rng = Rng(12);
    let mut g = Graph::new("out_bands");
    let x = input(&mut g, &[1, 16, 48, 48]);
    let c = conv(&mut g, &mut rng, "conv1", x, 32, 3, 1, 1);
    let r = relu(&mut g, "relu1", c);
    g.add_output("y", r);
    let hw = HwConfig::fsd();
    let shape = [1, 16, 48, 48];
    let q = quantize_graph(g, &shape);
    let (p, _) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    let (waits, last) = write_waits(&p);
    assert!(waits.len() > 1, "one DMA_WRITE: {waits:?}");
    assert!(waits[..waits.len() - 1].iter().all(|w| w.unwrap() < last));
    assert!(assert_bit_exact(&q, &p, 3, &shape) > 0);
}

/// conv1 (1x1, 8 -> 32 channels on 48 x 48), the LRN `norm1` on the host, then
/// `after` 3x3 convolutions `conv2`, `conv3`, ... of 32 channels.
fn lrn_then_convs(seed: u64, after: usize) -> Graph {
    let mut rng = Rng(seed);
    let mut g = Graph::new("read_bands");
    let x = input(&mut g, &[1, 8, 48, 48]);
    let c = conv(&mut g, &mut rng, "conv1", x, 32, 1, 1, 1);
    let mut v = lrn(&mut g, "norm1", c);
    for k in 0..after {
        v = conv(&mut g, &mut rng, &format!("conv{}", k + 2), v, 32, 3, 1, 1);
    }
    g.add_output("y", v);
    g
}

/// The index of the body's second segment's first instruction (after the STOP
/// before the first host op).
fn second_segment(p: &nnac_isa::Program) -> usize {
    let body = &p.instrs[p.body_start()..];
    p.body_start()
        + body
            .iter()
            .position(|i| matches!(i, Instr::Stop(_)))
            .unwrap()
        + 1
}

#[test]
fn host_result_read_by_row_tiles_comes_back_band_by_band() {
    // The LRN's 32 x 48 x 48 result is read back for conv2 (24 pixel tiles of two
    // rows): in bands of rows, the first tiles starting after the first bands.
    let p = compile_and_check(lrn_then_convs(13, 1), &[1, 8, 48, 48]);
    let start = second_segment(&p);
    let seg = &p.instrs[start..];
    let reads: Vec<usize> = (0..seg.len())
        .filter(|&k| matches!(&seg[k], Instr::DmaRead(d) if d.rows == 32 && d.row_len % 48 == 0))
        .collect();
    assert!(reads.len() > 1, "one DMA_READ of the LRN result");
    let first = seg
        .iter()
        .position(|i| matches!(i, Instr::Conv(_)))
        .unwrap();
    let waits = &seg[first].flags().wait_set;
    let setter = seg[..first]
        .iter()
        .rposition(|i| i.flags().set.iter().any(|f| waits.contains(f)))
        .unwrap();
    assert!(
        setter < *reads.last().unwrap(),
        "the first tile waits for the last band ({setter}, reads {reads:?})"
    );
}

/// Pooled CONVs of the body's first segment (the instructions with a pooling unit).
fn pooled_convs(p: &nnac_isa::Program) -> Vec<&nnac_isa::DotProduct> {
    p.instrs[p.body_start()..]
        .iter()
        .take_while(|i| !matches!(i, Instr::Stop(_)))
        .filter_map(|i| match i {
            Instr::Conv(d) if d.pool != nnac_isa::PoolKind::None => Some(d),
            _ => None,
        })
        .collect()
}

#[test]
fn pooled_layer_feeding_a_host_op_is_computed_and_written_in_bands() {
    // conv1 (3x3, 32 x 64 x 64) with its 3x3/2 max pool fused feeds an LRN: instead of
    // one tile, bands of pooled rows (pool_bands.rs) whose windows' rows overlap by
    // one, so the LRN's operand goes out band by band while later bands compute.
    let mut rng = Rng(14);
    let mut g = Graph::new("pool_bands");
    let x = input(&mut g, &[1, 16, 64, 64]);
    let c = conv(&mut g, &mut rng, "conv1", x, 32, 3, 1, 1);
    let r = relu(&mut g, "relu1", c);
    let m = maxpool(&mut g, "pool1", 3, 2, 1, r);
    let n = lrn(&mut g, "norm1", m);
    let c2 = conv(&mut g, &mut rng, "conv2", n, 8, 1, 1, 1);
    g.add_output("y", c2);
    let p = compile_and_check(g, &[1, 16, 64, 64]);
    let tiles = pooled_convs(&p);
    assert!(tiles.len() > 1, "one pooled tile");
    // Consecutive bands overlap by win - stride = 1 pre-pool row of 64 pixels and
    // together cover the 64 x 64 output.
    for w in tiles.windows(2) {
        assert_eq!(w[0].pix_start + w[0].pix_count, w[1].pix_start + 64);
    }
    let last = tiles.last().unwrap();
    assert_eq!(
        (tiles[0].pix_start, last.pix_start + last.pix_count),
        (0, 64 * 64)
    );
    let (waits, last) = write_waits(&p);
    assert!(waits.len() > 1, "one DMA_WRITE: {waits:?}");
    assert!(waits[..waits.len() - 1].iter().all(|w| w.unwrap() < last));
}

#[test]
fn pooled_first_layer_starts_on_the_first_bands_of_the_input() {
    // The graph input (16 x 64 x 64 = 64 KiB) is read in bands and the pooled first
    // conv, in bands of pooled rows, starts on the first ones.
    let mut rng = Rng(15);
    let mut g = Graph::new("pool_bands_in");
    let x = input(&mut g, &[1, 16, 64, 64]);
    let c = conv(&mut g, &mut rng, "conv1", x, 16, 3, 1, 1);
    let r = relu(&mut g, "relu1", c);
    let m = maxpool(&mut g, "pool1", 2, 2, 0, r);
    let c2 = conv(&mut g, &mut rng, "conv2", m, 8, 1, 1, 1);
    g.add_output("y", c2);
    let shape = [1, 16, 64, 64];
    let hw = HwConfig::fsd();
    let q = quantize_graph(g, &shape);
    let (p, _) = lower_ok(&q, &hw);
    assert_well_formed(&q, &hw, &p);
    assert!(assert_bit_exact(&q, &p, 4, &shape) > 0);
    let body = &p.instrs[p.body_start()..];
    let reads: Vec<usize> = body
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, Instr::DmaRead(_)))
        .map(|(k, _)| k)
        .collect();
    assert!(reads.len() > 1, "the input is read whole");
    // The first pooled tile waits for a read before the last one.
    let first = body
        .iter()
        .position(|i| matches!(i, Instr::Conv(d) if d.pool != nnac_isa::PoolKind::None))
        .unwrap();
    let want = &body[first].flags().wait_set;
    let waited = body[..first].iter().rposition(|i| {
        matches!(i, Instr::DmaRead(_)) && i.flags().set.iter().any(|f| want.contains(f))
    });
    assert!(
        waited.is_some_and(|k| k < *reads.last().unwrap()),
        "first tile waits for {waited:?}, reads at {reads:?}"
    );
}

#[test]
fn layers_after_a_banded_read_run_while_the_bands_come_in() {
    // The LRN's result comes back in bands; conv3's first tiles need only conv2's
    // first rows, so the cascade (`cascade.rs`) puts them before conv2's last tiles
    // and before the last band, and the program still computes the same bytes.
    let p = compile_and_check(lrn_then_convs(17, 2), &[1, 8, 48, 48]);
    let layers = p.layers.as_ref().unwrap();
    let start = second_segment(&p);
    let at = |name: &str| -> Vec<usize> {
        (start..p.instrs.len())
            .filter(|&i| layers.name_of(i) == Some(name) && matches!(p.instrs[i], Instr::Conv(_)))
            .collect()
    };
    let (conv2, conv3) = (at("conv2"), at("conv3"));
    let last_band = (start..p.instrs.len())
        .rfind(|&i| matches!(&p.instrs[i], Instr::DmaRead(d) if d.rows == 32))
        .unwrap();
    assert!(!conv3.is_empty() && !conv2.is_empty());
    assert!(
        conv3[0] < *conv2.last().unwrap() && conv3[0] < last_band,
        "conv3 starts at {} after conv2's last tile {} or the last band {last_band}",
        conv3[0],
        conv2.last().unwrap()
    );
}
