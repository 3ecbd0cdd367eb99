//! The registry's rules, checked over the sources: no mode uses another,
//! and a mode's name is spelled in its own folder only.

use super::MODES;
use std::path::Path;

/// Literals outside a mode's folder that spell a mode's name for
/// something else, each with its reason.
const NOT_A_MODE: [(&str, &str, &str); 6] = [
    ("report/src/render/export.rs", "trials", "the export's per-stage key for trial samples"),
    ("report/src/modes/section.rs", "diagnostic", "the section's tag, as report.json spells it"),
    ("report/src/modes/section.rs", "cold-prep", "the section's tag, as report.json spells it"),
    ("report/src/modes/section.rs", "trials", "the section's tag, as report.json spells it"),
    ("report/src/modes/section.rs", "profile", "the section's tag, as report.json spells it"),
    ("report/src/modes/section.rs", "recipe", "the section's tag, as report.json spells it"),
];

/// The sources the rules cover: the coordinator's, and the report
/// crate's (where each mode's section lives, in a folder of the same name).
const CRATES: [&str; 2] = ["coordinator", "report"];

/// The workspace's root.
fn workspace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The string literals of `text`'s code before its tests (`//`
/// comments, doc comments included, are not code).
fn literals(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut out = Vec::new();
    for line in code.lines() {
        let mut chars = line.chars().peekable();
        let (mut inside, mut lit) = (false, String::new());
        while let Some(c) = chars.next() {
            match (inside, c) {
                (false, '/') if chars.peek() == Some(&'/') => break,
                // A character literal ('"' and '\'' too), not a lifetime.
                (false, '\'') => {
                    let ahead: Vec<char> = chars.clone().take(3).collect();
                    let skip = match ahead.as_slice() {
                        [_, '\'', ..] => 2,
                        ['\\', _, '\''] => 3,
                        _ => 0,
                    };
                    for _ in 0..skip {
                        chars.next();
                    }
                }
                (false, '"') => inside = true,
                (true, '\\') => {
                    chars.next();
                }
                (true, '"') => {
                    inside = false;
                    out.push(std::mem::take(&mut lit));
                }
                (true, c) => lit.push(c),
                _ => {}
            }
        }
    }
    out
}

/// The modes whose name a file's code spells outside their own folder:
/// a literal that is the name, or holds `--mode NAME`.
fn spelled(rel: &str, text: &str) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    for lit in literals(text) {
        for m in MODES {
            let own = format!("/src/modes/{}/", m.name().replace('-', "_"));
            let says = lit == m.name() || {
                let flag = format!("--mode {}", m.name());
                lit.match_indices(&flag).any(|(i, _)| {
                    !lit[i + flag.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '-')
                })
            };
            let excused = NOT_A_MODE.iter().any(|(f, l, _)| *f == rel && *l == lit);
            if says && !rel.contains(&own) && !excused {
                found.push((lit.clone(), m.name()));
            }
        }
    }
    found
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        match p.is_dir() {
            true => sources(&p, out),
            false if p.extension().is_some_and(|x| x == "rs") => out.push(p),
            false => {}
        }
    }
}

/// No mode uses another: what two share is on a floor below them
/// (`preparation`, `stages`, `section`).
#[test]
fn no_mode_uses_another() {
    let folders: Vec<String> = MODES.iter().map(|m| m.name().replace('-', "_")).collect();
    let mut found = Vec::new();
    for own in &folders {
        let mut files = Vec::new();
        for krate in CRATES {
            let folder = workspace().join(krate).join("src/modes").join(own);
            assert!(folder.is_dir(), "no folder {}", folder.display());
            sources(&folder, &mut files);
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for other in folders.iter().filter(|o| *o != own) {
                for path in [format!("super::{other}"), format!("modes::{other}")] {
                    let uses = text.match_indices(&path).any(|(i, _)| {
                        !text[i + path.len()..]
                            .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    });
                    if uses {
                        found.push(format!("{}: {path}", f.display()));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A mode's name is spelled in its own folder only: anything else
/// reaches a mode through the registry (`MODES`, `Shared::readers`,
/// the section). A file whose tests need a name keeps it in its tests.
#[test]
fn a_modes_name_is_spelled_only_in_its_folder() {
    let root = workspace();
    let mut files = Vec::new();
    for krate in CRATES {
        sources(&root.join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 100, "{} files under {}", files.len(), root.display());
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        if rel.ends_with("tests.rs") || rel.ends_with("docs_tests.rs") {
            continue;
        }
        for (lit, mode) in spelled(&rel, &std::fs::read_to_string(f).unwrap()) {
            found.push(format!("{rel}: {lit:?} spells --mode {mode}"));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    // Every excuse is still needed.
    for (file, lit, why) in NOT_A_MODE {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(literals(&text).iter().any(|l| l == lit), "{file} no longer says {lit:?} ({why})");
    }
    // The check can fail: a planted spelling outside the folder is
    // found, in the folder it is not, and comments and tests are not code.
    let planted = "let e = format!(\"{x} applies to --mode trials\"); // --mode recipe\n";
    assert_eq!(
        spelled("coordinator/src/cli/resolve.rs", planted),
        [("{x} applies to --mode trials".into(), "trials")]
    );
    assert!(spelled("coordinator/src/modes/trials/mod.rs", planted).is_empty());
    assert!(spelled("report/src/modes/trials/render.rs", planted).is_empty());
    assert_eq!(spelled("coordinator/src/plan.rs", "let m = \"cold-prep\";").len(), 1);
    assert!(spelled("coordinator/src/plan.rs", "let m = \"--mode trialsx\";").is_empty());
    assert!(
        spelled("coordinator/src/plan.rs", "fn f() {}\n#[cfg(test)]\nlet m = \"recipe\";")
            .is_empty()
    );
}
