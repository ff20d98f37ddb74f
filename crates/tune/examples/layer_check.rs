//! Per-layer analytical cycles against the cycle model's, for one model on one
//! hardware configuration: where the analytical model is off.
//!
//! `cargo run --release -p nnac-tune --example layer_check -- MODEL.onnx [HW.toml]`

use nnac_tune::analytic::{best_orientation, Machine};
use nnac_tune::workload::Workload;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model = args
        .get(1)
        .expect("usage: layer_check MODEL.onnx [HW.toml]");
    let hw = match args.get(2) {
        Some(p) => nnac_isa::HwConfig::from_toml_file(std::path::Path::new(p)).expect("hw"),
        None => nnac_isa::HwConfig::fsd(),
    };
    let g = nnac_frontend::load_model(std::path::Path::new(model), None, &Default::default())
        .expect("model");
    let frames: Vec<nnac_passes::Frame> = vec![g
        .inputs()
        .iter()
        .map(|&id| {
            let n = g.node(id);
            let shape = n.outputs[0].shape.clone();
            let len: usize = shape.iter().product();
            let data = (0..len)
                .map(|i| ((i * 7919) % 200) as f32 / 100.0 - 1.0)
                .collect();
            (
                n.name.clone(),
                nnac_ir::Tensor::new(shape, nnac_ir::TensorData::F32(data)).unwrap(),
            )
        })
        .collect()];
    let opts = nnac_passes::PassOptions {
        measure: false,
        ..Default::default()
    };
    let q = nnac_passes::compile_graph(g, &frames, &opts)
        .expect("compile")
        .graph;
    let w = Workload::from_graph("m", 1.0, &q).expect("workload");
    let (prog, _) = nnac_backend_nna::lower(&q, &hw, &Default::default()).expect("lower");
    let p = nnac_runtime_sim::timing::analyze(&prog, None).expect("timing");
    let m = Machine::new(&hw);
    let (mut ta, mut te) = (0, 0);
    for l in &w.layers {
        let (_, c) = best_orientation(&l.shape, &m, false);
        let e = p
            .layers
            .iter()
            .find(|x| x.name == l.name)
            .map_or(0, |x| x.cycles);
        ta += c.cycles;
        te += e;
        println!(
            "{:<40} {:>9} {:>9} {:>6.2}  {}x{}x{} t{} s{} simd{}",
            l.name,
            c.cycles,
            e,
            c.cycles as f64 / e.max(1) as f64,
            l.shape.out_h,
            l.shape.out_w,
            l.shape.out_c,
            l.shape.terms,
            l.shape.stride_w,
            l.shape.simd_len
        );
    }
    println!(
        "total analytic {ta} exact-layers {te} exact-total {}",
        p.total_cycles
    );
}
