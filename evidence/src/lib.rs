//! The one place where evidence becomes bytes: canonical JSON ([`canonical`]),
//! SHA-256 of bytes and files, and atomic file writes ([`atomic`]).
//!
//! Used by the coordinator (run evidence), the worker (artifacts) and the
//! recipe (frozen datasets, feature caches), so each of these has exactly one
//! implementation.

pub mod atomic;
pub mod canonical;

pub use atomic::{
    Durability, Staging, rename_no_replace, write_atomic, write_atomic_streamed, write_atomic_with,
    write_new,
};
pub use canonical::{file_sha256, sha256_hex, to_bytes, value_bytes};
