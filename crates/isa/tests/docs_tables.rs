//! docs/ISA.md must contain the field and opcode tables generated from the code
//! tables, verbatim, between the GENERATED markers. Run with NNAC_BLESS_DOCS=1 to
//! rewrite the blocks after changing the instruction tables (then review the diff).

use nnac_isa::docs::{field_tables, opcode_tables};
use std::path::PathBuf;

fn isa_md() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/ISA.md")
}

fn markers(name: &str) -> (String, String) {
    (
        format!("<!-- BEGIN GENERATED: {name} -->\n"),
        format!("<!-- END GENERATED: {name} -->"),
    )
}

/// Returns the block between the markers and its byte range.
fn block(doc: &str, name: &str) -> (String, usize, usize) {
    let (begin, end) = markers(name);
    let s = doc
        .find(&begin)
        .unwrap_or_else(|| panic!("ISA.md lacks {begin}"))
        + begin.len();
    let e = s + doc[s..]
        .find(&end)
        .unwrap_or_else(|| panic!("ISA.md lacks {end}"));
    (doc[s..e].to_string(), s, e)
}

/// Serializes the tests: in bless mode they rewrite the same file.
static DOC_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn check(name: &str, generated: &str) {
    let _guard = DOC_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let path = isa_md();
    let doc = std::fs::read_to_string(&path).expect("read docs/ISA.md");
    let (current, s, e) = block(&doc, name);
    let want = format!("\n{generated}\n");
    if current == want {
        return;
    }
    if std::env::var("NNAC_BLESS_DOCS").is_ok_and(|v| v == "1") {
        let new = format!("{}{want}{}", &doc[..s], &doc[e..]);
        std::fs::write(&path, new).expect("write docs/ISA.md");
        return;
    }
    panic!("docs/ISA.md block '{name}' is out of date with the instruction tables; run NNAC_BLESS_DOCS=1 cargo test -p nnac-isa --test docs_tables and review.\nExpected:\n{want}");
}

#[test]
fn field_tables_match_the_code() {
    check("field tables", &field_tables());
}

#[test]
fn opcode_tables_match_the_code() {
    check("opcode tables", &opcode_tables());
}

#[test]
fn every_field_appears_in_a_table() {
    let t = field_tables();
    for k in nnac_isa::Instr::KINDS {
        for f in k.fields {
            assert!(
                t.contains(&format!("| {} | {} | {} |", f.name, f.offset, f.width)),
                "{}",
                f.name
            );
        }
    }
}
