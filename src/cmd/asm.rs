//! `nnac asm LISTING.s -o P.nnab`: assemble a text listing into a program container.

use crate::error::{write_atomic, CliError};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Text listing to assemble (the format `nnac disasm -o` writes; see docs/ISA.md).
    pub input: PathBuf,
    /// Output program container (.nnab).
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&args.input)
        .map_err(|e| CliError::user(format!("cannot read {}: {e}", args.input.display())))?;
    let dir = args.input.parent().map(PathBuf::from).unwrap_or_default();
    let mut load = |name: &str| std::fs::read(dir.join(name));
    let program = nnac_isa::listing::assemble(&text, &mut load)
        .map_err(|e| CliError::user(format!("{}: {e}", args.input.display())))?;
    let bytes = program
        .write()
        .map_err(|e| CliError::user(format!("{}: {e}", args.input.display())))?;
    write_atomic(&args.output, &bytes)
}
