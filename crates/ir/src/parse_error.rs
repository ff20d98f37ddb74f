//! Errors of the text parser: what is wrong ([`ParseErrorKind`]) and where (line,
//! column, and the node whose statement it is in).

use crate::attr::AttrErrorKind;
use crate::DType;
use std::fmt;

/// A syntax or consistency error at a position of the text. Displays as
/// `line L, column C: <what is wrong>`.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
    /// The node whose statement holds the error, when it is in one.
    pub node: Option<String>,
    pub kind: ParseErrorKind,
}

/// What is wrong with the text.
#[derive(Clone, Debug, PartialEq)]
pub enum ParseErrorKind {
    /// A token or form the grammar requires is not there (`what`, e.g. `'='`, `a word`)
    /// and, when known, what is there instead (`found`, already quoted).
    Expected { what: String, found: Option<String> },
    /// Text after a complete statement.
    TrailingText,
    /// A string or escape runs to the end of the line.
    Unterminated(&'static str),
    /// `\u{...}` that is not a Unicode scalar value.
    InvalidUnicodeEscape,
    /// A backslash before a character that has no escape.
    UnknownEscape(char),
    /// A port number that is not a `u16`.
    BadPort(String),
    /// Attribute values nested deeper than the parser accepts.
    TooDeep,
    /// An attribute given twice in one record.
    AttrTwice(String),
    /// An op or quantization record that does not decode (unknown op, missing,
    /// unknown or malformed attribute).
    Attr(AttrErrorKind),
    /// The text does not begin with the `graph` statement.
    NoGraphHeader,
    /// Nothing but blank lines and comments.
    Empty,
    /// A second `graph` or `inputs` statement.
    SecondStatement(&'static str),
    /// `%name:port = ...`.
    PortInDefinition,
    /// An element type that is not a [`DType`].
    UnknownDType(String),
    /// A shape that is not `AxBx...`.
    MalformedShape(String),
    /// Constants out of id order.
    ConstantOrder { expected: usize, found: String },
    /// A constant whose byte size does not fit in `usize`.
    ConstantTooLarge { id: usize, shape: Vec<usize> },
    /// A constant printed elided.
    ConstantElided { id: usize },
    /// A constant with another element count than its shape.
    ConstantCount {
        id: usize,
        found: usize,
        needed: usize,
    },
    /// A list element that is not a value of the constant's dtype.
    BadElement { text: String, dtype: DType },
    /// Hex data that does not split into whole elements.
    HexDigits { digits: usize, dtype: DType },
    /// Two nodes of one name.
    NodeTwice(String),
    /// A graph input naming no node.
    InputUndefined(String),
    /// A graph input naming a node that is not `input()`, or a port of one.
    InputNotInput(String),
    /// A graph input listed twice.
    InputTwice(String),
    /// A reference to a node that does not exist.
    ValueUndefined(String),
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ParseErrorKind::*;
        match self {
            Expected { what, found: None } => write!(f, "expected {what}"),
            Expected {
                what,
                found: Some(found),
            } => write!(f, "expected {what}, found {found}"),
            TrailingText => f.write_str("unexpected text after the statement"),
            Unterminated(what) => write!(f, "unterminated {what}"),
            InvalidUnicodeEscape => f.write_str("invalid \\u{hex} escape"),
            UnknownEscape(c) => write!(f, "unknown escape '\\{c}'"),
            BadPort(p) => write!(f, "bad port number '{p}'"),
            TooDeep => f.write_str("attributes nested too deeply"),
            AttrTwice(key) => write!(f, "attribute '{key}' given twice"),
            Attr(e) => e.fmt(f),
            NoGraphHeader => f.write_str("the text must start with `graph \"NAME\"`"),
            Empty => f.write_str("empty text: expected `graph \"NAME\"`"),
            SecondStatement(kw) => write!(f, "a second `{kw}` statement"),
            PortInDefinition => f.write_str("a node definition names the node, not a port"),
            UnknownDType(name) => write!(f, "unknown element type '{name}'"),
            MalformedShape(text) => write!(f, "malformed shape '{text}'"),
            ConstantOrder { expected, found } => write!(
                f,
                "expected constant #{expected} (constants are listed in id order), found #{found}"
            ),
            ConstantTooLarge { id, shape } => {
                write!(f, "constant #{id} shape {shape:?} is too large")
            }
            ConstantElided { id } => write!(
                f,
                "constant #{id} was elided when printed; print the graph in full (e.g. `nnac inspect --full`) to parse it"
            ),
            ConstantCount { id, found, needed } => write!(
                f,
                "constant #{id} has {found} elements, its shape needs {needed}"
            ),
            BadElement { text, dtype } => write!(f, "'{text}' is not a valid {dtype} value"),
            HexDigits { digits, dtype } => {
                write!(f, "{digits} hex digits do not make whole {dtype} elements")
            }
            NodeTwice(n) => write!(f, "node '{n}' is defined twice"),
            InputUndefined(n) => write!(f, "graph input '{n}' is not defined"),
            InputNotInput(n) => write!(f, "graph input '{n}' must name an input() node"),
            InputTwice(n) => write!(f, "'{n}' is listed twice as a graph input"),
            ValueUndefined(n) => write!(f, "value %{n} is not defined"),
        }
    }
}

impl ParseErrorKind {
    /// `expected <what>` with nothing more to say about what is there.
    pub(crate) fn expected(what: &str) -> ParseErrorKind {
        ParseErrorKind::Expected {
            what: what.to_string(),
            found: None,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.col, self.kind)
    }
}

impl std::error::Error for ParseError {}
