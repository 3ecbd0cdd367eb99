//! What dropping a phase's inputs from the page cache did (`--os-cache
//! cold`), as the report records it; the coordinator's `pagecache` does it.

use serde::{Deserialize, Serialize};

/// What one eviction did, over all of a phase's inputs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Eviction {
    /// Input files, and their bytes.
    pub files: u64,
    pub bytes: u64,
    /// Bytes of the inputs in the page cache before and after the advice.
    pub resident_before_bytes: u64,
    pub resident_after_bytes: u64,
    /// Files that could not be opened or advised (never named: paths stay
    /// out of the evidence); their bytes count as resident.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_files: u64,
    /// Files whose residency the kernel would not tell (the caller neither
    /// owns them nor may write them): neither resident nor evicted, and
    /// their bytes count in neither residency figure.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unknown_files: u64,
    /// Why pages could not be dropped where the file system says so
    /// (`tmpfs`, `ramfs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_file_system: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Share of the inputs still resident after an eviction above which it
/// did not work.
pub const RESIDENT_AFTER_LIMIT: f64 = 0.05;

impl Eviction {
    /// One line on why the phase cannot be cold, when it cannot.
    pub fn failure(&self) -> Option<String> {
        if self.unknown_files > 0 && self.failed_files == 0 {
            return Some(format!(
                "--os-cache cold: whether {} of {} input file(s) left the page cache is unknown (the kernel tells page-cache residency only to a user who owns a file or may write it): the phase's storage reads alone tell whether it was cold",
                self.unknown_files, self.files
            ));
        }
        let left = self.resident_after_bytes as f64 / self.bytes.max(1) as f64;
        if left <= RESIDENT_AFTER_LIMIT && self.failed_files == 0 {
            return None;
        }
        let why = match &self.memory_file_system {
            Some(fs) => format!("the inputs live on {fs}, which keeps every page in memory"),
            None if self.failed_files > 0 => {
                format!("{} input file(s) could not be opened", self.failed_files)
            }
            None => {
                "dirty pages stay until written back, and pages a running process maps stay".into()
            }
        };
        Some(format!(
            "--os-cache cold could not evict the inputs: {:.0}% of their {} stayed in the page cache ({why})",
            100.0 * left,
            crate::fmt::mib(self.bytes)
        ))
    }
}
