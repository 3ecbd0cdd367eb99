//! What cold-prep's preparation phases read from storage, and `--os-cache`:
//! whether their declared inputs (the training series' files of the frozen
//! dataset, or a user's `--inputs`) were dropped from the page cache before
//! each of them ([`host::pagecache`]).
//!
//! A cold phase that read less than [`NOT_COLD_BELOW`] of its inputs' bytes
//! from storage was served from the page cache, and is said to be not cold.

use super::PhaseOutcome;
use report::rundir::report::StageRecord;
use std::collections::BTreeMap;

use report::modes::cold_prep::storage::{PhaseStorage, Storage};

/// `--os-cache`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum OsCache {
    /// Drop the inputs from the page cache before each preparation phase.
    Cold,
    /// Leave the page cache as it is.
    #[default]
    AsIs,
}

impl OsCache {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OsCache::Cold => "cold",
            OsCache::AsIs => "as-is",
        }
    }
}

/// The storage part of a cold-prep report, from the preparation phases'
/// records and evictions; None where the kernel kept no I/O accounting.
pub(crate) fn storage(
    os_cache: OsCache,
    inputs_bytes: Option<u64>,
    outcomes: &[PhaseOutcome],
    stages: &BTreeMap<String, StageRecord>,
) -> Option<Storage> {
    let mut phases = Vec::new();
    // The preparation phases are those with an output directory.
    for p in outcomes.iter().filter(|p| p.phase.cache.is_some()) {
        let record = stages.get(&p.phase.key)?;
        phases.push(PhaseStorage {
            key: p.phase.key.clone(),
            processes: record.processes,
            read_bytes: record.io.as_ref()?.read_bytes,
            eviction: p.eviction.clone(),
        });
    }
    let inputs_bytes =
        phases.iter().find_map(|p| p.eviction.as_ref().map(|e| e.bytes)).or(inputs_bytes);
    Some(Storage { os_cache: os_cache.as_str().into(), inputs_bytes, phases })
}
