//! THE order of the passes, and the verifier and IR dumps between them.
//!
//! float passes (fold) -> [calibration on that float graph] -> fusion passes ->
//! quantize -> report. Calibration runs there on the graph itself when the report is
//! not measured; when it is, the fused graph names the values the report compares, so
//! calibration runs after fusion on a copy of the float graph. The verifier runs on the input and after every pass in debug
//! builds and when `verify_each` is set; dumps are written after the named pass or
//! after each (numbered `NN-<pass>.ir`, `00-input.ir` first).

use crate::calib;
use crate::ctx::PassCtx;
use crate::float_eval::Frame;
use crate::float_ref::FloatRef;
use crate::fold::{
    absorb_qdq, fold_batchnorm, fold_constants, fold_hardswish, fold_pad, fold_scale_bias,
    fold_silu, normalize_gemm, remove_identity,
};
use crate::fuse::{fuse_channel_shuffle, fuse_depth_to_space, fuse_dot, fuse_eltwise};
use crate::host::{float_layers, force_host, mark_host};
use crate::lower::{lower_concat, lower_pools, lower_resize, lower_scale, sink_pool_into_concat};
use crate::report::{self, HostOpEntry, Report};
use crate::{quant, BiasScope, PassError, PassOptions, WeightRounding};
use nnac_ir::Graph;
use std::collections::BTreeMap;
use std::time::Instant;

pub type PassFn = fn(&mut Graph, &mut PassCtx) -> Result<(), PassError>;

/// A graph pass: its name (for dumps, logs, errors) and entry function.
#[derive(Clone, Copy)]
pub struct Pass {
    pub name: &'static str,
    pub run: PassFn,
}

/// Folding on the float graph; the result is the graph calibration runs on.
pub const FLOAT_PASSES: [Pass; 11] = [
    Pass {
        name: "absorb_qdq",
        run: absorb_qdq::absorb_qdq,
    },
    Pass {
        name: "remove_identity",
        run: remove_identity::remove_identity,
    },
    Pass {
        name: "normalize_gemm",
        run: normalize_gemm::normalize_gemm,
    },
    Pass {
        name: "fold_constants",
        run: fold_constants::fold_constants,
    },
    Pass {
        name: "fold_hardswish",
        run: fold_hardswish::fold_hardswish,
    },
    Pass {
        name: "fold_silu",
        run: fold_silu::fold_silu,
    },
    Pass {
        name: "fold_pad",
        run: fold_pad::fold_pad,
    },
    Pass {
        name: "fold_batchnorm",
        run: fold_batchnorm::fold_batchnorm,
    },
    Pass {
        name: "fold_scale_bias",
        run: fold_scale_bias::fold_scale_bias,
    },
    Pass {
        name: "lower_pools",
        run: lower_pools::lower_pools,
    },
    Pass {
        name: "sink_pool_into_concat",
        run: sink_pool_into_concat::sink_pool_into_concat,
    },
];

/// Fusion into the NNA's compound ops; after these every node is an NNA op, an
/// input, a constant or a reshape.
pub const FUSION_PASSES: [Pass; 10] = [
    Pass {
        name: "force_host",
        run: force_host::force_host,
    },
    Pass {
        name: "fuse_dot",
        run: fuse_dot::fuse_dot,
    },
    Pass {
        name: "fuse_eltwise",
        run: fuse_eltwise::fuse_eltwise,
    },
    Pass {
        name: "lower_scale",
        run: lower_scale::lower_scale,
    },
    Pass {
        name: "lower_concat",
        run: lower_concat::lower_concat,
    },
    Pass {
        name: "fuse_channel_shuffle",
        run: fuse_channel_shuffle::fuse_channel_shuffle,
    },
    Pass {
        name: "fuse_depth_to_space",
        run: fuse_depth_to_space::fuse_depth_to_space,
    },
    Pass {
        name: "lower_resize",
        run: lower_resize::lower_resize,
    },
    Pass {
        name: "mark_host",
        run: mark_host::mark_host,
    },
    Pass {
        name: "float_layers",
        run: float_layers::float_layers,
    },
];

/// Name of the quantization stage (for dumps).
pub const QUANTIZE: &str = "quantize";

/// Every stage name `--dump-ir` accepts, in pipeline order.
pub fn stage_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = FLOAT_PASSES
        .iter()
        .chain(&FUSION_PASSES)
        .map(|p| p.name)
        .collect();
    v.push(QUANTIZE);
    v
}

/// Runs passes, verifying and dumping between them.
struct Runner<'a> {
    opts: &'a PassOptions,
    ctx: PassCtx,
    step: usize,
    times: Vec<(String, f64)>,
}

impl<'a> Runner<'a> {
    /// Which dot ops bias correction corrects: as asked (depthwise by default), none
    /// when the model carries its own quantization (a pre-quantized model keeps the
    /// biases its file gives: they are part of the arithmetic it was exported for,
    /// e.g. ONNX Runtime's).
    fn bias_scope(&self) -> BiasScope {
        if self.ctx.fixed.is_empty() {
            self.opts.bias_correction
        } else {
            BiasScope::Off
        }
    }

    /// A runner whose context knows the nodes the options send to the host.
    fn new(opts: &'a PassOptions) -> Self {
        Runner {
            opts,
            ctx: PassCtx {
                host_reasons: opts.host_nodes.clone(),
                float_layers: opts.float_layers.clone(),
                ..PassCtx::default()
            },
            step: 0,
            times: Vec::new(),
        }
    }

    /// Tells the progress display that `name` starts.
    fn stage(&self, name: &'static str) {
        if let Some(p) = &self.opts.progress {
            p.report(crate::ProgressEvent::Stage { name });
        }
    }

    fn check(&mut self, g: &Graph, stage: &str) -> Result<(), PassError> {
        if cfg!(debug_assertions) || self.opts.verify_each {
            nnac_ir::verify(g).map_err(|errs| PassError::Verify {
                pass: stage.to_string(),
                errors: errs.iter().map(|e| e.to_string()).collect(),
            })?;
        }
        self.dump(g, stage)
    }

    fn dump(&mut self, g: &Graph, stage: &str) -> Result<(), PassError> {
        let step = self.step;
        self.step += 1;
        let Some(d) = &self.opts.dump else {
            return Ok(());
        };
        if d.stage.as_deref().is_some_and(|s| s != stage) {
            return Ok(());
        }
        let path = d.dir.join(format!("{step:02}-{stage}.ir"));
        let fail = |e: std::io::Error| PassError::Dump {
            path: path.display().to_string(),
            msg: e.to_string(),
        };
        std::fs::create_dir_all(&d.dir).map_err(fail)?;
        std::fs::write(&path, nnac_ir::print(g)).map_err(fail)
    }

    /// Calibration statistics of float graph `g` on `frames` (timed as `calibrate`).
    fn calibrate(
        &mut self,
        g: &Graph,
        frames: &[Frame],
        keep: Option<&mut FloatRef>,
    ) -> Result<BTreeMap<String, calib::Stats>, PassError> {
        let t = Instant::now();
        let stats = calib::collect(
            g,
            frames,
            self.opts.progress.as_ref(),
            keep,
            calib::Extras {
                channel_means: self.bias_scope() != BiasScope::Off,
                hessians: self.opts.weight_rounding == WeightRounding::Gptq,
            },
        )?;
        self.times
            .push(("calibrate".into(), t.elapsed().as_secs_f64() * 1e3));
        Ok(stats)
    }

    fn run(&mut self, g: &mut Graph, passes: &[Pass]) -> Result<(), PassError> {
        for p in passes {
            self.stage(p.name);
            self.ctx.pass = p.name.to_string();
            let t = Instant::now();
            (p.run)(g, &mut self.ctx)?;
            self.times
                .push((p.name.to_string(), t.elapsed().as_secs_f64() * 1e3));
            self.check(g, p.name)?;
        }
        Ok(())
    }
}

/// The result of [`compile_graph`].
pub struct Compiled {
    /// The quantized graph (or the fused float graph with `skip_quantization`).
    pub graph: Graph,
    pub report: Report,
    /// The folded float graph and what each node of `graph` stands for in it
    /// (with `PassOptions::keep_reference`).
    pub reference: Option<crate::analysis::FloatReference>,
    /// The calibration statistics (of the folded float graph on the frames):
    /// reusable through `PassOptions::calib_stats` for the same graph and frames.
    pub stats: Option<std::sync::Arc<crate::options::CalibStats>>,
}

fn check_options(opts: &PassOptions) -> Result<(), PassError> {
    if let Some(stage) = opts.dump.as_ref().and_then(|d| d.stage.as_deref()) {
        if stage != "input" && !stage_names().contains(&stage) {
            return Err(PassError::Options(format!(
                "unknown IR dump stage '{stage}'; stages: input, {}",
                stage_names().join(", ")
            )));
        }
    }
    if !(opts.percentile > 0.0 && opts.percentile <= 100.0) {
        return Err(PassError::Options(format!(
            "percentile {} is not in (0, 100]",
            opts.percentile
        )));
    }
    Ok(())
}

/// The crate entry: folds, fuses, calibrates on `calib_frames` and quantizes `graph`,
/// then (with `opts.measure`) measures the quantized graph against the float graph on
/// the same frames, reusing the float values calibration computed.
pub fn compile_graph(
    graph: Graph,
    calib_frames: &[Frame],
    opts: &PassOptions,
) -> Result<Compiled, PassError> {
    check_options(opts)?;
    let mut r = Runner::new(opts);
    let mut g = graph;
    r.check(&g, "input")?;
    r.run(&mut g, &FLOAT_PASSES)?;
    let quantize = !opts.skip_quantization;
    // Calibration runs on the folded float graph. Measured, the fused graph must exist
    // first (it names the values the report compares), so the float graph is kept as
    // a copy; otherwise calibration runs right here, on the graph itself (no copy).
    // A pre-quantized model may come without frames: the file's quantization is
    // all there is (the quantizer names any value it leaves out), nothing is measured.
    let file_only = calib_frames.is_empty() && !r.ctx.fixed.is_empty();
    let early_stats = if quantize && file_only {
        Some(BTreeMap::new())
    } else if quantize && !opts.measure {
        Some(match &opts.calib_stats {
            Some(cached) => (**cached).clone(),
            None => r.calibrate(&g, calib_frames, None)?,
        })
    } else {
        None
    };
    let mut kept_stats = early_stats.clone().map(std::sync::Arc::new);
    let float_graph = (quantize && opts.measure && !file_only).then(|| g.clone());
    let kept_float = opts
        .keep_reference
        .then(|| float_graph.clone().unwrap_or_else(|| g.clone()));
    r.run(&mut g, &FUSION_PASSES)?;
    let mut rep = Report {
        graph: g.name.clone(),
        ..Default::default()
    };
    rep.host_ops = mark_host::host_ops(&g)
        .into_iter()
        .map(|(node, op)| HostOpEntry {
            reason: r.ctx.host_reason(&node, &op),
            node,
            op,
        })
        .collect();
    if quantize {
        let (stats, keep) = match (early_stats, &float_graph) {
            (Some(stats), _) => (stats, None),
            (None, Some(fg)) => {
                let names = report::wanted_names(&g, &r.ctx);
                let n = calib_frames.len();
                let mut keep = FloatRef::plan(fg, names, n, opts.keep_float_bytes);
                let stats = r.calibrate(fg, calib_frames, Some(&mut keep))?;
                kept_stats = Some(std::sync::Arc::new(stats.clone()));
                (stats, Some(keep))
            }
            (None, None) => unreachable!("not measured: calibrated early; measured: copied"),
        };
        r.stage(QUANTIZE);
        let t = Instant::now();
        let quantized = quant::quantize(&mut g, &r.ctx, &stats, opts)?;
        let mut layers = quantized.layers;
        rep.quant_source = quantized.source;
        let scope = r.bias_scope();
        if scope != BiasScope::Off {
            let done = quant::bias_correct::correct_biases(&mut g, &stats, calib_frames, scope)?;
            for c in &done {
                if let Some(a) = layers
                    .iter_mut()
                    .find(|l| l.name == c.layer)
                    .and_then(|l| l.acc.as_mut())
                {
                    a.bound = a.bound.max(c.acc_bound);
                }
            }
            rep.bias_correction = done;
        }
        r.times
            .push((QUANTIZE.into(), t.elapsed().as_secs_f64() * 1e3));
        r.check(&g, QUANTIZE)?;
        rep.calib_method = Some(opts.calib_method);
        rep.weight_rounding = Some(opts.weight_rounding);
        rep.calib_frames = calib_frames.len();
        rep.acc_rescaled_layers = layers
            .iter()
            .filter(|l| l.acc.as_ref().is_some_and(|a| a.rescaled_channels > 0))
            .map(|l| l.name.clone())
            .collect();
        if let (Some(kept), Some(fg)) = (&keep, &float_graph) {
            if let Some(p) = &opts.progress {
                p.report(crate::ProgressEvent::Report {
                    frames: calib_frames.len(),
                    layers: layers.len(),
                });
            }
            let t = Instant::now();
            report::measure(fg, &g, &r.ctx, &layers, calib_frames, kept, &mut rep)?;
            r.times
                .push(("report".into(), t.elapsed().as_secs_f64() * 1e3));
        }
    }
    let reference = kept_float.map(|graph| crate::analysis::FloatReference {
        graph,
        out_names: g
            .node_ids()
            .into_iter()
            .map(|n| {
                let name = &g.node(n).name;
                (name.clone(), r.ctx.out_name(name).to_string())
            })
            .collect(),
    });
    rep.rewrites = r.ctx.log;
    rep.fused = r.ctx.fused;
    rep.pass_ms = r.times;
    Ok(Compiled {
        graph: g,
        report: rep,
        reference,
        stats: kept_stats,
    })
}

/// Runs only the given passes (tests and tools), verifying after each.
pub fn run_passes(
    g: &mut Graph,
    passes: &[Pass],
    opts: &PassOptions,
) -> Result<PassCtx, PassError> {
    let mut r = Runner::new(opts);
    r.run(g, passes)?;
    Ok(r.ctx)
}
