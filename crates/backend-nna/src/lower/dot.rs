//! Lowering of the compute ops: CONV / INNER_PRODUCT with fused pooling, SCALE and
//! ELTWISE. Each builds its parameter buffers, an instruction template and its tiles.

use crate::base::act::Act;
use crate::base::job::{tiles, DotOpcode, Job, JobKind, Loc};
use crate::base::params::DotParams;
use crate::base::params::{acc_bound, chan_table, i32_bytes, weight_blocks};
use crate::base::spill_state::Src;
use crate::base::walk::{LayerTiles, Walk};
use crate::error::{Limit, Refusal};
use crate::lower::channels_on_rows;
use crate::lower::fields::{
    check_stored, conv_geometry, deconv_geometry, dot_base, i16_of, out_fields, pool_fields, u32_of,
};
use crate::lower::pool_apart;
use crate::lower::simd::{epilogue, scale_prefix};
use crate::place::spill;
use crate::place::split;
use crate::place::split::{bands, choose_chunked, Choice, SplitDot};
use crate::place::split_px;
use nnac_ir::{
    DotKind, DotOp, EltwiseKind, EltwiseOp, EltwiseRequant, Graph, NnaOp, NodeId, Op, PoolStage,
    Requant, ScaleOp, TensorData, Value,
};
use nnac_isa::checks::DotKind as IsaDot;
use nnac_isa::{DotProduct, EltOp, Eltwise, Scale, SimdInstr};
use std::borrow::Cow;

/// A dot-product layer before lowering: template, opcode, int8 weights (`[oc][k]` in
/// IR order), int32 bias, channel entries of the epilogue, `k` terms per channel.
struct DotParts<'g> {
    t: DotProduct,
    opcode: DotOpcode,
    w: Cow<'g, [i8]>,
    bias: Vec<i32>,
    entries: Vec<[i32; 4]>,
    k: usize,
}

fn const_codes<'g>(walk: &Walk<'g>, v: Value, what: &str) -> Result<Vec<i64>, Refusal> {
    walk.g
        .const_of(v)
        .and_then(|t| t.to_i64_vec())
        .ok_or_else(|| Refusal::NotConstant {
            what: what.to_string(),
        })
}

/// The int8 codes of a constant: borrowed when it is stored as int8 (the weights
/// quantization wrote), else converted and range-checked.
fn int8_codes<'g>(walk: &Walk<'g>, v: Value, what: &str) -> Result<Cow<'g, [i8]>, Refusal> {
    let g: &'g Graph = walk.g;
    if let Some(TensorData::I8(w)) = g.const_of(v).map(|t| &t.data) {
        return Ok(Cow::Borrowed(w));
    }
    const_codes(walk, v, what)?
        .into_iter()
        .map(|x| i8::try_from(x).map_err(|_| Refusal::range(what, x, Limit::Int8Code)))
        .collect::<Result<Vec<i8>, Refusal>>()
        .map(Cow::Owned)
}

fn int32_codes<'g>(walk: &Walk<'g>, v: Value, what: &str) -> Result<Vec<i32>, Refusal> {
    const_codes(walk, v, what)?
        .into_iter()
        .map(|x| i32::try_from(x).map_err(|_| Refusal::range(what, x, Limit::Int32)))
        .collect()
}

/// The instruction template of dot `id` over input `x` (its geometry, layout
/// fields from `x`, pooling), its opcode, int8 weights, int32 bias and epilogue.
fn dot_parts<'g>(walk: &Walk<'g>, id: NodeId, d: &DotOp, x: &Act) -> Result<DotParts<'g>, Refusal> {
    let ins = walk.g.node_inputs(id);
    let w = int8_codes(walk, ins[1], "weight")?;
    let bias = int32_codes(walk, ins[2], "bias")?;
    let out_c = bias.len();
    let ep = epilogue(&d.epilogue, out_c)?;
    let mut t = DotProduct {
        out_c: u32_of(out_c, "out_c")?,
        ..dot_base(x, ep.program.clone())?
    };
    let (opcode, isa_kind) = match &d.kind {
        DotKind::Conv(a) => {
            conv_geometry(&mut t, a)?;
            (DotOpcode::Conv, IsaDot::Conv)
        }
        DotKind::Inner => {
            t.kernel_h = x.h;
            t.kernel_w = x.w;
            (DotOpcode::Inner, IsaDot::InnerProduct)
        }
        DotKind::Deconv(a) => {
            if x.zero_point != 0 {
                return Err(Refusal::DeconvZeroPoint);
            }
            deconv_geometry(&mut t, a)?;
            (DotOpcode::Deconv, IsaDot::Deconv)
        }
    };
    let (oh, ow) = t.expected_out_hw(isa_kind).ok_or(Refusal::EmptyGeometry)?;
    t.out_h = oh;
    t.out_w = ow;
    if let Some(p) = &d.pool {
        pool_fields(&mut t, p)?;
    }
    let k = (t.in_c / t.groups) as usize * (t.kernel_h * t.kernel_w) as usize;
    if w.len() != out_c * k {
        return Err(Refusal::WeightCount {
            weights: w.len(),
            out_c,
            k,
        });
    }
    Ok(DotParts {
        t,
        opcode,
        w,
        bias,
        entries: ep.entries,
        k,
    })
}

/// Whether dot `id` is a global pool that runs as one CONV with the channels as
/// output pixels (`gap.rs`) when its input is stored HWC.
pub(crate) fn is_channel_pool<'g>(walk: &Walk<'g>, id: NodeId) -> bool {
    let Op::Nna(NnaOp::Dot(d)) = &walk.g.node(id).op else {
        return false;
    };
    if !matches!(d.kind, DotKind::Conv(_)) {
        return false;
    }
    let Some(&xv) = walk.g.node_inputs(id).first() else {
        return false;
    };
    let x = match Act::of(&walk.g.node(xv.node).name, walk.g.value_type(xv)) {
        Ok(x) => x,
        Err(_) => return false,
    };
    dot_parts(walk, id, d, &x)
        .is_ok_and(|p| crate::lower::gap::uniform_global(&p.t, &x, &p.w, &p.bias, &p.entries))
}

pub(crate) fn dot<'g>(walk: &mut Walk<'g>, id: NodeId, d: &DotOp) -> Result<(), Refusal> {
    let ins = walk.g.node_inputs(id);
    let x = spill::source(walk, ins[0]).ok_or(Refusal::NotActivation { operand: "input" })?;
    let DotParts {
        t,
        opcode,
        w,
        bias,
        entries,
        k,
    } = dot_parts(walk, id, d, x.act())?;
    let out_c = bias.len();
    let cols = walk.hw.mac_cols as usize;
    let wbytes = match &d.kind {
        DotKind::Deconv(_) => {
            // IR deconv weights are [C, M/g, kh, kw]; the ISA wants W[oc][ic][ky][kx].
            let kk = (t.kernel_h * t.kernel_w) as usize;
            let (cg, mg) = ((t.in_c / t.groups) as usize, out_c / t.groups as usize);
            weight_blocks(out_c, k, cols, |oc, i| {
                let (g, j) = (oc / mg, oc % mg);
                w[((g * cg + i / kk) * mg + j) * kk + i % kk]
            })
        }
        _ => weight_blocks(out_c, k, cols, |oc, i| w[oc * k + i]),
    };
    let gap = match &d.kind {
        DotKind::Conv(_) => {
            crate::lower::gap::channels_as_pixels(&t, x.act(), &w, &bias, &entries, cols)
        }
        _ => None,
    };
    let turned = match &d.kind {
        DotKind::Conv(_)
            if walk
                .out
                .sp
                .plan
                .channels_on_rows
                .contains(&walk.g.node(id).name) =>
        {
            channels_on_rows::turn(&t, x.act(), &w, &bias, &entries)?
        }
        _ => None,
    };
    let params = DotParams {
        weights: wbytes,
        bias,
        entries,
        block: u32_of(k * cols, "weight block")?,
    };
    finish_dot(
        walk,
        id,
        opcode,
        (t, params),
        (ins[0], x),
        d.pool.is_some(),
        Alternative::of(gap, turned),
    )
}

/// Another form of a dot-product layer than the compiler's orientation, used when
/// the layer needs no split.
enum Alternative {
    None,
    /// A global pool with the channels as output pixels (`gap.rs`).
    ChannelsAsPixels(DotProduct, DotParams),
    /// A 1x1 convolution with its output channels on the rows
    /// (`channels_on_rows.rs`), if the placed input and output allow it.
    ChannelsOnRows(DotProduct, DotParams),
}

/// Which form a layer is lowered in.
#[derive(Clone, Copy)]
enum Form {
    /// Output pixels on the rows, channels on the columns.
    Compiler,
    ChannelsAsPixels,
    ChannelsOnRows,
}

impl Alternative {
    fn of(gap: Option<(DotProduct, DotParams)>, turned: Option<(DotProduct, DotParams)>) -> Self {
        match (gap, turned) {
            (Some((t, p)), _) => Alternative::ChannelsAsPixels(t, p),
            (None, Some((t, p))) => Alternative::ChannelsOnRows(t, p),
            (None, None) => Alternative::None,
        }
    }
}

/// Loads the parameters, places the output and pushes the tiled job; a layer
/// whose working set exceeds its SRAM budget is split (`split.rs`). `alt` is the
/// layer's other form, used when no split is needed.
fn finish_dot<'g>(
    walk: &mut Walk<'g>,
    id: NodeId,
    opcode: DotOpcode,
    (mut t, p): (DotProduct, DotParams),
    (xv, x): (Value, Src),
    pooled: bool,
    alt: Alternative,
) -> Result<(), Refusal> {
    let name = walk.g.node(id).name.clone();
    let cols = walk.hw.mac_cols as usize;
    let k = p.block as usize / cols;
    let xmax = if t.in_signed { 128 } else { 255 };
    let bound = acc_bound(&p.weights, t.out_c as usize, k, cols, &p.bias, xmax);
    if bound >= 1i64 << (walk.hw.acc_bits - 1) {
        walk.out.acc_risk.push(name.clone());
    }
    let mnemonic = match opcode {
        DotOpcode::Conv => "CONV",
        DotOpcode::Deconv => "DECONV",
        DotOpcode::Inner => "INNER_PRODUCT",
    };
    if let Some(sizes) = split::split_sizes(walk, id, &t, opcode, &x, &p)? {
        let out = spill::split_output(walk, id)?;
        check_stored(&t, out.act())?;
        out_fields(&mut t, out.act())?;
        let budget = walk.out.sp.plan.budget_of(id, walk.hw.sram_bytes);
        let chunk = walk.out.sp.plan.weight_chunk;
        let choice = match choose_chunked(&t, opcode, &sizes, budget, chunk)? {
            Some(c) => c,
            None => Choice {
                bands: bands(&t, opcode, 1)?,
                per_chunk: 1,
                overlap: false,
            },
        };
        let d = SplitDot {
            id,
            opcode,
            t,
            weights: p.weights,
            bias: p.bias,
            entries: p.entries,
            block: p.block,
            pooled,
        };
        return split::dot_split(walk, d, x, out, choice, mnemonic);
    }
    spill::materialize(walk, id, xv);
    let x = walk
        .use_value(xv)
        .ok_or(Refusal::NotActivation { operand: "input" })?;
    // The turned form reads the input's planes as weight vectors: only if the
    // placed input and the output's layout allow it.
    let alt = match alt {
        Alternative::ChannelsOnRows(mut tt, pt) => {
            let y = walk.act_of(id).map_err(Refusal::from)?;
            if channels_on_rows::layouts_fit(&x.act, &y) {
                tt.w_pitch = x.act.chan_pitch;
                Alternative::ChannelsOnRows(tt, pt)
            } else {
                Alternative::None
            }
        }
        a => a,
    };
    let (mut t, p, form) = match alt {
        Alternative::None => (t, p, Form::Compiler),
        Alternative::ChannelsAsPixels(g, gp) => (g, gp, Form::ChannelsAsPixels),
        Alternative::ChannelsOnRows(r, rp) => (r, rp, Form::ChannelsOnRows),
    };
    let wb = walk.param(&name, &p.weights);
    let bb = walk.param(&name, &i32_bytes(&p.bias));
    let cb = walk.param(&name, &chan_table(&p.entries));
    let out = walk.define(id).map_err(Refusal::from)?;
    match form {
        Form::ChannelsAsPixels => crate::lower::gap::out_fields(&mut t, &out.act)?,
        Form::ChannelsOnRows => {
            channels_on_rows::out_fields(&mut t, &out.act)?;
            walk.out.turned.push(name.clone());
        }
        Form::Compiler => {
            check_stored(&t, &out.act)?;
            out_fields(&mut t, &out.act)?;
        }
    }
    // The turned form's operands trade places: the weight matrix is the input.
    let (in_loc, w_loc) = match form {
        Form::ChannelsOnRows => (Loc::start(wb), x.loc()),
        Form::Compiler | Form::ChannelsAsPixels => (x.loc(), Loc::start(wb)),
    };
    if pooled && !crate::schedule::seq_tiles::whole_fits(&t, opcode, walk.hw.mac_rows) {
        let bufs = [in_loc, w_loc, out.loc(), Loc::start(bb), Loc::start(cb)];
        return pool_apart::pool_apart(walk, &name, opcode, t, bufs, &out.act, p.block, mnemonic);
    }
    let pixels = t.out_h * t.out_w;
    let tl = if pooled {
        // One pixel tile (every pooled window lies inside it), or bands of pooled
        // rows when a DRAM transfer can overlap them (`pool_bands.rs`).
        let n = if dram_side_bytes(walk, id, xv) >= crate::lower::pool_bands::MIN_DMA_BYTES {
            crate::lower::pool_bands::count(&t, walk.hw.mac_rows)
        } else {
            1
        };
        let (rows, cols) = (walk.hw.mac_rows, walk.hw.mac_cols);
        crate::lower::pool_bands::tiles_in_bands(&t, opcode, n, rows, cols)
    } else {
        tiles(pixels, t.out_c, walk.tile_pixels, walk.hw.mac_cols)
    };
    walk.out.layers.push(LayerTiles {
        layer: name.clone(),
        mnemonic: mnemonic.into(),
        tiles: tl.len(),
    });
    walk.out.jobs.push(Job {
        node: name,
        kind: JobKind::Dot {
            opcode,
            t,
            bufs: [in_loc, w_loc, out.loc(), Loc::start(bb), Loc::start(cb)],
            block: p.block,
            w_group0: 0,
            tiles: tl,
        },
    });
    Ok(())
}

/// The bytes of the largest tensor node `id` (reading `x`) moves across DRAM: an
/// input that comes from there (a graph input, a host op's result) or an output
/// that goes there (a graph output, a host op's operand); 0 when none does.
fn dram_side_bytes<'g>(walk: &Walk<'g>, id: NodeId, x: Value) -> u64 {
    let from_host = |n: NodeId| matches!(walk.g.node(n).op, Op::Nna(NnaOp::Host(_)));
    let bytes = |v: Value| walk.g.value_type(v).shape.iter().product::<usize>() as u64;
    let y = Value::new(id, 0);
    let x_dram = walk.g.inputs().contains(&x.node) || from_host(x.node);
    let y_dram = walk.g.outputs().iter().any(|o| o.value == y)
        || walk.g.users(y).iter().any(|&(u, _)| from_host(u));
    let x_bytes = if x_dram { bytes(x) } else { 0 };
    x_bytes.max(if y_dram { bytes(y) } else { 0 })
}

/// SCALE with pooling (the SCALE instruction has no pooling unit): a depthwise
/// 1x1 CONV with `bias' = b - zp * w`, the same value `(x - zp) * w + b`.
fn scale_as_conv<'g>(
    walk: &mut Walk<'g>,
    id: NodeId,
    s: &ScaleOp,
    pool: &PoolStage,
) -> Result<(), Refusal> {
    let ins = walk.g.node_inputs(id);
    let x = spill::source(walk, ins[0]).ok_or(Refusal::NotActivation { operand: "input" })?;
    let w = int8_codes(walk, ins[1], "scale")?;
    let b = int32_codes(walk, ins[2], "bias")?;
    let c = x.act().c as usize;
    if w.len() != c || b.len() != c {
        return Err(Refusal::ScaleBiasCount {
            scales: w.len(),
            biases: b.len(),
            channels: c,
        });
    }
    let ep = epilogue(&s.epilogue, c)?;
    let zp = i64::from(x.act().zero_point);
    let bias = (0..c)
        .map(|i| {
            let v = i64::from(b[i]) - zp * i64::from(w[i]);
            // |bias'| + |x * w| must stay inside the 30-bit accumulator.
            (v.abs() + 255 * 128 < 1 << 29)
                .then_some(v as i32)
                .ok_or(Refusal::BiasOverflow {
                    channel: i,
                    bias: v,
                })
        })
        .collect::<Result<Vec<i32>, Refusal>>()?;
    let mut t = DotProduct {
        out_h: x.act().h,
        out_w: x.act().w,
        out_c: x.act().c,
        kernel_h: 1,
        kernel_w: 1,
        groups: x.act().c,
        ..dot_base(x.act(), ep.program)?
    };
    pool_fields(&mut t, pool)?;
    let cols = walk.hw.mac_cols as usize;
    let params = DotParams {
        weights: weight_blocks(c, 1, cols, |oc, _| w[oc]),
        bias,
        entries: ep.entries,
        block: u32_of(cols, "weight block")?,
    };
    finish_dot(
        walk,
        id,
        DotOpcode::Conv,
        (t, params),
        (ins[0], x),
        true,
        Alternative::None,
    )
}

pub(crate) fn scale<'g>(walk: &mut Walk<'g>, id: NodeId, s: &ScaleOp) -> Result<(), Refusal> {
    if let Some(p) = &s.pool {
        return scale_as_conv(walk, id, s, p);
    }
    let ins = walk.g.node_inputs(id);
    let name = walk.g.node(id).name.clone();
    let xs = spill::source(walk, ins[0]).ok_or(Refusal::NotActivation { operand: "input" })?;
    let xa = xs.act().clone();
    let w = int32_codes(walk, ins[1], "scale")?;
    let b = int32_codes(walk, ins[2], "bias")?;
    let c = xa.c as usize;
    let ep = epilogue(&s.epilogue, c)?;
    if w.len() != c || b.len() != c {
        return Err(Refusal::ScaleBiasCount {
            scales: w.len(),
            biases: b.len(),
            channels: c,
        });
    }
    // SIMD: r0 = (x - zp) * C2 + C3, then the epilogue (C0 / C1).
    let simd: Vec<SimdInstr> = scale_prefix().into_iter().chain(ep.program).collect();
    let entries: Vec<[i32; 4]> = (0..c)
        .map(|i| [ep.entries[i][0], ep.entries[i][1], w[i], b[i]])
        .collect();
    let cb = walk.param(&name, &chan_table(&entries));
    let out = split_px::px_output(walk, id)?;
    let oa = out.act().clone();
    let t = Scale {
        in_zero: i16_of(xa.zero_point, "input zero point")?,
        simd,
        ..crate::base::act::scale_over(&xa, (oa.row_pitch, oa.pix_pitch, oa.chan_pitch), oa.signed)
    };
    if walk.out.sp.px_split {
        let (tp, tc) = (walk.tile_pixels, walk.hw.mac_cols);
        return split_px::px_split(walk, id, &[xs], out, Some(cb), |rows, l, o| {
            vec![JobKind::Scale {
                t: Scale {
                    h: rows,
                    in_chan_pitch: l[0].chan_pitch,
                    out_chan_pitch: o.chan_pitch,
                    ..t.clone()
                },
                bufs: [l[0].loc, o.loc, Loc::start(cb)],
                tiles: tiles(rows * oa.w, oa.c, tp, tc),
            }]
        });
    }
    let (Src::Sram(x), Src::Sram(out)) = (xs, out) else {
        return Err(Refusal::SpilledOperand {
            op: "an unsplit SCALE",
        });
    };
    let tl = tiles(xa.pixels(), xa.c, walk.tile_pixels, walk.hw.mac_cols);
    walk.out.layers.push(LayerTiles {
        layer: name.clone(),
        mnemonic: "SCALE".into(),
        tiles: tl.len(),
    });
    walk.out.jobs.push(Job {
        node: name,
        kind: JobKind::Scale {
            t,
            bufs: [x.loc(), out.loc(), Loc::start(cb)],
            tiles: tl,
        },
    });
    Ok(())
}

pub(crate) fn eltwise<'g>(walk: &mut Walk<'g>, id: NodeId, e: &EltwiseOp) -> Result<(), Refusal> {
    let ins = walk.g.node_inputs(id);
    let name = walk.g.node(id).name.clone();
    let a_src = spill::source(walk, ins[0]).ok_or(Refusal::NotActivation { operand: "input A" })?;
    let b_src = spill::source(walk, ins[1]).ok_or(Refusal::NotActivation { operand: "input B" })?;
    let (aa, ba) = (a_src.act().clone(), b_src.act().clone());
    let m = e.inputs.as_ref().ok_or(Refusal::EltwiseRescaleMissing)?;
    let fma_add = matches!(e.epilogue.requant, Some(Requant::FmaAdd { .. }));
    if fma_add && (*m != EltwiseRequant::FMA_ADD || e.kind != EltwiseKind::Add) {
        return Err(Refusal::FmaAddInputs);
    }
    let c = aa.c as usize;
    let ep = epilogue(&e.epilogue, c)?;
    let out = split_px::px_output(walk, id)?;
    let oa = out.act().clone();
    // b broadcast over a's pixels (one value per channel): row and pixel pitch 0.
    let (b_row_pitch, b_pix_pitch) = if ba.broadcast_over(&aa) {
        (0, 0)
    } else {
        (ba.row_pitch, ba.pix_pitch)
    };
    let t = Eltwise {
        h: aa.h,
        w: aa.w,
        c: aa.c,
        a_row_pitch: aa.row_pitch,
        a_pix_pitch: aa.pix_pitch,
        a_chan_pitch: aa.chan_pitch,
        b_row_pitch,
        b_pix_pitch,
        b_chan_pitch: ba.chan_pitch,
        out_row_pitch: oa.row_pitch,
        out_pix_pitch: oa.pix_pitch,
        out_chan_pitch: oa.chan_pitch,
        a_signed: aa.signed,
        b_signed: ba.signed,
        out_signed: oa.signed,
        op: match e.kind {
            EltwiseKind::Add => EltOp::Add,
            EltwiseKind::Mul => EltOp::Mul,
            EltwiseKind::Max => EltOp::Max,
        },
        a_zero: i16_of(aa.zero_point, "A zero point")?,
        b_zero: i16_of(ba.zero_point, "B zero point")?,
        a_mult: m.a.mult,
        b_mult: m.b.mult,
        a_shift: u32::from(m.a.shift),
        b_shift: u32::from(m.b.shift),
        simd: ep.program.clone(),
        ..Eltwise::default()
    };
    let in_order = (!walk.out.sp.px_split)
        .then(|| crate::lower::eltwise_hwc::over_memory_order(&t, &aa, &ba, &oa, &ep.entries))
        .flatten();
    let entries = if in_order.is_some() {
        &ep.entries[..1]
    } else {
        &ep.entries[..]
    };
    let cb = walk.param(&name, &chan_table(entries));
    if walk.out.sp.px_split {
        let ins = [a_src, b_src];
        let (tp, tc) = (walk.tile_pixels, walk.hw.mac_cols);
        return split_px::px_split(walk, id, &ins, out, Some(cb), |rows, l, o| {
            vec![JobKind::Eltwise {
                t: Eltwise {
                    h: rows,
                    a_chan_pitch: l[0].chan_pitch,
                    b_chan_pitch: l[1].chan_pitch,
                    out_chan_pitch: o.chan_pitch,
                    ..t.clone()
                },
                bufs: [l[0].loc, l[1].loc, o.loc, Loc::start(cb)],
                tiles: tiles(rows * oa.w, oa.c, tp, tc),
            }]
        });
    }
    let (Src::Sram(a), Src::Sram(b), Src::Sram(out)) = (a_src, b_src, out) else {
        return Err(Refusal::SpilledOperand {
            op: "an unsplit ELTWISE",
        });
    };
    let (t, tl) = match in_order {
        // One "channel" of H*W rows of C: tiles of as many elements as before.
        Some(m) => {
            let per_tile = walk.tile_pixels.saturating_mul(aa.c.min(walk.hw.mac_cols));
            let n = m.h * m.w;
            (m, tiles(n, 1, per_tile.max(1), 1))
        }
        None => (
            t,
            tiles(aa.pixels(), aa.c, walk.tile_pixels, walk.hw.mac_cols),
        ),
    };
    walk.out.layers.push(LayerTiles {
        layer: name.clone(),
        mnemonic: "ELTWISE".into(),
        tiles: tl.len(),
    });
    walk.out.jobs.push(Job {
        node: name,
        kind: JobKind::Eltwise {
            t,
            bufs: [a.loc(), b.loc(), out.loc(), Loc::start(cb)],
            tiles: tl,
        },
    });
    Ok(())
}
