//! The host ops of a compiled program, each with the reason it is not on the NNA and
//! the DRAM bytes it moves: the compile summary, `--host-ops deny` and the Python
//! package read them from here.

/// One host op of a program.
#[derive(Clone, Debug, PartialEq)]
pub struct HostLine {
    /// The layer name.
    pub name: String,
    /// The IR op it computes.
    pub op: String,
    /// Why it is not on the NNA.
    pub reason: String,
    /// DRAM bytes it reads and writes per frame.
    pub bytes: u64,
}

/// The program's host ops with the reason the passes recorded for each; a host op
/// the passes did not list (a reshape the backend could not make a view of its
/// input's SRAM buffer) gets that as its reason.
pub fn host_op_lines(p: &nnac_isa::Program, rep: &nnac_passes::Report) -> Vec<HostLine> {
    let Some(ops) = &p.host_ops else {
        return Vec::new();
    };
    ops.ops
        .iter()
        .map(|h| {
            let entry = rep.host_ops.iter().find(|e| e.node == h.name);
            HostLine {
                name: h.name.clone(),
                op: entry.map_or_else(|| h.op.clone(), |e| e.op.clone()),
                reason: entry.map_or_else(
                    || {
                        format!(
                            "a {} the NNA cannot do as a view of its input's SRAM buffer",
                            h.op.split('{').next().unwrap_or(&h.op)
                        )
                    },
                    |e| e.reason.clone(),
                ),
                bytes: h.inputs.iter().map(|d| d.bytes()).sum::<u64>() + h.output.bytes(),
            }
        })
        .collect()
}

/// The summary lines: how many, the DRAM bytes per frame, then one per op.
pub fn summary(host: &[HostLine]) -> String {
    use std::fmt::Write;
    if host.is_empty() {
        return "host ops: none (every op runs on the NNA)\n".to_string();
    }
    let total: u64 = host.iter().map(|h| h.bytes).sum();
    let mut s = format!("host ops: {} ({total} B of DRAM per frame)\n", host.len());
    for h in host {
        let _ = writeln!(s, "  {} ({}): {} B; {}", h.name, h.op, h.bytes, h.reason);
    }
    s
}
