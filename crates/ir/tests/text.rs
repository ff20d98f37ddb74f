//! The text form: exact round trips for every op, determinism, elision, equality,
//! parse errors with positions, and a seeded mutation loop that must never panic.

mod common;

use common::{all_ops_graph, nna_graph, op_family, tiny_graph, ALL_MNEMONICS};
use nnac_ir::*;

fn roundtrip(g: &Graph) -> Graph {
    let text = print(g);
    let back = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        graphs_equal(g, &back),
        "parse(print(g)) != g for {}:\n{text}\n---\n{}",
        g.name,
        print(&back)
    );
    assert_eq!(print(&back), text, "print(parse(print(g))) != print(g)");
    back
}

#[test]
fn fixtures_cover_every_op() {
    let graphs = [all_ops_graph(), nna_graph()];
    let mut seen: Vec<&str> = Vec::new();
    for g in &graphs {
        for id in g.node_ids() {
            let op = &g.node(id).op;
            assert!(matches!(op_family(op), "ir" | "nna"));
            seen.push(op.mnemonic());
        }
    }
    for m in ALL_MNEMONICS {
        assert!(seen.contains(m), "no fixture uses {m}");
    }
}

#[test]
fn every_op_round_trips() {
    for g in [tiny_graph(), all_ops_graph(), nna_graph()] {
        let back = roundtrip(&g);
        assert_eq!(verify(&back), Ok(()), "{}", g.name);
    }
}

#[test]
fn printing_is_deterministic() {
    assert_eq!(print(&all_ops_graph()), print(&all_ops_graph()));
    assert_eq!(print(&nna_graph()), print(&nna_graph()));
}

#[test]
fn text_shape_is_as_documented() {
    let text = print(&tiny_graph());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "graph \"tiny\"");
    assert_eq!(lines[1], "inputs %x");
    assert!(lines[2].starts_with("const #0 f32[2x3x1x1] = ["), "{text}");
    assert_eq!(lines[3], "const #1 f32[2] = [0.5, -1.0]");
    assert!(text.contains("%x = input() -> f32[1x3x8x8]\n"), "{text}");
    assert!(text.contains("%b = const() {id=1} -> f32[2]\n"), "{text}");
    assert!(
        text.contains("%conv = conv(%x, %w, %b) {kernel=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1} -> f32[1x2x8x8]\n"),
        "{text}"
    );
    assert_eq!(*lines.last().unwrap(), "output \"y\" = %relu");
}

#[test]
fn awkward_names_are_quoted() {
    let text = print(&all_ops_graph());
    assert!(text.starts_with("graph \"all \\\"ops\\\"\"\n"), "{text}");
    assert!(text.contains("%\"onnx::Conv_1\" = conv("), "{text}");
    assert!(
        text.contains("%\"é identity\" = identity(%power)"),
        "{text}"
    );
    assert!(text.contains("%bin/add = add("), "{text}");
    assert!(text.contains("output \"pooled:max\" = %maxpool"), "{text}");
}

/// Constants with every f32 bit pattern class (subnormals, -0.0, infinities, NaN
/// payloads) and integer extremes survive bit for bit.
#[test]
fn constants_are_exact() {
    let mut g = Graph::new("consts");
    let mut bits: Vec<u32> = vec![
        0,
        0x8000_0000,
        1,
        0x007f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0001,
        0xffff_ffff,
    ];
    let mut s = 0x1234_5678u32;
    for _ in 0..100 {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        bits.push(s);
    }
    let floats: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
    let small: Vec<f32> = floats
        .iter()
        .copied()
        .filter(|x| !x.is_nan())
        .take(7)
        .collect();
    let tensors = [
        Tensor::f32(vec![floats.len()], floats.clone()).unwrap(),
        Tensor::f32(vec![7], small).unwrap(),
        Tensor::f32(vec![1, 3], vec![f32::NAN, 1.0, 2.0]).unwrap(),
        Tensor::scalar_f32(-0.0),
        Tensor::new(vec![4], TensorData::I8(vec![i8::MIN, -1, 0, i8::MAX])).unwrap(),
        Tensor::new(vec![2, 2], TensorData::U8(vec![0, 1, 254, 255])).unwrap(),
        Tensor::new(vec![3], TensorData::I32(vec![i32::MIN, 0, i32::MAX])).unwrap(),
        Tensor::new(
            vec![20],
            TensorData::I64((0..20).map(|i| i64::MIN + i).collect()),
        )
        .unwrap(),
        Tensor::new(vec![0, 5], TensorData::F32(vec![])).unwrap(),
    ];
    let mut last = None;
    for (i, t) in tensors.into_iter().enumerate() {
        last = Some(g.add_constant(format!("c{i}"), t));
    }
    g.add_output("out", last.unwrap());
    let back = roundtrip(&g);
    let a = g.constants()[0]
        .as_f32()
        .unwrap()
        .iter()
        .map(|x| x.to_bits());
    let b = back.constants()[0]
        .as_f32()
        .unwrap()
        .iter()
        .map(|x| x.to_bits());
    assert!(a.eq(b));
}

#[test]
fn cyclic_and_multi_output_graphs_round_trip() {
    let mut g = tiny_graph();
    let r = Value::new(g.find("relu").unwrap(), 0);
    let a = g.add_node("cyc_a", Op::Identity, &[r]).unwrap();
    let b = g
        .add_node("cyc_b", Op::Identity, &[Value::new(a, 0)])
        .unwrap();
    g.set_node_inputs(a, &[Value::new(b, 0)]);
    let ty = TensorType::f32(vec![2]);
    let two = g.add_node_typed("two", Op::Identity, &[r], vec![ty.clone(), ty]);
    g.add_output("second", Value::new(two, 1));
    let none = g.add_node_typed("none", Op::Identity, &[Value::new(two, 1)], vec![]);
    g.add_node_typed("stray input", Op::Input, &[Value::new(none, 0)], vec![]);
    let text = print(&g);
    assert!(
        text.contains("%two = identity(%relu) -> (f32[2], f32[2])"),
        "{text}"
    );
    assert!(text.contains("%none = identity(%two:1) -> ()"), "{text}");
    roundtrip(&g);
}

/// An edit of a graph that must make it unequal to the original.
type Change = Box<dyn Fn(&mut Graph)>;

#[test]
fn equality_detects_differences() {
    let base = all_ops_graph();
    assert!(graphs_equal(&base, &all_ops_graph()));
    let mut changes: Vec<Change> = vec![
        Box::new(|g| g.name.push('!')),
        Box::new(|g| {
            let id = g.find("lrn").unwrap();
            g.node_mut(id).op = Op::Lrn {
                size: 3,
                alpha: 1e-4,
                beta: 0.75,
                bias: 1.0000001,
            };
        }),
        Box::new(|g| {
            let id = g.find("act 5").unwrap();
            g.node_mut(id).op = Op::Act(Activation::HardSigmoid {
                alpha: 1.0 / 3.0,
                beta: 0.0,
            });
        }),
        Box::new(|g| {
            let id = g.find("x").unwrap();
            g.node_mut(id).outputs[0].quant = Some(Quant::PerTensor {
                scale: 1.0,
                zero_point: 0,
            });
        }),
        Box::new(|g| g.outputs_mut().swap(0, 1)),
        Box::new(|g| g.outputs_mut()[0].name = "other".into()),
        Box::new(|g| {
            let id = g.find("bin/sub").unwrap();
            let ins = g.node_inputs(id);
            g.set_node_inputs(id, &[ins[1], ins[0]]);
        }),
        Box::new(|g| {
            let id = g.find("softmax").unwrap();
            g.node_mut(id).name = "softmax2".into();
        }),
        Box::new(|g| {
            g.push_constant(Tensor::scalar_f32(0.0));
        }),
    ];
    for (i, change) in changes.iter_mut().enumerate() {
        let mut g = all_ops_graph();
        change(&mut g);
        assert!(!graphs_equal(&base, &g), "change {i} not detected");
        assert!(
            !graphs_equal(&g, &base),
            "change {i} not detected (reversed)"
        );
    }
    let c = |bits: u32| {
        let mut g = Graph::new("c");
        let v = g.add_constant(
            "k",
            Tensor::f32(vec![1], vec![f32::from_bits(bits)]).unwrap(),
        );
        g.add_output("o", v);
        g
    };
    assert!(graphs_equal(&c(0x3f80_0000), &c(0x3f80_0000)));
    assert!(graphs_equal(&c(0x7fc0_0001), &c(0x7fc0_0001)));
    assert!(!graphs_equal(&c(0x3f80_0000), &c(0x3f80_0001)));
    assert!(!graphs_equal(&c(0), &c(0x8000_0000)));
}

#[test]
fn elided_constants_do_not_parse() {
    let g = all_ops_graph();
    let text = print_with(
        &g,
        PrintOptions {
            elide_constants_over: Some(8),
        },
    );
    assert!(text.contains("const #0 f32[8x4x3x3] = elided\n"), "{text}");
    assert!(text.contains("= [0.") || text.contains("= [-0."), "{text}");
    let e = parse(&text).unwrap_err();
    assert_eq!((e.line, e.col), (3, 25), "{e}");
    assert!(
        e.kind.to_string().contains("elided") && e.kind.to_string().contains("--full"),
        "{e}"
    );
    assert_eq!(
        print_with(
            &g,
            PrintOptions {
                elide_constants_over: None
            }
        ),
        print(&g)
    );
}

#[test]
fn parse_errors_have_positions() {
    let head = "graph \"g\"\ninputs %x\n%x = input() -> f32[1x2]\n";
    let cases: &[(&str, usize, usize, &str)] = &[
        ("", 1, 1, "empty text"),
        ("%x = input() -> f32[1]\n", 1, 1, "must start with `graph"),
        ("graph g\n", 1, 7, "double-quoted string"),
        ("graph \"g\nx", 1, 9, "unterminated string"),
        ("graph \"a\\q\"\n", 1, 9, "unknown escape"),
        ("graph \"g\"\ngraph \"h\"\n", 2, 1, "second `graph`"),
        ("graph \"g\"\nbogus\n", 2, 1, "found 'bogus'"),
        (
            "graph \"g\"\n  %y = frob() -> f32[1]\n",
            2,
            8,
            "unknown op 'frob'",
        ),
        (
            "graph \"g\"\n%y = relu(%x) -> f32[1]\n",
            2,
            11,
            "value %x is not defined",
        ),
        (
            &format!("{head}%y = relu(%x -> f32[1x2]\n"),
            4,
            14,
            "expected ',', found '-'",
        ),
        (
            &format!("{head}%y = relu(%x) -> f33[1x2]\n"),
            4,
            18,
            "unknown element type 'f33'",
        ),
        (
            &format!("{head}%y = relu(%x) -> f32[1xx2]\n"),
            4,
            22,
            "malformed shape",
        ),
        (
            &format!("{head}%y = relu(%x) -> f32[1x2] junk\n"),
            4,
            27,
            "unexpected text",
        ),
        (
            &format!("{head}%x = relu(%x) -> f32[1x2]\n"),
            4,
            1,
            "defined twice",
        ),
        (
            &format!("{head}%y = concat(%x) {{axis=1, axis=2}} -> f32[1x2]\n"),
            4,
            26,
            "given twice",
        ),
        (
            &format!("{head}%y = concat(%x) {{}} -> f32[1x2]\n"),
            4,
            6,
            "missing attribute 'axis'",
        ),
        (
            &format!("{head}%y = concat(%x) {{axis=1, bias=2}} -> f32[1x2]\n"),
            4,
            26,
            "no attribute 'bias'",
        ),
        (
            &format!("{head}%y = concat(%x) {{axis=-1}} -> f32[1x2]\n"),
            4,
            23,
            "'-1' is not a valid usize",
        ),
        (
            &format!("{head}%y = clip(%x) {{min=low, max=1.0}} -> f32[1x2]\n"),
            4,
            20,
            "expected a number",
        ),
        (
            &format!(
                "{head}%y = resize(%x) {{mode=cubic, coord=x, sizes=[], scales=[]}} -> f32[1x2]\n"
            ),
            4,
            23,
            "resize mode",
        ),
        (
            &format!("{head}%y = relu(%x:70000) -> f32[1x2]\n"),
            4,
            14,
            "bad port number",
        ),
        (
            &format!("{head}%y = relu(%x) -> i8[1x2] q{{scale=0.5}}\n"),
            4,
            26,
            "missing attribute 'zero_point'",
        ),
        (
            "graph \"g\"\nconst #1 f32[1] = [1.0]\n",
            2,
            7,
            "expected constant #0",
        ),
        (
            "graph \"g\"\nconst #0 f32[2] = [1.0]\n",
            2,
            19,
            "has 1 elements, its shape needs 2",
        ),
        (
            "graph \"g\"\nconst #0 i8[1] = [300]\n",
            2,
            19,
            "'300' is not a valid i8 value",
        ),
        (
            "graph \"g\"\nconst #0 f32[99999999999x99999999999] = []\n",
            2,
            7,
            "too large",
        ),
        (
            "graph \"g\"\noutput \"y\" = %nowhere\n",
            2,
            14,
            "not defined",
        ),
        (
            "graph \"g\"\ninputs %r\n%r = relu() -> f32[1]\n",
            2,
            8,
            "must name an input() node",
        ),
        (
            &format!(
                "{head}%y = nna.host(%x) {{op=nna.host{{op=nna.host{{op=relu}}}}}} -> f32[1x2]\n"
            ),
            0,
            0,
            "",
        ),
    ];
    for (text, line, col, msg) in cases {
        match parse(text) {
            Err(e) => {
                assert!(
                    e.kind.to_string().contains(msg),
                    "{text:?}: got {e}, expected '{msg}'"
                );
                assert_eq!((e.line, e.col), (*line, *col), "{text:?}: {e}");
                assert!(e
                    .to_string()
                    .starts_with(&format!("line {line}, column {col}: ")));
            }
            Ok(_) => assert_eq!(*line, 0, "{text:?} should not parse"),
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let text = format!(
        "graph \"g\"\n%y = concat() {{axis={}1{}}} -> f32[1]\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let e = parse(&text).unwrap_err();
    assert!(e.kind.to_string().contains("nested too deeply"), "{e}");
}

/// xorshift64*: a tiny seeded generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const ALPHABET: &[u8] = b"%#=(){}[],:\"\\-.x0123456789abcdefqinfNaN \n";

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(b.len() + 1);
        match rng.below(5) {
            0 if i < b.len() => b[i] = ALPHABET[rng.below(ALPHABET.len())],
            1 if i < b.len() => {
                let end = (i + 1 + rng.below(8)).min(b.len());
                b.drain(i..end);
            }
            2 => b.insert(i, ALPHABET[rng.below(ALPHABET.len())]),
            3 if i < b.len() => b[i] = b[i].wrapping_add(1 + rng.below(9) as u8),
            _ => {
                let j = rng.below(b.len());
                let k = (j + rng.below(40)).min(b.len());
                let piece = b[j..k].to_vec();
                b.splice(i.min(b.len())..i.min(b.len()), piece);
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Random mutations of valid texts: `parse` returns an error or a graph, never
/// panics; a parsed graph verifies without panicking and round-trips.
#[test]
fn mutated_text_never_panics() {
    let seeds = [
        print(&tiny_graph()),
        print(&all_ops_graph()),
        print(&nna_graph()),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut parsed, mut rejected) = (0, 0);
    for round in 0..3000 {
        let text = mutate(&mut rng, &seeds[round % seeds.len()]);
        match parse(&text) {
            Ok(g) => {
                parsed += 1;
                let _ = verify(&g);
                let _ = to_dot(&g);
                let again = print(&g);
                let back = parse(&again)
                    .unwrap_or_else(|e| panic!("reprint does not parse: {e}\n{again}"));
                assert!(
                    graphs_equal(&g, &back),
                    "mutated graph does not round-trip:\n{again}"
                );
            }
            Err(e) => {
                rejected += 1;
                assert!(e.line >= 1 && e.col >= 1, "{e}");
            }
        }
    }
    assert!(
        parsed > 100 && rejected > 100,
        "parsed {parsed}, rejected {rejected}"
    );
}

/// Parse errors are typed: callers match on what is wrong, the node and the attribute.
#[test]
fn errors_are_typed_with_node_and_attribute() {
    let head = "graph \"g\"\ninputs %x\n%x = input() -> f32[1x2]\n";
    let e = parse(&format!("{head}%y = concat(%x) {{}} -> f32[1x2]\n")).unwrap_err();
    assert_eq!(e.node.as_deref(), Some("y"));
    assert_eq!(
        e.kind,
        ParseErrorKind::Attr(AttrErrorKind::Missing {
            owner: "op 'concat'".into(),
            attr: "axis",
        })
    );
    let e = parse(&format!("{head}%y = concat(%x) {{axis=-1}} -> f32[1x2]\n")).unwrap_err();
    assert!(
        matches!(
            &e.kind,
            ParseErrorKind::Attr(AttrErrorKind::Value { attr: "axis", .. })
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "line 4, column 23: op 'concat', attribute 'axis': '-1' is not a valid usize"
    );
    let e = parse(&format!("{head}%y = frob(%x) -> f32[1x2]\n")).unwrap_err();
    assert!(
        matches!(&e.kind, ParseErrorKind::Attr(AttrErrorKind::UnknownTag { what: "op", tag, .. }) if tag == "frob"),
        "{e}"
    );
    let e = parse("graph \"g\"\noutput \"y\" = %nowhere\n").unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::ValueUndefined("nowhere".into()));
    assert_eq!(e.node, None);
}
