//! Tagged values: a Rust sum type each of whose values is written `tag` or
//! `tag{attr=value, ...}` — the ops themselves and the enums inside their attributes
//! (activations, requantizations, pool stages, ...).
//!
//! The [`tagged!`] macro turns a table of entries into the type's printer, parser,
//! mnemonic and entry list ([`Tagged`]) and its attribute-value conversion
//! ([`Attr`](crate::attr::Attr)). [`crate::op_table`] holds every such table.

use crate::attr::{bad, AVal, AttrError, AttrErrorKind, Rec, D};

/// One table entry: a tag and its attributes in printing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub tag: &'static str,
    pub attrs: &'static [&'static str],
}

/// A type declared with [`tagged!`].
pub(crate) trait Tagged: Sized {
    /// What a tag names, for messages: "op", "activation", "resize mode", ...
    const WHAT: &'static str;
    /// The value's tag (an op's mnemonic).
    fn tag(&self) -> &'static str;
    /// The value's tag and attribute record.
    fn encode(&self) -> (&'static str, Rec);
    /// The value tagged `tag` with attributes `rec`; `None` if no entry has `tag`.
    /// Messages call the record `what 'tag'` (`what` is the outermost type's
    /// [`Tagged::WHAT`]: an activation's record inside an op's is `op 'relu'`).
    fn decode(tag: &str, rec: &Rec, what: &'static str) -> Option<D<Self>>;
    /// Every entry, those of delegated types included, in table order.
    fn entries() -> Vec<Entry>;
    /// One value per entry, built from [`Attr::sample`](crate::attr::Attr::sample)s.
    #[cfg(test)]
    fn samples() -> Vec<Self>;
}

/// At most this many entries are listed in an unknown-tag message.
const LIST_AT_MOST: usize = 12;

/// The accepted forms of `T`, e.g. `linear, nearest{round}` (empty when too many).
fn expected<T: Tagged>() -> String {
    let entries = T::entries();
    if entries.len() > LIST_AT_MOST {
        return String::new();
    }
    let forms: Vec<String> = entries
        .iter()
        .map(|e| {
            if e.attrs.is_empty() {
                e.tag.to_string()
            } else {
                format!("{}{{{}}}", e.tag, e.attrs.join(", "))
            }
        })
        .collect();
    forms.join(", ")
}

/// The value of `T` tagged `tag` with record `rec`, or an unknown-tag error at the
/// record's position.
pub(crate) fn decode_tag<T: Tagged>(tag: &str, rec: &Rec) -> D<T> {
    T::decode(tag, rec, T::WHAT).unwrap_or_else(|| {
        Err(AttrError {
            pos: rec.pos,
            kind: AttrErrorKind::UnknownTag {
                what: T::WHAT,
                tag: tag.to_string(),
                expected: expected::<T>(),
            },
        })
    })
}

/// The value of `T` written as the attribute value `v`.
pub(crate) fn decode_value<T: Tagged>(v: &AVal) -> D<T> {
    match v {
        AVal::Word(w, r) => decode_tag(w, r),
        _ => {
            let forms = expected::<T>();
            if forms.is_empty() {
                bad(
                    v.pos(),
                    format!("expected {} {}", article(T::WHAT), T::WHAT),
                )
            } else {
                bad(
                    v.pos(),
                    format!("expected {} {} ({forms})", article(T::WHAT), T::WHAT),
                )
            }
        }
    }
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// Declares a tagged type's table. Each entry is
///
/// ```text
/// "tag" => [Pattern] { attr: Type, ... }
/// ```
///
/// where `Pattern` is both the match pattern of the entry's values and (with the
/// attributes as local variables) the expression that builds one, and the attributes
/// are listed in printing order with their [`Attr`](crate::attr::Attr) types. After
/// the entries, `use name: Type => [Pattern]` delegates a variant to another tagged
/// type whose tags it takes over (`Op::Act(a)` gets the activations' tags). The
/// compiler checks the table against the type: a variant without an entry makes the
/// generated `match` non-exhaustive, an attribute the pattern does not bind is an
/// unknown variable, a binding that is not an attribute an unused one.
macro_rules! tagged {
    (
        $ty:ty, $what:literal;
        $( $tag:literal => [$($shape:tt)+] { $($attr:ident : $aty:ty),* $(,)? } )*
        $( use $dname:ident : $dty:ty => [$($dshape:tt)+] )*
    ) => {
        impl $crate::tagged::Tagged for $ty {
            const WHAT: &'static str = $what;

            #[allow(unused_variables)]
            fn tag(&self) -> &'static str {
                match self {
                    $( $($shape)+ => $tag, )*
                    $( $($dshape)+ => $crate::tagged::Tagged::tag($dname), )*
                }
            }

            fn encode(&self) -> (&'static str, $crate::attr::Rec) {
                match self {
                    $( $($shape)+ => (
                        $tag,
                        $crate::attr::Rec::new(vec![
                            $( (stringify!($attr), $crate::attr::Attr::enc($attr)) ),*
                        ]),
                    ), )*
                    $( $($dshape)+ => $crate::tagged::Tagged::encode($dname), )*
                }
            }

            #[allow(unused_variables)]
            fn decode(
                tag: &str,
                rec: &$crate::attr::Rec,
                what: &'static str,
            ) -> Option<$crate::attr::D<Self>> {
                match tag {
                    $( $tag => Some($crate::attr::Fields::decode(
                        rec,
                        format!("{what} '{}'", $tag),
                        |f| {
                            $( let $attr: $aty = f.get(stringify!($attr))?; )*
                            Ok($($shape)+)
                        },
                    )), )*
                    _ => {
                        $(
                            if let Some(r) = <$dty as $crate::tagged::Tagged>::decode(tag, rec, what) {
                                #[allow(clippy::redundant_closure)]
                                return Some(r.map(|$dname| $($dshape)+));
                            }
                        )*
                        None
                    }
                }
            }

            fn entries() -> Vec<$crate::tagged::Entry> {
                #[allow(unused_mut)]
                let mut v = vec![$( $crate::tagged::Entry {
                    tag: $tag,
                    attrs: &[$( stringify!($attr) ),*],
                } ),*];
                $( v.extend(<$dty as $crate::tagged::Tagged>::entries()); )*
                v
            }

            #[cfg(test)]
            fn samples() -> Vec<Self> {
                #[allow(unused_mut)]
                let mut v: Vec<Self> = vec![$( {
                    $( let $attr: $aty = $crate::attr::Attr::sample(); )*
                    $($shape)+
                } ),*];
                $(
                    #[allow(clippy::redundant_closure)]
                    v.extend(
                        <$dty as $crate::tagged::Tagged>::samples()
                            .into_iter()
                            .map(|$dname| $($dshape)+),
                    );
                )*
                v
            }
        }

        impl $crate::attr::Attr for $ty {
            fn enc(&self) -> $crate::attr::AVal {
                let (tag, rec) = $crate::tagged::Tagged::encode(self);
                $crate::attr::AVal::Word(tag.to_string(), rec)
            }
            fn dec(v: &$crate::attr::AVal) -> $crate::attr::D<Self> {
                $crate::tagged::decode_value(v)
            }
            #[cfg(test)]
            fn sample() -> Self {
                <Self as $crate::tagged::Tagged>::samples().swap_remove(0)
            }
        }
    };
}

pub(crate) use tagged;
