//! Decoding of the op attribute records written by [`crate::op_text`]: every
//! attribute must be present exactly once, with the right type.

use crate::op_text::{derr, AVal, DecodeError, Rec, COORDS, D, NEAREST_MODES};
use crate::{
    Activation, BinaryOp, ConstId, ConvAttrs, ConvTransposeAttrs, DotKind, DotOp, EltwiseKind,
    EltwiseOp, EltwiseRequant, Epilogue, FusedAct, GemmAttrs, Multiplier, NnaOp, Op, PoolAttrs,
    PoolKind, PoolStage, QdqAttrs, Quant, Requant, ResizeAttrs, ResizeMode, ScaleOp,
};

/// A record being decoded: every entry must be used exactly once.
struct Fields {
    rec: Rec,
    used: Vec<bool>,
    what: String,
}

impl Fields {
    fn new(rec: Rec, what: &str) -> Fields {
        let used = vec![false; rec.entries.len()];
        Fields {
            rec,
            used,
            what: what.to_string(),
        }
    }

    fn take(&mut self, key: &str) -> D<AVal> {
        match self.rec.entries.iter().position(|(k, _, _)| k == key) {
            Some(i) => {
                self.used[i] = true;
                Ok(self.rec.entries[i].2.clone())
            }
            None => derr(
                self.rec.pos,
                format!("{} is missing attribute '{key}'", self.what),
            ),
        }
    }

    fn finish(self) -> D<()> {
        match self.used.iter().position(|u| !u) {
            Some(i) => {
                let (k, pos, _) = &self.rec.entries[i];
                derr(*pos, format!("{} has no attribute '{k}'", self.what))
            }
            None => Ok(()),
        }
    }

    fn usize(&mut self, key: &str) -> D<usize> {
        as_int(&self.take(key)?)
    }
    fn f32(&mut self, key: &str) -> D<f32> {
        as_f32(&self.take(key)?)
    }
    fn bool(&mut self, key: &str) -> D<bool> {
        as_bool(&self.take(key)?)
    }
    fn i32(&mut self, key: &str) -> D<i32> {
        as_int(&self.take(key)?)
    }
    fn usizes(&mut self, key: &str) -> D<Vec<usize>> {
        list(&self.take(key)?, as_int)
    }
    fn f32s(&mut self, key: &str) -> D<Vec<f32>> {
        list(&self.take(key)?, as_f32)
    }
    fn array<const N: usize>(&mut self, key: &str) -> D<[usize; N]> {
        let v = self.take(key)?;
        let items: Vec<usize> = list(&v, as_int)?;
        items
            .try_into()
            .or_else(|_| derr(pos_of(&v), format!("'{key}' needs exactly {N} values")))
    }
}

fn pos_of(v: &AVal) -> usize {
    match v {
        AVal::Num(_, p) | AVal::List(_, p) => *p,
        AVal::Word(_, r) => r.pos,
    }
}

fn as_int<T: std::str::FromStr>(v: &AVal) -> D<T> {
    match v {
        AVal::Num(s, p) => s.parse().or_else(|_| {
            derr(
                *p,
                format!("'{s}' is not a valid {}", std::any::type_name::<T>()),
            )
        }),
        _ => derr(pos_of(v), "expected an integer"),
    }
}

fn as_f32(v: &AVal) -> D<f32> {
    match v {
        AVal::Num(s, p) => s
            .parse()
            .or_else(|_| derr(*p, format!("'{s}' is not a number"))),
        AVal::Word(w, r) if r.entries.is_empty() && matches!(w.as_str(), "inf" | "NaN") => {
            Ok(w.parse().unwrap_or(f32::NAN))
        }
        _ => derr(pos_of(v), "expected a number"),
    }
}

fn as_bool(v: &AVal) -> D<bool> {
    match word(v)? {
        "true" => Ok(true),
        "false" => Ok(false),
        w => derr(pos_of(v), format!("expected true or false, found '{w}'")),
    }
}

/// A plain word (no record).
fn word(v: &AVal) -> D<&str> {
    match v {
        AVal::Word(w, r) if r.entries.is_empty() => Ok(w),
        _ => derr(pos_of(v), "expected a word"),
    }
}

fn list<T>(v: &AVal, f: impl Fn(&AVal) -> D<T>) -> D<Vec<T>> {
    match v {
        AVal::List(items, _) => items.iter().map(f).collect(),
        _ => derr(pos_of(v), "expected a list [...]"),
    }
}

fn from_table<T: Copy>(table: &[(T, &'static str)], v: &AVal) -> D<T> {
    let w = word(v)?;
    table
        .iter()
        .find(|(_, n)| *n == w)
        .map(|(x, _)| *x)
        .ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|(_, n)| *n).collect();
            DecodeError {
                pos: pos_of(v),
                msg: format!("'{w}' is not one of {}", names.join(", ")),
            }
        })
}

/// Builds the op named `mnemonic` from its attribute record.
pub(crate) fn decode(mnemonic: &str, rec: Rec) -> D<Op> {
    let pos = rec.pos;
    let mut f = Fields::new(rec, &format!("op '{mnemonic}'"));
    let op = match mnemonic {
        "input" => Op::Input,
        "const" => Op::Constant(ConstId(as_int(&f.take("id")?)?)),
        "conv" => Op::Conv(conv_from(&mut f)?),
        "conv_transpose" => Op::ConvTranspose(deconv_from(&mut f)?),
        "gemm" => Op::Gemm(GemmAttrs {
            alpha: f.f32("alpha")?,
            beta: f.f32("beta")?,
            trans_a: f.bool("trans_a")?,
            trans_b: f.bool("trans_b")?,
        }),
        "matmul" => Op::MatMul,
        "batch_norm" => Op::BatchNorm {
            epsilon: f.f32("epsilon")?,
        },
        "prelu" => Op::PRelu,
        "concat" => Op::Concat {
            axis: f.usize("axis")?,
        },
        "max_pool" => Op::Pool(pool_from(&mut f, PoolKind::Max)?),
        "avg_pool" => Op::Pool(pool_from(&mut f, PoolKind::Avg)?),
        "global_max_pool" => Op::GlobalPool(PoolKind::Max),
        "global_avg_pool" => Op::GlobalPool(PoolKind::Avg),
        "reshape" => Op::Reshape {
            shape: f.usizes("shape")?,
        },
        "transpose" => Op::Transpose {
            perm: f.usizes("perm")?,
        },
        "slice" => Op::Slice {
            axes: f.usizes("axes")?,
            starts: f.usizes("starts")?,
            ends: f.usizes("ends")?,
        },
        "strided_slice" => Op::StridedSlice {
            axes: f.usizes("axes")?,
            starts: f.usizes("starts")?,
            ends: f.usizes("ends")?,
            steps: f.usizes("steps")?,
        },
        "softmax" => Op::Softmax {
            axis: f.usize("axis")?,
        },
        "resize" => Op::Resize(resize_from(&mut f)?),
        "pad" => Op::Pad {
            pads: f.usizes("pads")?,
            value: f.f32("value")?,
        },
        "lrn" => Op::Lrn {
            size: f.usize("size")?,
            alpha: f.f32("alpha")?,
            beta: f.f32("beta")?,
            bias: f.f32("bias")?,
        },
        "power" => Op::Power {
            power: f.f32("power")?,
            scale: f.f32("scale")?,
            shift: f.f32("shift")?,
        },
        "identity" => Op::Identity,
        "quantize" => Op::Quantize(qdq_from(&mut f)?),
        "dequantize" => Op::Dequantize(qdq_from(&mut f)?),
        m if m.starts_with("nna.") => Op::Nna(nna_from(m, &mut f, pos)?),
        m => {
            if let Some(b) = binary_from(m) {
                Op::Binary(b)
            } else if let Some(a) = act_from(m, &mut f)? {
                Op::Act(a)
            } else {
                return derr(pos, format!("unknown op '{m}'"));
            }
        }
    };
    f.finish()?;
    Ok(op)
}

/// The quantization tagged `kind` (`q` or `qc`).
pub(crate) fn decode_quant(kind: &str, rec: Rec) -> D<Quant> {
    let pos = rec.pos;
    let mut f = Fields::new(rec, &format!("quantization '{kind}'"));
    let q = match kind {
        "q" => Quant::PerTensor {
            scale: f.f32("scale")?,
            zero_point: f.i32("zero_point")?,
        },
        "qc" => Quant::PerChannel {
            axis: f.usize("axis")?,
            scales: f.f32s("scales")?,
        },
        _ => return derr(pos, format!("unknown quantization '{kind}'")),
    };
    f.finish()?;
    Ok(q)
}

fn binary_from(m: &str) -> Option<BinaryOp> {
    use BinaryOp::*;
    [Add, Sub, Mul, Div, Max, Min]
        .into_iter()
        .find(|b| b.mnemonic() == m)
}

/// The activation named `m` (attributes from `f`), `None` if `m` is not one.
/// `op=add|mul|max` of an `nna.eltwise`.
fn eltwise_kind_from(v: &AVal) -> D<EltwiseKind> {
    let w = word(v)?;
    EltwiseKind::ALL
        .into_iter()
        .find(|k| k.mnemonic() == w)
        .map_or_else(
            || {
                derr(
                    pos_of(v),
                    format!("eltwise op must be add, mul or max, found '{w}'"),
                )
            },
            Ok,
        )
}

fn act_from(m: &str, f: &mut Fields) -> D<Option<Activation>> {
    Ok(Some(match m {
        "relu" => Activation::Relu,
        "leaky_relu" => Activation::LeakyRelu {
            alpha: f.f32("alpha")?,
        },
        "clip" => Activation::Clip {
            min: f.f32("min")?,
            max: f.f32("max")?,
        },
        "sigmoid" => Activation::Sigmoid,
        "tanh" => Activation::Tanh,
        "hard_sigmoid" => Activation::HardSigmoid {
            alpha: f.f32("alpha")?,
            beta: f.f32("beta")?,
        },
        "hard_swish" => Activation::HardSwish,
        "silu" => Activation::Silu,
        _ => return Ok(None),
    }))
}

fn qdq_from(f: &mut Fields) -> D<QdqAttrs> {
    let axis = f.take("axis")?;
    let axis = match &axis {
        AVal::Word(w, r) if w == "none" && r.entries.is_empty() => None,
        v => Some(as_int(v)?),
    };
    let scales = f.f32s("scales")?;
    let zero_points = list(&f.take("zero_points")?, as_int)?;
    let dt = f.take("dtype")?;
    let dtype = crate::DType::from_name(word(&dt)?)
        .map_or_else(|| derr(pos_of(&dt), "unknown dtype"), Ok)?;
    Ok(QdqAttrs {
        axis,
        scales,
        zero_points,
        dtype,
    })
}

fn conv_from(f: &mut Fields) -> D<ConvAttrs> {
    Ok(ConvAttrs {
        kernel: f.usizes("kernel")?,
        strides: f.usizes("strides")?,
        pads: f.usizes("pads")?,
        dilations: f.usizes("dilations")?,
        group: f.usize("group")?,
    })
}

fn deconv_from(f: &mut Fields) -> D<ConvTransposeAttrs> {
    Ok(ConvTransposeAttrs {
        kernel: f.usizes("kernel")?,
        strides: f.usizes("strides")?,
        pads: f.usizes("pads")?,
        dilations: f.usizes("dilations")?,
        output_padding: f.usizes("output_padding")?,
        group: f.usize("group")?,
    })
}

fn pool_from(f: &mut Fields, kind: PoolKind) -> D<PoolAttrs> {
    Ok(PoolAttrs {
        kind,
        kernel: f.usizes("kernel")?,
        strides: f.usizes("strides")?,
        pads: f.usizes("pads")?,
        dilations: f.usizes("dilations")?,
        ceil_mode: f.bool("ceil_mode")?,
        count_include_pad: f.bool("count_include_pad")?,
    })
}

fn resize_from(f: &mut Fields) -> D<ResizeAttrs> {
    let mode = match f.take("mode")? {
        AVal::Word(w, r) if w == "linear" && r.entries.is_empty() => ResizeMode::Linear,
        AVal::Word(w, r) if w == "nearest" => {
            let mut g = Fields::new(r, "resize mode 'nearest'");
            let m = from_table(&NEAREST_MODES, &g.take("round")?)?;
            g.finish()?;
            ResizeMode::Nearest(m)
        }
        v => {
            return derr(
                pos_of(&v),
                "resize mode must be linear or nearest{round=...}",
            )
        }
    };
    Ok(ResizeAttrs {
        mode,
        coord: from_table(&COORDS, &f.take("coord")?)?,
        sizes: f.usizes("sizes")?,
        scales: f.f32s("scales")?,
    })
}

fn nna_from(m: &str, f: &mut Fields, pos: usize) -> D<NnaOp> {
    let dot = |kind: DotKind, f: &mut Fields| -> D<NnaOp> {
        Ok(NnaOp::Dot(DotOp {
            kind,
            epilogue: epilogue_from(f)?,
            pool: pool_stage_from(&f.take("pool")?)?,
        }))
    };
    match m {
        "nna.conv" => {
            let a = conv_from(f)?;
            dot(DotKind::Conv(a), f)
        }
        "nna.deconv" => {
            let a = deconv_from(f)?;
            dot(DotKind::Deconv(a), f)
        }
        "nna.inner" => dot(DotKind::Inner, f),
        "nna.scale" => Ok(NnaOp::Scale(ScaleOp {
            epilogue: epilogue_from(f)?,
            pool: pool_stage_from(&f.take("pool")?)?,
        })),
        "nna.eltwise" => {
            let kind = eltwise_kind_from(&f.take("op")?)?;
            let epilogue = epilogue_from(f)?;
            let inputs = match f.take("inputs")? {
                AVal::Word(w, r) if w == "none" && r.entries.is_empty() => None,
                AVal::Word(w, r) if w == "requant" => {
                    let mut g = Fields::new(r, "eltwise input requantization");
                    let (a, b) = (mult_from(&g.take("a")?)?, mult_from(&g.take("b")?)?);
                    g.finish()?;
                    Some(EltwiseRequant { a, b })
                }
                v => return derr(pos_of(&v), "eltwise inputs must be none or requant{...}"),
            };
            Ok(NnaOp::Eltwise(EltwiseOp {
                kind,
                epilogue,
                inputs,
            }))
        }
        "nna.concat" => Ok(NnaOp::Concat {
            axis: f.usize("axis")?,
        }),
        "nna.channel_shuffle" => Ok(NnaOp::ChannelShuffle {
            groups: f.usize("groups")?,
        }),
        "nna.upsample" => Ok(NnaOp::Upsample {
            factors: f.array::<2>("factors")?,
        }),
        "nna.host" => match f.take("op")? {
            AVal::Word(inner, r) => Ok(NnaOp::Host(Box::new(decode(&inner, r)?))),
            v => derr(pos_of(&v), "nna.host needs op=<op>{...}"),
        },
        _ => derr(pos, format!("unknown op '{m}'")),
    }
}

fn epilogue_from(f: &mut Fields) -> D<Epilogue> {
    let act = match f.take("act")? {
        AVal::Word(w, r) if w == "none" && r.entries.is_empty() => None,
        AVal::Word(w, r) if w == "prelu" => {
            let mut g = Fields::new(r, "fused prelu");
            let s = g.f32s("slopes")?;
            g.finish()?;
            Some(FusedAct::PRelu(s))
        }
        AVal::Word(w, r) => {
            let pos = r.pos;
            let mut g = Fields::new(r, &format!("activation '{w}'"));
            let Some(a) = act_from(&w, &mut g)? else {
                return derr(pos, format!("'{w}' is not an activation"));
            };
            g.finish()?;
            Some(FusedAct::Act(a))
        }
        v => return derr(pos_of(&v), "act must be none or an activation"),
    };
    let requant = match f.take("requant")? {
        AVal::Word(w, r) if w == "none" && r.entries.is_empty() => None,
        AVal::Word(w, r) if w == "int" => {
            let mut g = Fields::new(r, "int requantization");
            let mult = list(&g.take("mult")?, mult_from)?;
            let (zero_point, lo, hi) = (g.i32("zero_point")?, g.i32("lo")?, g.i32("hi")?);
            g.finish()?;
            Some(Requant::Int {
                mult,
                zero_point,
                lo,
                hi,
            })
        }
        AVal::Word(w, r) if w == "float" => {
            let mut g = Fields::new(r, "float requantization");
            let in_scale = g.f32s("in_scale")?;
            let inv_out_scale = g.f32("inv_out_scale")?;
            let (zero_point, lo, hi) = (g.i32("zero_point")?, g.i32("lo")?, g.i32("hi")?);
            g.finish()?;
            Some(Requant::Float {
                in_scale,
                inv_out_scale,
                zero_point,
                lo,
                hi,
            })
        }
        v => return derr(pos_of(&v), "requant must be none, int{...} or float{...}"),
    };
    Ok(Epilogue { act, requant })
}

fn mult_from(v: &AVal) -> D<Multiplier> {
    match v {
        AVal::List(items, p) if items.len() == 2 => Ok(Multiplier {
            mult: as_int(&items[0])?,
            shift: as_int(&items[1])?,
        }),
        _ => derr(pos_of(v), "a multiplier is [mult, shift]"),
    }
}

fn pool_stage_from(v: &AVal) -> D<Option<PoolStage>> {
    let (w, r) = match v {
        AVal::Word(w, r) => (w.as_str(), r),
        _ => return derr(pos_of(v), "pool must be none, max{...} or avg{...}"),
    };
    let kind = match w {
        "none" if r.entries.is_empty() => return Ok(None),
        "max" => PoolKind::Max,
        "avg" => PoolKind::Avg,
        _ => return derr(r.pos, "pool must be none, max{...} or avg{...}"),
    };
    let mut g = Fields::new(r.clone(), "pool stage");
    let p = PoolStage {
        kind,
        kernel: g.array("kernel")?,
        strides: g.array("strides")?,
        pads: g.array("pads")?,
        ceil_mode: g.bool("ceil_mode")?,
        count_include_pad: g.bool("count_include_pad")?,
    };
    g.finish()?;
    Ok(Some(p))
}
