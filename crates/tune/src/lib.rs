//! `nnac tune`: design-space exploration of the NNA and its compile plan
//! (docs/TUNE.md).
//!
//! - [`space`]: the search space (TOML), points and designs.
//! - [`workload`]: a model's NNA layers as hardware-independent shapes.
//! - [`analytic`]: the analytical (roofline) cost model; [`evaluate`]: both tiers.
//! - [`costs`]: the area and energy models (replaceable TOML).
//! - [`objective`]: metrics, objectives, constraints.
//! - [`tuners`]: exhaustive, random, simulated annealing, progressive, NSGA-II.
//! - [`pareto`], [`stats`]: fronts, hypervolume, Spearman.
//! - [`mapping`]: the per-layer mapping knob.
//! - [`driver`]: a whole run (screen, confirm, shard); [`results`]: its JSON,
//!   `--resume` and `merge`; [`output`]: CSV, SVG, HwConfig TOMLs.

pub mod analytic;
pub mod costs;
pub mod driver;
pub mod error;
pub mod evaluate;
pub mod mapping;
pub mod objective;
pub mod output;
pub mod pareto;
pub mod results;
pub mod rng;
pub mod space;
pub mod stats;
pub mod tuners;
pub mod workload;

pub use error::TuneError;
