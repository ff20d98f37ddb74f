//! What a compile tells its progress display (issue 23: a long compile shows it
//! moving): calibration frames, then every stage in order — each pass of the
//! pipeline, `quantize`, and the lowering to the NNA. `nnac compile` draws these on a
//! terminal only, and never with `-q`.

use nnac_driver::compile::{compile_and_lower, Calibration, CompileOptions};
use nnac_driver::model::{load, ModelArgs};
use nnac_passes::{Progress, ProgressEvent};
use std::path::Path;
use std::sync::{Arc, Mutex};

#[test]
fn a_compile_reports_calibration_then_every_stage_in_order() {
    let model = ModelArgs {
        model: Path::new(env!("CARGO_MANIFEST_DIR")).join("models/tiny_cnn.onnx"),
        weights: None,
        input_shape: Vec::new(),
    };
    let graph = load(&model).expect("load");
    let calib = Calibration {
        frames: nnac_driver::synthetic::frames(&graph).expect("frames"),
        synthetic: None,
    };
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = events.clone();
    let opts = CompileOptions {
        measure: false,
        progress: Some(Progress(Arc::new(move |e| {
            let line = match e {
                ProgressEvent::Calibrate { done, total } => format!("calibrate {done}/{total}"),
                ProgressEvent::Report { .. } => "report".to_string(),
                ProgressEvent::Stage { name } => name.to_string(),
            };
            log.lock().unwrap().push(line);
        }))),
        ..CompileOptions::default()
    };
    let hw = nnac_isa::HwConfig::fsd();
    compile_and_lower(&graph, &calib, &hw, &opts, &|_, _| {}).expect("compile");
    let events = events.lock().unwrap().clone();
    let at = |name: &str| {
        events
            .iter()
            .position(|e| e == name)
            .unwrap_or_else(|| panic!("no '{name}' in {events:?}"))
    };
    let frames = calib.frames.len();
    let calibrated = at(&format!("calibrate {frames}/{frames}"));
    // The stages in pipeline order, calibration between the float passes and fusion.
    let stages = nnac_passes::pipeline::stage_names();
    let mut last = 0;
    for s in &stages {
        let k = at(s);
        assert!(k >= last, "'{s}' out of order in {events:?}");
        last = k;
    }
    assert!(calibrated < at("quantize"), "{events:?}");
    assert!(at("lowering to the NNA") > at("quantize"), "{events:?}");
}
