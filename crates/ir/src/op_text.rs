//! The text encoding of ops, shared by the printer ([`crate::text`]), the parser
//! ([`crate::parse()`], through [`crate::op_decode`]) and the DOT writer: every op is a mnemonic plus a record of
//! typed attributes, `name{key=value, ...}`.
//!
//! Attribute values: numbers (`3`, `-1`, `1.5e-3`, `-inf`, f32 printed with `{:?}`,
//! which round-trips exactly), words (`true`, `none`, `half_pixel`), tagged records
//! (`leaky_relu{alpha=0.1}`, used for enum variants with data and for nested ops) and
//! lists (`[1, 2]`). Every op prints every attribute, in a fixed order; the parser
//! rejects missing, unknown and duplicate attributes.

use crate::{
    Activation, ConvAttrs, ConvTransposeAttrs, CoordTransform, DotKind, Epilogue, FusedAct,
    Multiplier, NearestMode, NnaOp, Op, PoolAttrs, PoolKind, PoolStage, QdqAttrs, Quant, Requant,
    ResizeAttrs, ResizeMode,
};

/// An attribute value; `pos` is the byte offset in the parsed line (0 when printing).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum AVal {
    Num(String, usize),
    /// A word, or a tagged record when `rec` has entries.
    Word(String, Rec),
    List(Vec<AVal>, usize),
}

/// A record of attributes; `pos` is where its tag (or op mnemonic) starts.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Rec {
    pub pos: usize,
    pub entries: Vec<(String, usize, AVal)>,
}

/// A decoding error at a byte offset of the line.
#[derive(Debug)]
pub(crate) struct DecodeError {
    pub pos: usize,
    pub msg: String,
}

pub(crate) type D<T> = Result<T, DecodeError>;

pub(crate) fn derr<T>(pos: usize, msg: impl Into<String>) -> D<T> {
    Err(DecodeError {
        pos,
        msg: msg.into(),
    })
}

// ---- printing ------------------------------------------------------------------------

impl AVal {
    fn num(x: impl ToString) -> AVal {
        AVal::Num(x.to_string(), 0)
    }
    fn f(x: f32) -> AVal {
        AVal::Num(format!("{x:?}"), 0)
    }
    fn word(w: &str) -> AVal {
        AVal::Word(w.to_string(), Rec::default())
    }
    fn tagged(w: &str, entries: Vec<(&str, AVal)>) -> AVal {
        AVal::Word(w.to_string(), rec(entries))
    }
    fn b(x: bool) -> AVal {
        AVal::word(if x { "true" } else { "false" })
    }
    fn us(v: &[usize]) -> AVal {
        AVal::List(v.iter().map(AVal::num).collect(), 0)
    }
    fn fs(v: &[f32]) -> AVal {
        AVal::List(v.iter().map(|&x| AVal::f(x)).collect(), 0)
    }

    /// Appends the value's text to `out`.
    pub fn write(&self, out: &mut String) {
        match self {
            AVal::Num(s, _) => out.push_str(s),
            AVal::Word(w, r) => {
                out.push_str(w);
                if !r.entries.is_empty() {
                    r.write(out);
                }
            }
            AVal::List(items, _) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write(out);
                }
                out.push(']');
            }
        }
    }
}

impl Rec {
    /// Appends `{k=v, ...}` to `out`.
    pub fn write(&self, out: &mut String) {
        out.push('{');
        for (i, (k, _, v)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(k);
            out.push('=');
            v.write(out);
        }
        out.push('}');
    }
}

fn rec(entries: Vec<(&str, AVal)>) -> Rec {
    Rec {
        pos: 0,
        entries: entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), 0, v))
            .collect(),
    }
}

/// The mnemonic and attribute record of an op.
pub(crate) fn encode(op: &Op) -> (&'static str, Rec) {
    (op.mnemonic(), rec(attrs(op)))
}

fn attrs(op: &Op) -> Vec<(&'static str, AVal)> {
    match op {
        Op::Input | Op::MatMul | Op::PRelu | Op::Binary(_) | Op::GlobalPool(_) | Op::Identity => {
            vec![]
        }
        Op::Constant(c) => vec![("id", AVal::num(c.0))],
        Op::Conv(a) => conv_attrs(a),
        Op::ConvTranspose(a) => deconv_attrs(a),
        Op::Gemm(a) => vec![
            ("alpha", AVal::f(a.alpha)),
            ("beta", AVal::f(a.beta)),
            ("trans_a", AVal::b(a.trans_a)),
            ("trans_b", AVal::b(a.trans_b)),
        ],
        Op::BatchNorm { epsilon } => vec![("epsilon", AVal::f(*epsilon))],
        Op::Act(a) => act_attrs(a),
        Op::Concat { axis } | Op::Softmax { axis } => vec![("axis", AVal::num(axis))],
        Op::Pool(p) => pool_attrs(p),
        Op::Reshape { shape } => vec![("shape", AVal::us(shape))],
        Op::Transpose { perm } => vec![("perm", AVal::us(perm))],
        Op::Slice { axes, starts, ends } => vec![
            ("axes", AVal::us(axes)),
            ("starts", AVal::us(starts)),
            ("ends", AVal::us(ends)),
        ],
        Op::StridedSlice {
            axes,
            starts,
            ends,
            steps,
        } => vec![
            ("axes", AVal::us(axes)),
            ("starts", AVal::us(starts)),
            ("ends", AVal::us(ends)),
            ("steps", AVal::us(steps)),
        ],
        Op::Resize(r) => resize_attrs(r),
        Op::Pad { pads, value } => vec![("pads", AVal::us(pads)), ("value", AVal::f(*value))],
        Op::Lrn {
            size,
            alpha,
            beta,
            bias,
        } => vec![
            ("size", AVal::num(size)),
            ("alpha", AVal::f(*alpha)),
            ("beta", AVal::f(*beta)),
            ("bias", AVal::f(*bias)),
        ],
        Op::Power {
            power,
            scale,
            shift,
        } => {
            vec![
                ("power", AVal::f(*power)),
                ("scale", AVal::f(*scale)),
                ("shift", AVal::f(*shift)),
            ]
        }
        Op::Quantize(q) | Op::Dequantize(q) => qdq_attrs(q),
        Op::Nna(n) => nna_attrs(n),
    }
}

fn qdq_attrs(q: &QdqAttrs) -> Vec<(&'static str, AVal)> {
    vec![
        ("axis", q.axis.map_or_else(|| AVal::word("none"), AVal::num)),
        ("scales", AVal::fs(&q.scales)),
        (
            "zero_points",
            AVal::List(q.zero_points.iter().map(AVal::num).collect(), 0),
        ),
        ("dtype", AVal::word(q.dtype.name())),
    ]
}

fn conv_attrs(a: &ConvAttrs) -> Vec<(&'static str, AVal)> {
    vec![
        ("kernel", AVal::us(&a.kernel)),
        ("strides", AVal::us(&a.strides)),
        ("pads", AVal::us(&a.pads)),
        ("dilations", AVal::us(&a.dilations)),
        ("group", AVal::num(a.group)),
    ]
}

fn deconv_attrs(a: &ConvTransposeAttrs) -> Vec<(&'static str, AVal)> {
    vec![
        ("kernel", AVal::us(&a.kernel)),
        ("strides", AVal::us(&a.strides)),
        ("pads", AVal::us(&a.pads)),
        ("dilations", AVal::us(&a.dilations)),
        ("output_padding", AVal::us(&a.output_padding)),
        ("group", AVal::num(a.group)),
    ]
}

fn act_attrs(a: &Activation) -> Vec<(&'static str, AVal)> {
    match *a {
        Activation::Relu
        | Activation::Sigmoid
        | Activation::Tanh
        | Activation::HardSwish
        | Activation::Silu => vec![],
        Activation::LeakyRelu { alpha } => vec![("alpha", AVal::f(alpha))],
        Activation::Clip { min, max } => vec![("min", AVal::f(min)), ("max", AVal::f(max))],
        Activation::HardSigmoid { alpha, beta } => {
            vec![("alpha", AVal::f(alpha)), ("beta", AVal::f(beta))]
        }
    }
}

fn pool_attrs(p: &PoolAttrs) -> Vec<(&'static str, AVal)> {
    vec![
        ("kernel", AVal::us(&p.kernel)),
        ("strides", AVal::us(&p.strides)),
        ("pads", AVal::us(&p.pads)),
        ("dilations", AVal::us(&p.dilations)),
        ("ceil_mode", AVal::b(p.ceil_mode)),
        ("count_include_pad", AVal::b(p.count_include_pad)),
    ]
}

pub(crate) const NEAREST_MODES: [(NearestMode, &str); 4] = [
    (NearestMode::RoundPreferFloor, "round_prefer_floor"),
    (NearestMode::RoundPreferCeil, "round_prefer_ceil"),
    (NearestMode::Floor, "floor"),
    (NearestMode::Ceil, "ceil"),
];

pub(crate) const COORDS: [(CoordTransform, &str); 4] = [
    (CoordTransform::HalfPixel, "half_pixel"),
    (CoordTransform::PytorchHalfPixel, "pytorch_half_pixel"),
    (CoordTransform::AlignCorners, "align_corners"),
    (CoordTransform::Asymmetric, "asymmetric"),
];

fn name_of<T: PartialEq + Copy>(table: &[(T, &'static str)], x: T) -> &'static str {
    table
        .iter()
        .find(|(v, _)| *v == x)
        .map(|(_, n)| *n)
        .unwrap_or("?")
}

fn resize_attrs(r: &ResizeAttrs) -> Vec<(&'static str, AVal)> {
    let mode = match r.mode {
        ResizeMode::Linear => AVal::word("linear"),
        ResizeMode::Nearest(m) => AVal::tagged(
            "nearest",
            vec![("round", AVal::word(name_of(&NEAREST_MODES, m)))],
        ),
    };
    vec![
        ("mode", mode),
        ("coord", AVal::word(name_of(&COORDS, r.coord))),
        ("sizes", AVal::us(&r.sizes)),
        ("scales", AVal::fs(&r.scales)),
    ]
}

fn nna_attrs(n: &NnaOp) -> Vec<(&'static str, AVal)> {
    match n {
        NnaOp::Dot(d) => {
            let mut v = match &d.kind {
                DotKind::Conv(a) => conv_attrs(a),
                DotKind::Deconv(a) => deconv_attrs(a),
                DotKind::Inner => vec![],
            };
            v.extend(epilogue_attrs(&d.epilogue));
            v.push(("pool", pool_stage(&d.pool)));
            v
        }
        NnaOp::Scale(s) => {
            let mut v = epilogue_attrs(&s.epilogue);
            v.push(("pool", pool_stage(&s.pool)));
            v
        }
        NnaOp::Eltwise(e) => {
            let mut v = vec![("op", AVal::word(e.kind.mnemonic()))];
            v.extend(epilogue_attrs(&e.epilogue));
            let inputs = match &e.inputs {
                None => AVal::word("none"),
                Some(r) => AVal::tagged("requant", vec![("a", mult(&r.a)), ("b", mult(&r.b))]),
            };
            v.push(("inputs", inputs));
            v
        }
        NnaOp::Concat { axis } => vec![("axis", AVal::num(axis))],
        NnaOp::ChannelShuffle { groups } => vec![("groups", AVal::num(groups))],
        NnaOp::Upsample { factors } => vec![("factors", AVal::us(factors))],
        NnaOp::Host(op) => {
            let (m, r) = encode(op);
            vec![("op", AVal::Word(m.to_string(), r))]
        }
    }
}

fn epilogue_attrs(e: &Epilogue) -> Vec<(&'static str, AVal)> {
    let act = match &e.act {
        None => AVal::word("none"),
        Some(FusedAct::Act(a)) => AVal::tagged(a.mnemonic(), act_attrs(a)),
        Some(FusedAct::PRelu(s)) => AVal::tagged("prelu", vec![("slopes", AVal::fs(s))]),
    };
    let requant = match &e.requant {
        None => AVal::word("none"),
        Some(Requant::Int {
            mult,
            zero_point,
            lo,
            hi,
        }) => AVal::tagged(
            "int",
            vec![
                ("mult", mults(mult)),
                ("zero_point", AVal::num(zero_point)),
                ("lo", AVal::num(lo)),
                ("hi", AVal::num(hi)),
            ],
        ),
        Some(Requant::Float {
            in_scale,
            inv_out_scale,
            zero_point,
            lo,
            hi,
        }) => AVal::tagged(
            "float",
            vec![
                ("in_scale", AVal::fs(in_scale)),
                ("inv_out_scale", AVal::f(*inv_out_scale)),
                ("zero_point", AVal::num(zero_point)),
                ("lo", AVal::num(lo)),
                ("hi", AVal::num(hi)),
            ],
        ),
    };
    vec![("act", act), ("requant", requant)]
}

fn mult(m: &Multiplier) -> AVal {
    AVal::List(vec![AVal::num(m.mult), AVal::num(m.shift)], 0)
}

fn mults(ms: &[Multiplier]) -> AVal {
    AVal::List(ms.iter().map(mult).collect(), 0)
}

fn pool_stage(p: &Option<PoolStage>) -> AVal {
    let Some(p) = p else {
        return AVal::word("none");
    };
    let kind = match p.kind {
        PoolKind::Max => "max",
        PoolKind::Avg => "avg",
    };
    AVal::tagged(
        kind,
        vec![
            ("kernel", AVal::us(&p.kernel)),
            ("strides", AVal::us(&p.strides)),
            ("pads", AVal::us(&p.pads)),
            ("ceil_mode", AVal::b(p.ceil_mode)),
            ("count_include_pad", AVal::b(p.count_include_pad)),
        ],
    )
}

/// The tag and record of a quantization (`q{scale, zero_point}`, `qc{axis, scales}`).
pub(crate) fn encode_quant(q: &Quant) -> (&'static str, Rec) {
    match q {
        Quant::PerTensor { scale, zero_point } => (
            "q",
            rec(vec![
                ("scale", AVal::f(*scale)),
                ("zero_point", AVal::num(zero_point)),
            ]),
        ),
        Quant::PerChannel { axis, scales } => (
            "qc",
            rec(vec![
                ("axis", AVal::num(axis)),
                ("scales", AVal::fs(scales)),
            ]),
        ),
    }
}
