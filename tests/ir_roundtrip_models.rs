//! The IR text form round-trips every cached test model: for each model that imports,
//! `parse(print(g))` equals `g` (canonical equality), printing again gives the same
//! text, and the imported graph verifies.
//!
//! Models come from the cache `scripts/setup.sh` fills (`.cache/models`: the ONNX
//! "light" topologies, the PaddleOCR models from rapidocr, the Caffe nsfw net;
//! `.cache/onnx-node-tests`: the ONNX backend node tests). Without the cache the
//! tests fail (they never skip). The light models and the rapidocr classifier and
//! detector must import; node tests and the other models round-trip when the
//! importer supports them, and a floor on the count keeps that check meaningful.

use nnac_frontend::{load_model, ImportError, ImportOptions};
use nnac_ir::{graphs_equal, parse, print, verify, Graph};
use std::path::{Path, PathBuf};

/// Fewest node-test models that must import and round-trip.
const MIN_NODE_TESTS: usize = 100;

fn cache(sub: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".cache")
        .join(sub);
    assert!(
        dir.is_dir(),
        "{} is missing: run scripts/setup.sh first",
        dir.display()
    );
    dir
}

/// Every file under `dir` whose name ends with `suffix`, sorted.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("cannot list {}: {e}", d.display()));
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The shape used for a dynamic input of a model (batch 1), by file name.
fn dynamic_shape(path: &Path) -> Vec<usize> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.contains("_cls_") {
        vec![1, 3, 48, 192]
    } else if name.contains("_rec_") {
        vec![1, 3, 48, 320]
    } else {
        vec![1, 3, 640, 640]
    }
}

/// Imports a model, fixing dynamic inputs one by one as the importer names them.
fn import(path: &Path, weights: Option<&Path>) -> Result<Graph, ImportError> {
    let mut opts = ImportOptions::default();
    loop {
        match load_model(path, weights, &opts) {
            Err(ImportError::DynamicInput { input, .. })
                if !opts.input_shapes.contains_key(&input) =>
            {
                opts.input_shapes.insert(input, dynamic_shape(path));
            }
            other => return other,
        }
    }
}

/// Checks the round trip of one imported graph; `Err` describes the failure.
fn check_roundtrip(g: &Graph) -> Result<(), String> {
    if let Err(e) = verify(g) {
        return Err(format!(
            "imported graph does not verify:\n{}",
            nnac_ir::verify::report(&e)
        ));
    }
    let text = print(g);
    let back = parse(&text).map_err(|e| format!("printed text does not parse: {e}"))?;
    if !graphs_equal(g, &back) {
        return Err("parse(print(g)) differs from g".into());
    }
    if print(&back) != text {
        return Err("print(parse(print(g))) differs from print(g)".into());
    }
    Ok(())
}

#[test]
fn required_models_round_trip() {
    let models = cache("models");
    let mut required: Vec<PathBuf> = files(&models.join("onnx/light"), ".onnx");
    assert_eq!(
        required.len(),
        9,
        "expected the 9 light models in {}",
        models.display()
    );
    required.push(models.join("rapidocr/ch_ppocr_mobile_v2.0_cls_infer.onnx"));
    required.push(models.join("rapidocr/ch_PP-OCRv4_det_infer.onnx"));
    let mut failures = Vec::new();
    for path in &required {
        let result = import(path, None)
            .map_err(|e| format!("import failed: {e}"))
            .and_then(|g| check_roundtrip(&g));
        if let Err(e) = result {
            failures.push(format!("{}: {e}", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} models failed:\n{}",
        failures.len(),
        required.len(),
        failures.join("\n")
    );
}

#[test]
fn other_models_round_trip_when_they_import() {
    let models = cache("models");
    let caffe = models.join("nsfw/deploy.prototxt");
    // (model, weights, whether the model uses ops outside nnac's op set)
    let candidates = [
        (
            models.join("rapidocr/ch_PP-OCRv4_rec_infer.onnx"),
            None,
            true,
        ),
        (
            caffe.clone(),
            Some(caffe.with_file_name("resnet_50_1by2_nsfw.caffemodel")),
            false,
        ),
    ];
    for (path, weights, may_be_unsupported) in candidates {
        assert!(
            path.is_file(),
            "{} is missing: run scripts/setup.sh first",
            path.display()
        );
        match import(&path, weights.as_deref()) {
            Ok(g) => {
                if let Err(e) = check_roundtrip(&g) {
                    panic!("{}: {e}", path.display());
                }
            }
            // The PP-OCR recogniser's attention ops (ReduceMean, Pow...) are outside
            // the accelerator's op set: only a clean "unsupported" error is acceptable.
            Err(ImportError::Unsupported(_)) if may_be_unsupported => {}
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
}

#[test]
fn node_test_models_round_trip() {
    let dir = cache("onnx-node-tests");
    let paths = files(&dir, "model.onnx");
    let (mut imported, mut failures) = (0, Vec::new());
    for path in &paths {
        let Ok(g) = import(path, None) else { continue };
        imported += 1;
        if let Err(e) = check_roundtrip(&g) {
            failures.push(format!("{}: {e}", path.display()));
        }
    }
    eprintln!(
        "{imported} of {} node-test models imported and round-tripped",
        paths.len()
    );
    assert!(
        failures.is_empty(),
        "{} node-test models failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        imported >= MIN_NODE_TESTS,
        "only {imported} of {} node-test models imported (expected at least {MIN_NODE_TESTS})",
        paths.len()
    );
}
