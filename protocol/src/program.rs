//! The build identity of this program, embedded at compile time by build.rs.

/// SHA-256 (hex) over every source file of the workspace (paths and contents).
pub const SOURCE_SHA256: &str = env!("STAGEBENCH_SOURCE_SHA256");
/// How many files the source fingerprint covers.
pub const SOURCE_FILES: &str = env!("STAGEBENCH_SOURCE_FILES");
/// Package version of the workspace.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// `rustc --version` of the compiler that built this program.
pub const RUSTC_VERSION: &str = env!("STAGEBENCH_RUSTC_VERSION");
/// Cargo profile (`debug` or `release`).
pub const PROFILE: &str = env!("STAGEBENCH_PROFILE");

/// The git commit the program was built from, when it was built in a git checkout.
pub fn git_commit() -> Option<&'static str> {
    let c = env!("STAGEBENCH_GIT_COMMIT");
    (!c.is_empty()).then_some(c)
}

/// `(crate, version)` of the key dependencies, from Cargo.lock at build time.
pub fn key_crates() -> Vec<(&'static str, &'static str)> {
    env!("STAGEBENCH_KEY_CRATES").split(';').filter_map(|kv| kv.split_once('=')).collect()
}
