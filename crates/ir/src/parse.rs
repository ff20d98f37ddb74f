//! Parser of the text form written by [`crate::print`] (grammar in [`crate::text`]).
//!
//! Errors carry the 1-based line and column (in characters). The parser never panics:
//! nesting depth, numbers and data sizes are all checked. References may point
//! forward (a cyclic graph prints and parses back; the verifier reports the cycle).

use crate::attr::Rec;
use crate::lex::{Cur, Loc, Ref};
pub use crate::parse_error::{ParseError, ParseErrorKind};
use crate::tagged::decode_tag;
use crate::{DType, Graph, Op, Quant, Tensor, TensorData, TensorType, Value};
use std::collections::BTreeMap;

/// Parses the text form into a graph.
pub fn parse(text: &str) -> Result<Graph, ParseError> {
    let mut ast = Ast::default();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with("//") {
            continue;
        }
        let mut c = Cur {
            s: line,
            pos: 0,
            line: i + 1,
        };
        statement(&mut c, &mut ast)?;
    }
    build(ast)
}

// ---- syntax tree -----------------------------------------------------------------------

struct NodeStmt {
    name: String,
    loc: Loc,
    op: Op,
    args: Vec<Ref>,
    outputs: Vec<TensorType>,
}

#[derive(Default)]
struct Ast {
    name: Option<String>,
    inputs: Option<Vec<Ref>>,
    constants: Vec<Tensor>,
    nodes: Vec<NodeStmt>,
    outputs: Vec<(String, Ref)>,
}

fn statement(c: &mut Cur, ast: &mut Ast) -> Result<(), ParseError> {
    c.skip_ws();
    let start = c.loc();
    if ast.name.is_none() && c.peek() == Some('%') {
        return start.err(ParseErrorKind::NoGraphHeader);
    }
    if c.peek() == Some('%') {
        let node = node_stmt(c)?;
        ast.nodes.push(node);
        return c.end();
    }
    let kw = c.word()?;
    if ast.name.is_none() && kw != "graph" {
        return start.err(ParseErrorKind::NoGraphHeader);
    }
    match kw.as_str() {
        "graph" if ast.name.is_none() => ast.name = Some(c.string()?),
        "graph" => return start.err(ParseErrorKind::SecondStatement("graph")),
        "inputs" if ast.inputs.is_none() => ast.inputs = Some(input_list(c)?),
        "inputs" => return start.err(ParseErrorKind::SecondStatement("inputs")),
        "const" => {
            let t = constant_stmt(c, ast.constants.len())?;
            ast.constants.push(t);
        }
        "output" => {
            let name = c.string()?;
            c.expect('=')?;
            let r = c.value_ref()?;
            ast.outputs.push((name, r));
        }
        _ => {
            return start.err(ParseErrorKind::Expected {
                what: "graph, inputs, const, output or %node".into(),
                found: Some(format!("'{kw}'")),
            })
        }
    }
    c.end()
}

fn input_list(c: &mut Cur) -> Result<Vec<Ref>, ParseError> {
    let mut v = Vec::new();
    c.skip_ws();
    if c.at_end() {
        return Ok(v);
    }
    loop {
        v.push(c.value_ref()?);
        if !c.eat(',') {
            return Ok(v);
        }
    }
}

/// `%name = op(args) {attributes} -> types`; errors after the name carry it.
fn node_stmt(c: &mut Cur) -> Result<NodeStmt, ParseError> {
    let r = c.value_ref()?;
    let name = r.name.clone();
    node_rest(c, r).map_err(|e| ParseError {
        node: Some(name),
        ..e
    })
}

fn node_rest(c: &mut Cur, r: Ref) -> Result<NodeStmt, ParseError> {
    if r.port != 0 {
        return r.loc.err(ParseErrorKind::PortInDefinition);
    }
    c.expect('=')?;
    c.skip_ws();
    let op_pos = c.pos;
    let mnemonic = c.word()?;
    c.expect('(')?;
    let mut args = Vec::new();
    if !c.eat(')') {
        loop {
            args.push(c.value_ref()?);
            if c.eat(')') {
                break;
            }
            c.expect(',')?;
        }
    }
    c.skip_ws();
    let mut rec = if c.peek() == Some('{') {
        c.record(0)?
    } else {
        Rec::default()
    };
    rec.pos = op_pos;
    let op = decode_tag::<Op>(&mnemonic, &rec).map_err(|e| c.decode_err(e))?;
    c.expect_str("->")?;
    let outputs = output_types(c)?;
    Ok(NodeStmt {
        name: r.name,
        loc: r.loc,
        op,
        args,
        outputs,
    })
}

fn output_types(c: &mut Cur) -> Result<Vec<TensorType>, ParseError> {
    if !c.eat('(') {
        return Ok(vec![tensor_type(c)?]);
    }
    let mut v = Vec::new();
    if c.eat(')') {
        return Ok(v);
    }
    loop {
        v.push(tensor_type(c)?);
        if c.eat(')') {
            return Ok(v);
        }
        c.expect(',')?;
    }
}

/// `dtype[dims]` and an optional quantization record.
fn tensor_type(c: &mut Cur) -> Result<TensorType, ParseError> {
    let (dtype, shape) = dtype_shape(c)?;
    let mut t = TensorType::new(dtype, shape);
    c.skip_ws();
    let save = c.pos;
    if c.peek().is_some_and(|ch| ch == 'q') {
        let w = c.word()?;
        if c.peek() != Some('{') || !(w == "q" || w == "qc") {
            c.pos = save;
            return Ok(t);
        }
        let mut rec = c.record(0)?;
        rec.pos = save;
        t.quant = Some(decode_tag::<Quant>(&w, &rec).map_err(|e| c.decode_err(e))?);
    }
    Ok(t)
}

fn dtype_shape(c: &mut Cur) -> Result<(DType, Vec<usize>), ParseError> {
    c.skip_ws();
    let at = c.loc();
    let name = c.word()?;
    let dtype = DType::from_name(&name)
        .map_or_else(|| at.err(ParseErrorKind::UnknownDType(name.clone())), Ok)?;
    if c.peek() != Some('[') {
        return c.here_err(ParseErrorKind::expected(
            "'[' and the shape after the element type",
        ));
    }
    c.pos += 1;
    let start = c.pos;
    while c.peek().is_some_and(|ch| ch.is_ascii_digit() || ch == 'x') {
        c.pos += 1;
    }
    let text = &c.s[start..c.pos];
    c.expect(']')?;
    if text.is_empty() {
        return Ok((dtype, vec![]));
    }
    let shape = text
        .split('x')
        .map(|d| d.parse::<usize>().ok())
        .collect::<Option<Vec<usize>>>()
        .map_or_else(
            || {
                c.at(start)
                    .err(ParseErrorKind::MalformedShape(text.to_string()))
            },
            Ok,
        )?;
    Ok((dtype, shape))
}

/// `#N dtype[dims] = [..] | hex:.. | elided` (the `const` keyword already read).
fn constant_stmt(c: &mut Cur, expected_id: usize) -> Result<Tensor, ParseError> {
    c.skip_ws();
    let at = c.loc();
    c.expect('#')?;
    let id = c.number_token();
    if id.parse::<usize>().ok() != Some(expected_id) {
        return at.err(ParseErrorKind::ConstantOrder {
            expected: expected_id,
            found: id.to_string(),
        });
    }
    let (dtype, shape) = dtype_shape(c)?;
    let numel = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|n| n.checked_mul(dtype.size()).is_some());
    let Some(numel) = numel else {
        return at.err(ParseErrorKind::ConstantTooLarge {
            id: expected_id,
            shape,
        });
    };
    c.expect('=')?;
    c.skip_ws();
    let data_at = c.loc();
    let data = if c.eat('[') {
        list_data(c, dtype)?
    } else {
        match c.word()?.as_str() {
            "hex" => {
                c.expect(':')?;
                hex_data(c, dtype)?
            }
            "elided" => return data_at.err(ParseErrorKind::ConstantElided { id: expected_id }),
            w => {
                return data_at.err(ParseErrorKind::Expected {
                    what: "constant data ([...], hex:... or elided)".into(),
                    found: Some(format!("'{w}'")),
                })
            }
        }
    };
    if data.len() != numel {
        return data_at.err(ParseErrorKind::ConstantCount {
            id: expected_id,
            found: data.len(),
            needed: numel,
        });
    }
    Ok(Tensor { shape, data })
}

fn list_data(c: &mut Cur, dtype: DType) -> Result<TensorData, ParseError> {
    let mut items = Vec::new();
    c.skip_ws();
    if !c.eat(']') {
        loop {
            c.skip_ws();
            let at = c.loc();
            let start = c.pos;
            while c
                .peek()
                .is_some_and(|ch| !matches!(ch, ',' | ']') && !ch.is_whitespace())
            {
                c.pos += c.peek().map_or(1, char::len_utf8);
            }
            items.push((at, &c.s[start..c.pos]));
            if c.eat(']') {
                break;
            }
            c.expect(',')?;
        }
    }
    fn all<T: std::str::FromStr>(
        items: &[(Loc, &str)],
        dtype: DType,
    ) -> Result<Vec<T>, ParseError> {
        items
            .iter()
            .map(|(at, s)| {
                s.parse::<T>().map_or_else(
                    |_| {
                        at.err(ParseErrorKind::BadElement {
                            text: s.to_string(),
                            dtype,
                        })
                    },
                    Ok,
                )
            })
            .collect()
    }
    Ok(match dtype {
        DType::F32 => TensorData::F32(all(&items, dtype)?),
        DType::I8 => TensorData::I8(all(&items, dtype)?),
        DType::U8 => TensorData::U8(all(&items, dtype)?),
        DType::I32 => TensorData::I32(all(&items, dtype)?),
        DType::I64 => TensorData::I64(all(&items, dtype)?),
    })
}

fn hex_data(c: &mut Cur, dtype: DType) -> Result<TensorData, ParseError> {
    let start = c.pos;
    let bytes = c.s.as_bytes();
    while c.pos < bytes.len() && bytes[c.pos].is_ascii_hexdigit() {
        c.pos += 1;
    }
    let digits = &bytes[start..c.pos];
    if !digits.chunks_exact(2 * dtype.size()).remainder().is_empty() {
        return c.at(start).err(ParseErrorKind::HexDigits {
            digits: digits.len(),
            dtype,
        });
    }
    let nib = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
    let raw: Vec<u8> = digits
        .chunks_exact(2)
        .map(|p| nib(p[0]) << 4 | nib(p[1]))
        .collect();
    Ok(match dtype {
        DType::F32 => TensorData::F32(
            raw.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ),
        DType::I8 => TensorData::I8(raw.iter().map(|&b| b as i8).collect()),
        DType::U8 => TensorData::U8(raw),
        DType::I32 => TensorData::I32(
            raw.chunks_exact(4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ),
        DType::I64 => TensorData::I64(
            raw.chunks_exact(8)
                .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect(),
        ),
    })
}

// ---- graph construction ----------------------------------------------------------------

fn build(ast: Ast) -> Result<Graph, ParseError> {
    let Some(name) = ast.name else {
        return Loc { line: 1, col: 1 }.err(ParseErrorKind::Empty);
    };
    let mut g = Graph::new(name);
    for t in ast.constants {
        g.push_constant(t);
    }
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, n) in ast.nodes.iter().enumerate() {
        if index.insert(n.name.as_str(), i).is_some() {
            return n.loc.err(ParseErrorKind::NodeTwice(n.name.clone()));
        }
    }
    let mut ids = vec![None; ast.nodes.len()];
    for r in ast.inputs.iter().flatten() {
        let Some(&i) = index.get(r.name.as_str()) else {
            return r.loc.err(ParseErrorKind::InputUndefined(r.name.clone()));
        };
        let n = &ast.nodes[i];
        if n.op != Op::Input || r.port != 0 {
            return r.loc.err(ParseErrorKind::InputNotInput(r.name.clone()));
        }
        if ids[i].is_some() {
            return r.loc.err(ParseErrorKind::InputTwice(r.name.clone()));
        }
        let placeholder = TensorType::f32(vec![]);
        let v = g.add_input(
            n.name.clone(),
            n.outputs.first().cloned().unwrap_or(placeholder),
        );
        g.node_mut(v.node).outputs = n.outputs.clone();
        ids[i] = Some(v.node);
    }
    for (i, n) in ast.nodes.iter().enumerate() {
        if ids[i].is_none() {
            ids[i] = Some(g.add_node_typed(n.name.clone(), n.op.clone(), &[], n.outputs.clone()));
        }
    }
    let ids: Vec<_> = ids.into_iter().flatten().collect();
    let resolve = |r: &Ref| match index.get(r.name.as_str()) {
        Some(&i) => Ok(Value::new(ids[i], r.port)),
        None => r.loc.err(ParseErrorKind::ValueUndefined(r.name.clone())),
    };
    for (i, n) in ast.nodes.iter().enumerate() {
        let args = n.args.iter().map(resolve).collect::<Result<Vec<_>, _>>()?;
        g.set_node_inputs(ids[i], &args);
    }
    for (name, r) in &ast.outputs {
        let v = resolve(r)?;
        g.add_output(name.clone(), v);
    }
    Ok(g)
}
