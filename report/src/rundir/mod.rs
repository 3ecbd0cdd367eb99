//! The run directory: created fresh, written only by the coordinator, in a
//! fixed order (declaration → environment → derived files → report, or
//! failure).
//!
//! Invariants:
//! - One ending: report.json, written last and atomically, or failure.json
//!   beside only the declaration and environment (everything else the run
//!   wrote is removed first), never both.
//! - The directory did not exist before this run; an existing path, even an
//!   empty directory, is refused before anything is written.
//! - Evidence files are written atomically (temp file, fsync, rename, fsync of
//!   the directory) and never rewritten.
//! - No evidence file holds an input path, a user or host name, or a subject
//!   identifier.

pub mod bisect;
pub mod declaration;
pub mod environment;
pub mod failure;
pub mod gate;
pub mod jobs;
pub mod keys;
pub mod report;
pub mod samples;
pub mod spans;
pub mod stragglers;
pub mod tree;

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

pub const DECLARATION: &str = "declaration.json";
pub const ENVIRONMENT: &str = "environment.json";
pub const REPORT: &str = "report.json";
pub const FAILURE: &str = "failure.json";

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error(
        "output path '{0}' already exists; stagebench never writes into an existing path (choose a new --output)"
    )]
    Exists(PathBuf),
    #[error("cannot create output directory '{path}': {source}")]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot write {name}: {source}")]
    Write { name: String, source: io::Error },
    #[error("cannot remove what the failed run had written: {source}")]
    Clear { source: io::Error },
}

/// A run directory this process created.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Creates `path` (private, 0700). Refuses any existing path.
    pub fn create(path: &Path) -> Result<RunDir, RunDirError> {
        if path.symlink_metadata().is_ok() {
            return Err(RunDirError::Exists(path.to_path_buf()));
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .map_err(|source| RunDirError::Create { path: path.to_path_buf(), source })?;
        }
        match DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => Ok(RunDir { path: path.to_path_buf() }),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(RunDirError::Exists(path.to_path_buf()))
            }
            Err(source) => Err(RunDirError::Create { path: path.to_path_buf(), source }),
        }
    }

    /// Creates a new directory `runs/<UTC timestamp>-<mode>` under `base`,
    /// adding `-2`, `-3`, … if a run started in the same second.
    pub fn create_default(base: &Path, mode: &str) -> Result<RunDir, RunDirError> {
        let stem = format!("{}-{mode}", evidence::timestamp::compact_utc_now());
        for n in 1.. {
            let name = if n == 1 { stem.clone() } else { format!("{stem}-{n}") };
            match RunDir::create(&base.join(name)) {
                Err(RunDirError::Exists(_)) if n < 100 => continue,
                other => return other,
            }
        }
        unreachable!("the loop returns")
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes an evidence file atomically. Returns the SHA-256 of its bytes.
    pub fn write_evidence(&self, name: &str, bytes: &[u8]) -> Result<String, RunDirError> {
        evidence::write_atomic(&self.path.join(name), bytes)
            .map_err(|source| RunDirError::Write { name: name.to_string(), source })?;
        Ok(evidence::sha256_hex(bytes))
    }

    /// Removes everything this run wrote but its declaration, its
    /// environment and the entries named in `keep`: what a failed run keeps
    /// beside failure.json. The directory is this run's own (it did not
    /// exist before), so nothing here is the user's; a partial cache is
    /// removed to free a full disk.
    /// Removes what the run wrote, but the declaration, the environment,
    /// the top-level entries named in `keep` and every path in `nested`
    /// (relative, at any depth: the directories on the way to it stay, what
    /// else they hold goes).
    fn clear_outputs(&self, keep: &[&str], nested: &[String]) -> Result<(), RunDirError> {
        let nested: Vec<&Path> = nested.iter().map(Path::new).collect();
        let clear = || -> io::Result<()> {
            for e in fs::read_dir(&self.path)? {
                let name = e?.file_name();
                if name == DECLARATION || name == ENVIRONMENT || keep.iter().any(|k| name == *k) {
                    continue;
                }
                clear_but(&self.path, Path::new(&name), &nested)?;
            }
            Ok(())
        };
        clear().map_err(|source| RunDirError::Clear { source })
    }

    /// The one ending of a run that failed: what it wrote is cleared (but
    /// the entries in `keep`, and what `failure.kept` names), then
    /// `failure` is written, sealed like a report. Returns where
    /// failure.json is.
    pub fn end_in_failure(
        &self,
        failure: &failure::Failure,
        keep: &[&str],
    ) -> Result<PathBuf, RunDirError> {
        self.clear_outputs(keep, &failure.kept)?;
        self.write_evidence(FAILURE, &report::seal(failure))?;
        Ok(self.path.join(FAILURE))
    }
}

/// Removes `root/rel`, but what `kept` names below it (or it itself).
fn clear_but(root: &Path, rel: &Path, kept: &[&Path]) -> io::Result<()> {
    if kept.contains(&rel) {
        return Ok(());
    }
    let path = root.join(rel);
    let is_dir = fs::symlink_metadata(&path)?.is_dir();
    if is_dir && kept.iter().any(|k| k.starts_with(rel)) {
        for e in fs::read_dir(&path)? {
            clear_but(root, &rel.join(e?.file_name()), kept)?;
        }
        return Ok(());
    }
    match is_dir {
        true => fs::remove_dir_all(path),
        false => fs::remove_file(path),
    }
}

/// A path that stays inside the run directory: relative, no `..`, no root.
pub fn is_safe_relative(path: &str) -> bool {
    let p = std::path::Path::new(path);
    !path.is_empty() && p.components().all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// `path` (relative to `cwd`) made absolute, symlinks resolved as far as
/// it exists: its deepest existing ancestor canonicalised, the rest joined on.
pub fn resolved(cwd: &Path, path: &Path) -> PathBuf {
    let full = cwd.join(path);
    let mut rest = Vec::new();
    let mut probe = full.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(probe) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (probe.parent(), probe.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                probe = parent;
            }
            _ => return full,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A declaration, environment or failure of another `schema_version`
    /// is refused in one line naming both versions, before any other key.
    #[test]
    fn files_of_another_version_are_refused_naming_both() {
        fn refusal<T: serde::de::DeserializeOwned>(version: u32) -> String {
            let text = format!(r#"{{"schema_version": {version}}}"#);
            match serde_json::from_str::<T>(&text) {
                Ok(_) => panic!("schema_version {version} was read"),
                Err(e) => e.to_string(),
            }
        }
        for version in [0, 2] {
            for (schema, e) in [
                (declaration::SCHEMA, refusal::<declaration::Declaration>(version)),
                (environment::SCHEMA, refusal::<environment::Environment>(version)),
                (failure::SCHEMA, refusal::<failure::Failure>(version)),
            ] {
                let said = format!(
                    "{schema} schema_version {version} cannot be read: \
                     this stagebench reads schema_version 1"
                );
                assert!(e.starts_with(&said), "{e}");
                assert!(!e.contains('\n'), "{e}");
            }
        }
        // Version 1 gets past its version to the keys it lacks.
        let e = serde_json::from_str::<failure::Failure>(r#"{"schema_version": 1}"#).unwrap_err();
        assert!(e.to_string().starts_with("missing field"), "{e}");
    }

    #[test]
    fn artifact_paths_must_stay_inside() {
        assert!(is_safe_relative("artifacts/a.bin"));
        assert!(!is_safe_relative("/etc/passwd"));
        assert!(!is_safe_relative("../x"));
        assert!(!is_safe_relative("a/../../x"));
        assert!(!is_safe_relative("./a"));
        assert!(!is_safe_relative(""));
    }

    #[test]
    fn existing_paths_are_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        assert!(matches!(RunDir::create(&empty), Err(RunDirError::Exists(_))));
        let file = tmp.path().join("file");
        fs::write(&file, b"mine").unwrap();
        assert!(matches!(RunDir::create(&file), Err(RunDirError::Exists(_))));
        assert_eq!(fs::read(&file).unwrap(), b"mine");
        assert_eq!(fs::read_dir(&empty).unwrap().count(), 0);
    }

    #[test]
    fn new_directories_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let rd = RunDir::create(&tmp.path().join("a/b/run")).unwrap();
        let mode = fs::metadata(rd.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn default_names_do_not_collide() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunDir::create_default(tmp.path(), "diagnostic").unwrap();
        let b = RunDir::create_default(tmp.path(), "diagnostic").unwrap();
        assert_ne!(a.path(), b.path());
    }
}
