//! The backend's folders import each other in pipeline order only, and no module
//! imports itself through others (docs/ARCHITECTURE.md, crates/backend-nna): `base/`
//! imports from no other folder, `schedule/` only from `base/`, `place/` from `base/`
//! and `schedule/`, `lower/` from those three; the crate root and `error.rs` sit
//! outside the order (the root drives everything, `error.rs` is a leaf).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Folder rank: a module may import from a folder of lower or equal rank.
fn rank(folder: &str) -> Option<u32> {
    match folder {
        "error" => Some(0),
        "base" => Some(1),
        "schedule" => Some(2),
        "place" => Some(3),
        "lower" => Some(4),
        _ => None,
    }
}

/// `a/b.rs` -> `a/b`, `a/mod.rs` -> `a`.
fn module_of(rel: &Path) -> String {
    let s = rel.with_extension("").to_string_lossy().replace('\\', "/");
    s.strip_suffix("/mod").unwrap_or(&s).to_string()
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// `first` or `first/second` (the second segment only when it names a module, i.e.
/// starts lowercase and is followed by `::` or ends the path).
fn target(path: &str) -> Option<String> {
    let first = ident(path);
    if first.is_empty() || !first.starts_with(|c: char| c.is_ascii_lowercase()) {
        return None;
    }
    let rest = &path[first.len()..];
    if let Some(after) = rest.strip_prefix("::") {
        let second = ident(after);
        if second.starts_with(|c: char| c.is_ascii_lowercase()) {
            return Some(format!("{first}/{second}"));
        }
    }
    Some(first.to_string())
}

/// Top-level entries of a brace list (`a::b, c::{d, e}`).
fn brace_entries(list: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(list[start..].trim());
    out
}

/// Modules `src` refers to through `crate::` paths, outside tests and comments.
fn imports(src: &str) -> BTreeSet<String> {
    let code = src.split("#[cfg(test)]").next().unwrap_or("");
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(k) = rest.find("crate::") {
        rest = &rest[k + "crate::".len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let end = list.find("};").unwrap_or(list.len());
            out.extend(brace_entries(&list[..end]).into_iter().filter_map(target));
        } else if let Some(t) = target(rest) {
            out.insert(t);
        }
    }
    out
}

fn modules() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(&root).unwrap();
                let src = std::fs::read_to_string(&p).unwrap();
                out.insert(module_of(rel), imports(&src));
            }
        }
    }
    out
}

fn folder(m: &str) -> &str {
    m.split('/').next().unwrap_or(m)
}

#[test]
fn folders_import_in_pipeline_order() {
    let mods = modules();
    assert!(mods.len() > 20, "the walk found {} modules", mods.len());
    let mut bad = Vec::new();
    for (m, deps) in &mods {
        let Some(r) = rank(folder(m)) else { continue };
        for d in deps {
            match rank(folder(d)) {
                Some(rd) if rd <= r => {}
                _ => bad.push(format!("{m} -> {d}")),
            }
        }
    }
    assert!(
        bad.is_empty(),
        "imports against the pipeline order: {bad:?}"
    );
}

#[test]
fn no_module_imports_itself_through_others() {
    let mods = modules();
    // Depth-first search for a back edge over module-to-module imports.
    fn visit<'a>(
        m: &'a str,
        mods: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, bool>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(true) => {
                let at = path.iter().position(|p| *p == m).unwrap_or(0);
                let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            Some(false) => return None,
            None => {}
        }
        state.insert(m, true);
        path.push(m);
        for d in mods.get(m).into_iter().flatten() {
            if d != m && mods.contains_key(d.as_str()) {
                if let Some(c) = visit(d, mods, state, path) {
                    return Some(c);
                }
            }
        }
        path.pop();
        state.insert(m, false);
        None
    }
    let mut state = BTreeMap::new();
    for m in mods.keys() {
        if let Some(cycle) = visit(m, &mods, &mut state, &mut Vec::new()) {
            panic!("import circle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_scanner_sees_braced_and_plain_imports() {
    let src = "use crate::base::walk::Walk;\nuse crate::{place::spill, schedule::bands::{a, b}};\n// crate::lower::dot\nfn f() { crate::lower::host::x(); }\n#[cfg(test)]\nmod tests { use crate::lib; }";
    let got: Vec<String> = imports(src).into_iter().collect();
    assert_eq!(
        got,
        ["base/walk", "lower/host", "place/spill", "schedule/bands"]
    );
}
