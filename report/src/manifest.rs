//! A directory walked into a manifest: every file's relative path, size
//! and SHA-256, hashed in parallel, as canonical bytes. The one walk both
//! a `--prepare` phase's output (sealed and compared) and `--inputs`
//! (digested before a run and after) go through. It names no path in what
//! it returns but the relative ones inside the directory.

use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a directory could not be walked into a manifest, in a person's
/// words. Its `Display` names no path (it may reach failure.json); the
/// entry it stopped at, relative to the directory, is kept apart for a
/// refusal on the user's own terminal ([`Unwalkable::named`]).
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
pub struct Unwalkable {
    why: String,
    /// The entry, relative to the walked directory, where there was one.
    entry: Option<String>,
}

impl Unwalkable {
    /// The reason with the entry it is about (`sub/pipe: a FIFO, neither a
    /// file nor a directory`): for a refusal before anything runs, never
    /// for evidence.
    pub fn named(&self) -> String {
        match &self.entry {
            Some(entry) => format!("{entry}: {}", self.why),
            None => self.why.clone(),
        }
    }
}

impl From<std::io::Error> for Unwalkable {
    fn from(e: std::io::Error) -> Self {
        Unwalkable { why: e.to_string(), entry: None }
    }
}

/// What an entry that is neither a file nor a directory is.
fn kind_of(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_char_device() {
        "a character device"
    } else {
        "an entry of unknown kind"
    }
}

/// The schema of an output manifest (a cache manifest's shape, without the
/// recipe's contract version).
pub const OUTPUT_MANIFEST_SCHEMA: &str = "stagebench.output-manifest";

/// A directory's files: relative path → its size and SHA-256, hashed in
/// parallel. `keep` is a top-level name left out (the manifest itself).
/// Anything but files and directories is refused, by count only.
pub fn files(root: &Path, keep: Option<&str>) -> Result<BTreeMap<String, Listed>, Unwalkable> {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let entries = std::fs::read_dir(root.join(&rel))?;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(Unwalkable {
                    why: "a file name is not UTF-8".into(),
                    entry: Some(rel.join(&name).to_string_lossy().into_owned()),
                });
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
                return Err(Unwalkable {
                    why: format!(
                        "it holds {}, neither a file nor a directory, which a manifest cannot bind",
                        kind_of(kind)
                    ),
                    entry: Some(path.to_string_lossy().into_owned()),
                });
            }
        }
    }
    found
        .into_par_iter()
        .map(|rel| {
            let (sha256, bytes) = evidence::file_sha256(&root.join(&rel))?;
            Ok((rel, Listed { sha256, bytes }))
        })
        .collect()
}

/// A manifest: each file's size and SHA-256 by its path relative to the
/// manifest's directory. One type for both kinds: an output manifest
/// ([`OUTPUT_MANIFEST_SCHEMA`], a walked directory) and a cache manifest
/// (the recipe's, which also names the feature contract it was built under).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub schema: String,
    pub schema_version: u32,
    /// The recipe's feature contract (a cache manifest only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    pub files: BTreeMap<String, Listed>,
}

/// One file of a [`Manifest`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listed {
    pub sha256: String,
    pub bytes: u64,
}

/// How two manifests' files differ, by count, and the paths of each (for
/// stderr only, never evidence).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Differences {
    pub differ: usize,
    /// In the first, not the second.
    pub missing: usize,
    /// In the second, not the first.
    pub extra: usize,
    pub paths: Vec<String>,
}

impl Manifest {
    /// The manifest of a walked directory ([`files`]).
    pub fn of_output(files: BTreeMap<String, Listed>) -> Manifest {
        Manifest { schema: OUTPUT_MANIFEST_SCHEMA.into(), schema_version: 1, contract: None, files }
    }

    /// Canonical bytes, as written and hashed.
    pub fn bytes(&self) -> Vec<u8> {
        evidence::to_bytes(self)
    }

    /// A manifest from its bytes.
    pub fn parse(bytes: &[u8]) -> serde_json::Result<Manifest> {
        serde_json::from_slice(bytes)
    }

    /// The manifest at `path`, read back (not JSON of this shape: `InvalidData`).
    pub fn read(path: &Path) -> std::io::Result<Manifest> {
        let bytes = std::fs::read(path)?;
        Manifest::parse(&bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    /// File by file, how `other` differs from this one.
    pub fn differences(&self, other: &Manifest) -> Differences {
        let mut d = Differences::default();
        for (rel, v) in &self.files {
            match other.files.get(rel) {
                Some(w) if w == v => {}
                Some(_) => {
                    d.differ += 1;
                    d.paths.push(format!("differs: {rel}"));
                }
                None => {
                    d.missing += 1;
                    d.paths.push(format!("missing: {rel}"));
                }
            }
        }
        for rel in other.files.keys().filter(|rel| !self.files.contains_key(*rel)) {
            d.extra += 1;
            d.paths.push(format!("extra: {rel}"));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed manifest writes the bytes the untyped one did, so every
    /// digest already recorded (an `--inputs` digest, a sealed cache) holds.
    #[test]
    fn a_manifest_writes_the_bytes_it_always_did() {
        let listed = |s: &str, n| Listed { sha256: s.repeat(64), bytes: n };
        let files =
            BTreeMap::from([("b/x".to_string(), listed("b", 2)), ("a".into(), listed("a", 1))]);
        let out = Manifest::of_output(files.clone());
        // The untyped construction it replaced, verbatim.
        let was = |files: &BTreeMap<String, Listed>| {
            let files: BTreeMap<&String, serde_json::Value> = files
                .iter()
                .map(|(rel, f)| (rel, serde_json::json!({ "sha256": f.sha256, "bytes": f.bytes })))
                .collect();
            evidence::to_bytes(&serde_json::json!({
                "schema": OUTPUT_MANIFEST_SCHEMA,
                "schema_version": 1,
                "files": files,
            }))
        };
        assert_eq!(out.bytes(), was(&files));
        let cache = Manifest { contract: Some("c/1".into()), ..out.clone() };
        assert!(String::from_utf8(cache.bytes()).unwrap().contains("\"contract\": \"c/1\""));
        assert_eq!(Manifest::parse(&cache.bytes()).unwrap(), cache);
        // Differences, each kind counted, and none against itself.
        let mut other = out.clone();
        other.files.insert("a".into(), listed("c", 1));
        other.files.remove("b/x");
        other.files.insert("new".into(), listed("d", 0));
        let d = out.differences(&other);
        assert_eq!((d.differ, d.missing, d.extra), (1, 1, 1), "{:?}", d.paths);
        assert_eq!(out.differences(&out), Differences::default());
    }
}
