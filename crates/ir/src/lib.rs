//! nnac's graph IR.
//!
//! A [`Graph`] holds [`Node`]s (a typed [`Op`], the source model's name, output
//! [`TensorType`]s) connected by data-flow edges, plus a pool of constant
//! [`Tensor`]s stored once. All shapes are concrete (batch 1). Every later stage —
//! passes, reference interpreters, the backend — works on this IR only; importers
//! are the only code that knows ONNX or Caffe.
//!
//! # Ops are declared once
//!
//! `op_table.rs` lists every op (and every enum inside op attributes) with its
//! mnemonic and its typed attributes in printing order; the printer ([`print()`],
//! [`op_to_text`], [`to_dot`]), the parser ([`parse()`], [`parse_op`]), the parser's
//! attribute checks and [`Op::mnemonic`] are generated from it by the `tagged!` macro
//! (`tagged.rs`; attribute value types in `attr.rs`). To add an op: add the variant to
//! [`Op`] (or [`NnaOp`]), add one table entry, then its semantic code — [`Op::arity`],
//! shape inference ([`infer::infer_types`]) and the float evaluation in `nnac-interp`.
//! The table's tests check that every entry round-trips and that every variant has an
//! entry.
//!
//! # Errors
//!
//! Typed, with the location: [`ParseError`] (line, column, node; [`ParseErrorKind`],
//! attribute records [`AttrErrorKind`]), [`ShapeError`] and [`NnaTypeError`] (the rule
//! an op's inputs break), [`VerifyError`] (node and [`Invariant`]), [`IrError`] (node).

mod attr;
mod dot;
mod dtype;
mod equal;
mod error;
mod graph;
pub mod infer;
mod lex;
mod nna_op;
mod op;
mod op_line;
mod op_table;
mod parse;
mod parse_error;
mod quant;
mod shape_error;
mod tagged;
mod tensor;
mod tensor_type;
mod text;
pub mod verify;

pub use attr::{AttrError, AttrErrorKind};
pub use dot::{quote as dot_quote, to_dot};
pub use dtype::DType;
pub use equal::graphs_equal;
pub use error::IrError;
pub use graph::{Edge, Graph, GraphOutput, Node, NodeId, Value};
pub use nna_op::*;
pub use op::*;
pub use op_line::{op_to_text, parse_op};
pub use parse::{parse, ParseError, ParseErrorKind};
pub use quant::Quant;
pub use shape_error::{NnaTypeError, ShapeError};
pub use tensor::{Tensor, TensorData};
pub use tensor_type::{checked_numel, shape_str, TensorType, MAX_ELEMENTS};
pub use text::{print, print_with, PrintOptions};
pub use verify::{verify, Invariant, VerifyError};
