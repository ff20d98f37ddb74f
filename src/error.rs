//! The CLI's error type is the driver's: every failure is either the user's (exit 1)
//! or ours (exit 2).

pub use nnac_driver::error::{write_atomic, Error as CliError};
