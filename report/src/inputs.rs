//! `--inputs` as report.json records them: each directory's digest (its
//! files, bytes and manifest SHA-256), never its path.

use serde::{Deserialize, Serialize};

/// A directory's digest, as the report records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "InputDigest")]
pub struct Digest {
    pub files: u64,
    pub bytes: u64,
    /// SHA-256 of the directory's manifest (relative paths, sizes, file
    /// digests); of several, of their digests in the order given.
    pub sha256: String,
    /// Always true in a report: a change fails the run.
    pub unchanged: bool,
}

/// The digest of all of them: one directory's own, or for several, the
/// counts summed and the SHA-256 of their digests in the order given.
pub fn combined(digests: &[Digest]) -> Option<Digest> {
    match digests {
        [] => None,
        [one] => Some(one.clone()),
        many => {
            let each: Vec<&str> = many.iter().map(|d| d.sha256.as_str()).collect();
            Some(Digest {
                files: many.iter().map(|d| d.files).sum(),
                bytes: many.iter().map(|d| d.bytes).sum(),
                sha256: evidence::sha256_hex(&evidence::to_bytes(&each)),
                unchanged: many.iter().all(|d| d.unchanged),
            })
        }
    }
}
