//! Attribute values of the text IR and the Rust types they hold.
//!
//! Every op is a tag plus a record of typed attributes, `name{key=value, ...}`
//! (the records themselves are declared once, in [`crate::op_table`]). Attribute
//! values: numbers (`3`, `-1`, `1.5e-3`, `-inf`, f32 printed with `{:?}`, which
//! round-trips exactly), words (`true`, `none`, `half_pixel`), tagged records
//! (`leaky_relu{alpha=0.1}`, used for enum variants with data and for nested ops) and
//! lists (`[1, 2]`). Every op prints every attribute, in a fixed order; the parser
//! rejects missing, unknown and duplicate attributes.
//!
//! [`Attr`] is the conversion between one Rust attribute type and its value text;
//! [`Fields`] takes the attributes of one record, each exactly once.

use crate::{DType, EltwiseKind, Multiplier, Op};
use std::fmt;

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

/// Why an attribute record or value does not decode, at byte offset `pos` of the line.
#[derive(Clone, Debug, PartialEq)]
pub struct AttrError {
    /// Byte offset in the line (the parser turns it into a column).
    pub pos: usize,
    pub kind: AttrErrorKind,
}

/// What is wrong with an attribute record or value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrErrorKind {
    /// A tag (op mnemonic, activation, requantization, ...) that no table entry has.
    UnknownTag {
        /// What the tag names: "op", "activation", "resize mode", ...
        what: &'static str,
        tag: String,
        /// The accepted forms, e.g. `linear, nearest{round}` (empty when too many
        /// to list).
        expected: String,
    },
    /// The record `owner` (e.g. `op 'conv'`) lacks attribute `attr`.
    Missing { owner: String, attr: &'static str },
    /// The record `owner` has an attribute its entry does not declare.
    Unknown { owner: String, attr: String },
    /// Attribute `attr` of `owner` has a malformed value.
    Value {
        owner: String,
        attr: &'static str,
        msg: String,
    },
    /// A malformed value (before it is known which attribute holds it).
    Bad(String),
}

impl fmt::Display for AttrErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrErrorKind::UnknownTag {
                what,
                tag,
                expected,
            } if expected.is_empty() => write!(f, "unknown {what} '{tag}'"),
            AttrErrorKind::UnknownTag {
                what,
                tag,
                expected,
            } => write!(f, "unknown {what} '{tag}' (expected {expected})"),
            AttrErrorKind::Missing { owner, attr } => {
                write!(f, "{owner} is missing attribute '{attr}'")
            }
            AttrErrorKind::Unknown { owner, attr } => {
                write!(f, "{owner} has no attribute '{attr}'")
            }
            AttrErrorKind::Value { owner, attr, msg } => {
                write!(f, "{owner}, attribute '{attr}': {msg}")
            }
            AttrErrorKind::Bad(msg) => f.write_str(msg),
        }
    }
}

impl fmt::Display for AttrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for AttrError {}

pub(crate) type D<T> = Result<T, AttrError>;

/// A malformed value at `pos`.
pub(crate) fn bad<T>(pos: usize, msg: impl Into<String>) -> D<T> {
    Err(AttrError {
        pos,
        kind: AttrErrorKind::Bad(msg.into()),
    })
}

impl AVal {
    pub fn num(x: impl ToString) -> AVal {
        AVal::Num(x.to_string(), 0)
    }
    pub fn word(w: &str) -> AVal {
        AVal::Word(w.to_string(), Rec::default())
    }

    /// Where the value was written.
    pub fn pos(&self) -> usize {
        match self {
            AVal::Num(_, p) | AVal::List(_, p) => *p,
            AVal::Word(_, r) => r.pos,
        }
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

    /// A plain word (no record).
    fn as_word(&self) -> D<&str> {
        match self {
            AVal::Word(w, r) if r.entries.is_empty() => Ok(w),
            _ => bad(self.pos(), "expected a word"),
        }
    }

    /// Whether the value is the word `none`.
    fn is_none(&self) -> bool {
        matches!(self, AVal::Word(w, r) if w == "none" && r.entries.is_empty())
    }
}

impl Rec {
    /// A record to print.
    pub fn new(entries: Vec<(&str, AVal)>) -> Rec {
        Rec {
            pos: 0,
            entries: entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), 0, v))
                .collect(),
        }
    }

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

/// A record being decoded: every entry must be taken exactly once.
pub(crate) struct Fields<'a> {
    rec: &'a Rec,
    used: Vec<bool>,
    /// The record's owner for messages, e.g. `op 'conv'`.
    owner: String,
}

impl<'a> Fields<'a> {
    /// Decodes `rec`, owned by `owner`, with `build`, then rejects entries `build`
    /// did not take.
    pub fn decode<T>(rec: &'a Rec, owner: String, build: impl FnOnce(&mut Self) -> D<T>) -> D<T> {
        let mut f = Fields {
            rec,
            used: vec![false; rec.entries.len()],
            owner,
        };
        let v = build(&mut f)?;
        match f.used.iter().position(|u| !u) {
            Some(i) => {
                let (k, pos, _) = &f.rec.entries[i];
                Err(AttrError {
                    pos: *pos,
                    kind: AttrErrorKind::Unknown {
                        owner: f.owner,
                        attr: k.clone(),
                    },
                })
            }
            None => Ok(v),
        }
    }

    /// The attribute `key`, decoded; a malformed value's error names the attribute.
    pub fn get<T: Attr>(&mut self, key: &'static str) -> D<T> {
        let Some(i) = self.rec.entries.iter().position(|(k, _, _)| k == key) else {
            return Err(AttrError {
                pos: self.rec.pos,
                kind: AttrErrorKind::Missing {
                    owner: self.owner.clone(),
                    attr: key,
                },
            });
        };
        self.used[i] = true;
        T::dec(&self.rec.entries[i].2).map_err(|e| match e.kind {
            AttrErrorKind::Bad(msg) => AttrError {
                pos: e.pos,
                kind: AttrErrorKind::Value {
                    owner: self.owner.clone(),
                    attr: key,
                    msg,
                },
            },
            _ => e,
        })
    }
}

/// A Rust type an attribute holds, and its value text.
pub(crate) trait Attr: Sized {
    /// The value as text.
    fn enc(&self) -> AVal;
    /// The value from text.
    fn dec(v: &AVal) -> D<Self>;
    /// A value of the type (for the table's round-trip test).
    #[cfg(test)]
    fn sample() -> Self;
}

/// Integers: `usize`, `u32`, `i32`, `u8` (range checked by `FromStr`).
macro_rules! int_attr {
    ($($t:ty = $sample:expr),*) => {$(
        impl Attr for $t {
            fn enc(&self) -> AVal {
                AVal::num(self)
            }
            fn dec(v: &AVal) -> D<Self> {
                match v {
                    AVal::Num(s, p) => s.parse().or_else(|_| {
                        bad(*p, format!("'{s}' is not a valid {}", stringify!($t)))
                    }),
                    _ => bad(v.pos(), "expected an integer"),
                }
            }
            #[cfg(test)]
            fn sample() -> Self {
                $sample
            }
        }
    )*};
}

int_attr!(usize = 3, u32 = 7, i32 = -5, u8 = 31);

impl Attr for f32 {
    fn enc(&self) -> AVal {
        AVal::Num(format!("{self:?}"), 0)
    }
    fn dec(v: &AVal) -> D<Self> {
        match v {
            AVal::Num(s, p) => s
                .parse()
                .or_else(|_| bad(*p, format!("'{s}' is not a number"))),
            AVal::Word(w, r) if r.entries.is_empty() && matches!(w.as_str(), "inf" | "NaN") => {
                Ok(w.parse().unwrap_or(f32::NAN))
            }
            _ => bad(v.pos(), "expected a number"),
        }
    }
    #[cfg(test)]
    fn sample() -> Self {
        0.1
    }
}

impl Attr for bool {
    fn enc(&self) -> AVal {
        AVal::word(if *self { "true" } else { "false" })
    }
    fn dec(v: &AVal) -> D<Self> {
        match v.as_word()? {
            "true" => Ok(true),
            "false" => Ok(false),
            w => bad(v.pos(), format!("expected true or false, found '{w}'")),
        }
    }
    #[cfg(test)]
    fn sample() -> Self {
        true
    }
}

impl<T: Attr> Attr for Vec<T> {
    fn enc(&self) -> AVal {
        AVal::List(self.iter().map(T::enc).collect(), 0)
    }
    fn dec(v: &AVal) -> D<Self> {
        match v {
            AVal::List(items, _) => items.iter().map(T::dec).collect(),
            _ => bad(v.pos(), "expected a list [...]"),
        }
    }
    #[cfg(test)]
    fn sample() -> Self {
        vec![T::sample(), T::sample()]
    }
}

impl<const N: usize> Attr for [usize; N] {
    fn enc(&self) -> AVal {
        AVal::List(self.iter().map(usize::enc).collect(), 0)
    }
    fn dec(v: &AVal) -> D<Self> {
        let items = Vec::<usize>::dec(v)?;
        let n = items.len();
        items
            .try_into()
            .or_else(|_| bad(v.pos(), format!("needs exactly {N} values, found {n}")))
    }
    #[cfg(test)]
    fn sample() -> Self {
        [2; N]
    }
}

/// `none` or the value.
impl<T: Attr> Attr for Option<T> {
    fn enc(&self) -> AVal {
        self.as_ref().map_or_else(|| AVal::word("none"), T::enc)
    }
    fn dec(v: &AVal) -> D<Self> {
        if v.is_none() {
            Ok(None)
        } else {
            T::dec(v).map(Some)
        }
    }
    #[cfg(test)]
    fn sample() -> Self {
        Some(T::sample())
    }
}

impl Attr for DType {
    fn enc(&self) -> AVal {
        AVal::word(self.name())
    }
    fn dec(v: &AVal) -> D<Self> {
        let w = v.as_word()?;
        DType::from_name(w).map_or_else(|| bad(v.pos(), format!("unknown dtype '{w}'")), Ok)
    }
    #[cfg(test)]
    fn sample() -> Self {
        DType::I8
    }
}

/// `op=add|mul|max` of an `nna.eltwise`.
impl Attr for EltwiseKind {
    fn enc(&self) -> AVal {
        AVal::word(self.mnemonic())
    }
    fn dec(v: &AVal) -> D<Self> {
        let w = v.as_word()?;
        EltwiseKind::ALL
            .into_iter()
            .find(|k| k.mnemonic() == w)
            .map_or_else(
                || {
                    bad(
                        v.pos(),
                        format!("eltwise op must be add, mul or max, found '{w}'"),
                    )
                },
                Ok,
            )
    }
    #[cfg(test)]
    fn sample() -> Self {
        EltwiseKind::Mul
    }
}

/// `[mult, shift]`.
impl Attr for Multiplier {
    fn enc(&self) -> AVal {
        AVal::List(vec![self.mult.enc(), self.shift.enc()], 0)
    }
    fn dec(v: &AVal) -> D<Self> {
        match v {
            AVal::List(items, _) if items.len() == 2 => Ok(Multiplier {
                mult: i32::dec(&items[0])?,
                shift: u8::dec(&items[1])?,
            }),
            _ => bad(v.pos(), "a multiplier is [mult, shift]"),
        }
    }
    #[cfg(test)]
    fn sample() -> Self {
        Multiplier {
            mult: 1 << 20,
            shift: 24,
        }
    }
}

/// A nested op (`nna.host{op=softmax{axis=1}}`).
impl Attr for Box<Op> {
    fn enc(&self) -> AVal {
        self.as_ref().enc()
    }
    fn dec(v: &AVal) -> D<Self> {
        Op::dec(v).map(Box::new)
    }
    #[cfg(test)]
    fn sample() -> Self {
        Box::new(Op::Softmax { axis: 1 })
    }
}
