//! Golden filetests of the passes, the verifier and the backend, in the manner of
//! Cranelift's: each `tests/filetests/**/*.nnir` file holds its input IR and, next to
//! it, the expected result. The expected part is written by the tool, never by hand:
//! `NNAC_BLESS=1 cargo test --release --test filetests` rewrites it from what the
//! code now produces (review the diff before committing it).
//!
//! A file is `;`-directives, the input graph in the IR text form (`nnac_ir::parse`;
//! `//` comments allowed), then `; expect:` and the expected output:
//!
//! ```text
//! ; run: fold_batchnorm          (one or more pass names, applied in order)
//! ; Any other `;` line is a comment describing the case.
//! graph "bn"
//! ...
//! ; expect:
//! graph "bn"                     (the IR after the passes, `nnac_ir::print`)
//! ...
//! ```
//!
//! - `; run: PASS [PASS ...]`: runs the named passes of `nnac_passes::FLOAT_PASSES` /
//!   `FUSION_PASSES` with the verifier after each; expects the printed IR.
//! - `; run: verify`: runs `nnac_ir::verify`; each `; error: TEXT` line must be the
//!   substring of one verifier error (in order, one line per error, and no other
//!   error); without `; error:` lines the graph must verify.
//! - `; run: backend`: lowers a quantized graph with the default hardware and
//!   options and expects the program's listing (`nnac disasm`'s text).
//! - `; host: NODE REASON`: with passes, names a node to run on the host and why
//!   (`PassOptions::host_nodes`, which the partitioning fills; `force_host`).
//! - `; float: NAME`: with passes, names a layer to keep in float32 on the host
//!   (`PassOptions::float_layers`, `--float-layers`; the `float_layers` pass).
//! - `; error: TEXT` with a pass or the backend: the run must fail with an error whose
//!   text contains every such line, and there is no `; expect:` part.

use nnac_backend_nna::{lower, BackendOptions};
use nnac_ir::{parse, print, verify, Graph};
use nnac_isa::listing::table::listing;
use nnac_isa::HwConfig;
use nnac_passes::{run_passes, Pass, PassOptions, FLOAT_PASSES, FUSION_PASSES};
use std::path::{Path, PathBuf};

const EXPECT: &str = "; expect:";

/// One parsed filetest.
struct Case {
    /// What `; run:` names.
    run: Vec<String>,
    /// The `; error:` lines.
    errors: Vec<String>,
    /// The `; host: NODE REASON` lines.
    host_nodes: std::collections::BTreeMap<String, String>,
    /// The `; float: NAME` lines.
    float_layers: std::collections::BTreeMap<String, String>,
    /// The file up to (without) the `; expect:` line.
    head: String,
    /// The input IR: the head without its `;` lines.
    input: String,
    /// The text after `; expect:`, if any.
    expected: Option<String>,
}

fn parse_case(path: &Path, text: &str) -> Case {
    let (head, expected) = match text.find(&format!("\n{EXPECT}\n")) {
        Some(at) => (
            text[..at + 1].to_string(),
            Some(text[at + EXPECT.len() + 2..].to_string()),
        ),
        None => (text.to_string(), None),
    };
    let mut run = Vec::new();
    let mut errors = Vec::new();
    let mut host_nodes = std::collections::BTreeMap::new();
    let mut float_layers = std::collections::BTreeMap::new();
    let mut input = String::new();
    for line in head.lines() {
        if let Some(d) = line.strip_prefix(';') {
            let d = d.trim();
            if let Some(r) = d.strip_prefix("run:") {
                run = r.split_whitespace().map(str::to_string).collect();
            } else if let Some(e) = d.strip_prefix("error:") {
                errors.push(e.trim().to_string());
            } else if let Some(h) = d.strip_prefix("host:") {
                let (node, why) = h.trim().split_once(' ').unwrap_or((h.trim(), ""));
                host_nodes.insert(node.to_string(), why.trim().to_string());
            } else if let Some(f) = d.strip_prefix("float:") {
                float_layers.insert(
                    f.trim().to_string(),
                    nnac_passes::FLOAT_LAYER_REASON.to_string(),
                );
            }
        } else {
            input.push_str(line);
            input.push('\n');
        }
    }
    assert!(!run.is_empty(), "{}: no '; run:' line", path.display());
    Case {
        run,
        errors,
        host_nodes,
        float_layers,
        head,
        input,
        expected,
    }
}

/// The pass of that name in the pipeline's tables.
fn pass(name: &str, path: &Path) -> Pass {
    *FLOAT_PASSES
        .iter()
        .chain(&FUSION_PASSES)
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{}: no pass named '{name}'", path.display()))
}

/// What the case produces: `Ok(text to compare)` or `Err(error lines)`.
fn produce(case: &Case, g: Graph, path: &Path) -> Result<String, Vec<String>> {
    match case.run.first().map(String::as_str) {
        Some("verify") => match verify(&g) {
            Ok(()) => Ok("verifies\n".into()),
            Err(errs) => Err(errs.iter().map(|e| e.to_string()).collect()),
        },
        Some("backend") => lower(&g, &HwConfig::default(), &BackendOptions::default())
            .map(|(program, _)| listing(&program))
            .map_err(|e| vec![e.to_string()]),
        _ => {
            let passes: Vec<Pass> = case.run.iter().map(|n| pass(n, path)).collect();
            let mut g = g;
            let opts = PassOptions {
                verify_each: true,
                host_nodes: case.host_nodes.clone(),
                float_layers: case.float_layers.clone(),
                ..PassOptions::default()
            };
            run_passes(&mut g, &passes, &opts)
                .map(|_| print(&g))
                .map_err(|e| vec![e.to_string()])
        }
    }
}

fn check(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case = parse_case(path, &text);
    let g = parse(&case.input).map_err(|e| format!("input does not parse: {e}"))?;
    // Inputs are well-formed, except in the verifier's negative tests.
    if case.run[0] != "verify" {
        verify(&g).map_err(|e| format!("input fails the verifier: {e:?}"))?;
    }
    let got = produce(&case, g, path);
    if !case.errors.is_empty() {
        let errs = match got {
            Ok(out) => return Err(format!("expected errors, got:\n{out}")),
            Err(errs) => errs,
        };
        if case.run[0] == "verify" && errs.len() != case.errors.len() {
            return Err(format!(
                "expected {} verifier error(s), got {}:\n{}",
                case.errors.len(),
                errs.len(),
                errs.join("\n")
            ));
        }
        for (k, want) in case.errors.iter().enumerate() {
            let hit = if case.run[0] == "verify" {
                errs[k].contains(want.as_str())
            } else {
                errs.iter().any(|e| e.contains(want.as_str()))
            };
            if !hit {
                return Err(format!("no error contains '{want}':\n{}", errs.join("\n")));
            }
        }
        return Ok(());
    }
    let out = got.map_err(|errs| format!("failed:\n{}", errs.join("\n")))?;
    if bless {
        std::fs::write(path, format!("{}{EXPECT}\n{out}", case.head)).map_err(|e| e.to_string())
    } else if case.expected.as_deref() == Some(out.as_str()) {
        Ok(())
    } else {
        Err(format!(
            "output differs from the expected part (NNAC_BLESS=1 rewrites it):\n--- expected\n{}\n--- got\n{out}",
            case.expected.as_deref().unwrap_or("(none)")
        ))
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "nnir") {
            out.push(p);
        }
    }
}

#[test]
fn filetests() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let mut all = Vec::new();
    files(&dir, &mut all);
    all.sort();
    let bless = std::env::var_os("NNAC_BLESS").is_some_and(|v| v == "1");
    let failures: Vec<String> = all
        .iter()
        .filter_map(|p| {
            check(p, bless)
                .err()
                .map(|e| format!("{}: {e}", p.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Every pass of the pipeline has at least one filetest.
    let text: Vec<String> = all
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for p in FLOAT_PASSES.iter().chain(&FUSION_PASSES) {
        let named = text.iter().any(|t| {
            t.lines().any(|l| {
                l.strip_prefix("; run:")
                    .is_some_and(|r| r.split_whitespace().any(|n| n == p.name))
            })
        });
        assert!(named, "no filetest runs pass '{}'", p.name);
    }
    for kind in ["verify", "backend"] {
        assert!(
            text.iter().any(|t| t.contains(&format!("; run: {kind}"))),
            "no '{kind}' filetest"
        );
    }
}
