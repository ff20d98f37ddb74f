//! The light ONNX topologies (random weights) on the NNA, calibrated on one
//! photograph. Needs the cache and venv of `scripts/setup.sh`; fails, never skips,
//! without them.
//!
//! The address sequencer's slice rule (docs/ISA.md 4.1) holds on real networks: the
//! light ResNet-50, Inception-v1, Inception-v2 and AlexNet (stride 4 over 224-pixel
//! rows, whose tiles the backend cuts at output rows), lowered with the rule *not*
//! enforced so that violations would be listed instead of refused. Two independent
//! checks: the backend's exact widest-slice report (`seq_rule`) and the timing
//! model's packet-load count (`broken_slices`). The same graphs also lower with their
//! weights streamed every frame (`--resident-weights off`), which once refused all
//! four as too big for the SRAM.
//!
//! The models with more parameters than the SRAM (AlexNet, ZFNet-512, VGG-19) are
//! partly pinned, weight chunks among the pinned buffers (`resident.rs`), and run
//! bit-exactly on the simulator against the quantized reference interpreter, as do
//! their programs with every weight streamed, and AlexNet and ResNet-50 in 2 and
//! 4 MiB SRAMs.

mod common;

use common::{need, python, root, tempdir};
use nnac_backend_nna::{BackendOptions, Residency, ResidentWeights};
use nnac_ir::{Op, TensorData};
use nnac_isa::{HwConfig, Instr, Program};
use std::path::Path;
use std::process::Command;

/// The astronaut photograph as the model's float32 NCHW input (224x224, ImageNet
/// normalization).
fn astronaut(dir: &Path) -> nnac_ir::Tensor {
    let out = dir.join("astronaut.npy");
    let r = Command::new(python())
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

/// `name` with its final softmax cut off (its logits are the output: a thousand
/// codes to compare instead of one saturated probability), quantized on `image`.
fn logits_graph(name: &str, image: &nnac_ir::Tensor) -> (nnac_ir::Graph, nnac_passes::Frame) {
    let model = need(root().join(format!(".cache/models/light/{name}.onnx")));
    let mut graph = nnac_frontend::load_model(&model, None, &Default::default()).unwrap();
    let softmax = graph
        .node_ids()
        .into_iter()
        .find(|&n| matches!(graph.node(n).op, Op::Softmax { .. }))
        .unwrap_or_else(|| panic!("{name}: no softmax"));
    let logits = graph.node_inputs(softmax)[0];
    graph.outputs_mut()[0].value = logits;
    graph.remove_dead();
    let input_name = graph.node(graph.inputs()[0]).name.clone();
    let frame: nnac_passes::Frame = [(input_name, image.clone())].into_iter().collect();
    let compiled =
        nnac_passes::compile_graph(graph, std::slice::from_ref(&frame), &Default::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    (compiled.graph, frame)
}

/// The output codes of the quantized reference interpreter on `frame`.
fn reference(name: &str, q: &nnac_ir::Graph, frame: &nnac_passes::Frame) -> Vec<Vec<u8>> {
    nnac_passes::run_quantized_raw(q, frame)
        .unwrap()
        .into_values()
        .map(|t| match t.data {
            TensorData::I8(v) => v.into_iter().map(|x| x as u8).collect(),
            TensorData::U8(v) => v,
            other => panic!("{name}: raw output {:?}", other.dtype()),
        })
        .collect()
}

/// The output codes of `program` on `frame` (eager schedule), checked equal to a
/// random interleaving's.
fn simulate(name: &str, program: &Program, frame: &nnac_passes::Frame) -> Vec<Vec<u8>> {
    let feed: Vec<(String, Vec<u8>)> = frame
        .iter()
        .map(|(n, t)| {
            let d = program.io.iter().find(|d| &d.name == n).expect("input");
            let dt = match d.dtype {
                nnac_isa::IoDtype::Uint8 => nnac_ir::DType::U8,
                _ => nnac_ir::DType::I8,
            };
            let codes = t
                .to_f32_vec()
                .iter()
                .map(|&v| nnac_passes::quant::params::quantize(v, d.scale, d.zero_point, dt) as u8)
                .collect();
            (n.clone(), codes)
        })
        .collect();
    let eager = nnac_runtime_sim::run(program, &feed, &Default::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let random = nnac_runtime_sim::RunOptions {
        schedule: nnac_runtime_sim::Schedule::Random { seed: 3 },
        hw: None,
    };
    let shuffled = nnac_runtime_sim::run(program, &feed, &random)
        .unwrap_or_else(|e| panic!("{name}, random schedule: {e}"));
    assert!(
        eager.outputs == shuffled.outputs,
        "{name}: schedules differ"
    );
    eager.outputs.into_iter().map(|o| o.data).collect()
}

#[test]
fn models_bigger_than_the_sram_run_bit_exact_partly_pinned_and_streamed() {
    let tmp = tempdir("light-streamed");
    let image = astronaut(tmp.path());
    let hw = HwConfig::default();
    for name in ["bvlc_alexnet", "zfnet512", "vgg19"] {
        let (q, frame) = logits_graph(name, &image);
        let want = reference(name, &q, &frame);
        assert!(want.iter().all(|w| w.len() == 1000), "{name}: logits");
        let (pinned, rep) = nnac_backend_nna::lower(&q, &hw, &BackendOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Most of the SRAM pinned; some large layer loaded in chunks.
        let Residency::Partial { bytes, .. } = rep.residency else {
            panic!("{name}: {:?}", rep.residency)
        };
        assert!(bytes > hw.sram_bytes / 2, "{name}: {bytes} bytes pinned");
        assert!(
            rep.splits.iter().any(|s| s.bands == 1 && s.groups > 4),
            "{name}: {:?}",
            rep.splits
        );
        assert_eq!(
            simulate(name, &pinned, &frame),
            want,
            "{name}: partly pinned"
        );
        let off = BackendOptions {
            resident_weights: ResidentWeights::Off,
            ..Default::default()
        };
        let (streamed, _) = nnac_backend_nna::lower(&q, &hw, &off).unwrap();
        assert_eq!(simulate(name, &streamed, &frame), want, "{name}: streamed");
        let (p, s) = (
            nnac_runtime_sim::timing::analyze(&pinned, None).unwrap(),
            nnac_runtime_sim::timing::analyze(&streamed, None).unwrap(),
        );
        assert!(
            p.dram_read < s.dram_read,
            "{name}: {} >= {}",
            p.dram_read,
            s.dram_read
        );
        assert!(p.total_cycles < s.total_cycles, "{name}");
    }
}

#[test]
fn models_in_small_srams_run_bit_exact() {
    // A 2 MiB SRAM chunks AlexNet's grouped convolutions too (the cap is 64 KB);
    // ResNet-50 in 4 MiB streams most of its weights in chunks beside some pinned.
    let tmp = tempdir("light-small");
    let image = astronaut(tmp.path());
    for (name, sram) in [("bvlc_alexnet", 2u64 << 20), ("resnet50", 4 << 20)] {
        let hw = HwConfig::from_toml_str(&format!("sram_bytes = {sram}")).unwrap();
        let (q, frame) = logits_graph(name, &image);
        let want = reference(name, &q, &frame);
        let (p, rep) = nnac_backend_nna::lower(&q, &hw, &BackendOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            !rep.splits.is_empty(),
            "{name}: nothing split in {sram} bytes"
        );
        assert_eq!(simulate(name, &p, &frame), want, "{name} in {sram} bytes");
    }
}
