//! The one place where evidence becomes bytes: canonical JSON ([`canonical`]),
//! SHA-256 of bytes and files, and atomic file writes ([`atomic`]); and what
//! both the recipe and the report crate need beneath them, so that reading
//! evidence compiles no data crate: a directory's path-free digest
//! ([`digest`]), the seeded generator every resample and synthetic cohort
//! draws from ([`rng`]) and UTC timestamps with their civil-date arithmetic
//! ([`timestamp`]).
//!
//! Used by the coordinator (run evidence), the worker (artifacts) and the
//! recipe (frozen datasets, feature caches), so each of these has exactly one
//! implementation.

pub mod atomic;
pub mod canonical;
pub mod digest;
pub mod rng;
pub mod timestamp;

pub use atomic::{
    AtomicFile, Durability, Staging, rename_no_replace, write_atomic, write_atomic_streamed,
    write_atomic_with, write_new,
};
pub use canonical::{Sha256Hex, array_sha256, file_sha256, sha256_hex, to_bytes, value_bytes};
