//! Atomic artifact writes: temp file, fsync, rename, fsync of the directory.

use super::StageError;
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `run_dir/relative` atomically and returns their SHA-256.
/// A process killed at any instant leaves either no file or the whole file.
pub fn write_artifact(
    run_dir: &Path,
    relative: &str,
    bytes: &[u8],
) -> Result<[u8; 32], StageError> {
    let path = run_dir.join(relative);
    let io = |source| StageError::Io { path: relative.to_string(), source };
    let dir = path.parent().unwrap_or(run_dir);
    fs::create_dir_all(dir).map_err(io)?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
        std::process::id()
    ));
    {
        let mut f = File::create(&tmp).map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    fs::rename(&tmp, &path).map_err(io)?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
    Ok(Sha256::digest(bytes).into())
}
