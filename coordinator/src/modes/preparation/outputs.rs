//! A user's output directory sealed as a manifest: every file's relative
//! path, size and SHA-256, walked by the coordinator (a user's program
//! reports no files), and two manifests compared file by file. Paths go
//! to stderr only, never into evidence.

use crate::error::{RunError, fail};
use crate::manifest::{files, manifest_bytes};
use std::collections::BTreeMap;
use std::path::Path;

/// A phase's output directory sealed as a manifest: canonical bytes.
pub(crate) fn manifest(dir: &Path, out: &str, key: &str) -> Result<Vec<u8>, RunError> {
    if dir.join(out).join(super::MANIFEST).exists() {
        return Err(fail(
            Some(key.into()),
            None,
            "output_refused",
            format!(
                "the preparation program wrote {out}/{}, a name stagebench keeps for its manifest",
                super::MANIFEST
            ),
        ));
    }
    let files = files(&dir.join(out), Some(super::MANIFEST)).map_err(|why| {
        fail(Some(key.into()), None, "output_refused", format!("reading {out}: {why}"))
    })?;
    Ok(manifest_bytes(&files))
}

/// How two manifests' files differ: (differing, missing from `b`, extra
/// in `b`), and the paths of each, for stderr only.
pub(crate) fn differences(a: &[u8], b: &[u8]) -> ((usize, usize, usize), Vec<String>) {
    let files = |m: &[u8]| -> BTreeMap<String, serde_json::Value> {
        serde_json::from_slice::<serde_json::Value>(m)
            .ok()
            .and_then(|v| v.get("files").and_then(|f| f.as_object()).cloned())
            .map(|o| o.into_iter().collect())
            .unwrap_or_default()
    };
    let (a, b) = (files(a), files(b));
    let mut paths = Vec::new();
    let (mut differ, mut missing, mut extra) = (0, 0, 0);
    for (rel, v) in &a {
        match b.get(rel) {
            Some(w) if w == v => {}
            Some(_) => {
                differ += 1;
                paths.push(format!("differs: {rel}"));
            }
            None => {
                missing += 1;
                paths.push(format!("missing: {rel}"));
            }
        }
    }
    for rel in b.keys().filter(|rel| !a.contains_key(*rel)) {
        extra += 1;
        paths.push(format!("extra: {rel}"));
    }
    ((differ, missing, extra), paths)
}

/// The refusal of two outputs that differ: counts in the message, paths on
/// stderr.
pub(crate) fn outputs_differ(key: &str, what: String, serial: &[u8], other: &[u8]) -> RunError {
    let ((differ, missing, extra), paths) = differences(serial, other);
    for p in &paths {
        eprintln!("  {p}");
    }
    fail(
        Some(key.into()),
        None,
        "outputs_differ",
        format!(
            "{what}: {differ} file(s) differ, {missing} missing, {extra} extra (their paths are on stderr above, never in the evidence)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_are_compared_file_by_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for d in [&a, &b] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
            std::fs::write(d.join("same"), b"1").unwrap();
            std::fs::write(d.join("sub/deep"), b"2").unwrap();
        }
        std::fs::write(a.join("changed"), b"x").unwrap();
        std::fs::write(b.join("changed"), b"y").unwrap();
        std::fs::write(a.join("only_a"), b"").unwrap();
        std::fs::write(b.join("only_b1"), b"").unwrap();
        std::fs::write(b.join("only_b2"), b"").unwrap();
        let ma = manifest(dir.path(), "a", "k").unwrap();
        let mb = manifest(dir.path(), "b", "k").unwrap();
        let (counts, paths) = differences(&ma, &mb);
        assert_eq!(counts, (1, 1, 2), "{paths:?}");
        assert_eq!(differences(&ma, &ma).0, (0, 0, 0));
        let text = String::from_utf8(ma).unwrap();
        assert!(text.contains("\"sub/deep\""), "{text}");
        // A manifest.json of the program's own is refused; a symlink too.
        std::fs::write(a.join(super::super::MANIFEST), b"{}").unwrap();
        assert!(manifest(dir.path(), "a", "k").is_err());
        std::os::unix::fs::symlink("same", b.join("link")).unwrap();
        let e = manifest(dir.path(), "b", "k").unwrap_err().to_string();
        assert!(e.contains("neither a file nor a directory"), "{e}");
    }
}
