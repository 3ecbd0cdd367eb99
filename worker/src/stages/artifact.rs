//! Artifacts: files a stage writes below the run directory and reports.

use super::StageError;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Writes `bytes` to `run_dir/relative` atomically and returns their SHA-256.
pub fn write_artifact(
    run_dir: &Path,
    relative: &str,
    bytes: &[u8],
) -> Result<[u8; 32], StageError> {
    evidence::write_atomic(&run_dir.join(relative), bytes)
        .map_err(|source| StageError::Io { path: relative.to_string(), source })?;
    Ok(Sha256::digest(bytes).into())
}
