//! `nnac disasm --json`: one JSON object per instruction.

use crate::container::{HostOp, IoDesc, IoLayout};
use crate::field::{Fields, Fmt};
use crate::instr::Instr;
use crate::Program;
use serde_json::{json, Map, Value};

fn field_map(body: &dyn Fields) -> Value {
    let mut m = Map::new();
    for (s, v) in body.specs().iter().zip(body.values()) {
        let val = match s.fmt {
            Fmt::Enum => json!(s.names.get(v as usize).copied().unwrap_or("?")),
            Fmt::Bool => json!(v != 0),
            _ => json!(v),
        };
        m.insert(s.name.to_string(), val);
    }
    Value::Object(m)
}

fn flag_list(set: crate::flags::FlagSet) -> Value {
    json!(set.iter().collect::<Vec<u32>>())
}

/// The JSON object for one instruction.
pub fn instr_json(index: usize, offset: usize, ins: &Instr) -> Value {
    let f = ins.flags();
    let simd: Vec<Value> = ins
        .simd()
        .iter()
        .map(|s| json!({"op": s.kind().mnemonic, "fields": field_map(s.body())}))
        .collect();
    json!({
        "index": index,
        "offset": offset,
        "size": ins.encoded_size(),
        "op": ins.mnemonic(),
        "wait_set": flag_list(f.wait_set),
        "wait_clear": flag_list(f.wait_clear),
        "set": flag_list(f.set),
        "clear": flag_list(f.clear),
        "fields": field_map(ins.body()),
        "simd": simd,
    })
}

fn desc_json(d: &IoDesc) -> Value {
    let layout = match d.layout {
        IoLayout::Dense => json!({"kind": "dense"}),
        IoLayout::Hwc {
            row_pitch,
            pix_pitch,
        } => json!({"kind": "hwc", "row_pitch": row_pitch, "pix_pitch": pix_pitch}),
    };
    json!({
        "name": d.name,
        "dtype": d.dtype.name(),
        "shape": d.shape,
        "dram": d.dram_addr,
        "layout": layout,
        "scale": d.scale,
        "zero_point": d.zero_point,
    })
}

/// The JSON object of one host op.
pub fn host_op_json(op: &HostOp) -> Value {
    json!({
        "segment": op.segment,
        "name": op.name,
        "op": op.op,
        "inputs": op.inputs.iter().map(desc_json).collect::<Vec<_>>(),
        "output": desc_json(&op.output),
    })
}

/// One compact JSON line per instruction; a STOP carries the host ops that run
/// after it (`host_ops`); with a prologue, every instruction says which `part`
/// (`"prologue"` or `"body"`) it is in.
pub fn json_lines(p: &Program) -> Vec<String> {
    let mut offset = 0;
    let mut segment = 0usize;
    p.instrs
        .iter()
        .enumerate()
        .map(|(i, ins)| {
            let mut v = instr_json(i, offset, ins);
            if let Some(t) = &p.layers {
                v["layer"] = json!(t.name_of(i));
            }
            if let Some(b) = p.body_start {
                v["part"] = json!(if i < b { "prologue" } else { "body" });
            }
            if let (Instr::Stop(_), Some(h)) = (ins, &p.host_ops) {
                v["host_ops"] = json!(h.after(segment).map(host_op_json).collect::<Vec<_>>());
            }
            if matches!(ins, Instr::Stop(_)) {
                segment += 1;
            }
            let line = v.to_string();
            offset += ins.encoded_size();
            line
        })
        .collect()
}
