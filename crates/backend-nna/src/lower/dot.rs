//! Lowering of the compute ops: CONV / INNER_PRODUCT with fused pooling, SCALE and
//! ELTWISE. Each builds its parameter buffers, an instruction template and its tiles.

use crate::base::act::Act;
use crate::base::job::{tiles, DotOpcode, Job, JobKind};
use crate::base::params::{acc_bound, chan_table, i32_bytes, weight_blocks};
use crate::base::walk::Walk;
use crate::lower::simd::{epilogue, scale_prefix};
use crate::place::spill::Src;
use crate::place::split::{bands, choose_chunked, Choice, SplitDot};
use nnac_ir::{
    DotKind, DotOp, EltwiseKind, EltwiseOp, Graph, NnaOp, NodeId, Op, PoolKind as IrPool,
    PoolStage, ScaleOp, TensorData, Value,
};
use nnac_isa::checks::DotKind as IsaDot;
use nnac_isa::{DotProduct, EltOp, Eltwise, PoolKind, Scale, SimdInstr};
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

/// Parameter images of one dot-product layer.
pub(crate) struct DotParams {
    pub weights: Vec<u8>,
    pub bias: Vec<i32>,
    pub entries: Vec<[i32; 4]>,
    /// Bytes of one weight block.
    pub block: u32,
}

fn u32_of(v: usize, what: &str) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("{what} {v} too large"))
}

fn i16_of(v: i32, what: &str) -> Result<i16, String> {
    i16::try_from(v).map_err(|_| format!("{what} {v} out of range"))
}

impl<'g> Walk<'g> {
    fn const_codes(&self, v: Value, what: &str) -> Result<Vec<i64>, String> {
        self.g
            .const_of(v)
            .and_then(|t| t.to_i64_vec())
            .ok_or_else(|| format!("{what} is not an integer constant"))
    }

    /// The int8 codes of a constant: borrowed when it is stored as int8 (the weights
    /// quantization wrote), else converted and range-checked.
    fn int8_codes(&self, v: Value, what: &str) -> Result<Cow<'g, [i8]>, String> {
        let g: &'g Graph = self.g;
        if let Some(TensorData::I8(w)) = g.const_of(v).map(|t| &t.data) {
            return Ok(Cow::Borrowed(w));
        }
        self.const_codes(v, what)?
            .into_iter()
            .map(|x| i8::try_from(x).map_err(|_| format!("{what} code {x} is not int8")))
            .collect::<Result<Vec<i8>, String>>()
            .map(Cow::Owned)
    }

    fn int32_codes(&self, v: Value, what: &str) -> Result<Vec<i32>, String> {
        self.const_codes(v, what)?
            .into_iter()
            .map(|x| i32::try_from(x).map_err(|_| format!("{what} value {x} is not int32")))
            .collect()
    }

    /// The instruction template of dot `id` over input `x` (its geometry, layout
    /// fields from `x`, pooling), its opcode, int8 weights, int32 bias and epilogue.
    fn dot_parts(&self, id: NodeId, d: &DotOp, x: &Act) -> Result<DotParts<'g>, String> {
        let ins = self.g.node_inputs(id);
        let w = self.int8_codes(ins[1], "weight")?;
        let bias = self.int32_codes(ins[2], "bias")?;
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
                    return Err("deconvolution input zero point is not 0".into());
                }
                deconv_geometry(&mut t, a)?;
                (DotOpcode::Deconv, IsaDot::Deconv)
            }
        };
        let (oh, ow) = t
            .expected_out_hw(isa_kind)
            .ok_or("output geometry is empty")?;
        t.out_h = oh;
        t.out_w = ow;
        if let Some(p) = &d.pool {
            pool_fields(&mut t, p)?;
        }
        let k = (t.in_c / t.groups) as usize * (t.kernel_h * t.kernel_w) as usize;
        if w.len() != out_c * k {
            return Err(format!("{} weights, expected {out_c} x {k}", w.len()));
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
    pub(crate) fn is_channel_pool(&self, id: NodeId) -> bool {
        let Op::Nna(NnaOp::Dot(d)) = &self.g.node(id).op else {
            return false;
        };
        if !matches!(d.kind, DotKind::Conv(_)) {
            return false;
        }
        let Some(&xv) = self.g.node_inputs(id).first() else {
            return false;
        };
        let x = match Act::of(&self.g.node(xv.node).name, self.g.value_type(xv)) {
            Ok(x) => x,
            Err(_) => return false,
        };
        self.dot_parts(id, d, &x)
            .is_ok_and(|p| crate::lower::gap::uniform_global(&p.t, &x, &p.w, &p.bias, &p.entries))
    }

    pub(crate) fn dot(&mut self, id: NodeId, d: &DotOp) -> Result<(), String> {
        let ins = self.g.node_inputs(id);
        let x = self.source(ins[0]).ok_or("input is not an activation")?;
        let DotParts {
            t,
            opcode,
            w,
            bias,
            entries,
            k,
        } = self.dot_parts(id, d, x.act())?;
        let out_c = bias.len();
        let cols = self.hw.mac_cols as usize;
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
        let params = DotParams {
            weights: wbytes,
            bias,
            entries,
            block: u32_of(k * cols, "weight block")?,
        };
        self.finish_dot(id, opcode, (t, params), (ins[0], x), d.pool.is_some(), gap)
    }

    /// Loads the parameters, places the output and pushes the tiled job; a layer
    /// whose working set exceeds its SRAM budget is split (`split.rs`). `gap` is the
    /// channels-as-pixels form of a global pool (`gap.rs`), used when no split is
    /// needed.
    fn finish_dot(
        &mut self,
        id: NodeId,
        opcode: DotOpcode,
        (mut t, p): (DotProduct, DotParams),
        (xv, x): (Value, Src),
        pooled: bool,
        gap: Option<(DotProduct, DotParams)>,
    ) -> Result<(), String> {
        let name = self.g.node(id).name.clone();
        let cols = self.hw.mac_cols as usize;
        let k = p.block as usize / cols;
        let xmax = if t.in_signed { 128 } else { 255 };
        let bound = acc_bound(&p.weights, t.out_c as usize, k, cols, &p.bias, xmax);
        if bound >= 1i64 << (self.hw.acc_bits - 1) {
            self.out.acc_risk.push(name.clone());
        }
        let mnemonic = match opcode {
            DotOpcode::Conv => "CONV",
            DotOpcode::Deconv => "DECONV",
            DotOpcode::Inner => "INNER_PRODUCT",
        };
        if let Some(sizes) = self.split_sizes(id, &t, opcode, &x, &p)? {
            let out = self.split_output(id)?;
            check_stored(&t, out.act())?;
            out_fields(&mut t, out.act())?;
            let budget = self.out.sp.plan.budget_of(id, self.hw.sram_bytes);
            let chunk = self.out.sp.plan.weight_chunk;
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
            return self.dot_split(d, x, out, choice, mnemonic);
        }
        let is_gap = gap.is_some();
        let (mut t, p) = gap.unwrap_or((t, p));
        self.materialize(id, xv);
        let x = self.use_value(xv).ok_or("input is not an activation")?;
        let wb = self.param(&name, &p.weights);
        let bb = self.param(&name, &i32_bytes(&p.bias));
        let cb = self.param(&name, &chan_table(&p.entries));
        let out = self.define(id).map_err(|e| e.detail())?;
        if is_gap {
            crate::lower::gap::out_fields(&mut t, &out.act)?;
        } else {
            check_stored(&t, &out.act)?;
            out_fields(&mut t, &out.act)?;
        }
        if pooled && !crate::schedule::seq_tiles::whole_fits(&t, opcode, self.hw.mac_rows) {
            let bufs = [x.loc(), (wb, 0), out.loc(), (bb, 0), (cb, 0)];
            return self.pool_apart(&name, opcode, t, bufs, &out.act, p.block, mnemonic);
        }
        let pixels = t.out_h * t.out_w;
        let tl = if pooled {
            // One pixel tile (every pooled window lies inside it), or bands of pooled
            // rows when a DRAM transfer can overlap them (`pool_bands.rs`).
            let n = if self.dram_side_bytes(id, xv) >= crate::lower::pool_bands::MIN_DMA_BYTES {
                crate::lower::pool_bands::count(&t, self.hw.mac_rows)
            } else {
                1
            };
            let (rows, cols) = (self.hw.mac_rows, self.hw.mac_cols);
            crate::lower::pool_bands::tiles_in_bands(&t, opcode, n, rows, cols)
        } else {
            tiles(pixels, t.out_c, self.tile_pixels, self.hw.mac_cols)
        };
        self.out
            .layers
            .push((name.clone(), mnemonic.into(), tl.len()));
        self.out.jobs.push(Job {
            node: name,
            kind: JobKind::Dot {
                opcode,
                t,
                bufs: [x.loc(), (wb, 0), out.loc(), (bb, 0), (cb, 0)],
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
    fn dram_side_bytes(&self, id: NodeId, x: Value) -> u64 {
        let from_host = |n: NodeId| matches!(self.g.node(n).op, Op::Nna(NnaOp::Host(_)));
        let bytes = |v: Value| self.g.value_type(v).shape.iter().product::<usize>() as u64;
        let y = Value::new(id, 0);
        let x_dram = self.g.inputs().contains(&x.node) || from_host(x.node);
        let y_dram = self.g.outputs().iter().any(|o| o.value == y)
            || self.g.users(y).iter().any(|&(u, _)| from_host(u));
        let x_bytes = if x_dram { bytes(x) } else { 0 };
        x_bytes.max(if y_dram { bytes(y) } else { 0 })
    }

    /// SCALE with pooling (the SCALE instruction has no pooling unit): a depthwise
    /// 1x1 CONV with `bias' = b - zp * w`, the same value `(x - zp) * w + b`.
    fn scale_as_conv(&mut self, id: NodeId, s: &ScaleOp, pool: &PoolStage) -> Result<(), String> {
        let ins = self.g.node_inputs(id);
        let x = self.source(ins[0]).ok_or("input is not an activation")?;
        let w = self.int8_codes(ins[1], "scale")?;
        let b = self.int32_codes(ins[2], "bias")?;
        let c = x.act().c as usize;
        if w.len() != c || b.len() != c {
            return Err(format!(
                "{} scales / {} biases for {c} channels",
                w.len(),
                b.len()
            ));
        }
        let ep = epilogue(&s.epilogue, c)?;
        let zp = i64::from(x.act().zero_point);
        let bias = (0..c)
            .map(|i| {
                let v = i64::from(b[i]) - zp * i64::from(w[i]);
                // |bias'| + |x * w| must stay inside the 30-bit accumulator.
                (v.abs() + 255 * 128 < 1 << 29)
                    .then_some(v as i32)
                    .ok_or_else(|| format!("channel {i}: bias {v} too large for the accumulator"))
            })
            .collect::<Result<Vec<i32>, String>>()?;
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
        let cols = self.hw.mac_cols as usize;
        let params = DotParams {
            weights: weight_blocks(c, 1, cols, |oc, _| w[oc]),
            bias,
            entries: ep.entries,
            block: u32_of(cols, "weight block")?,
        };
        self.finish_dot(id, DotOpcode::Conv, (t, params), (ins[0], x), true, None)
    }

    pub(crate) fn scale(&mut self, id: NodeId, s: &ScaleOp) -> Result<(), String> {
        if let Some(p) = &s.pool {
            return self.scale_as_conv(id, s, p);
        }
        let ins = self.g.node_inputs(id);
        let name = self.g.node(id).name.clone();
        let xs = self.source(ins[0]).ok_or("input is not an activation")?;
        let xa = xs.act().clone();
        let w = self.int32_codes(ins[1], "scale")?;
        let b = self.int32_codes(ins[2], "bias")?;
        let c = xa.c as usize;
        let ep = epilogue(&s.epilogue, c)?;
        if w.len() != c || b.len() != c {
            return Err(format!(
                "{} scales / {} biases for {c} channels",
                w.len(),
                b.len()
            ));
        }
        // SIMD: r0 = (x - zp) * C2 + C3, then the epilogue (C0 / C1).
        let simd: Vec<SimdInstr> = scale_prefix().into_iter().chain(ep.program).collect();
        let entries: Vec<[i32; 4]> = (0..c)
            .map(|i| [ep.entries[i][0], ep.entries[i][1], w[i], b[i]])
            .collect();
        let cb = self.param(&name, &chan_table(&entries));
        let out = self.px_output(id)?;
        let oa = out.act().clone();
        let t = Scale {
            in_zero: i16_of(xa.zero_point, "input zero point")?,
            simd,
            ..crate::base::act::scale_over(
                &xa,
                (oa.row_pitch, oa.pix_pitch, oa.chan_pitch),
                oa.signed,
            )
        };
        if self.out.sp.px_split {
            let (tp, tc) = (self.tile_pixels, self.hw.mac_cols);
            return self.px_split(id, &[xs], out, Some(cb), |rows, l, o| {
                vec![JobKind::Scale {
                    t: Scale {
                        h: rows,
                        in_chan_pitch: l[0].1,
                        out_chan_pitch: o.1,
                        ..t.clone()
                    },
                    bufs: [l[0].0, o.0, (cb, 0)],
                    tiles: tiles(rows * oa.w, oa.c, tp, tc),
                }]
            });
        }
        let (Src::Sram(x), Src::Sram(out)) = (xs, out) else {
            return Err("spilled operand of an unsplit SCALE".into());
        };
        let tl = tiles(xa.pixels(), xa.c, self.tile_pixels, self.hw.mac_cols);
        self.out
            .layers
            .push((name.clone(), "SCALE".into(), tl.len()));
        self.out.jobs.push(Job {
            node: name,
            kind: JobKind::Scale {
                t,
                bufs: [x.loc(), out.loc(), (cb, 0)],
                tiles: tl,
            },
        });
        Ok(())
    }

    pub(crate) fn eltwise(&mut self, id: NodeId, e: &EltwiseOp) -> Result<(), String> {
        let ins = self.g.node_inputs(id);
        let name = self.g.node(id).name.clone();
        let a_src = self.source(ins[0]).ok_or("input A is not an activation")?;
        let b_src = self.source(ins[1]).ok_or("input B is not an activation")?;
        let (aa, ba) = (a_src.act().clone(), b_src.act().clone());
        let m = e.inputs.as_ref().ok_or("eltwise input rescaling missing")?;
        let c = aa.c as usize;
        let ep = epilogue(&e.epilogue, c)?;
        let out = self.px_output(id)?;
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
        let in_order = (!self.out.sp.px_split)
            .then(|| crate::lower::eltwise_hwc::over_memory_order(&t, &aa, &ba, &oa, &ep.entries))
            .flatten();
        let entries = if in_order.is_some() {
            &ep.entries[..1]
        } else {
            &ep.entries[..]
        };
        let cb = self.param(&name, &chan_table(entries));
        if self.out.sp.px_split {
            let ins = [a_src, b_src];
            let (tp, tc) = (self.tile_pixels, self.hw.mac_cols);
            return self.px_split(id, &ins, out, Some(cb), |rows, l, o| {
                vec![JobKind::Eltwise {
                    t: Eltwise {
                        h: rows,
                        a_chan_pitch: l[0].1,
                        b_chan_pitch: l[1].1,
                        out_chan_pitch: o.1,
                        ..t.clone()
                    },
                    bufs: [l[0].0, l[1].0, o.0, (cb, 0)],
                    tiles: tiles(rows * oa.w, oa.c, tp, tc),
                }]
            });
        }
        let (Src::Sram(a), Src::Sram(b), Src::Sram(out)) = (a_src, b_src, out) else {
            return Err("spilled operand of an unsplit ELTWISE".into());
        };
        let (t, tl) = match in_order {
            // One "channel" of H*W rows of C: tiles of as many elements as before.
            Some(m) => {
                let per_tile = self.tile_pixels.saturating_mul(aa.c.min(self.hw.mac_cols));
                let n = m.h * m.w;
                (m, tiles(n, 1, per_tile.max(1), 1))
            }
            None => (
                t,
                tiles(aa.pixels(), aa.c, self.tile_pixels, self.hw.mac_cols),
            ),
        };
        self.out
            .layers
            .push((name.clone(), "ELTWISE".into(), tl.len()));
        self.out.jobs.push(Job {
            node: name,
            kind: JobKind::Eltwise {
                t,
                bufs: [a.loc(), b.loc(), out.loc(), (cb, 0)],
                tiles: tl,
            },
        });
        Ok(())
    }
}

/// The stored (pooled) output of `t` must be the IR output `a`.
fn check_stored(t: &DotProduct, a: &Act) -> Result<(), String> {
    if t.stored_hw() != Some((a.h, a.w)) {
        return Err(format!(
            "stored output {:?} differs from the IR output {}x{}",
            t.stored_hw(),
            a.h,
            a.w
        ));
    }
    Ok(())
}

/// The output layout fields of `t` for output activation `a`.
pub(crate) fn out_fields(t: &mut DotProduct, a: &Act) -> Result<(), String> {
    t.out_row_pitch = a.row_pitch;
    t.out_pix_pitch = a.pix_pitch;
    t.out_chan_pitch = a.chan_pitch;
    t.out_signed = a.signed;
    t.out_zero = i16_of(a.zero_point, "output zero point")?;
    Ok(())
}

fn conv_geometry(t: &mut DotProduct, a: &nnac_ir::ConvAttrs) -> Result<(), String> {
    let two = |v: &[usize], what: &str| -> Result<[u32; 2], String> {
        match v {
            [p, q] => Ok([u32_of(*p, what)?, u32_of(*q, what)?]),
            _ => Err(format!("{what} {v:?} is not 2-D")),
        }
    };
    [t.kernel_h, t.kernel_w] = two(&a.kernel, "kernel")?;
    [t.stride_h, t.stride_w] = two(&a.strides, "strides")?;
    [t.dil_h, t.dil_w] = two(&a.dilations, "dilations")?;
    let [pt, pl] = two(a.pads.get(..2).unwrap_or(&[]), "pads")?;
    let [pb, pr] = two(a.pads.get(2..).unwrap_or(&[]), "pads")?;
    (t.pad_top, t.pad_left, t.pad_bottom, t.pad_right) = (pt, pl, pb, pr);
    t.groups = u32_of(a.group, "group")?;
    let geometry = [
        ("kernel_h", t.kernel_h),
        ("kernel_w", t.kernel_w),
        ("stride_h", t.stride_h),
        ("stride_w", t.stride_w),
        ("dil_h", t.dil_h),
        ("dil_w", t.dil_w),
        ("pad_top", t.pad_top),
        ("pad_left", t.pad_left),
        ("pad_bottom", t.pad_bottom),
        ("pad_right", t.pad_right),
    ];
    geometry.iter().try_for_each(|&(f, v)| in_field(f, v))
}

/// Whether `v` fits the dot-product instructions' field `name` (docs/ISA.md's range):
/// a kernel, stride, dilation or pad beyond it is a layer the NNA cannot run.
fn in_field(name: &str, v: u32) -> Result<(), String> {
    let spec = DotProduct::FIELDS
        .iter()
        .find(|f| f.name == name)
        .expect("a dot-product field");
    if (spec.min..=spec.max).contains(&i64::from(v)) {
        Ok(())
    } else {
        Err(format!(
            "{name} {v} is beyond the dot-product instructions' {}..={}",
            spec.min, spec.max
        ))
    }
}

/// Transposed convolution: `output_padding` is folded into the bottom/right pads
/// (docs/ISA.md's DECONV output size has no output padding of its own).
fn deconv_geometry(t: &mut DotProduct, a: &nnac_ir::ConvTransposeAttrs) -> Result<(), String> {
    let c = nnac_ir::ConvAttrs {
        kernel: a.kernel.clone(),
        strides: a.strides.clone(),
        pads: a.pads.clone(),
        dilations: a.dilations.clone(),
        group: a.group,
    };
    conv_geometry(t, &c)?;
    let op = |i: usize| a.output_padding.get(i).copied().unwrap_or(0) as u32;
    t.pad_bottom = t
        .pad_bottom
        .checked_sub(op(0))
        .ok_or("output_padding larger than the bottom pad")?;
    t.pad_right = t
        .pad_right
        .checked_sub(op(1))
        .ok_or("output_padding larger than the right pad")?;
    Ok(())
}

/// Maps the IR pool stage to the pooling unit's fields (square window, equal strides;
/// ceil mode only where it needs no extra padding, or for max pooling one extra row
/// / column of padding, which max pooling ignores).
fn pool_fields(t: &mut DotProduct, p: &PoolStage) -> Result<(), String> {
    if p.kernel[0] != p.kernel[1] || p.strides[0] != p.strides[1] {
        return Err(format!("pool {:?}/{:?} is not square", p.kernel, p.strides));
    }
    t.pool = match p.kind {
        IrPool::Max => PoolKind::Max,
        IrPool::Avg => PoolKind::Avg,
    };
    t.pool_win = u32_of(p.kernel[0], "pool window")?;
    t.pool_stride = u32_of(p.strides[0], "pool stride")?;
    t.pool_count_pad = p.count_include_pad;
    t.pool_pad_top = u32_of(p.pads[0], "pool pad")?;
    t.pool_pad_left = u32_of(p.pads[1], "pool pad")?;
    t.pool_pad_bottom = u32_of(p.pads[2], "pool pad")?;
    t.pool_pad_right = u32_of(p.pads[3], "pool pad")?;
    let want = p
        .out_hw(t.out_h as usize, t.out_w as usize)
        .ok_or("pool window larger than its input")?;
    let (h, w) = t.stored_hw().ok_or("pool window larger than its input")?;
    if (h as usize, w as usize) != (want[0], want[1]) {
        if p.kind != IrPool::Max {
            return Err("ceil-mode average pooling".into());
        }
        let extra = |want: usize, got: u32| {
            want.checked_sub(got as usize)
                .map(|e| e as u32)
                .ok_or("pool output smaller than the floor rule")
        };
        t.pool_pad_bottom += extra(want[0], h)?;
        t.pool_pad_right += extra(want[1], w)?;
    }
    if t.pool_pad_bottom > 2 || t.pool_pad_right > 2 || t.pool_pad_top > 2 || t.pool_pad_left > 2 {
        return Err("pool padding beyond 2".into());
    }
    Ok(())
}

/// The fields every dot-product instruction over activation `x` shares: its input
/// tensor, int8 weights, int32 bias, the input zero point, the SIMD program, and
/// unit stride, dilation and groups (callers override what differs).
pub(crate) fn dot_base(x: &Act, simd: Vec<SimdInstr>) -> Result<DotProduct, String> {
    Ok(DotProduct {
        in_h: x.h,
        in_w: x.w,
        in_c: x.c,
        in_row_pitch: x.row_pitch,
        in_pix_pitch: x.pix_pitch,
        in_chan_pitch: x.chan_pitch,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        groups: 1,
        in_signed: x.signed,
        w_signed: true,
        bias_en: true,
        in_zero: i16_of(x.zero_point, "input zero point")?,
        simd,
        ..DotProduct::default()
    })
}
