//! Resumable recipe state: a directory that keeps the recipe's artifacts
//! across runs, each with a completion record.
//!
//! Layout (paths relative to the state directory):
//! - `cache/<series>/values.npy`, `cache/<series>/valid.npy`, record `cache/<series>.done.json`
//! - `normalizer.json`, record `normalizer.done.json`
//! - `contexts.json`, record `contexts.done.json`
//! - `checkpoints/epoch-NNNN.bin` (weights and optimizer state), record `checkpoints/epoch-NNNN.done.json`
//!
//! A completion record names the fingerprint of everything its artifact was
//! made from ([`inputs_sha256`]: source hashes, contract version,
//! parameters, the hashes of the artifacts it was derived from) and the
//! SHA-256 of every file it covers. An artifact is trusted only when its
//! record exists, parses, matches the fingerprint of today's inputs, and
//! every file hashes as recorded; otherwise it is rebuilt.
//!
//! Every file is written atomically (temp file, rename), artifact files
//! before their record. A process killed at any instant therefore leaves,
//! for each artifact, the old complete state, the new complete state, or
//! files without a matching record, which are rebuilt. Temp files a killed
//! process left (`.NAME.tmp-PID`) are removed when the state is opened.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub const RECORD_SCHEMA: &str = "stagebench.completion";
pub const RECORD_SUFFIX: &str = evidence::digest::RECORD_SUFFIX;
pub const CACHE: &str = "cache";
pub const NORMALIZER: &str = "normalizer";
pub const CONTEXTS: &str = "contexts";
pub const CHECKPOINTS: &str = "checkpoints";
/// The file that marks a directory as a stagebench state directory.
pub const MARKER: &str = "stagebench-state.json";

/// Makes `root` a state directory: creates it (and its marker) when it does
/// not exist or is empty, accepts it when it holds the marker, and refuses
/// anything else, so a mistyped path never has files written into (or temp
/// files swept from) a directory of the user's. Returns the absolute path.
pub fn claim(root: &Path) -> Result<PathBuf, ClaimError> {
    let io = |doing: &'static str| {
        let dir = root.display().to_string();
        move |source| ClaimError::Io { dir, doing, source }
    };
    match std::fs::read_dir(root) {
        Ok(mut entries) => {
            if entries.next().is_some() && !root.join(MARKER).is_file() {
                return Err(ClaimError::NotOurs(root.display().to_string()));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(root).map_err(io("cannot create it: "))?;
        }
        Err(e) => return Err(io("")(e)),
    }
    if !root.join(MARKER).is_file() {
        let marker = serde_json::json!({ "schema": "stagebench.state", "schema_version": 1 });
        evidence::write_atomic(&root.join(MARKER), &evidence::to_bytes(&marker))
            .map_err(io("cannot write stagebench-state.json: "))?;
    }
    std::fs::canonicalize(root).map_err(io(""))
}

/// Why a directory was not claimed as a state directory.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// A directory of the user's: nothing is written into it.
    #[error(
        "--state {0}: the directory is not empty and is not a stagebench state directory (no {MARKER})"
    )]
    NotOurs(String),
    #[error("--state {dir}: {doing}{source}")]
    Io { dir: String, doing: &'static str, source: io::Error },
}

/// Why a kept artifact's files cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("{0} differs from its completion record")]
    Differs(String),
    #[error("{0} cannot be read: {1}")]
    Unreadable(String, io::Error),
}

/// The fingerprint of an artifact's inputs: SHA-256 of their canonical JSON.
pub fn inputs_sha256(inputs: &serde_json::Value) -> String {
    evidence::sha256_hex(&evidence::to_bytes(inputs))
}

/// A completion record: what an artifact was made from and what it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub schema: String,
    pub inputs_sha256: String,
    /// Every file of the artifact (relative to the state directory) and its SHA-256.
    pub files: BTreeMap<String, String>,
}

/// What a record check found.
#[derive(Debug)]
pub enum Found {
    /// A record matching today's inputs (its files not yet hashed).
    Record(Record),
    /// No record: never made, or interrupted before it was complete.
    Missing,
    /// A record that cannot be trusted, and why.
    Stale(String),
}

/// The checkpoint of `epoch` (1-based), by its name in the state.
pub fn checkpoint(epoch: u32) -> String {
    format!("{CHECKPOINTS}/epoch-{epoch:04}")
}

/// The cache artifact of a series, by its name in the state.
pub fn series(id: &str) -> String {
    format!("{CACHE}/{id}")
}

/// A state directory.
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// Opens (creating if needed) a state directory and removes the temp
    /// files a killed writer left in it.
    pub fn open(root: &Path) -> io::Result<StateDir> {
        if !root.join(MARKER).is_file() {
            return Err(io::Error::other(format!(
                "not a stagebench state directory (no {MARKER})"
            )));
        }
        let state = StateDir { root: root.to_path_buf() };
        for dir in [root.to_path_buf(), root.join(CACHE), root.join(CHECKPOINTS)] {
            state.sweep(&dir)?;
        }
        if let Ok(entries) = std::fs::read_dir(root.join(CACHE)) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    state.sweep(&e.path())?;
                }
            }
        }
        Ok(state)
    }

    fn sweep(&self, dir: &Path) -> io::Result<()> {
        let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.contains(".tmp-") {
                std::fs::remove_file(e.path())?;
            }
        }
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of a file named relative to the state.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn record_path(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}{RECORD_SUFFIX}"))
    }

    /// Reads `name`'s record and compares it with today's inputs. Does not
    /// hash the artifact's files: that is [`StateDir::check_files`].
    pub fn record(&self, name: &str, inputs_sha256: &str) -> Found {
        let path = self.record_path(name);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Found::Missing,
            Err(e) => return Found::Stale(format!("its record cannot be read: {e}")),
        };
        let record: Record = match serde_json::from_slice(&bytes) {
            Ok(r) => r,
            Err(e) => return Found::Stale(format!("its record is not a completion record: {e}")),
        };
        if record.schema != RECORD_SCHEMA {
            return Found::Stale(format!("its record's schema is '{}'", record.schema));
        }
        if record.inputs_sha256 != inputs_sha256 {
            return Found::Stale("its inputs have changed since it was made".into());
        }
        Found::Record(record)
    }

    /// Hashes every file of a record; the first that is missing or differs is named.
    pub fn check_files(&self, record: &Record) -> Result<(), FilesError> {
        for (rel, sha) in &record.files {
            match evidence::file_sha256(&self.path(rel)) {
                Ok((got, _)) if got == *sha => {}
                Ok(_) => return Err(FilesError::Differs(rel.clone())),
                Err(e) => return Err(FilesError::Unreadable(rel.clone(), e)),
            }
        }
        Ok(())
    }

    /// Writes an artifact's files (each atomically), then its record.
    pub fn commit(
        &self,
        name: &str,
        inputs_sha256: &str,
        files: &[(String, &[u8])],
    ) -> io::Result<Record> {
        let mut recorded = BTreeMap::new();
        for (rel, bytes) in files {
            self.write_file(rel, bytes)?;
            recorded.insert(rel.clone(), evidence::sha256_hex(bytes));
        }
        let record = Record {
            schema: RECORD_SCHEMA.into(),
            inputs_sha256: inputs_sha256.into(),
            files: recorded,
        };
        self.record_files(name, &record)?;
        Ok(record)
    }

    /// Writes the record of files already written (each atomically) by
    /// their producer, with the hashes it computed.
    pub fn record_files(&self, name: &str, record: &Record) -> io::Result<()> {
        evidence::write_atomic_with(
            &self.record_path(name),
            &evidence::to_bytes(record),
            evidence::Durability::Process,
        )
    }

    fn write_file(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        evidence::write_atomic_with(&self.path(rel), bytes, evidence::Durability::Process)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_an_empty_or_marked_directory_is_claimed() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("new");
        claim(&fresh).unwrap();
        claim(&fresh).unwrap();
        let mine = tmp.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(mine.join("thesis.tex"), b"x").unwrap();
        assert!(claim(&mine).unwrap_err().to_string().contains("not a stagebench state directory"));
        assert!(StateDir::open(&mine).is_err());
        assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1, "nothing was written");
    }

    fn opened(dir: &Path) -> StateDir {
        claim(dir).unwrap();
        StateDir::open(dir).unwrap()
    }

    #[test]
    fn a_record_is_trusted_only_with_matching_inputs_and_files() {
        let tmp = tempfile::tempdir().unwrap();
        let s = opened(tmp.path());
        let inputs = inputs_sha256(&json!({"contract": "x", "source": "abc"}));
        assert!(matches!(s.record(NORMALIZER, &inputs), Found::Missing));
        s.commit(NORMALIZER, &inputs, &[("normalizer.json".into(), b"{}".as_slice())]).unwrap();
        let Found::Record(r) = s.record(NORMALIZER, &inputs) else { panic!("not found") };
        s.check_files(&r).unwrap();
        let other = inputs_sha256(&json!({"contract": "y", "source": "abc"}));
        assert!(matches!(s.record(NORMALIZER, &other), Found::Stale(_)));
        std::fs::write(tmp.path().join("normalizer.json"), b"{ }").unwrap();
        assert!(s.check_files(&r).unwrap_err().to_string().contains("normalizer.json"));
        std::fs::write(tmp.path().join("normalizer.done.json"), b"{\"schema\":").unwrap();
        assert!(matches!(s.record(NORMALIZER, &inputs), Found::Stale(_)));
    }

    #[test]
    fn opening_sweeps_a_killed_writers_temp_files_and_digests_ignore_them() {
        use evidence::digest::digest;
        let tmp = tempfile::tempdir().unwrap();
        let s = opened(tmp.path());
        s.commit(&series("a"), "i", &[("cache/a/values.npy".into(), b"v".as_slice())]).unwrap();
        let before = digest(tmp.path()).unwrap();
        std::fs::write(tmp.path().join("cache/a/.values.npy.tmp-99"), b"torn").unwrap();
        assert_eq!(digest(tmp.path()).unwrap(), before);
        StateDir::open(tmp.path()).unwrap();
        assert!(!tmp.path().join("cache/a/.values.npy.tmp-99").exists());
        assert_eq!(before.files, 3, "the artifact, its record and the marker");
        assert_eq!(before.parts["cache"].files, 2);
    }
}
