//! The pictures, as a user makes them: `nnac profile --roofline/--timeline` and
//! `nnac compile --graph`. Every SVG written is parsed (well-formed XML); on the
//! roofline every layer with compute has one marker, placed within a pixel of where
//! the `--json` figures (cycles, MACs, DRAM bytes, clock) put it on the axes the
//! picture's own ticks define, with its shape bound above it; the timeline's
//! cause row tiles the frame; `--json` is unchanged by the picture options. Needs the
//! model and image cache of `scripts/setup.sh` and Graphviz `dot` (setup.sh installs
//! it); without them the test fails, it is never skipped.

mod common;

use common::{need, root, run_ok, tempdir};
use roxmltree::{Document, Node};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn nnac() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nnac"))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Compiles `model` into `out` (quietly) with extra options.
fn compile(model: &Path, out: &Path, extra: &[&str]) {
    let img = need(root().join(".cache/models/images/astronaut.png"));
    run_ok(
        nnac()
            .arg("compile")
            .arg(model)
            .args(["--calib", s(&img), "-q", "-o", s(out)])
            .args(extra),
    );
}

/// Parses an SVG file's text; Graphviz's output declares the SVG 1.1 DTD.
fn parse(text: &str) -> Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    Document::parse_with_options(text, opts).unwrap_or_else(|e| panic!("not well-formed XML: {e}"))
}

fn attr<'a>(n: Node<'a, '_>, a: &str) -> &'a str {
    n.attribute(a)
        .unwrap_or_else(|| panic!("<{}> without {a}", n.tag_name().name()))
}

fn num(n: Node, a: &str) -> f64 {
    attr(n, a)
        .parse()
        .unwrap_or_else(|e| panic!("{a}={:?}: {e}", n.attribute(a)))
}

fn has_class(n: Node, c: &str) -> bool {
    n.attribute("class")
        .is_some_and(|v| v.split_whitespace().any(|w| w == c))
}

fn with_class<'a, 'i>(root: Node<'a, 'i>, c: &str) -> Vec<Node<'a, 'i>> {
    root.descendants().filter(|n| has_class(*n, c)).collect()
}

/// `translate(x,y)` of a marker group.
fn translate(n: Node) -> (f64, f64) {
    let t = attr(n, "transform");
    let inner = t
        .strip_prefix("translate(")
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("transform {t:?}"));
    let (x, y) = inner.split_once(',').expect("x,y");
    (x.parse().unwrap(), y.parse().unwrap())
}

/// A log axis recovered from a panel's major ticks: pixel = a + b log10(value).
/// Checks that every tick lies on that line (within a pixel).
struct Axis {
    a: f64,
    b: f64,
}

impl Axis {
    fn from_ticks(ticks: &[(f64, f64)]) -> Axis {
        assert!(ticks.len() >= 3, "an axis needs labelled ticks: {ticks:?}");
        let (v0, p0) = ticks[0];
        let (v1, p1) = ticks[ticks.len() - 1];
        let b = (p1 - p0) / (v1.log10() - v0.log10());
        let ax = Axis {
            a: p0 - b * v0.log10(),
            b,
        };
        for &(v, p) in ticks {
            assert!((ax.px(v) - p).abs() < 1.0, "tick {v} at {p}, not log");
        }
        ax
    }
    fn px(&self, v: f64) -> f64 {
        self.a + self.b * v.log10()
    }
}

/// The axes of a roofline panel from its `tick x major` / `tick y major` lines.
fn panel_axes(panel: Node) -> (Axis, Axis) {
    let ticks = |c: &str, coord: &str| -> Vec<(f64, f64)> {
        with_class(panel, "tick")
            .into_iter()
            .filter(|n| has_class(*n, c) && has_class(*n, "major"))
            .map(|n| (num(n, "data-value"), num(n, coord)))
            .collect()
    };
    (
        Axis::from_ticks(&ticks("x", "x1")),
        Axis::from_ticks(&ticks("y", "y1")),
    )
}

fn close(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1.0,
        "{what}: drawn at {got:.2}, the JSON figures put it at {want:.2}"
    );
}

/// Checks the roofline `svg` against the `--json` report `j`.
fn check_roofline(svg: &str, j: &Value) {
    let doc = parse(svg);
    let clock = j["hw"]["clock_hz"].as_f64().unwrap();
    let (rows, cols) = (
        j["hw"]["mac_rows"].as_f64().unwrap(),
        j["hw"]["mac_cols"].as_f64().unwrap(),
    );
    let peak = 2.0 * rows * cols * clock;
    let layers: BTreeMap<&str, &Value> = j["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["name"].as_str().unwrap(), l))
        .collect();
    // Layers with compute: MACs, or SIMD work.
    let with_compute: Vec<&str> = layers
        .iter()
        .filter(|(_, l)| l["macs"].as_u64() > Some(0) || l["simd_work"].as_u64() > Some(0))
        .map(|(n, _)| *n)
        .collect();
    for (class, memory) in [("dram", "DRAM"), ("sram", "SRAM")] {
        let panel = doc
            .descendants()
            .find(|n| has_class(*n, "panel") && has_class(*n, class))
            .unwrap_or_else(|| panic!("no {memory} panel"));
        for axis in ["x", "y"] {
            let t = with_class(panel, "axis-title")
                .into_iter()
                .find(|n| has_class(*n, axis))
                .unwrap_or_else(|| panic!("{memory} panel: no {axis} axis title"));
            assert!(!t.text().unwrap_or("").trim().is_empty());
        }
        let (xa, ya) = panel_axes(panel);
        let strip = with_class(panel, "no-traffic")[0];
        let strip_x = num(strip, "x1");
        let points = with_class(panel, "point");
        let mut hardware_marks = 0;
        let mut drawn: Vec<&str> = points.iter().map(|p| attr(*p, "data-layer")).collect();
        drawn.sort_unstable();
        assert_eq!(drawn, with_compute, "{memory} panel: one marker per layer");
        for p in &points {
            let name = attr(*p, "data-layer");
            let l = layers[name];
            let title = p
                .descendants()
                .find(|n| n.has_tag_name("title"))
                .and_then(|t| t.text())
                .unwrap_or("");
            assert!(title.starts_with(name), "hover title of {name}: {title:?}");
            let ops: f64 = num(*p, "data-ops");
            let cycles = l["cycles"].as_f64().unwrap();
            assert_eq!(num(*p, "data-cycles"), cycles, "{name}: cycles");
            let macs = l["macs"].as_f64().unwrap();
            if macs > 0.0 {
                assert_eq!(ops, 2.0 * macs, "{name}: a dot product's ops are 2 x MACs");
            }
            let (x, y) = translate(*p);
            close(
                &format!("{memory} {name} y"),
                y,
                ya.px(ops * clock / cycles),
            );
            let bytes = num(*p, "data-bytes");
            if class == "dram" {
                let d = &l["dram_bytes"];
                let want = d["read"].as_f64().unwrap() + d["written"].as_f64().unwrap();
                assert_eq!(bytes, want, "{name}: DRAM bytes");
            }
            if bytes > 0.0 {
                close(&format!("{memory} {name} x"), x, xa.px(ops / bytes));
            } else {
                close(&format!("{memory} {name} x (no traffic)"), x, strip_x);
            }
            // The shape bound above the point.
            if let Some(b) = l["shape_bound"].as_f64() {
                let m = with_class(panel, "bound")
                    .into_iter()
                    .find(|n| has_class(*n, "shape") && n.attribute("data-layer") == Some(name))
                    .unwrap_or_else(|| panic!("{name}: no shape-bound marker"));
                close(
                    &format!("{name} shape bound"),
                    num(m, "y1"),
                    ya.px(b * peak),
                );
                assert!(
                    num(m, "y1") <= y + 1.0,
                    "{name}: the bound is above the point"
                );
            }
            // The hardware bound (docs/PERFORMANCE.md 3.1), where the report has it.
            let hw = with_class(panel, "bound")
                .into_iter()
                .find(|n| has_class(*n, "hardware") && n.attribute("data-layer") == Some(name));
            match (l["hardware_bound"].as_f64().filter(|b| *b > 0.0), hw) {
                (Some(b), Some(m)) => {
                    close(
                        &format!("{name} hardware bound"),
                        num(m, "y1"),
                        ya.px(b * peak),
                    );
                    hardware_marks += 1;
                }
                (None, None) => {}
                (b, m) => panic!(
                    "{name}: hardware bound {b:?}, marker drawn: {}",
                    m.is_some()
                ),
            }
        }
        let dot_layers = layers
            .values()
            .filter(|l| l["macs"].as_u64() > Some(0))
            .count();
        assert!(
            hardware_marks >= dot_layers,
            "{memory} panel: a hardware bound above every dot product ({hardware_marks} of {dot_layers})"
        );
    }
}

/// Checks the timeline `svg` against the `--json` report `j`.
fn check_timeline(svg: &str, j: &Value) {
    let doc = parse(svg);
    let root = doc.root_element();
    for lane in ["dma", "compute", "causes"] {
        let g = with_class(root, "lane")
            .into_iter()
            .find(|n| has_class(*n, lane))
            .unwrap_or_else(|| panic!("no {lane} lane"));
        assert!(
            g.children().any(|n| has_class(n, "span")),
            "{lane} lane is empty"
        );
    }
    let x_title = with_class(root, "axis-title");
    assert!(x_title
        .iter()
        .any(|n| n.text().unwrap_or("").contains("µs")));
    assert!(with_class(root, "tick").len() >= 3, "time axis ticks");
    // One gap per segment followed by host ops.
    let mut segs: Vec<u64> = j["host_ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["segment"].as_u64().unwrap())
        .collect();
    segs.dedup();
    assert_eq!(with_class(root, "host-gap").len(), segs.len(), "host gaps");
    // The cause row tiles the frame: its spans, by pixel columns, cover the time
    // axis from its first tick (0 µs) to the end without holes.
    let causes = with_class(root, "lane")
        .into_iter()
        .find(|n| has_class(*n, "causes"))
        .unwrap();
    let mut cover: Vec<(f64, f64)> = causes
        .children()
        .filter(|n| has_class(*n, "span"))
        .map(|n| (num(n, "x"), num(n, "x") + num(n, "width")))
        .collect();
    cover.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let zero = with_class(root, "tick")
        .into_iter()
        .find(|n| num(*n, "data-value") == 0.0)
        .expect("a tick at 0");
    let mut end = num(zero, "x1");
    for (a, b) in cover {
        // Gaps of a host-op box (18 px) are allowed, holes of more than a pixel not.
        assert!(
            a <= end + 1.0 || a - end >= 17.0,
            "hole in the cause row at {end}..{a}"
        );
        end = end.max(b);
    }
}

fn profile_pictures(prog: &Path, dir: &Path, tag: &str) {
    let (roof, tl) = (
        dir.join(format!("{tag}-roofline.svg")),
        dir.join(format!("{tag}-timeline.svg")),
    );
    let plain = run_ok(nnac().args(["profile", "--json", s(prog)]));
    let with = run_ok(nnac().args([
        "profile",
        "--json",
        s(prog),
        "--roofline",
        s(&roof),
        "--timeline",
        s(&tl),
    ]));
    assert_eq!(plain, with, "--json is unchanged by the picture options");
    let j: Value = serde_json::from_str(&plain).unwrap();
    check_roofline(&std::fs::read_to_string(&roof).unwrap(), &j);
    check_timeline(&std::fs::read_to_string(&tl).unwrap(), &j);
}

#[test]
fn roofline_and_timeline_of_the_tiny_cnn_streaming_its_weights() {
    let tmp = tempdir("pictures-tiny");
    let prog = tmp.path().join("tiny.nnab");
    compile(
        &root().join("models/tiny_cnn.onnx"),
        &prog,
        &["--resident-weights", "off"],
    );
    profile_pictures(&prog, tmp.path(), "tiny");
}

#[test]
fn roofline_timeline_and_graph_of_resnet50() {
    let tmp = tempdir("pictures-r50");
    let dir = tmp.path();
    let prog = dir.join("r50.nnab");
    let graph = dir.join("r50.svg");
    let model = need(root().join(".cache/models/light/resnet50.onnx"));
    compile(&model, &prog, &["--graph", s(&graph)]);
    profile_pictures(&prog, dir, "r50");
    // Graphviz's SVG: well-formed, with the fused groups as clusters and the host op.
    let svg = std::fs::read_to_string(&graph).unwrap();
    let doc = parse(&svg);
    let clusters = doc
        .descendants()
        .filter(|n| has_class(*n, "cluster"))
        .count();
    // Per bottleneck block: two convolutions with their ReLU and the Add with its
    // ReLU (16 blocks), and the stem's convolution + ReLU + max pool.
    assert_eq!(clusters, 16 * 3 + 1, "ResNet-50's fused groups boxed");
    assert!(svg.contains("host: softmax"), "the host op is drawn");
    assert!(svg.contains("cycles ("), "per-node cycles");
}

#[test]
fn graph_as_dot_and_without_graphviz() {
    let tmp = tempdir("pictures-graph");
    let dir = tmp.path();
    let model = root().join("models/tiny_cnn.onnx");
    let dot = dir.join("g.dot");
    compile(&model, &dir.join("a.nnab"), &["--graph", s(&dot)]);
    let text = std::fs::read_to_string(&dot).unwrap();
    assert!(text.starts_with("digraph "), "DOT text");
    assert!(
        text.contains("subgraph \"cluster_"),
        "fused groups as clusters"
    );
    assert!(text.contains("\"conv1/relu\""), "a fused member is named");
    assert!(text.contains("cycles ("), "per-node cycles");
    // Without Graphviz an .svg request writes the DOT text beside it and says so.
    let svg = dir.join("h.svg");
    let out = nnac()
        .args(["compile", s(&model), "-q", "-o", s(&dir.join("b.nnab"))])
        .args([
            "--calib",
            s(&need(root().join(".cache/models/images/astronaut.png"))),
        ])
        .args(["--graph", s(&svg)])
        .env("NNAC_DOT", dir.join("no-such-dot"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Graphviz `dot` is not installed"), "{err}");
    assert!(!svg.exists());
    assert_eq!(std::fs::read_to_string(dir.join("h.dot")).unwrap(), text);
    // With Graphviz: an SVG.
    assert!(
        Command::new("dot").arg("-V").output().is_ok(),
        "Graphviz `dot` is missing: run scripts/setup.sh first"
    );
    compile(&model, &dir.join("c.nnab"), &["--graph", s(&svg)]);
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = parse(&text);
    assert!(doc.descendants().any(|n| has_class(n, "cluster")));
}

#[test]
fn bad_picture_paths_are_user_errors_and_write_nothing() {
    let tmp = tempdir("pictures-errors");
    let dir = tmp.path();
    let model = root().join("models/tiny_cnn.onnx");
    let prog = dir.join("p.nnab");
    let out = nnac()
        .args(["compile", s(&model), "-q", "-o", s(&prog)])
        .args([
            "--calib",
            s(&need(root().join(".cache/models/images/astronaut.png"))),
        ])
        .args(["--graph", s(&dir.join("g.png"))])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(".svg or .dot"));
    assert!(!prog.exists(), "nothing compiled");
    compile(&model, &prog, &[]);
    let out = nnac()
        .args(["profile", s(&prog), "--roofline"])
        .arg(dir.join("no-such-dir/r.svg"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.join("no-such-dir").exists());
}
