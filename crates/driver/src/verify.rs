//! Checking a program statically (`nnac verify`, `nnac.Program.verify`): every
//! instruction must pass the semantic rules of docs/ISA.md section 5
//! (`checks::check_instr`), and the hazard check (`nnac_isa::hazard`) must prove that
//! no interleaving of the two queues the flags allow races on a byte, sets a set flag,
//! clears a clear flag or deadlocks.

use crate::error::Error;
use nnac_isa::checks::check_instr;
use nnac_isa::hazard::{self, instr_refs};
use nnac_isa::Program;

/// The verdict: `Ok` with the one-line summary of a clean program, or every finding.
pub fn verify(program: &Program, name: &str) -> Result<Result<String, Vec<String>>, Error> {
    let findings = instruction_errors(program);
    if !findings.is_empty() {
        return Ok(Err(findings));
    }
    let report = hazard::check_program(program)
        .map_err(|e| Error::internal("the hazard checker", format!("{name}: {e}")))?;
    if !report.is_clean() {
        return Ok(Err(report.lines()));
    }
    Ok(Ok(format!(
        "OK: {} instructions ({} DMA, {} compute), no race, no deadlock, no flag error{}",
        program.instrs.len(),
        report.dma_instrs,
        report.compute_instrs,
        if program.body_start.is_some() {
            ", no resident overwrite (prologue once, body per frame)"
        } else {
            ""
        }
    )))
}

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

/// The user's error for a program with findings (the findings are shown apart).
pub fn failure(name: &str, findings: &[String]) -> Error {
    Error::user(format!(
        "{name}: verification failed ({} finding{})",
        findings.len(),
        if findings.len() == 1 { "" } else { "s" }
    ))
}
