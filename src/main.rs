//! `nnac`: the command-line driver. Each subcommand lives in `src/cmd/<name>.rs`
//! and exposes `Args` (clap) and `run(Args) -> Result<(), CliError>`.
//!
//! Exit codes: 0 success, 1 user error (bad input, unsupported model, ...),
//! 2 internal error (a bug in nnac).

mod cmd;
mod error;

use clap::{Parser, Subcommand};

/// nnac: ahead-of-time compiler for an FSD-style 96x96 int8 neural network accelerator.
#[derive(Parser)]
#[command(name = "nnac", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile a model to an NNA program (.nnab): import, fold, fuse, quantize, lower.
    Compile(cmd::compile::Args),
    /// Show a model's imported graph IR (text or Graphviz DOT).
    Inspect(cmd::inspect::Args),
    /// Run a model on the float reference interpreter.
    Eval(cmd::eval::Args),
    /// Which layer lost the accuracy: per-layer int8 error against float on your inputs, accumulated and alone, and a sensitivity ranking.
    Analyze(cmd::analyze::Args),
    /// Assemble a textual listing into a .nnab program container.
    Asm(cmd::asm::Args),
    /// Disassemble a .nnab program container.
    Disasm(cmd::disasm::Args),
    /// Prove statically that a program cannot race, deadlock or misuse a flag.
    Verify(cmd::verify::Args),
    /// Run a .nnab program on the functional simulator.
    Run(cmd::run::Args),
    /// Where a program's cycles go: cycle-approximate timing, per layer, against the shape bound and the schedule floor.
    Profile(cmd::profile::Args),
    /// Design-space exploration: search hardware configurations and mapping knobs for a workload mix (docs/TUNE.md).
    Tune(cmd::tune::Args),
}

/// Output piped into a reader that stops early (`nnac disasm P.nnab | head`) ends the
/// process quietly, as for any Unix tool, instead of failing on the closed stdout.
fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called once at the start of `main`, before any other thread exists;
    // SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() {
    default_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are successes; any other usage error is the user's.
            let code = if e.use_stderr() { 1 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = match cli.command {
        Command::Compile(a) => cmd::compile::run(a),
        Command::Inspect(a) => cmd::inspect::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Asm(a) => cmd::asm::run(a),
        Command::Disasm(a) => cmd::disasm::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Profile(a) => cmd::profile::run(a),
        Command::Tune(a) => cmd::tune::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
