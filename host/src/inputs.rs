//! `--inputs DIR` (repeatable): the directories a user's command reads,
//! bound to the run and held still through it.
//!
//! - Each is walked into a manifest ([`report::manifest`]) before the run
//!   directory exists; the declaration binds their digests
//!   (`inputs_sha256`, `inputs_files`), never their paths, so two runs over
//!   the same data have the same definition wherever it lives.
//! - After the last phase each is walked again; a change fails the run
//!   (`inputs_changed`, naming the `--inputs` by its position), since a
//!   figure measured over moving inputs is not one of them.
//! - Refused up front, in one line: a path that is not a directory, one
//!   that cannot be walked (a symlink, a name that is not UTF-8), two that
//!   overlap (one holds the other), and one that holds the run directory
//!   (the run's own writes would be read as a change).

use report::inputs::{Digest, combined};
use std::path::{Path, PathBuf};

/// One `--inputs` directory, as digested before the run.
#[derive(Clone, Debug)]
pub struct InputDir {
    /// As given (for the person at the terminal; never in evidence).
    pub path: PathBuf,
    pub before: Digest,
    /// Every file digested, for `--os-cache cold` to evict.
    pub files: Vec<PathBuf>,
}

/// `dir` walked: its digest, and the path of every file in it.
fn digest(dir: &Path) -> Result<(Digest, Vec<PathBuf>), report::manifest::Unwalkable> {
    let files = report::manifest::files(dir, None)?;
    let paths = files.keys().map(|rel| dir.join(rel)).collect();
    let manifest = report::manifest::Manifest::of_output(files);
    let digest = Digest {
        files: manifest.files.len() as u64,
        bytes: manifest.files.values().map(|f| f.bytes).sum(),
        sha256: evidence::sha256_hex(&manifest.bytes()),
        unchanged: true,
    };
    Ok((digest, paths))
}

/// Why an `--inputs` is refused before anything runs, in one line.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("--inputs {0}: not a directory")]
    NotADirectory(String),
    #[error("--inputs {0} and --inputs {1}: one holds the other; give each directory once")]
    Overlap(String, String),
    #[error(
        "--inputs {0} holds the run directory ({1}): the run's own files would read as a change; give --output outside it"
    )]
    HoldsTheRun(String, String),
    #[error("--inputs {0}: cannot be digested: {1}")]
    Undigestible(String, String),
}

/// An `--inputs` that changed during the run (`inputs_changed`), named by
/// its position, never its path.
#[derive(Debug, thiserror::Error)]
#[error("{which} {why}")]
pub struct Changed {
    pub which: String,
    pub why: String,
}

/// Every `--inputs`, checked and digested, before anything is created.
/// `run_dir` is where the run directory will be (`--output`, or the
/// default's parent).
pub fn resolve(dirs: &[PathBuf], run_dir: &Path) -> Result<Vec<InputDir>, Refused> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let run_dir = report::rundir::resolved(&cwd, run_dir);
    let mut seen: Vec<(&Path, PathBuf)> = Vec::new();
    let mut out = Vec::new();
    for dir in dirs {
        let shown = dir.display().to_string();
        if !dir.is_dir() {
            return Err(Refused::NotADirectory(shown));
        }
        let real = report::rundir::resolved(&cwd, dir);
        if let Some((other, _)) =
            seen.iter().find(|(_, r)| r.starts_with(&real) || real.starts_with(r))
        {
            return Err(Refused::Overlap(shown, other.display().to_string()));
        }
        if run_dir.starts_with(&real) {
            return Err(Refused::HoldsTheRun(shown, run_dir.display().to_string()));
        }
        let (before, files) =
            digest(dir).map_err(|why| Refused::Undigestible(shown.clone(), why.named()))?;
        seen.push((dir, real));
        out.push(InputDir { path: dir.clone(), before, files });
    }
    Ok(out)
}

/// The declaration's parameters for `--inputs`: `inputs_sha256` and
/// `inputs_files` (of all of them), and with several, `inputs_each_sha256`.
pub fn parameters(dirs: &[InputDir]) -> Vec<(String, serde_json::Value)> {
    use report::rundir::declaration::keys;
    let before: Vec<Digest> = dirs.iter().map(|d| d.before.clone()).collect();
    let Some(all) = combined(&before) else { return Vec::new() };
    let mut p = vec![
        (keys::INPUTS_SHA256.to_string(), serde_json::json!(all.sha256)),
        (keys::INPUTS_FILES.to_string(), serde_json::json!(all.files)),
    ];
    if before.len() > 1 {
        let each: Vec<&str> = before.iter().map(|d| d.sha256.as_str()).collect();
        p.push(("inputs_each_sha256".to_string(), serde_json::json!(each)));
    }
    p
}

/// Every `--inputs` digested again after the last phase: each must be what
/// it was before the first. The failure names it by position, not path.
pub fn unchanged(dirs: &[InputDir]) -> Result<Vec<Digest>, Changed> {
    let many = dirs.len() > 1;
    dirs.iter()
        .enumerate()
        .map(|(i, dir)| {
            let which = match many {
                true => format!("--inputs #{} of {}", i + 1, dirs.len()),
                false => "--inputs".to_string(),
            };
            let changed = |why: String| Changed { which: which.clone(), why };
            let (after, _) = digest(&dir.path)
                .map_err(|why| changed(format!("cannot be digested again: {why}")))?;
            let before = &dir.before;
            if after.sha256 != before.sha256 {
                return Err(changed(format!(
                    "changed during the run: {} file(s), {} bytes before; {} file(s), {} bytes after",
                    before.files, before.bytes, after.files, after.bytes
                )));
            }
            Ok(after)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (rel, bytes) in files {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        d
    }

    #[test]
    fn a_digest_is_of_content_and_relative_names_never_of_where_it_lives() {
        let a = dir_with(&[("x/1.bin", b"one"), ("2.bin", b"two!")]);
        let b = dir_with(&[("x/1.bin", b"one"), ("2.bin", b"two!")]);
        let out = tempfile::tempdir().unwrap();
        let run = out.path().join("run");
        let da = resolve(&[a.path().into()], &run).unwrap();
        let db = resolve(&[b.path().into()], &run).unwrap();
        assert_eq!(da[0].before, db[0].before);
        assert_eq!((da[0].before.files, da[0].before.bytes), (2, 7));
        assert_eq!(da[0].files.len(), 2);
        let c = dir_with(&[("x/1.bin", b"one"), ("2.bin", b"two?")]);
        let dc = resolve(&[c.path().into()], &run).unwrap();
        assert_ne!(da[0].before.sha256, dc[0].before.sha256, "one byte changed");
        let p = parameters(&da);
        assert!(!serde_json::to_string(&p).unwrap().contains(&a.path().display().to_string()));
    }

    #[test]
    fn several_are_bound_in_the_order_given_and_one_is_bound_as_before() {
        let (a, b) = (dir_with(&[("1", b"a")]), dir_with(&[("1", b"bb")]));
        let run = tempfile::tempdir().unwrap().path().join("run");
        let one = resolve(&[a.path().into()], &run).unwrap();
        let p: std::collections::BTreeMap<_, _> = parameters(&one).into_iter().collect();
        assert_eq!(p["inputs_sha256"], serde_json::json!(one[0].before.sha256));
        assert_eq!(p["inputs_files"], serde_json::json!(1));
        assert!(!p.contains_key("inputs_each_sha256"));
        let ab = resolve(&[a.path().into(), b.path().into()], &run).unwrap();
        let ba = resolve(&[b.path().into(), a.path().into()], &run).unwrap();
        let p: std::collections::BTreeMap<_, _> = parameters(&ab).into_iter().collect();
        assert_eq!(p["inputs_files"], serde_json::json!(2));
        assert_eq!(p["inputs_each_sha256"].as_array().unwrap().len(), 2);
        let all = |d: &[InputDir]| {
            combined(&d.iter().map(|d| d.before.clone()).collect::<Vec<_>>()).unwrap()
        };
        assert_ne!(all(&ab).sha256, all(&ba).sha256);
        assert_eq!(all(&ab).bytes, 3);
    }

    #[test]
    fn a_change_names_the_directory_by_position_and_the_counts() {
        let (a, b) = (dir_with(&[("1", b"a")]), dir_with(&[("1", b"b")]));
        let run = tempfile::tempdir().unwrap().path().join("run");
        let dirs = resolve(&[a.path().into(), b.path().into()], &run).unwrap();
        assert_eq!(unchanged(&dirs).unwrap().len(), 2, "nothing changed");
        std::fs::write(b.path().join("new"), b"xyz").unwrap();
        let text = unchanged(&dirs).unwrap_err().to_string();
        assert!(text.contains("--inputs #2 of 2 changed during the run: 1 file(s), 1 bytes before; 2 file(s), 4 bytes after"), "{text}");
        assert!(!text.contains(&b.path().display().to_string()), "{text}");
    }

    #[test]
    fn bad_inputs_are_refused_in_one_line_before_anything_runs() {
        let a = dir_with(&[("sub/1", b"a")]);
        let run = tempfile::tempdir().unwrap().path().join("run");
        let refused = |dirs: &[PathBuf], run: &Path| resolve(dirs, run).unwrap_err().to_string();
        let missing = a.path().join("nope");
        assert!(refused(&[missing], &run).ends_with("nope: not a directory"));
        let file = a.path().join("sub/1");
        assert!(refused(&[file], &run).ends_with("1: not a directory"));
        let why = refused(&[a.path().into(), a.path().join("sub")], &run);
        assert!(why.contains("one holds the other"), "{why}");
        let why = refused(&[a.path().join("sub"), a.path().into()], &run);
        assert!(why.contains("one holds the other"), "{why}");
        let why = refused(&[a.path().into()], &a.path().join("runs/new"));
        assert!(why.contains("holds the run directory"), "{why}");
        // Each kind is named, with the entry (issue 63: a FIFO was "(a symlink?)").
        let fifo = std::ffi::CString::new(a.path().join("sub/pipe").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let why = refused(&[a.path().into()], &run);
        assert!(why.contains("cannot be digested: sub/pipe: it holds a FIFO"), "{why}");
        std::fs::remove_file(a.path().join("sub/pipe")).unwrap();
        std::os::unix::fs::symlink("/etc", a.path().join("sub/link")).unwrap();
        let why = refused(&[a.path().into()], &run);
        assert!(why.contains("sub/link: it holds a symbolic link"), "{why}");
    }
}
