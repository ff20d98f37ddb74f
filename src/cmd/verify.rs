//! `nnac verify P.nnab [--hw FILE]`: checks a program statically. Every instruction
//! must pass the semantic rules of docs/ISA.md section 5 (`checks::check_instr`),
//! and the hazard check (`nnac_isa::hazard`) must prove that no interleaving of the
//! two queues the flags allow races on a byte, sets a set flag, clears a clear flag
//! or deadlocks. Prints `OK: ...` (exit 0) or every finding (exit 1).

use crate::error::CliError;
use nnac_isa::checks::check_instr;
use nnac_isa::hazard::{self, instr_refs};
use nnac_isa::{HwConfig, Program};
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
    let bytes = std::fs::read(&args.program)
        .map_err(|e| CliError::user(format!("cannot read {name}: {e}")))?;
    let program = Program::read(&bytes).map_err(|e| CliError::user(format!("{name}: {e}")))?;
    if let Some(path) = &args.hw {
        let hw = HwConfig::from_toml_file(path).map_err(|e| CliError::user(e.to_string()))?;
        program
            .require_hw(&hw)
            .map_err(|e| CliError::user(format!("{name}: {e}")))?;
    }
    let findings = instruction_errors(&program);
    if !findings.is_empty() {
        return fail(&name, &findings);
    }
    let report = hazard::check_program(&program)
        .map_err(|e| CliError::internal("the hazard checker", format!("{name}: {e}")))?;
    if !report.is_clean() {
        return fail(&name, &report.lines());
    }
    println!(
        "OK: {} instructions ({} DMA, {} compute), no race, no deadlock, no flag error{}",
        program.instrs.len(),
        report.dma_instrs,
        report.compute_instrs,
        if program.body_start.is_some() {
            ", no resident overwrite (prologue once, body per frame)"
        } else {
            ""
        }
    );
    Ok(())
}

/// `check_instr` failures of every instruction, naming index, mnemonic and offset.
fn instruction_errors(p: &Program) -> Vec<String> {
    instr_refs(&p.instrs)
        .iter()
        .zip(&p.instrs)
        .filter_map(|(r, ins)| {
            check_instr(ins, &p.meta.hw)
                .err()
                .map(|m| format!("instruction {r}: {m}"))
        })
        .collect()
}

fn fail(name: &str, findings: &[String]) -> Result<(), CliError> {
    for f in findings {
        println!("{f}");
    }
    Err(CliError::user(format!(
        "{name}: verification failed ({} finding{})",
        findings.len(),
        if findings.len() == 1 { "" } else { "s" }
    )))
}
