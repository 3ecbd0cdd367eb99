//! A directory walked into a manifest: every file's relative path, size
//! and SHA-256, hashed in parallel, as canonical bytes. The one walk both
//! a `--prepare` phase's output (sealed and compared) and `--inputs`
//! (digested before a run and after) go through. It names no path in what
//! it returns but the relative ones inside the directory.

use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a directory could not be walked into a manifest (a person's words;
/// it names no path).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unwalkable(String);

impl From<std::io::Error> for Unwalkable {
    fn from(e: std::io::Error) -> Self {
        Unwalkable(e.to_string())
    }
}

/// The schema of an output manifest (a cache manifest's shape, without the
/// recipe's contract version).
pub const OUTPUT_MANIFEST_SCHEMA: &str = "stagebench.output-manifest";

/// A directory's files: relative path → (SHA-256, bytes), hashed in
/// parallel. `keep` is a top-level name left out (the manifest itself).
/// Anything but files and directories is refused, by count only.
pub fn files(
    root: &Path,
    keep: Option<&str>,
) -> Result<BTreeMap<String, (String, u64)>, Unwalkable> {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let entries = std::fs::read_dir(root.join(&rel))?;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(Unwalkable("a file name is not UTF-8".into()));
            };
            let path = rel.join(name);
            if rel.as_os_str().is_empty() && Some(name) == keep {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file() {
                found.push(path.to_string_lossy().into_owned());
            } else {
                return Err(Unwalkable(
                    "it holds something that is neither a file nor a directory (a symlink?)".into(),
                ));
            }
        }
    }
    found
        .into_par_iter()
        .map(|rel| {
            let (sha, bytes) = evidence::file_sha256(&root.join(&rel))?;
            Ok((rel, (sha, bytes)))
        })
        .collect()
}

/// A manifest's canonical bytes, from [`files`].
pub fn manifest_bytes(files: &BTreeMap<String, (String, u64)>) -> Vec<u8> {
    let files: BTreeMap<&String, serde_json::Value> = files
        .iter()
        .map(|(rel, (sha, bytes))| (rel, serde_json::json!({ "sha256": sha, "bytes": bytes })))
        .collect();
    evidence::to_bytes(&serde_json::json!({
        "schema": OUTPUT_MANIFEST_SCHEMA,
        "schema_version": 1,
        "files": files,
    }))
}

/// A manifest as [`manifest_bytes`] writes it: each file's size and SHA-256
/// by its path relative to the manifest's directory.
#[derive(Debug, serde::Deserialize)]
pub struct Listing {
    pub files: BTreeMap<String, Listed>,
}

#[derive(Debug, serde::Deserialize)]
pub struct Listed {
    pub sha256: String,
    pub bytes: u64,
}

impl Listing {
    /// The manifest at `path`, read back (not JSON of this shape: `InvalidData`).
    pub fn read(path: &Path) -> std::io::Result<Listing> {
        let bytes = std::fs::read(path)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}
