//! Which files make up the program, and their one digest (`SOURCE_SHA256`):
//! every file of every workspace member, as the root `Cargo.toml` lists the
//! members (never a list written by hand, which a new crate would miss),
//! and of `python/`, the helper the worker embeds; less what builds and
//! runs leave there (`target/`, caches, a package's build directories).
//!
//! build.rs includes this file (`#[path]`); the crate compiles it only for
//! its tests, so the library itself does no file I/O.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Folders beside the members that belong to the program.
pub const ALSO: &[&str] = &["python"];

/// The members a workspace's `Cargo.toml` lists (`members = [...]`).
pub fn members(cargo_toml: &str) -> Vec<String> {
    let Some(start) = cargo_toml.find("members") else { return Vec::new() };
    let rest = &cargo_toml[start..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else { return Vec::new() };
    rest[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Whether a file or folder is what a build, a test or Python left behind.
fn left_behind(name: &str) -> bool {
    name.starts_with('.')
        || matches!(name, "target" | "__pycache__" | "build" | "dist")
        || name.ends_with(".egg-info")
        || name.ends_with(".pyc")
        || name.ends_with(".so")
}

/// Every source file of the workspace at `root`, sorted: its `Cargo.toml`
/// and `Cargo.lock`, and every file below each member and each of [`ALSO`].
pub fn files(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let mut out = vec![root.join("Cargo.toml"), root.join("Cargo.lock")];
    let dirs = members(&manifest).into_iter().chain(ALSO.iter().map(|s| s.to_string()));
    for dir in dirs {
        collect(&root.join(dir), &mut out);
    }
    out.retain(|p| p.is_file());
    out.sort();
    out
}

/// The folders [`files`] reads (for build.rs's `rerun-if-changed`).
pub fn folders(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let dirs = members(&manifest).into_iter().chain(ALSO.iter().map(|s| s.to_string()));
    dirs.map(|d| root.join(d)).filter(|d| d.is_dir()).collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if left_behind(&e.file_name().to_string_lossy()) {
            continue;
        }
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => collect(&p, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

/// SHA-256 (hex) over `files`, each as its path relative to `root`, a NUL
/// and its own SHA-256: a renamed file changes it as an edited one does.
pub fn digest(root: &Path, files: &[PathBuf]) -> String {
    let mut all = Sha256::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap_or(f).to_string_lossy().replace('\\', "/");
        let bytes = std::fs::read(f).unwrap_or_default();
        all.update(rel.as_bytes());
        all.update([0u8]);
        all.update(Sha256::digest(&bytes));
    }
    all.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace's own members, read from its Cargo.toml: every crate
    /// the program is built from, report and model among them.
    #[test]
    fn the_members_are_read_from_the_workspace() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let listed = members(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap());
        for crate_dir in ["protocol", "evidence", "recipe", "model", "worker", "report"] {
            assert!(listed.iter().any(|m| m == crate_dir), "{crate_dir} missing: {listed:?}");
        }
        for m in &listed {
            assert!(root.join(m).join("Cargo.toml").is_file(), "{m} is not a crate");
        }
        let all = files(root);
        let has = |p: &str| all.contains(&root.join(p));
        assert!(has("report/src/lib.rs") && has("model/src/lib.rs"), "{} files", all.len());
        assert!(has("python/stagebench/_wrap.py") && has("python/stagebench/_fast.c"));
        assert!(has("report/src/render/html/page.css"), "what the page includes is a source");
        let watched = folders(root);
        assert!(watched.contains(&root.join("report")) && watched.contains(&root.join("python")));
    }

    /// A change to one file of any member, or of python/, changes the
    /// digest; what a build or Python leaves behind does not.
    #[test]
    fn a_change_in_any_member_or_in_python_changes_the_digest() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let write = |p: &str, text: &str| {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("Cargo.toml", "[workspace]\nmembers = [\n  \"a\",\n  \"b\", \"report\"]\n");
        write("Cargo.lock", "");
        for f in ["a/src/lib.rs", "b/build.rs", "report/src/page.css", "python/pkg/m.py"] {
            write(f, "one");
        }
        let now = || digest(root, &files(root));
        let mut seen = vec![now()];
        for f in ["a/src/lib.rs", "b/build.rs", "report/src/page.css", "python/pkg/m.py"] {
            write(f, "two");
            let d = now();
            assert!(!seen.contains(&d), "changing {f} left the digest as it was");
            seen.push(d);
        }
        let before = now();
        for f in ["a/target/x", "python/pkg/__pycache__/m.pyc", "python/build/lib/m.py"] {
            write(f, "left behind");
        }
        assert_eq!(now(), before, "what a build leaves behind changed the digest");
        // A new crate counts from the moment the workspace lists it.
        write("c/src/lib.rs", "new");
        assert_eq!(now(), before, "an unlisted folder is not a member");
        write("Cargo.toml", "[workspace]\nmembers = [\"a\", \"b\", \"report\", \"c\"]\n");
        let listed = now();
        write("c/src/lib.rs", "changed");
        assert_ne!(now(), listed, "a listed member's change left the digest as it was");
    }
}
