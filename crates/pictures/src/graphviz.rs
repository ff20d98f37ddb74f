//! Rendering DOT text to SVG with Graphviz's `dot`, when it is installed.

use std::io::Write;
use std::process::{Command, Stdio};

/// Why `dot` gave no SVG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphvizError {
    /// No `dot` program on the PATH (or it could not be started).
    NotInstalled(String),
    /// `dot` ran and failed; its stderr.
    Failed(String),
}

impl std::fmt::Display for GraphvizError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GraphvizError::NotInstalled(e) => {
                write!(
                    f,
                    "Graphviz `dot` is not installed or cannot be started ({e})"
                )
            }
            GraphvizError::Failed(e) => write!(f, "Graphviz `dot` failed: {e}"),
        }
    }
}

impl std::error::Error for GraphvizError {}

/// `dot -Tsvg` of `dot_text` (the program named by `NNAC_DOT`, else `dot`).
pub fn render_svg(dot_text: &str) -> Result<Vec<u8>, GraphvizError> {
    let program = std::env::var("NNAC_DOT").unwrap_or_else(|_| "dot".to_string());
    let mut child = Command::new(&program)
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| GraphvizError::NotInstalled(format!("{program}: {e}")))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    // Write from another thread so a large graph cannot fill both pipes at once.
    let text = dot_text.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| GraphvizError::Failed(e.to_string()))?;
    let wrote = writer
        .join()
        .map_err(|_| GraphvizError::Failed("writing its input panicked".into()))?;
    if !out.status.success() {
        return Err(GraphvizError::Failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    wrote.map_err(|e| GraphvizError::Failed(format!("writing its input: {e}")))?;
    Ok(out.stdout)
}
