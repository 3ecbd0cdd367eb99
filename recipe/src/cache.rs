//! The per-series feature cache: `<cache>/<series_id>/values.npy` (float32
//! `[frames, 5]`) and `valid.npy` (bool `[frames]`), each written atomically
//! (temp file and rename: a killed process leaves the whole file or none).
//! Cache files are not fsynced: they are derived data, rebuilt from the
//! sources when in doubt, and an fsync per file cost more than the writes.

use crate::{features, npy, source};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Instant;

/// Relative paths (inside a cache) of a series' two files.
pub fn files(id: &str) -> [String; 2] {
    [format!("{id}/values.npy"), format!("{id}/valid.npy")]
}

/// A series to prepare: where its source is and what it must hash to.
pub struct SeriesRef<'a> {
    pub id: &'a str,
    pub file: &'a str,
    pub sha256: &'a str,
}

/// What preparing one series produced, and where its time went.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub samples: u64,
    pub frames: u64,
    pub valid_frames: u64,
    /// SHA-256 of `values.npy` and `valid.npy`.
    pub sha256: [[u8; 32]; 2],
    pub read_s: f64,
    pub hash_s: f64,
    pub decode_s: f64,
    pub extract_s: f64,
    pub write_s: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("{file}: cannot read: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("{file} has changed since freezing (its SHA-256 differs from frozen.json)")]
    Changed { file: String },
    #[error(transparent)]
    Source(#[from] source::SourceError),
    #[error("writing its feature cache: {0}")]
    Write(std::io::Error),
}

/// Reads one series, checks its hash, decodes and checks its rows, extracts
/// its features and writes them into `cache`.
pub fn prepare_series(
    dataset: &Path,
    s: &SeriesRef<'_>,
    cache: &Path,
) -> Result<Prepared, PrepareError> {
    // Mapped, not read: the page cache's own pages are hashed and decoded,
    // so a worker faults in no fresh anonymous memory for its input (fresh
    // pages are what short-lived workers paid for, as huge pages the kernel
    // had to zero; see docs/evidence.md). Populated here, so `read_s` is the
    // time to bring the file into the address space.
    let t = Instant::now();
    let map = source::map(&dataset.join(s.file))
        .map_err(|source| PrepareError::Read { file: s.file.into(), source })?;
    let read_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    if hex::encode(Sha256::digest(&map[..])) != s.sha256 {
        return Err(PrepareError::Changed { file: s.file.into() });
    }
    let hash_s = t.elapsed().as_secs_f64();

    // Decode and extract chunk by chunk, so the working set stays one chunk.
    let t = Instant::now();
    let mut extract_s = 0.0;
    let mut frames = features::FrameBuilder::default();
    let samples =
        source::read_series_chunks(bytes::Bytes::from_owner(map), s.file, s.id, |ts, e, a| {
            let t = Instant::now();
            frames.push(ts, e, a);
            extract_s += t.elapsed().as_secs_f64();
        })?;
    let f = frames.finish();
    let decode_s = t.elapsed().as_secs_f64() - extract_s;

    let t = Instant::now();
    let values = npy::f32_2d(f.values.view());
    let valid = npy::bool_1d(f.valid.view());
    let [values_path, valid_path] = files(s.id);
    let durability = evidence::Durability::Process;
    evidence::write_atomic_with(&cache.join(values_path), &values, durability)
        .map_err(PrepareError::Write)?;
    evidence::write_atomic_with(&cache.join(valid_path), &valid, durability)
        .map_err(PrepareError::Write)?;
    let sha256 = [Sha256::digest(&values).into(), Sha256::digest(&valid).into()];
    let write_s = t.elapsed().as_secs_f64();

    Ok(Prepared {
        samples,
        frames: f.frames() as u64,
        valid_frames: f.valid_frames() as u64,
        sha256,
        read_s,
        hash_s,
        decode_s,
        extract_s,
        write_s,
    })
}
