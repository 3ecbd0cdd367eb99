//! A frozen dataset: `sources/<series_id>.parquet`, `events.csv` and
//! `frozen.json` holding the contract, the split, every file's SHA-256 and a
//! fingerprint over all of it.

use crate::contract;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

pub const FILE: &str = "frozen.json";
pub const EVENTS_FILE: &str = "events.csv";
pub const SCHEMA: &str = "stagebench.frozen";
pub const SCHEMA_VERSION: u32 = 1;
const FINGERPRINT_KEY: &str = "fingerprint";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Partition {
    Train,
    Validation,
    Test,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesEntry {
    pub id: String,
    /// Relative to the dataset directory.
    pub file: String,
    pub sha256: String,
    pub samples: u64,
    pub partition: Partition,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    pub file: String,
    pub sha256: String,
    pub rows: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub method: String,
    pub train: u64,
    pub validation: u64,
    pub test: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Frozen {
    pub schema: String,
    pub schema_version: u32,
    pub contract: Value,
    pub split: Split,
    pub events: FileEntry,
    /// Sorted by id.
    pub series: Vec<SeriesEntry>,
    /// SHA-256 of the canonical bytes of this object without `fingerprint`.
    pub fingerprint: String,
}

#[derive(Debug, thiserror::Error)]
pub enum FrozenError {
    #[error("{path}: cannot read: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: not a valid frozen.json: {detail}")]
    Invalid { path: String, detail: String },
    #[error("{path}: edited after freezing: its fingerprint does not match its contents")]
    Fingerprint { path: String },
    #[error("{path}: frozen with feature contract {got}, this program implements {expected}")]
    Contract { path: String, got: String, expected: String },
    #[error("{file} has changed since freezing (its SHA-256 differs from frozen.json)")]
    Changed { file: String },
    #[error("{file}: cannot read: {source}")]
    Missing { file: String, source: std::io::Error },
}

/// The fingerprint of a frozen.json value (its `fingerprint` key ignored).
pub fn fingerprint(value: &Value) -> String {
    let mut body = value.clone();
    if let Value::Object(m) = &mut body {
        m.remove(FINGERPRINT_KEY);
    }
    evidence::sha256_hex(&evidence::to_bytes(&body))
}

/// Assigns partitions: series ordered by the hex SHA-256 of their id; the
/// first ⌊0.70·n⌋ train, the next ⌊0.15·n⌋ validation, the rest test.
pub fn partitions(ids: &[String]) -> Vec<Partition> {
    let n = ids.len();
    let mut order: Vec<(String, usize)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (hex::encode(Sha256::digest(id.as_bytes())), i))
        .collect();
    order.sort();
    let train = (contract::TRAIN_FRACTION * n as f64).floor() as usize;
    let validation = (contract::VALIDATION_FRACTION * n as f64).floor() as usize;
    let mut out = vec![Partition::Test; n];
    for (rank, (_, i)) in order.into_iter().enumerate() {
        out[i] = if rank < train {
            Partition::Train
        } else if rank < train + validation {
            Partition::Validation
        } else {
            Partition::Test
        };
    }
    out
}

impl Frozen {
    /// Builds a frozen.json value and seals it with its fingerprint.
    pub fn seal(events: FileEntry, mut series: Vec<SeriesEntry>) -> Frozen {
        series.sort_by(|a, b| a.id.cmp(&b.id));
        let count = |p| series.iter().filter(|s| s.partition == p).count() as u64;
        let mut f = Frozen {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            contract: contract::describe(),
            split: Split {
                method: "series ordered by hex SHA-256 of their id: first floor(0.70 n) train, next floor(0.15 n) validation, rest test".into(),
                train: count(Partition::Train),
                validation: count(Partition::Validation),
                test: count(Partition::Test),
            },
            events,
            series,
            fingerprint: String::new(),
        };
        f.fingerprint = fingerprint(&serde_json::to_value(&f).expect("serialisable"));
        f
    }

    /// Loads `dir/frozen.json`, checking its fingerprint and contract version.
    pub fn load(dir: &Path) -> Result<Frozen, FrozenError> {
        let path = dir.join(FILE);
        let shown = path.display().to_string();
        let bytes = std::fs::read(&path)
            .map_err(|source| FrozenError::Read { path: shown.clone(), source })?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| FrozenError::Invalid { path: shown.clone(), detail: e.to_string() })?;
        if value[FINGERPRINT_KEY].as_str() != Some(fingerprint(&value).as_str()) {
            return Err(FrozenError::Fingerprint { path: shown });
        }
        let frozen: Frozen = serde_json::from_value(value)
            .map_err(|e| FrozenError::Invalid { path: shown.clone(), detail: e.to_string() })?;
        let version = frozen.contract["version"].as_str().unwrap_or("?").to_string();
        if version != contract::VERSION {
            return Err(FrozenError::Contract {
                path: shown,
                got: version,
                expected: contract::VERSION.into(),
            });
        }
        if let Some(bad) =
            frozen.series.iter().find(|s| !is_safe_id(&s.id) || s.file != source_file(&s.id))
        {
            return Err(FrozenError::Invalid {
                path: shown,
                detail: format!("series entry '{}' has an unsafe id or file", bad.id),
            });
        }
        Ok(frozen)
    }

    /// Training series, in canonical (id) order.
    pub fn train(&self) -> impl Iterator<Item = &SeriesEntry> {
        self.series.iter().filter(|s| s.partition == Partition::Train)
    }
}

/// Series ids become file names: letters, digits, `_` and `-` only.
pub fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Where a series' source lives in a frozen dataset (after [`is_safe_id`]).
pub fn source_file(id: &str) -> String {
    format!("sources/{id}.parquet")
}

/// What a whole-dataset integrity check covered.
#[derive(Debug, Clone, Copy)]
pub struct Verified {
    pub files: u64,
    pub bytes: u64,
}

/// Re-hashes every source file and the events file against frozen.json, in
/// parallel. The error names the first changed file (in id order).
pub fn verify_sources(dir: &Path, frozen: &Frozen) -> Result<Verified, FrozenError> {
    let mut files: Vec<(PathBuf, &str, &str)> = frozen
        .series
        .iter()
        .map(|s| (dir.join(&s.file), s.file.as_str(), s.sha256.as_str()))
        .collect();
    files.push((
        dir.join(&frozen.events.file),
        frozen.events.file.as_str(),
        frozen.events.sha256.as_str(),
    ));
    let results: Vec<Result<u64, FrozenError>> = files
        .par_iter()
        .map(|(path, name, want)| {
            let (got, bytes) = evidence::file_sha256(path)
                .map_err(|source| FrozenError::Missing { file: name.to_string(), source })?;
            if got != *want {
                return Err(FrozenError::Changed { file: name.to_string() });
            }
            Ok(bytes)
        })
        .collect();
    let mut total = 0;
    for r in results {
        total += r?;
    }
    Ok(Verified { files: files.len() as u64, bytes: total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_follows_the_contract() {
        let ids: Vec<String> = (0..277).map(|i| format!("{i:012x}")).collect();
        let p = partitions(&ids);
        let count = |x| p.iter().filter(|&&q| q == x).count();
        assert_eq!(
            (count(Partition::Train), count(Partition::Validation), count(Partition::Test)),
            (193, 41, 43)
        );
        // Order by the hash, not by the id.
        let mut by_hash: Vec<_> =
            ids.iter().map(|id| hex::encode(Sha256::digest(id.as_bytes()))).zip(&p).collect();
        by_hash.sort_by(|a, b| a.0.cmp(&b.0));
        assert!(by_hash[..193].iter().all(|(_, q)| **q == Partition::Train));
        assert!(by_hash[193..234].iter().all(|(_, q)| **q == Partition::Validation));
    }

    #[test]
    fn fingerprint_catches_any_edit() {
        let ev = FileEntry { file: EVENTS_FILE.into(), sha256: "00".repeat(32), rows: 2 };
        let s = SeriesEntry {
            id: "abc".into(),
            file: source_file("abc"),
            sha256: "11".repeat(32),
            samples: 10,
            partition: Partition::Train,
        };
        let f = Frozen::seal(ev, vec![s]);
        let mut v = serde_json::to_value(&f).unwrap();
        assert_eq!(fingerprint(&v), f.fingerprint);
        v["series"][0]["samples"] = 11.into();
        assert_ne!(fingerprint(&v), f.fingerprint);
    }
}
