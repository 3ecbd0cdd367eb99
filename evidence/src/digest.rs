//! A directory summarised without naming a file: how many files, how many
//! bytes, and one SHA-256 over every file's relative path and SHA-256, per
//! top-level part and overall. The recipe's state directory and a team's
//! scratch directory are digested this way, and `verify` digests them again.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// A completion record's suffix: `cache.done.json` belongs to the part `cache`.
pub const RECORD_SUFFIX: &str = ".done.json";

/// A summary of a state directory's files: how many, how large, and one
/// SHA-256 over every file's relative path and SHA-256, per part
/// (`cache`, `normalizer`, `contexts`, `checkpoints`) and overall. Names no
/// file, so it can go into a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schemars", schemars(rename = "StateDigest"))]
pub struct Digest {
    pub files: u64,
    pub bytes: u64,
    pub sha256: String,
    pub parts: BTreeMap<String, PartDigest>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PartDigest {
    pub files: u64,
    pub bytes: u64,
    pub sha256: String,
}

/// Digests every regular file of a state directory (temp files excluded:
/// the recipe writes through dot-named temporaries).
pub fn digest(root: &Path) -> io::Result<Digest> {
    digest_where(root, &|_, name| !name.starts_with('.'))
}

/// Digests every regular file under `root`, dot-files included, but the
/// entries of `root` itself named in `left_out` (a team's scratch
/// directory, whose state may well live in `.cache/`, beside the
/// campaign's own lock file).
pub fn digest_all_but(root: &Path, left_out: &[&str]) -> io::Result<Digest> {
    digest_where(root, &|dir, name| dir != root || !left_out.contains(&name))
}

/// What [`digest_all_but`] digests, file by file: every regular file's
/// path relative to `root`, SHA-256 and bytes, sorted by path. A campaign
/// compares two of these to count the files that differ.
pub fn files_all_but(root: &Path, left_out: &[&str]) -> io::Result<Vec<(String, String, u64)>> {
    let mut files = Vec::new();
    walk(root, root, &|dir, name| dir != root || !left_out.contains(&name), &mut files)?;
    files.sort();
    Ok(files)
}

/// The SHA-256 a digest gives these files (sorted by path, as
/// [`files_all_but`] returns them): [`digest_all_but`]'s over all of them.
pub fn files_sha256(files: &[(String, String, u64)]) -> String {
    let lines: String = files.iter().map(|(p, s, _)| format!("{p} {s}\n")).collect();
    crate::sha256_hex(lines.as_bytes())
}

/// `keep(dir, name)`: whether the entry `name` of `dir` is part of it.
fn digest_where(root: &Path, keep: &dyn Fn(&Path, &str) -> bool) -> io::Result<Digest> {
    let mut files = Vec::new();
    walk(root, root, keep, &mut files)?;
    files.sort();
    let mut parts: BTreeMap<String, Vec<&(String, String, u64)>> = BTreeMap::new();
    for f in &files {
        let name = f.0.split('/').next().unwrap_or_default();
        let part = name.strip_suffix(RECORD_SUFFIX).unwrap_or(name);
        let part = part.strip_suffix(".json").unwrap_or(part);
        parts.entry(part.to_string()).or_default().push(f);
    }
    let sum = |fs: &[&(String, String, u64)]| {
        let owned: Vec<(String, String, u64)> = fs.iter().map(|f| (*f).clone()).collect();
        PartDigest {
            files: fs.len() as u64,
            bytes: fs.iter().map(|f| f.2).sum(),
            sha256: files_sha256(&owned),
        }
    };
    let all = sum(&files.iter().collect::<Vec<_>>());
    Ok(Digest {
        files: all.files,
        bytes: all.bytes,
        sha256: all.sha256,
        parts: parts.iter().map(|(k, v)| (k.clone(), sum(v))).collect(),
    })
}

fn walk(
    root: &Path,
    dir: &Path,
    keep: &dyn Fn(&Path, &str) -> bool,
    out: &mut Vec<(String, String, u64)>,
) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !keep(dir, &name) {
            continue;
        }
        let t = e.file_type()?;
        if t.is_dir() {
            walk(root, &e.path(), keep, out)?;
        } else if t.is_file() {
            let (sha, bytes) = crate::file_sha256(&e.path())?;
            let rel =
                e.path().strip_prefix(root).unwrap_or(&e.path()).to_string_lossy().into_owned();
            out.push((rel, sha, bytes));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recipe's digest leaves dot-files out; a scratch directory's
    /// sees a change in one, at any depth, and leaves out only what it is
    /// told to, at its top.
    #[test]
    fn a_scratch_digest_sees_dot_files_but_what_it_leaves_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".cache/inner")).unwrap();
        std::fs::write(root.join("out.txt"), "a").unwrap();
        std::fs::write(root.join(".cache/inner/fit"), "1").unwrap();
        std::fs::write(root.join(".lock"), "123").unwrap();
        let (recipe, scratch) = (digest(root).unwrap(), digest_all_but(root, &[".lock"]).unwrap());
        assert_eq!((recipe.files, scratch.files), (1, 2));
        std::fs::write(root.join(".cache/inner/fit"), "2").unwrap();
        assert_eq!(digest(root).unwrap().sha256, recipe.sha256, "the recipe's leaves it out");
        let changed = digest_all_but(root, &[".lock"]).unwrap();
        assert_ne!(changed.sha256, scratch.sha256, "a dot-file's change is a change");
        std::fs::write(root.join(".lock"), "456").unwrap();
        assert_eq!(digest_all_but(root, &[".lock"]).unwrap().sha256, changed.sha256);
        // Left out at the top only: a `.lock` deeper down is state.
        std::fs::write(root.join(".cache/.lock"), "x").unwrap();
        assert_eq!(digest_all_but(root, &[".lock"]).unwrap().files, 3);
    }
}
