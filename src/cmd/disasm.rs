//! `nnac disasm P.nnab [-o LISTING.s] [--json]`: show or disassemble a program container.
//!
//! Without `-o`: a human-readable listing on stdout. With `-o L.s`: the whole container
//! as text that `nnac asm` reads back byte-identically (a large DRAM image goes to the
//! side file `L.s.dram.bin`). `--json`: one JSON object per instruction per line
//! (stdout, or the `-o` file).

use crate::error::{write_atomic, CliError};
use nnac_isa::listing;
use nnac_isa::Program;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Program container (.nnab).
    pub input: PathBuf,
    /// Write the assemblable text listing (or, with --json, the JSON lines) here.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// One JSON object per instruction, one per line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let bytes = std::fs::read(&args.input)
        .map_err(|e| CliError::user(format!("cannot read {}: {e}", args.input.display())))?;
    let program = Program::read(&bytes)
        .map_err(|e| CliError::user(format!("{}: {e}", args.input.display())))?;
    if args.json {
        let mut text = listing::json::json_lines(&program).join("\n");
        text.push('\n');
        return emit(args.output.as_ref(), &text);
    }
    let Some(out) = args.output else {
        print!("{}", listing::table::listing(&program));
        return Ok(());
    };
    let file_name = out
        .file_name()
        .ok_or_else(|| CliError::user(format!("bad output path {}", out.display())))?
        .to_string_lossy()
        .to_string();
    let side = format!("{file_name}.dram.bin");
    let dis = listing::disassemble(&program, Some(&side));
    let dir = out.parent().map(PathBuf::from).unwrap_or_default();
    for (name, data) in &dis.side_files {
        write_atomic(&dir.join(name), data)?;
    }
    write_atomic(&out, dis.text.as_bytes())
}

fn emit(out: Option<&PathBuf>, text: &str) -> Result<(), CliError> {
    match out {
        Some(path) => write_atomic(path, text.as_bytes()),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
