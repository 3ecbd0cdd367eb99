//! Faults planted on purpose, so that tests can show every judgment saying
//! "no": a cache that differs, a resumed state that differs from the cold
//! one. Read only in builds with debug assertions (the test builds); a
//! release worker never looks at the variable.
//!
//! `STAGEBENCH_TEST_PERTURB` holds comma-separated requests:
//! - `cache:NAME`: the first series prepared into cache `NAME` (a run's
//!   cache directory, such as `private-feature-cache-parallel`) gets one
//!   value changed: the last byte of its values file, flipped;
//! - `resumed`: a training stage that restored a checkpoint flips the last
//!   byte of every checkpoint it writes after that.

use std::path::Path;

/// The variable a test sets.
pub const VAR: &str = "STAGEBENCH_TEST_PERTURB";

/// Whether the planted faults ask for `what`.
pub fn asks(what: &str) -> bool {
    #[cfg(debug_assertions)]
    {
        std::env::var(VAR).is_ok_and(|v| v.split(',').any(|w| w == what))
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = what;
        false
    }
}

/// Claims the one perturbation of `name` within a run: true for the first
/// caller only (an exclusive create of a dot-file in the run directory).
pub fn first(run_dir: &Path, name: &str) -> bool {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(run_dir.join(format!(".planted-{name}")))
        .is_ok()
}

/// Flips every bit of the last byte of `bytes`.
pub fn flip_last(bytes: &mut [u8]) {
    if let Some(b) = bytes.last_mut() {
        *b ^= 0xff;
    }
}

/// [`flip_last`] on a file, rewritten in place; its new SHA-256.
pub fn flip_file(path: &Path) -> std::io::Result<[u8; 32]> {
    let mut bytes = std::fs::read(path)?;
    flip_last(&mut bytes);
    std::fs::write(path, &bytes)?;
    use sha2::Digest;
    Ok(sha2::Sha256::digest(&bytes).into())
}
