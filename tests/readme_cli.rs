//! README.md and `nnac --help` say the same things: every subcommand `nnac --help`
//! lists has a section in README's "Subcommands" guide, and every long option of
//! `nnac SUBCOMMAND --help` is mentioned in that section.

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nnac"))
        .args(args)
        .output()
        .expect("run nnac");
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Subcommand names from the "Commands:" block of `nnac --help`.
fn subcommands() -> Vec<String> {
    let top = help(&["--help"]);
    top.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

/// Long options (`--name`) of a subcommand, without `--help`.
fn long_options(sub: &str) -> Vec<String> {
    let mut v: Vec<String> = help(&[sub, "--help"])
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .split(['=', '<', '`', '['])
                .next()
                .unwrap()
                .to_string()
        })
        .filter(|w| w != "--help")
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The README section(s) whose `###` heading names `nnac SUB`.
fn sections<'a>(readme: &'a str, sub: &str) -> Vec<&'a str> {
    let parts: Vec<&str> = readme.split("\n### ").collect();
    parts
        .into_iter()
        .filter(|p| {
            let heading = p.lines().next().unwrap_or("");
            heading.contains(&format!("`nnac {sub} ")) || heading.contains(&format!("`nnac {sub}`"))
        })
        .collect()
}

#[test]
fn readme_documents_every_subcommand_and_option() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let subs = subcommands();
    assert!(subs.len() >= 8, "{subs:?}");
    let mut missing = Vec::new();
    for sub in &subs {
        let secs = sections(&readme, sub);
        if secs.is_empty() {
            missing.push(format!("no README section for `nnac {sub}`"));
            continue;
        }
        let text = secs.join("\n");
        for opt in long_options(sub) {
            if !text.contains(&opt) {
                missing.push(format!(
                    "`nnac {sub} {opt}` is not mentioned in its README section"
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "README.md is out of date:\n{}",
        missing.join("\n")
    );
}
