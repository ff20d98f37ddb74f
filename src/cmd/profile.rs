//! `nnac profile P.nnab [--json] [--trace FILE.json] [--hw FILE]`: where the cycles
//! of a program go, from the cycle-approximate timing model
//! (`nnac_runtime_sim::timing`, docs/PERFORMANCE.md).
//!
//! Prints the totals (cycles, time and frames per second at the configured clock, MAC
//! utilization, DRAM bytes, SRAM peak, the schedule floor of every segment and of the
//! frame, cycles by cause) and one line per layer (by
//! source node name): MACs, cycles, utilization against the shape bound and the
//! hardware bound, stall cycles
//! by cause, DRAM bytes. For a program with a prologue (weights resident in SRAM,
//! docs/ISA.md 2.2) these are one frame's (the body's steady state) and the
//! prologue's cycles and DRAM bytes are printed apart (once per load). `--json` prints the same as one JSON object (field names
//! documented in docs/PERFORMANCE.md). `--trace` writes a Chrome trace (one track per
//! queue, one slice per instruction) for Perfetto or chrome://tracing. `--hw` times
//! the program on another configuration that differs only in timing keys (clock,
//! DRAM bandwidth, SRAM ports, banks, cache). `--roofline` and `--timeline` write SVG
//! pictures of one frame (`nnac-pictures`, written by `pictures.rs`).

use crate::error::{write_atomic, CliError};
use nnac_driver::profile;
use nnac_driver::run::read_program;
use nnac_isa::HwConfig;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Program container (.nnab).
    pub program: PathBuf,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Write a Chrome trace event file (Perfetto, chrome://tracing).
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Hardware configuration (TOML) to time the program on. Default: the program's
    /// own. Keys that shape the program (MAC array, accumulator, SIMD width, SRAM
    /// size, flags) must match it.
    #[arg(long, value_name = "FILE")]
    pub hw: Option<PathBuf>,
    /// What-if: time every activation packet as if it obeyed the 256-byte rule (the
    /// channel-blocked layout of docs/ISA.md 4.1), to see what the layout costs.
    #[arg(long)]
    pub assume_packet_rule: bool,
    /// Write a roofline of one frame (SVG): every layer's attained ops/s against its
    /// ops per DRAM byte and per SRAM byte, under the MAC, SIMD, DRAM and SRAM-port
    /// ceilings, with its shape bound (and hardware bound, when known) above it.
    #[arg(long, value_name = "FILE.svg")]
    pub roofline: Option<PathBuf>,
    /// Write the timeline of one frame (SVG): the DMA and compute queues coloured by
    /// layer, the cycles coloured by cause, host ops as gaps.
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let name = args.program.display().to_string();
    let program = read_program(&args.program)?;
    if let Some(w) = nnac_driver::synthetic::program_warning(&program) {
        eprintln!("{w}");
    }
    let hw = match &args.hw {
        Some(p) => Some(HwConfig::from_toml_file(p).map_err(|e| CliError::user(e.to_string()))?),
        None => None,
    };
    let prof = profile::analyze(&name, &program, hw.as_ref(), args.assume_packet_rule)?;
    if let Some(path) = &args.trace {
        let t = serde_json::to_vec(&profile::trace(&prof))
            .map_err(|e| CliError::internal("writing the trace", e.to_string()))?;
        write_atomic(path, &t)?;
    }
    let report = profile::to_json(&name, &program, &prof);
    if let Some(path) = &args.roofline {
        super::pictures::write_roofline(path, &name, &program, &prof, &report)?;
    }
    if let Some(path) = &args.timeline {
        super::pictures::write_timeline(path, &name, &program, &prof)?;
    }
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::internal("writing the JSON profile", e.to_string()))?;
        s.push('\n');
        s
    } else {
        profile::text(&name, &program, &prof)
    };
    use std::io::Write as _;
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(|e| CliError::user(format!("cannot write to stdout: {e}")))
}
