//! Where the cycles of a program go, from the cycle-approximate timing model
//! (`nnac_runtime_sim::timing`, docs/PERFORMANCE.md): the text report of `nnac
//! profile`, the `--json` object (`nnac.profile`) and the Chrome trace.

use crate::error::Error;
use nnac_isa::{HwConfig, Program};
use nnac_runtime_sim::timing::{
    analyze_with, Charge, LayerProfile, Profile, Unit, UnitWork, WhatIf,
};
use serde_json::{json, Value};
use std::fmt::Write;

/// Times `program` (named `name` in errors) on its own hardware or on `hw`;
/// `packet_rule` is the what-if of every activation packet obeying the 256-byte rule.
pub fn analyze(
    name: &str,
    program: &Program,
    hw: Option<&HwConfig>,
    packet_rule: bool,
) -> Result<Profile, Error> {
    let what_if = WhatIf { packet_rule };
    analyze_with(program, hw, &what_if).map_err(|e| Error::user(format!("{name}: {e}")))
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn stalls_json(c: &Charge) -> Value {
    json!({
        "dma": c.dma,
        "flags": c.flags,
        "sram_ports": c.sram_ports,
        "simd_unload": c.simd_unload,
    })
}

fn layer_json(l: &LayerProfile, rows: u64, cols: u64) -> Value {
    json!({
        "name": l.name,
        "ops": l.ops,
        "first_instr": l.first,
        "last_instr": l.last,
        "instructions": l.instructions,
        "macs": l.macs,
        "cycles": l.cycles,
        "mac_busy": l.charge.mac_busy,
        "simd_work": l.charge.simd_work,
        "utilization": l.utilization(rows, cols),
        "shape_bound": l.shape_bound,
        "min_cycles": l.min_cycles,
        "hardware_bound": l.hardware_bound,
        "hw_min_cycles": l.hw_min_cycles(),
        "hw_work": hw_work_json(&l.hw_work, l.coupled_cycles(), l.hw_limit()),
        "stalls": stalls_json(&l.charge),
        "dram_bytes": { "read": l.dram_read, "written": l.dram_written },
        "broken_slices": l.broken_slices,
    })
}

/// The least work per unit behind a hardware bound (docs/PERFORMANCE.md 3.1).
fn hw_work_json(w: &UnitWork, coupled: u64, limit: &str) -> Value {
    json!({
        "mac": w.mac,
        "unload": w.unload,
        "simd_only": w.simd_only,
        "dram": w.dram,
        "shift_register": coupled,
        "limit": limit,
    })
}

/// The `--json` object (docs/PERFORMANCE.md, "JSON").
pub fn to_json(name: &str, program: &Program, p: &Profile) -> Value {
    let (rows, cols) = (p.params.rows, p.params.cols);
    json!({
        "program": name,
        "source_model": program.meta.source_model,
        "hw": {
            "mac_rows": rows,
            "mac_cols": cols,
            "clock_hz": p.params.clock_hz,
            "dram_bytes_per_s": p.params.dram_bytes_per_s,
        },
        "instructions": p.timeline.instrs.len(),
        "total_cycles": p.total_cycles,
        "seconds": p.seconds(),
        "fps": p.fps(),
        "macs": p.macs,
        "mac_utilization": p.mac_utilization(),
        "shape_bound": p.shape_bound(),
        "hardware_bound": p.hardware_bound(),
        "hw_bound_cycles": p.hw_bound_cycles(),
        "hw_work": hw_work_json(&p.hw_work(), p.coupled_cycles(), p.hw_limit()),
        "assume_packet_rule": p.params.assume_packet_rule,
        "dram_bytes": {
            "read": p.dram_read,
            "written": p.dram_written,
            "lower_bound": p.dram_lower_bound,
            "io": p.io_bytes,
        },
        "prologue": p.prologue.map(|q| json!({
            "instructions": q.instructions,
            "segments": q.segments,
            "cycles": q.cycles,
            "seconds": p.params.seconds(q.cycles),
            "dram_bytes": { "read": q.dram_read, "written": q.dram_written },
        })),
        "sram_peak_bytes": p.sram_peak,
        "floor_cycles": p.floor_cycles(),
        "segments": p.timeline.segments.iter().zip(&p.floors).map(|(s, f)| json!({
            "start": s.start, "end": s.end, "stop_instr": s.stop,
            "floor": {
                "cycles": f.cycles(), "limit": f.limit(),
                "dma": f.dma, "mac": f.mac, "simd": f.simd,
            },
        })).collect::<Vec<_>>(),
        "host_ops": p.host_ops.iter().map(|h| json!({
            "segment": h.segment,
            "name": h.name,
            "op": h.op,
            "input_elements": h.input_elements,
            "output_elements": h.output_elements,
            "bytes": h.bytes,
            "reason": h.reason,
        })).collect::<Vec<_>>(),
        "calibration": program.meta.note(nnac_isa::NOTE_CALIBRATION),
        "cycles_by_cause": {
            "mac_busy": p.charge.mac_busy,
            "simd_work": p.charge.simd_work,
            "dma": p.charge.dma,
            "flags": p.charge.flags,
            "sram_ports": p.charge.sram_ports,
            "simd_unload": p.charge.simd_unload,
        },
        "broken_slices": p.broken_slices,
        "layers": p.layers.iter().map(|l| layer_json(l, rows, cols)).collect::<Vec<_>>(),
    })
}

fn mib(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.2} MiB", b as f64 / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", b as f64 / 1024.0)
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The segments against their floors (docs/PERFORMANCE.md 2.1).
fn floor_lines(s: &mut String, p: &Profile) {
    let body = p.prologue.map_or(0, |q| q.segments);
    let segs = p.timeline.segments.iter().zip(&p.floors).skip(body);
    if p.timeline.segments.len().saturating_sub(body) > 1 {
        let seg: Vec<String> = segs
            .map(|(g, f)| format!("{} ({} {})", g.end - g.start, f.cycles(), f.limit()))
            .collect();
        let _ = writeln!(
            s,
            "segments (cycles, floor and its unit): {}",
            seg.join(" + ")
        );
    }
    let (floor, t) = (p.floor_cycles(), p.total_cycles);
    let min = p.min_cycles();
    let best = if min > 0 && floor > 0 {
        let b = pct(ratio(min, floor).min(1.0));
        format!("; in any order these instructions reach at most {b} of the shape bound")
    } else {
        String::new()
    };
    let lost = t.saturating_sub(floor);
    let _ = writeln!(
        s,
        "schedule floor: {floor} cycles (each segment's busiest unit); the order and the waits cost {lost} ({}){best}",
        pct(ratio(lost, t))
    );
}

/// The hardware bound and the unit work behind it (docs/PERFORMANCE.md 3.1).
fn hw_bound_line(s: &mut String, p: &Profile) {
    let Some(b) = p.hardware_bound() else { return };
    let (w, c) = (p.hw_work(), p.hw_bound_cycles());
    let _ = writeln!(
        s,
        "hardware bound: {} ({} of it): at least {c} cycles, set by the {} (MAC terms {}, unloads {}, SIMD-only {}, DRAM {}; MAC and SIMD paired pass by pass through the shift register {})",
        pct(b),
        pct(p.mac_utilization() / b),
        p.hw_limit(),
        w.mac,
        w.unload,
        w.simd_only,
        w.dram,
        p.coupled_cycles()
    );
}

fn summary(name: &str, program: &Program, p: &Profile) -> String {
    let mut s = String::new();
    let c = &p.charge;
    let t = p.total_cycles;
    let _ = writeln!(
        s,
        "program: {name} ({}), {} instructions, {} segment(s), {} host op(s) (host time not included)",
        program.meta.source_model,
        p.timeline.instrs.len(),
        p.timeline.segments.len(),
        p.host_ops.len()
    );
    let _ = writeln!(
        s,
        "hardware: {}x{} MACs at {:.3} GHz, DRAM {:.1} GB/s",
        p.params.rows,
        p.params.cols,
        p.params.clock_hz as f64 / 1e9,
        p.params.dram_bytes_per_s as f64 / 1e9
    );
    let bound = p.shape_bound().map_or("-".to_string(), |b| {
        format!("{} ({} of it)", pct(b), pct(p.mac_utilization() / b))
    });
    let _ = writeln!(
        s,
        "{}: {t} cycles = {:.3} ms = {:.1} frames/s; {:.3} GMACs; MAC utilization {}; shape bound {bound}",
        if p.prologue.is_some() {
            "per frame (body)"
        } else {
            "total"
        },
        p.seconds() * 1e3,
        p.fps(),
        p.macs as f64 / 1e9,
        pct(p.mac_utilization())
    );
    if p.params.assume_packet_rule {
        let _ = writeln!(
            s,
            "what-if: every activation packet timed as if it obeyed the 256-byte rule"
        );
    }
    dram_lines(&mut s, p);
    let _ = writeln!(s, "SRAM peak: {}", mib(p.sram_peak));
    for h in &p.host_ops {
        let _ = writeln!(
            s,
            "host op after segment {}: {} = {} ({} elements in, {} out, {} B of DRAM; CPU time not modelled){}",
            h.segment,
            h.name,
            h.op,
            h.input_elements,
            h.output_elements,
            h.bytes,
            h.reason.as_deref().map(|r| format!("; {r}")).unwrap_or_default()
        );
    }
    floor_lines(&mut s, p);
    hw_bound_line(&mut s, p);
    let _ = writeln!(
        s,
        "cycles by cause: MAC {}, SIMD-only work {}, waiting on DMA {}, on flags {}, SRAM ports {}, SIMD unload {}",
        pct(ratio(c.mac_busy, t)),
        pct(ratio(c.simd_work, t)),
        pct(ratio(c.dma, t)),
        pct(ratio(c.flags, t)),
        pct(ratio(c.sram_ports, t)),
        pct(ratio(c.simd_unload, t))
    );
    if p.broken_slices > 0 {
        let _ = writeln!(
            s,
            "activation slices breaking the 256-byte rule: {} (each costs extra loads)",
            p.broken_slices
        );
    }
    s
}

/// DRAM traffic against the lower bound; with a prologue, per frame against the
/// inputs + outputs and, prologue once plus one frame, against the lower bound.
fn dram_lines(s: &mut String, p: &Profile) {
    let frame = p.dram_read + p.dram_written;
    let Some(q) = p.prologue else {
        let _ = writeln!(
            s,
            "DRAM: read {}, written {} ({} of the lower bound {}: DRAM image + inputs + outputs)",
            mib(p.dram_read),
            mib(p.dram_written),
            pct(ratio(frame, p.dram_lower_bound)),
            mib(p.dram_lower_bound)
        );
        return;
    };
    let _ = writeln!(
        s,
        "prologue (once per load): {} cycles = {:.3} ms, {} instructions, DRAM read {}, written {}",
        q.cycles,
        p.params.seconds(q.cycles) * 1e3,
        q.instructions,
        mib(q.dram_read),
        mib(q.dram_written)
    );
    let _ = writeln!(
        s,
        "DRAM per frame: read {}, written {} ({} of inputs + outputs {}); prologue + one frame {} of the lower bound {} (DRAM image + inputs + outputs)",
        mib(p.dram_read),
        mib(p.dram_written),
        pct(ratio(frame, p.io_bytes)),
        mib(p.io_bytes),
        pct(ratio(frame + q.dram_read + q.dram_written, p.dram_lower_bound)),
        mib(p.dram_lower_bound)
    );
}

pub fn text(name: &str, program: &Program, p: &Profile) -> String {
    let (rows, cols) = (p.params.rows, p.params.cols);
    let mut s = summary(name, program, p);
    let _ = writeln!(
        s,
        "\n{:>14} {:>11} {:>7} {:>7} {:>7} {:>7} {:>7} {:>10} {:>10} {:>10} {:>10} {:>11}  layer (ops)",
        "MACs", "cycles", "util", "bound", "of bnd", "hw bnd", "of hw", "dma", "flags", "ports", "unload", "DRAM"
    );
    for l in &p.layers {
        let util = l.utilization(rows, cols);
        let (bound, of) = match l.shape_bound {
            Some(b) => (pct(b), pct(util / b)),
            None => ("-".into(), "-".into()),
        };
        let (hw, of_hw) = match l.hardware_bound {
            Some(b) => (pct(b), pct(util / b)),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "{:>14} {:>11} {:>7} {:>7} {:>7} {:>7} {:>7} {:>10} {:>10} {:>10} {:>10} {:>11}  {} ({})",
            l.macs,
            l.cycles,
            pct(util),
            bound,
            of,
            hw,
            of_hw,
            l.charge.dma,
            l.charge.flags,
            l.charge.sram_ports,
            l.charge.simd_unload,
            mib(l.dram_read + l.dram_written),
            l.name,
            if l.ops.is_empty() {
                "DMA".to_string()
            } else {
                l.ops.join(",")
            }
        );
    }
    s
}

/// Chrome trace events: one track (thread) per queue, one complete ("X") slice per
/// instruction in microseconds; compute slices span the MAC work (start to the
/// release of the MAC array), with the completion in `args.end_cycle`.
pub fn trace(p: &Profile) -> Value {
    let us = |c: u64| c as f64 * 1e6 / p.params.clock_hz as f64;
    let mut ev = vec![
        json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "NNA"}}),
        json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "DMA queue"}}),
        json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "compute queue"}}),
    ];
    for t in &p.timeline.instrs {
        let (tid, stop) = match t.unit {
            Unit::Dma => (1, t.end),
            Unit::Compute => (2, t.release),
            Unit::Stop => {
                ev.push(json!({
                    "name": "STOP", "ph": "i", "s": "p", "pid": 1, "tid": 2,
                    "ts": us(t.end), "args": {"index": t.index, "segment": t.segment},
                }));
                continue;
            }
        };
        ev.push(json!({
            "name": p.mnemonics[t.index],
            "cat": t.unit.name(),
            "ph": "X",
            "pid": 1,
            "tid": tid,
            "ts": us(t.start),
            "dur": us(stop) - us(t.start),
            "args": {
                "index": t.index,
                "layer": p.layer_of[t.index],
                "start_cycle": t.start,
                "end_cycle": t.end,
            },
        }));
    }
    json!({ "traceEvents": ev, "displayTimeUnit": "ns" })
}
