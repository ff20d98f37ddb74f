//! `nnac verify P.nnab [--hw FILE]`: checks a program statically. Every instruction
//! must pass the semantic rules of docs/ISA.md section 5 (`checks::check_instr`),
//! and the hazard check (`nnac_isa::hazard`) must prove that no interleaving of the
//! two queues the flags allow races on a byte, sets a set flag, clears a clear flag
//! or deadlocks. Prints `OK: ...` (exit 0) or every finding (exit 1).

use crate::error::CliError;
use nnac_driver::run::read_program;
use nnac_driver::verify::{failure, verify};
use nnac_isa::HwConfig;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Program container (.nnab).
    pub program: PathBuf,
    /// Hardware configuration (TOML) the program must have been compiled for.
    /// Default: the program's own.
    #[arg(long, value_name = "FILE")]
    pub hw: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let name = args.program.display().to_string();
    let program = read_program(&args.program)?;
    if let Some(path) = &args.hw {
        let hw = HwConfig::from_toml_file(path).map_err(|e| CliError::user(e.to_string()))?;
        program
            .require_hw(&hw)
            .map_err(|e| CliError::user(format!("{name}: {e}")))?;
    }
    match verify(&program, &name)? {
        Ok(summary) => {
            println!("{summary}");
            Ok(())
        }
        Err(findings) => {
            for f in &findings {
                println!("{f}");
            }
            Err(failure(&name, &findings))
        }
    }
}
