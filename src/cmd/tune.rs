//! `nnac tune`: design-space exploration of the NNA (docs/TUNE.md). A thin driver
//! over the `nnac-tune` crate: it loads and quantizes the models (once: calibration
//! does not depend on the hardware), reads the space and cost model, runs the
//! search, and writes the results; `nnac tune merge` joins shards.

use crate::error::CliError;
use nnac_driver::calib::Calibration;
use nnac_driver::frames::Preprocess;
use nnac_driver::model::parse_input_shape;
use nnac_frontend::{load_model, ImportOptions};
use nnac_ir::{Tensor, TensorData};
use nnac_passes::{Frame, PassOptions};
use nnac_tune::costs::CostModel;
use nnac_tune::driver::{self, ProgressEvent, Run};
use nnac_tune::evaluate::{CompiledModel, ExactModel};
use nnac_tune::objective::{Constraints, Objective};
use nnac_tune::results::{CostTier, ModelInfo, Results, RunConfig, Shard};
use nnac_tune::rng::Rng;
use nnac_tune::space::Space;
use nnac_tune::workload::Workload;
use nnac_tune::TuneError;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    pub sub: Option<Sub>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(clap::Subcommand)]
pub enum Sub {
    /// Join the results of the shards of one run (`--shard K/N`) into the whole
    /// run's results and outputs.
    Merge(MergeArgs),
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The shards' results.json files (every shard of the run, once).
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Output directory (results.json, front.csv, front.svg, hw/front-NN.toml).
    #[arg(short, long, default_value = "tune-out")]
    pub output: PathBuf,
    /// No summary.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// A model of the workload mix (repeatable):
    /// `PATH[,weight=W][,shape=NAME=1x3xHxW][,calib=PATH][,caffemodel=FILE]`;
    /// `weight` is its share of the mix (default 1), `calib` its calibration data
    /// (.npy, image or directory; else --random-calib).
    #[arg(long = "model", value_name = "SPEC", required = true)]
    pub models: Vec<String>,
    /// The search space (TOML: value lists or ranges per HwConfig key and compiler
    /// knob; docs/TUNE.md).
    #[arg(long, value_name = "FILE", required = true)]
    pub space: Option<PathBuf>,
    /// Area and energy model (TOML; default: the built-in model, docs/TUNE.md).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// What to minimise: latency | throughput | energy | edp.
    #[arg(long, default_value = "latency", value_parser = ["latency", "throughput", "energy", "edp"])]
    pub objective: String,
    /// Most NNA area a design may take, mm^2.
    #[arg(long, value_name = "MM2")]
    pub max_area_mm2: Option<f64>,
    /// Least frames per second every model of the mix must reach.
    #[arg(long, value_name = "FPS")]
    pub min_fps: Option<f64>,
    /// Most SRAM a design may have, bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_sram: Option<u64>,
    /// exhaustive | random | anneal | progressive | nsga2.
    #[arg(long, default_value = "nsga2", value_parser = ["exhaustive", "random", "anneal", "progressive", "nsga2"])]
    pub tuner: String,
    /// Distinct design points the tuner evaluates (revisits are free).
    #[arg(long, default_value_t = 2000)]
    pub budget: usize,
    /// Seed of the tuner (and of --random-calib).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The tier the tuner searches with: `analytic` (then the best --confirm points
    /// are compiled and profiled) or `exact` (every evaluation compiles and profiles).
    #[arg(long, default_value = "analytic", value_parser = ["analytic", "exact"])]
    pub cost: String,
    /// Points of the analytical front confirmed with the exact model.
    #[arg(long, default_value_t = 12)]
    pub confirm: usize,
    /// Threads for exact evaluations (default: all cores).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Evaluate only shard K of N of the exact evaluations (0-based); join the
    /// shards' results with `nnac tune merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Continue a search from its results.json (same models, space and options;
    /// --budget and --confirm may grow).
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    /// Also run every tuner with the same budget and seed and print the best found
    /// against evaluations and each front's hypervolume.
    #[arg(long)]
    pub compare_tuners: bool,
    /// Calibrate models without `calib=` on N seeded random frames (uniform in
    /// [-1, 1)): timing does not depend on the calibration data.
    #[arg(long, value_name = "N")]
    pub random_calib: Option<usize>,
    /// Output directory (results.json, front.csv, front.svg, hw/front-NN.toml).
    #[arg(short, long, default_value = "tune-out")]
    pub output: PathBuf,
    /// No progress bar and no summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// One `--model` argument.
struct ModelSpec {
    path: PathBuf,
    weight: f64,
    shapes: BTreeMap<String, Vec<usize>>,
    calib: Option<PathBuf>,
    caffemodel: Option<PathBuf>,
}

fn parse_spec(s: &str) -> Result<ModelSpec, CliError> {
    let mut parts = s.split(',');
    let path = PathBuf::from(parts.next().unwrap_or_default());
    let mut m = ModelSpec {
        path,
        weight: 1.0,
        shapes: BTreeMap::new(),
        calib: None,
        caffemodel: None,
    };
    for p in parts {
        let (k, v) = p.split_once('=').ok_or_else(|| {
            CliError::user(format!(
                "--model {s}: `{p}` is not KEY=VALUE (keys: weight, shape, calib, caffemodel)"
            ))
        })?;
        match k {
            "weight" => {
                m.weight = v
                    .parse::<f64>()
                    .ok()
                    .filter(|w| w.is_finite() && *w > 0.0)
                    .ok_or_else(|| {
                        CliError::user(format!(
                            "--model {s}: weight `{v}` is not a positive number"
                        ))
                    })?
            }
            "shape" => {
                let (name, dims) = parse_input_shape(v)?;
                m.shapes.insert(name, dims);
            }
            "calib" => m.calib = Some(PathBuf::from(v)),
            "caffemodel" => m.caffemodel = Some(PathBuf::from(v)),
            _ => {
                return Err(CliError::user(format!(
                    "--model {s}: unknown key `{k}` (keys: weight, shape, calib, caffemodel)"
                )))
            }
        }
    }
    if m.path.as_os_str().is_empty() {
        return Err(CliError::user(format!("--model {s}: no model path")));
    }
    Ok(m)
}

fn tune_err(e: TuneError) -> CliError {
    if e.is_user() {
        CliError::user(e.to_string())
    } else {
        CliError::internal("nnac tune", e.to_string())
    }
}

/// Seeded random frames for every graph input.
fn random_frames(g: &nnac_ir::Graph, n: usize, seed: u64) -> Vec<Frame> {
    let mut rng = Rng::new(seed, 0xca11b);
    (0..n)
        .map(|_| {
            g.inputs()
                .iter()
                .map(|&id| {
                    let node = g.node(id);
                    let shape = node.outputs[0].shape.clone();
                    let len: usize = shape.iter().product();
                    let data = (0..len).map(|_| (rng.unit() * 2.0 - 1.0) as f32).collect();
                    let t =
                        Tensor::new(shape, TensorData::F32(data)).expect("length matches shape");
                    (node.name.clone(), t)
                })
                .collect()
        })
        .collect()
}

/// Loads, calibrates and quantizes one model.
fn prepare(spec: &ModelSpec, name: &str, args: &RunArgs) -> Result<CompiledModel, CliError> {
    let opts = ImportOptions {
        input_shapes: spec.shapes.clone(),
    };
    let g = load_model(&spec.path, spec.caffemodel.as_deref(), &opts)
        .map_err(|e| CliError::user(format!("--model {}: {e}", spec.path.display())))?;
    let calib = match (&spec.calib, args.random_calib) {
        (Some(p), _) => {
            let calib = vec![p.display().to_string()];
            Calibration::real(nnac_driver::calib::calib_args(
                &calib,
                &Preprocess::default(),
                &g,
            )?)
        }
        (None, Some(n)) if n >= 1 => Calibration {
            frames: random_frames(&g, n, args.seed),
            synthetic: Some(format!("--random-calib {n}")),
        },
        _ => {
            return Err(CliError::user(format!(
            "--model {}: no calibration data: add calib=PATH to the spec or pass --random-calib N",
            spec.path.display()
        )))
        }
    };
    // Random frames are synthetic: no bias correction (the driver's rule).
    let popts = calib.pass_options(PassOptions {
        measure: false,
        ..Default::default()
    });
    let compiled = nnac_passes::compile_graph(g, &calib.frames, &popts)
        .map_err(|e| CliError::user(format!("--model {}: {e}", spec.path.display())))?;
    let workload = Workload::from_graph(name, spec.weight, &compiled.graph).map_err(tune_err)?;
    Ok(CompiledModel {
        workload,
        graph: compiled.graph,
    })
}

/// A progress bar on a terminal (indicatif), nothing otherwise.
fn progress_bar(quiet: bool) -> Option<impl Fn(ProgressEvent) + Sync> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);
    Some(move |e: ProgressEvent| {
        let mut b = bar.lock().unwrap_or_else(|p| p.into_inner());
        match e {
            ProgressEvent::Phase { name, total } => {
                let pb = indicatif::ProgressBar::new(total);
                let style = indicatif::ProgressStyle::with_template(
                    "{msg:>8} [{bar:30}] {pos}/{len} points {per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("#>-");
                pb.set_style(style);
                pb.set_message(name);
                *b = Some(pb);
            }
            ProgressEvent::Advance(n) => {
                if let Some(pb) = b.as_ref() {
                    pb.inc(n);
                }
            }
            ProgressEvent::Finish => {
                if let Some(pb) = b.take() {
                    pb.finish_and_clear();
                }
            }
        }
    })
}

fn write_outputs(r: &Results, dir: &Path, quiet: bool) -> Result<(), CliError> {
    nnac_tune::output::write_all(r, dir)
        .map_err(|e| CliError::user(format!("cannot write {}: {e}", dir.display())))?;
    if !quiet {
        print!("{}", nnac_tune::output::summary(r));
        println!(
            "wrote {}/results.json, front.csv, front.svg, hw/front-*.toml",
            dir.display()
        );
    }
    Ok(())
}

fn merge(a: MergeArgs) -> Result<(), CliError> {
    let shards = a
        .shards
        .iter()
        .map(|p| Results::read(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(tune_err)?;
    let r = driver::merge(shards).map_err(tune_err)?;
    write_outputs(&r, &a.output, a.quiet)
}

pub fn run(args: Args) -> Result<(), CliError> {
    match args.sub {
        Some(Sub::Merge(m)) => merge(m),
        None => tune(args.run),
    }
}

fn tune(args: RunArgs) -> Result<(), CliError> {
    let t0 = Instant::now();
    let space_path = args
        .space
        .clone()
        .ok_or_else(|| CliError::user("--space FILE is required"))?;
    let space = Space::from_file(&space_path).map_err(tune_err)?;
    let costs = match &args.costs {
        None => CostModel::default_model(),
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| {
                CliError::user(format!("--costs {}: cannot read: {e}", p.display()))
            })?;
            CostModel::from_toml_str(&text).map_err(tune_err)?
        }
    };
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(tune_err)?;
    let resume = args
        .resume
        .as_deref()
        .map(Results::read)
        .transpose()
        .map_err(tune_err)?;
    if args.jobs == Some(0) {
        return Err(CliError::user("--jobs must be at least 1"));
    }
    let specs = args
        .models
        .iter()
        .map(|s| parse_spec(s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut models = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let stem = s
            .path
            .file_stem()
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("model{i}"));
        let name = if specs[..i]
            .iter()
            .any(|o| o.path.file_stem() == s.path.file_stem())
        {
            format!("{stem}#{i}")
        } else {
            stem
        };
        models.push(prepare(s, &name, &args)?);
    }
    let objective =
        Objective::parse(&args.objective).ok_or_else(|| CliError::user("--objective: unknown"))?;
    let config = RunConfig {
        models: models.iter().map(|m| ModelInfo::of(&m.workload)).collect(),
        space,
        costs,
        objective,
        constraints: Constraints {
            max_area_mm2: args.max_area_mm2,
            min_fps: args.min_fps,
            max_sram_bytes: args.max_sram,
        },
        tuner: args.tuner.clone(),
        seed: args.seed,
        budget: args.budget,
        cost: if args.cost == "exact" {
            CostTier::Exact
        } else {
            CostTier::Analytic
        },
        confirm: args.confirm,
    };
    let workloads: Vec<Workload> = models.iter().map(|m| m.workload.clone()).collect();
    let exact = ExactModel { models };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    std::fs::create_dir_all(&args.output)
        .map_err(|e| CliError::user(format!("cannot create {}: {e}", args.output.display())))?;
    let bar = progress_bar(args.quiet);
    let prepare_s = t0.elapsed().as_secs_f64();
    let mut r = driver::execute(Run {
        config,
        workloads,
        exact: Some(&exact),
        jobs,
        shard,
        resume,
        compare_tuners: args.compare_tuners,
        progress: bar.as_ref().map(|b| b as &driver::ProgressFn),
        checkpoint: Some(args.output.join("results.json")),
    })
    .map_err(tune_err)?;
    r.timing.prepare_seconds = prepare_s;
    if shard.is_some() {
        nnac_tune::output::write_all(&r, &args.output)
            .map_err(|e| CliError::user(format!("cannot write {}: {e}", args.output.display())))?;
        if !args.quiet {
            println!(
                "shard {}: {} exact evaluations; join the shards with `nnac tune merge`",
                args.shard.unwrap_or_default(),
                r.timing.exact_evaluations
            );
        }
        return Ok(());
    }
    if r.best.is_none()
        && (args.max_area_mm2.is_some() || args.min_fps.is_some() || args.max_sram.is_some())
        && !r.exact_order.is_empty()
    {
        write_outputs(&r, &args.output, true)?;
        return Err(CliError::user(
            "no evaluated design meets the constraints (--max-area-mm2 / --min-fps / --max-sram); results.json lists how far each misses",
        ));
    }
    write_outputs(&r, &args.output, args.quiet)
}
