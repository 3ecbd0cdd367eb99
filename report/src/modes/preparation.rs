//! The names a preparation's phases and outputs go by, shared by the
//! cold-prep, profile and recipe modes: their stage keys, output
//! directories and the manifest sealing each.

pub const VERIFY_BEFORE: &str = "verify_before";
pub const SERIAL: &str = "cold_feature_cache_prepare";
pub const PARALLEL: &str = "cold_feature_cache_prepare_parallel";
pub const VERIFY_AFTER: &str = "verify_after";
pub const SERIAL_CACHE: &str = "private-feature-cache";
pub const PARALLEL_CACHE: &str = "private-feature-cache-parallel";
pub const MANIFEST: &str = "manifest.json";
pub const MANIFEST_SCHEMA: &str = "stagebench.cache-manifest";
/// Per-series time components the workers report.
pub const COMPONENTS: [&str; 5] = ["read_s", "hash_s", "decode_s", "extract_s", "write_s"];

/// The names of one kind of preparation: its phases' keys and their
/// output directories.
#[derive(Clone, Copy, Debug)]
pub struct Names {
    pub serial: &'static str,
    pub parallel: &'static str,
    pub serial_out: &'static str,
    pub parallel_out: &'static str,
    /// A user's items (`--prepare`), not the recipe's series.
    pub items: bool,
}

/// The recipe's feature-cache preparation.
pub const RECIPE: Names = Names {
    serial: SERIAL,
    parallel: PARALLEL,
    serial_out: SERIAL_CACHE,
    parallel_out: PARALLEL_CACHE,
    items: false,
};

/// A user's own preparation (`--prepare`).
pub const ITEMS: Names = Names {
    serial: "cold_prepare",
    parallel: "cold_prepare_parallel",
    serial_out: "private-output",
    parallel_out: "private-output-parallel",
    items: true,
};
