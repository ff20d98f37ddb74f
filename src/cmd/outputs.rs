//! Output files of `nnac run` and `nnac eval`: one naming rule and one writer, so the
//! two commands put the same model's outputs into the same files.
//!
//! Each output goes to `<name>.npy`, where every character of the output's name other
//! than an ASCII letter, digit, `.`, `-` or `_` becomes `_` (a name that is empty or
//! only dots gets the prefix `output`). When two outputs would land in the same file,
//! the later one (in the model's output order) gets `_2`, `_3`, ... appended, the
//! first suffix not already taken. Nothing is left behind unless every file was
//! written.

use crate::error::{write_atomic, CliError};
use nnac_interp::npy::encode_npy;
use nnac_ir::Tensor;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `<sanitized name>` (without the extension), as the module doc says.
fn sanitized(name: &str) -> String {
    let base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() || base.chars().all(|c| c == '.') {
        format!("output{base}")
    } else {
        base
    }
}

/// The file name of every output, in order, all distinct.
pub fn file_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = BTreeSet::new();
    names
        .into_iter()
        .map(|name| {
            let base = sanitized(name);
            let mut file = format!("{base}.npy");
            let mut k = 2;
            while taken.contains(&file) {
                file = format!("{base}_{k}.npy");
                k += 1;
            }
            taken.insert(file.clone());
            file
        })
        .collect()
}

/// Writes every `(output name, tensor)` as `.npy` into `dir` (created if missing) under
/// [`file_names`]; returns the file names. On a failure the files already written are
/// removed.
pub fn write_outputs(dir: &Path, outputs: &[(String, Tensor)]) -> Result<Vec<String>, CliError> {
    let files = file_names(outputs.iter().map(|(n, _)| n.as_str()));
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::user(format!(
            "cannot create output directory {}: {e}",
            dir.display()
        ))
    })?;
    let mut written: Vec<PathBuf> = Vec::new();
    for ((_, t), file) in outputs.iter().zip(&files) {
        let path = dir.join(file);
        if let Err(e) = write_atomic(&path, &encode_npy(t)) {
            for p in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
        written.push(path);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_and_unique() {
        assert_eq!(
            file_names(["resnet/fc:0", "resnet_fc_0", "y.1", "..", ""]),
            [
                "resnet_fc_0.npy",
                "resnet_fc_0_2.npy",
                "y.1.npy",
                "output...npy",
                "output.npy"
            ]
        );
    }

    #[test]
    fn a_suffix_never_takes_another_outputs_file() {
        // "x_2" is a name of its own: the second "x" must skip it.
        assert_eq!(
            file_names(["x", "x_2", "x"]),
            ["x.npy", "x_2.npy", "x_3.npy"]
        );
        assert_eq!(
            file_names(["a:b", "a/b", "a_b"]),
            ["a_b.npy", "a_b_2.npy", "a_b_3.npy"]
        );
    }
}
