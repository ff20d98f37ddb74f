//! `nnac-driver`: the library both front ends of nnac are thin layers over, the `nnac`
//! command line (`src/cmd/`) and the Python package (`crates/python`). It chains the
//! stages of the other crates and holds no compiler logic of its own: options and
//! model loading (`model`), input frames from files (`frames`, `frame_shape`) or
//! tensors (`calib`) or made up when there are none (`synthetic`), compiling with the
//! partitioning between NNA and host (`compile`, `host_ops`), running programs on the simulator on float
//! or raw inputs (`run`), the output files of `run` and `eval` (`outputs`), the reference interpreters (`eval`), the IR text
//! (`inspect`), static verification (`verify`) and the profile report (`profile`). Every failure is an [`Error`]: the
//! user's (exit 1, `nnac.UserError`) or an internal one (exit 2, `nnac.InternalError`).

pub mod analyze;
pub mod calib;
pub mod compile;
pub mod error;
pub mod eval;
pub mod frame_shape;
pub mod frames;
pub mod host_ops;
pub mod inspect;
pub mod model;
pub mod options;
pub mod outputs;
pub mod profile;
pub mod run;
pub mod synthetic;
pub mod verify;

pub use error::Error;
