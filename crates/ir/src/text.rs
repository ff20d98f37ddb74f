//! The stable text form of a graph: [`print()`] (full, parses back with
//! [`crate::parse()`] to an equal graph) and [`print_with`] (optionally eliding large
//! constants for human dumps).
//!
//! ```text
//! graph "tiny"
//! inputs %x
//! const #0 f32[2x3x1x1] = hex:0000803f...
//! const #1 f32[2] = [0.5, -1.0]
//! %x = input() -> f32[1x3x8x8]
//! %w = const() {id=0} -> f32[2x3x1x1]
//! %b = const() {id=1} -> f32[2]
//! %conv = conv(%x, %w, %b) {kernel=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1} -> f32[1x2x8x8]
//! %"act/out" = relu(%conv) -> f32[1x2x8x8]
//! output "y" = %"act/out"
//! ```
//!
//! - One statement per line; lines starting with `//` are comments.
//! - `graph` comes first; `inputs` lists the graph inputs in order; the constant pool
//!   follows in id order; nodes follow in [`Graph::topo_order`] (node order if the
//!   graph has a cycle); the outputs come last, in order.
//! - Values are `%name` (port 0) or `%name:port`. A name made only of ASCII letters,
//!   digits and `_ . - /` is printed bare, any other name in double quotes with `\"`,
//!   `\\`, `\n`, `\t`, `\r` and `\u{hex}` escapes.
//! - Types are `dtype[d0xd1x...]` (`f32[]` for a scalar), optionally followed by
//!   `q{scale=.., zero_point=..}` or `qc{axis=.., scales=[..]}`; several outputs are
//!   written `(t0, t1)`.
//! - Ops are `mnemonic(args) {attributes}` (see [`crate::op_table`] and `attr.rs`); floats use Rust's
//!   shortest round-trip formatting, so they parse back bit for bit.
//! - Constant data is a list `[..]` for at most [`LIST_LIMIT`] elements (unless an f32
//!   is NaN), otherwise `hex:` followed by the little-endian bytes; an elided constant
//!   is written `elided` and cannot be parsed back.
//!
//! Only well-formed input slots (`0..n`) are representable: a graph with missing or
//! duplicated slots prints its inputs in slot order (the verifier reports it).

use crate::tagged::Tagged;
use crate::{Graph, NodeId, Tensor, TensorData, TensorType, Value};
use std::fmt::Write;

/// Constants with at most this many elements print as a list instead of hex.
pub const LIST_LIMIT: usize = 16;

/// Options of [`print_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrintOptions {
    /// Write `elided` instead of the data of constants with more elements than this
    /// (for human dumps; such text does not parse back). `None` prints everything.
    pub elide_constants_over: Option<usize>,
}

/// The full text form; `parse(&print(g))` is equal to `g` (see [`crate::graphs_equal`]).
pub fn print(g: &Graph) -> String {
    print_with(g, PrintOptions::default())
}

/// The text form with options (see [`PrintOptions`]).
pub fn print_with(g: &Graph, opts: PrintOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "graph {}", quoted(&g.name));
    let inputs: Vec<String> = g
        .inputs()
        .iter()
        .map(|&id| value_ref(g, Value::new(id, 0)))
        .collect();
    if inputs.is_empty() {
        out.push_str("inputs\n");
    } else {
        let _ = writeln!(out, "inputs {}", inputs.join(", "));
    }
    for (i, t) in g.constants().iter().enumerate() {
        write_constant(&mut out, i, t, opts);
    }
    for id in g.topo_order().unwrap_or_else(|_| g.node_ids()) {
        write_node(&mut out, g, id);
    }
    for o in g.outputs() {
        let _ = writeln!(
            out,
            "output {} = {}",
            quoted(&o.name),
            value_ref(g, o.value)
        );
    }
    out
}

fn write_node(out: &mut String, g: &Graph, id: NodeId) {
    let node = g.node(id);
    let (mnemonic, rec) = node.op.encode();
    let args: Vec<String> = g
        .node_inputs(id)
        .into_iter()
        .map(|v| value_ref(g, v))
        .collect();
    let _ = write!(
        out,
        "%{} = {mnemonic}({})",
        name_text(&node.name),
        args.join(", ")
    );
    if !rec.entries.is_empty() {
        out.push(' ');
        rec.write(out);
    }
    out.push_str(" -> ");
    if let [t] = node.outputs.as_slice() {
        write_type(out, t);
    } else {
        out.push('(');
        for (i, t) in node.outputs.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_type(out, t);
        }
        out.push(')');
    }
    out.push('\n');
}

/// `%name` or `%name:port`.
pub(crate) fn value_ref(g: &Graph, v: Value) -> String {
    let name = if g.contains(v.node) {
        name_text(&g.node(v.node).name)
    } else {
        quoted("<removed>")
    };
    if v.port == 0 {
        format!("%{name}")
    } else {
        format!("%{name}:{}", v.port)
    }
}

/// Whether `c` may appear in a bare (unquoted) node name.
pub(crate) fn is_bare_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')
}

/// A node name as printed after `%`: bare when possible, else quoted.
pub(crate) fn name_text(name: &str) -> String {
    if !name.is_empty() && name.chars().all(is_bare_char) {
        name.to_string()
    } else {
        quoted(name)
    }
}

/// A double-quoted string with escapes.
pub(crate) fn quoted(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(q, "\\u{{{:x}}}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// `f32[1x3x224x224]` plus quantization.
pub(crate) fn write_type(out: &mut String, t: &TensorType) {
    out.push_str(t.dtype.name());
    out.push('[');
    out.push_str(&dims_text(&t.shape));
    out.push(']');
    if let Some(q) = &t.quant {
        let (tag, rec) = q.encode();
        out.push(' ');
        out.push_str(tag);
        rec.write(out);
    }
}

/// `1x3x224x224` (empty for a scalar).
pub(crate) fn dims_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    dims.join("x")
}

fn write_constant(out: &mut String, i: usize, t: &Tensor, opts: PrintOptions) {
    let _ = write!(
        out,
        "const #{i} {}[{}] = ",
        t.dtype().name(),
        dims_text(&t.shape)
    );
    let n = t.data.len();
    if opts.elide_constants_over.is_some_and(|limit| n > limit) {
        out.push_str("elided");
    } else if n <= LIST_LIMIT
        && !matches!(&t.data, TensorData::F32(v) if v.iter().any(|x| x.is_nan()))
    {
        write_list(out, &t.data);
    } else {
        out.push_str("hex:");
        write_hex(out, &t.data);
    }
    out.push('\n');
}

fn write_list(out: &mut String, d: &TensorData) {
    let items: Vec<String> = match d {
        TensorData::F32(v) => v.iter().map(|x| format!("{x:?}")).collect(),
        TensorData::I8(v) => v.iter().map(|x| x.to_string()).collect(),
        TensorData::U8(v) => v.iter().map(|x| x.to_string()).collect(),
        TensorData::I32(v) => v.iter().map(|x| x.to_string()).collect(),
        TensorData::I64(v) => v.iter().map(|x| x.to_string()).collect(),
    };
    out.push('[');
    out.push_str(&items.join(", "));
    out.push(']');
}

fn write_hex(out: &mut String, d: &TensorData) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut push = |bytes: &[u8]| {
        for &b in bytes {
            out.push(DIGITS[usize::from(b >> 4)] as char);
            out.push(DIGITS[usize::from(b & 15)] as char);
        }
    };
    match d {
        TensorData::F32(v) => v.iter().for_each(|x| push(&x.to_le_bytes())),
        TensorData::I8(v) => v.iter().for_each(|x| push(&x.to_le_bytes())),
        TensorData::U8(v) => push(v),
        TensorData::I32(v) => v.iter().for_each(|x| push(&x.to_le_bytes())),
        TensorData::I64(v) => v.iter().for_each(|x| push(&x.to_le_bytes())),
    }
}
