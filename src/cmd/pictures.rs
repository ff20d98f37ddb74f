//! The pictures `nnac profile --roofline/--timeline` and `nnac compile --graph`
//! write: the drawing is `nnac-pictures`; this file only picks the figures from the
//! profile and the compiled graph and writes the files.

use crate::error::{write_atomic, CliError};
use nnac_isa::{HwConfig, Program};
use nnac_pictures::{graph_dot, render_svg, roofline_figures, GraphFacts, GraphvizError};
use nnac_runtime_sim::timing::{analyze, Profile};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `--roofline FILE.svg`: the roofline of one frame. A layer's hardware bound is
/// drawn when the profile report (`report`, the `--json` object) has one
/// (`layers[].hardware_bound`).
pub fn write_roofline(
    path: &Path,
    name: &str,
    program: &Program,
    prof: &Profile,
    report: &Value,
) -> Result<(), CliError> {
    let layers = report["layers"].as_array().map_or(&[][..], |v| &v[..]);
    let bound = |layer: &str| {
        layers
            .iter()
            .find(|l| l["name"].as_str() == Some(layer))
            .and_then(|l| l["hardware_bound"].as_f64())
    };
    let r = roofline_figures(&title(name, program), program, prof, bound);
    write_atomic(path, nnac_pictures::roofline_svg(&r).as_bytes())
}

/// `--timeline FILE.svg`: one frame as the two queues and the cycles by cause.
pub fn write_timeline(
    path: &Path,
    name: &str,
    program: &Program,
    prof: &Profile,
) -> Result<(), CliError> {
    let t = nnac_pictures::timeline_svg(&title(name, program), prof);
    write_atomic(path, t.svg.as_bytes())
}

/// The program's file name and the model it was compiled from.
fn title(name: &str, program: &Program) -> String {
    let file = Path::new(name)
        .file_name()
        .map_or(name.to_string(), |f| f.to_string_lossy().into_owned());
    if program.meta.source_model.is_empty() {
        file
    } else {
        format!("{file} ({})", program.meta.source_model)
    }
}

/// What `--graph FILE` writes, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    /// Graphviz DOT text.
    Dot,
    /// SVG rendered by Graphviz `dot` (the DOT text beside it when `dot` is missing).
    Svg,
}

/// The format `--graph PATH` asks for; anything but `.svg` or `.dot` is refused
/// before compiling.
pub fn graph_format(path: &Path) -> Result<GraphFormat, CliError> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
    {
        Some(e) if e == "dot" => Ok(GraphFormat::Dot),
        Some(e) if e == "svg" => Ok(GraphFormat::Svg),
        _ => Err(CliError::user(format!(
            "--graph {}: the file name must end in .svg or .dot",
            path.display()
        ))),
    }
}

/// `--graph FILE.svg|.dot`: the compiled graph with its fused groups, host ops and
/// per-node cycles of one frame (timed on `hw`). Without Graphviz, an `.svg` request
/// writes the DOT text to `FILE.dot` and says so on stderr.
pub fn write_graph(
    path: &Path,
    format: GraphFormat,
    graph: &nnac_ir::Graph,
    report: &nnac_passes::Report,
    program: &Program,
    hw: &HwConfig,
) -> Result<(), CliError> {
    let prof = analyze(program, Some(hw))
        .map_err(|e| CliError::internal("timing the compiled program", e.to_string()))?;
    let facts = GraphFacts {
        fused: report
            .fused
            .iter()
            .map(|(k, f)| (k.clone(), f.members.clone()))
            .collect(),
        cycles: prof
            .layers
            .iter()
            .map(|l| (l.name.clone(), l.cycles))
            .collect(),
        total_cycles: prof.total_cycles,
    };
    let dot = graph_dot(graph, &facts);
    if format == GraphFormat::Dot {
        return write_atomic(path, dot.as_bytes());
    }
    match render_svg(&dot) {
        Ok(svg) => write_atomic(path, &svg),
        Err(GraphvizError::NotInstalled(e)) => {
            let alt: PathBuf = path.with_extension("dot");
            write_atomic(&alt, dot.as_bytes())?;
            eprintln!(
                "note: Graphviz `dot` is not installed ({e}): wrote the DOT text to {} instead of {}; \
                 install Graphviz (e.g. `apt-get install graphviz`) and run `dot -Tsvg {} -o {}`",
                alt.display(),
                path.display(),
                alt.display(),
                path.display()
            );
            Ok(())
        }
        Err(e @ GraphvizError::Failed(_)) => Err(CliError::internal(
            "Graphviz",
            format!("--graph {}: {e}", path.display()),
        )),
    }
}
