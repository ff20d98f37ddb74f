//! `cargo bench -p nnac-tune --bench tune_speed [-- analytic|exact]`: the speed
//! targets of `nnac tune` (docs/TUNE.md, "Speed").
//!
//! - analytic: design points per second per core of the analytical model on
//!   ResNet-50 (target >= 100,000), over the mixed space `spaces/mix.toml`;
//! - exact: a 200-point exact search (random tuner, `--cost exact`) over ResNet-50
//!   on 2 threads (target: under 10 minutes).
//!
//! ResNet-50 is the light model of `scripts/setup.sh` (.cache/models/light).

use nnac_tune::costs::CostModel;
use nnac_tune::driver::{self, Run};
use nnac_tune::evaluate::{self, CompiledModel, ExactModel};
use nnac_tune::objective::{Constraints, Objective};
use nnac_tune::results::{CostTier, ModelInfo, RunConfig};
use nnac_tune::rng::Rng;
use nnac_tune::space::Space;
use nnac_tune::workload::Workload;
use std::path::Path;
use std::time::Instant;

fn resnet50() -> CompiledModel {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(".cache/models/light/resnet50.onnx");
    let g = match nnac_frontend::load_model(&path, None, &Default::default()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{}: {e}; run scripts/setup.sh first", path.display());
            std::process::exit(1);
        }
    };
    let mut rng = Rng::new(0, 0xca11b);
    let frame: nnac_passes::Frame = g
        .inputs()
        .iter()
        .map(|&id| {
            let n = g.node(id);
            let shape = n.outputs[0].shape.clone();
            let len: usize = shape.iter().product();
            let data = (0..len).map(|_| (rng.unit() * 2.0 - 1.0) as f32).collect();
            let t = nnac_ir::Tensor::new(shape, nnac_ir::TensorData::F32(data)).unwrap();
            (n.name.clone(), t)
        })
        .collect();
    let opts = nnac_passes::PassOptions {
        measure: false,
        ..Default::default()
    };
    let graph = nnac_passes::compile_graph(g, &[frame], &opts)
        .unwrap()
        .graph;
    let workload = Workload::from_graph("resnet50", 1.0, &graph).unwrap();
    CompiledModel { workload, graph }
}

fn space(name: &str) -> Space {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("spaces")
        .join(name);
    Space::from_file(&p).unwrap()
}

fn analytic(m: &CompiledModel) {
    let space = space("mix.toml");
    let costs = CostModel::default_model();
    let w = std::slice::from_ref(&m.workload);
    let mut rng = Rng::new(1, 0);
    let n = 200_000;
    let pts: Vec<_> = (0..n)
        .map(|_| {
            nnac_tune::space::Point(space.dims().iter().map(|&d| rng.below(d) as u32).collect())
        })
        .collect();
    let t = Instant::now();
    let mut digest = 0.0;
    for p in &pts {
        digest += evaluate::analytic(w, &costs, &space.design(p)).latency_s;
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "analytic: {n} points of ResNet-50 ({} layers, {} distinct shapes) in {s:.3} s on one thread: {:.0} points/s (target >= 100000); digest {digest:.6}",
        m.workload.layers.len(),
        m.workload.unique.len(),
        n as f64 / s
    );
}

fn exact(m: CompiledModel) {
    let workloads = vec![m.workload.clone()];
    let config = RunConfig {
        models: workloads.iter().map(ModelInfo::of).collect(),
        space: space("mix.toml"),
        costs: CostModel::default_model(),
        objective: Objective::Latency,
        constraints: Constraints::default(),
        tuner: "random".into(),
        seed: 0,
        budget: 200,
        cost: CostTier::Exact,
        confirm: 0,
    };
    let model = ExactModel { models: vec![m] };
    let t = Instant::now();
    let r = driver::execute(Run {
        config,
        workloads,
        exact: Some(&model),
        jobs: 2,
        shard: None,
        resume: None,
        compare_tuners: false,
        progress: None,
        checkpoint: None,
    })
    .unwrap();
    let s = t.elapsed().as_secs_f64();
    let failed = r
        .points
        .iter()
        .filter(|p| p.exact.as_ref().is_some_and(|e| e.metrics().is_none()))
        .count();
    println!(
        "exact: 200-point search over ResNet-50 (random tuner, 2 threads): {s:.1} s (target < 600 s), {:.2} s per point per thread; {failed} designs did not compile; Spearman {:?}; best {}",
        s * 2.0 / 200.0,
        r.spearman,
        r.best.map_or("-".into(), |i| r.points[i].values.clone())
    );
}

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |k: &str| which.is_empty() || which.iter().any(|w| w == k);
    let t = Instant::now();
    let m = resnet50();
    println!(
        "prepare: ResNet-50 imported, calibrated (1 random frame), quantized in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    if want("analytic") {
        analytic(&m);
    }
    if want("exact") {
        exact(m);
    }
}
