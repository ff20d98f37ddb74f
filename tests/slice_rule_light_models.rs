//! The address sequencer's slice rule (docs/ISA.md 4.1) holds on real networks: the
//! light ResNet-50, Inception-v1, Inception-v2 and AlexNet (stride 4 over 224-pixel
//! rows, whose tiles the backend cuts at output rows), calibrated on one photograph,
//! lowered with the rule *not* enforced so that violations would be listed instead of
//! refused. Two independent checks: the backend's exact widest-slice report
//! (`seq_rule`) and the timing model's packet-load count (`broken_slices`). The same
//! graphs also lower with their weights streamed every frame (`--resident-weights
//! off`), which once refused all four as too big for the SRAM.
//! Needs the cache and venv of `scripts/setup.sh`; fails, never skips, without them.

mod common;

use common::tempdir;
use nnac_isa::{HwConfig, Instr};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn need(p: PathBuf) -> PathBuf {
    assert!(p.exists(), "missing {} (run scripts/setup.sh)", p.display());
    p
}

/// The astronaut photograph as the model's float32 NCHW input (224x224, ImageNet
/// normalization).
fn astronaut(dir: &Path) -> nnac_ir::Tensor {
    let out = dir.join("astronaut.npy");
    let r = Command::new(need(root().join(".venv/bin/python")))
        .arg(root().join("scripts/image_to_npy.py"))
        .arg(need(root().join(".cache/models/images/astronaut.png")))
        .arg(&out)
        .args([
            "--size",
            "224x224",
            "--mean",
            "123.7,116.3,103.5",
            "--scale",
            "0.0171",
        ])
        .output()
        .expect("spawn python");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    nnac_interp::npy::read_npy(&out).unwrap()
}

#[test]
fn light_models_obey_the_slice_rule() {
    let tmp = tempdir("slice-rule");
    let image = astronaut(tmp.path());
    let hw = HwConfig::default();
    for name in ["resnet50", "inception_v1", "inception_v2", "bvlc_alexnet"] {
        let model = need(root().join(format!(".cache/models/light/{name}.onnx")));
        let graph = nnac_frontend::load_model(&model, None, &Default::default()).unwrap();
        let input_name = graph.node(graph.inputs()[0]).name.clone();
        let frame: nnac_passes::Frame = [(input_name, image.clone())].into_iter().collect();
        let compiled = nnac_passes::compile_graph(graph, &[frame], &Default::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let opts = nnac_backend_nna::BackendOptions {
            enforce_slice_rule: false,
            ..Default::default()
        };
        let (program, rep) = nnac_backend_nna::lower(&compiled.graph, &hw, &opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(rep.slice_rule.is_empty(), "{name}: {:?}", rep.slice_rule);
        let dots = program
            .instrs
            .iter()
            .filter(|i| {
                matches!(
                    i,
                    Instr::Conv(_) | Instr::Deconv(_) | Instr::InnerProduct(_)
                )
            })
            .count();
        assert!(dots > 10, "{name}: {dots} dot-product instructions");
        let profile = nnac_runtime_sim::timing::analyze(&program, None).unwrap();
        assert_eq!(profile.broken_slices, 0, "{name}");
        let off = nnac_backend_nna::BackendOptions {
            resident_weights: nnac_backend_nna::ResidentWeights::Off,
            ..Default::default()
        };
        let (streamed, _) = nnac_backend_nna::lower(&compiled.graph, &hw, &off)
            .unwrap_or_else(|e| panic!("{name}, weights streamed: {e}"));
        assert!(streamed.body_start.is_none(), "{name}: a prologue");
        let timed = nnac_runtime_sim::timing::analyze(&streamed, None).unwrap();
        assert!(timed.total_cycles > profile.total_cycles, "{name}");
    }
}
