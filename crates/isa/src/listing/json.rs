//! `nnac disasm --json`: one JSON object per instruction.

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

/// One compact JSON line per instruction.
pub fn json_lines(p: &Program) -> Vec<String> {
    let mut offset = 0;
    p.instrs
        .iter()
        .enumerate()
        .map(|(i, ins)| {
            let line = instr_json(i, offset, ins).to_string();
            offset += ins.encoded_size();
            line
        })
        .collect()
}
