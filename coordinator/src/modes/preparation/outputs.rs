//! A user's output directory sealed as a manifest: every file's relative
//! path, size and SHA-256, walked by the coordinator (a user's program
//! reports no files), and two manifests compared file by file. Paths go
//! to stderr only, never into evidence.

use crate::error::{RunError, fail};
use report::manifest::{Differences, Manifest, files};
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
    Ok(Manifest::of_output(files).bytes())
}

/// How two sealed manifests' files differ (bytes that are not a manifest
/// read as one with no files: everything in the other then differs).
pub(crate) fn differences(a: &[u8], b: &[u8]) -> Differences {
    let read = |m: &[u8]| Manifest::parse(m).map(|m| m.files).unwrap_or_default();
    let (a, b) = (Manifest::of_output(read(a)), Manifest::of_output(read(b)));
    a.differences(&b)
}

/// The refusal of two outputs that differ: counts in the message, paths on
/// stderr.
pub(crate) fn outputs_differ(key: &str, what: String, serial: &[u8], other: &[u8]) -> RunError {
    let Differences { differ, missing, extra, paths } = differences(serial, other);
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
        let d = differences(&ma, &mb);
        assert_eq!((d.differ, d.missing, d.extra), (1, 1, 2), "{:?}", d.paths);
        assert_eq!(differences(&ma, &ma), Differences::default());
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
