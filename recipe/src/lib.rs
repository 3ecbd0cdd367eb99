//! The sleep-detection recipe as a library, with no sockets and no processes:
//! the CMI "Detect Sleep States" data format ([`source`], [`events`]), the
//! synthetic cohort ([`generate`]), frozen datasets ([`frozen`], [`freeze`]),
//! the versioned feature contract ([`contract`], [`features`]) and the
//! per-series feature cache ([`cache`], [`npy`]).
//!
//! The contract is documented in docs/feature-contract.md.

pub mod cache;
pub mod clock;
pub mod contract;
pub mod events;
pub mod features;
pub mod freeze;
pub mod frozen;
pub mod generate;
pub mod loader;
pub mod normalizer;
pub mod npy;
pub mod rows;
pub mod source;
pub mod state;
pub mod targets;
pub mod warm;
