//! failure.json: why a run produced no report.

use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "stagebench.failure";
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Failure {
    pub schema: String,
    pub schema_version: u32,
    pub mode: String,
    /// Key of the stage that failed, when one did.
    pub stage: Option<String>,
    /// Rank of the worker involved, when one was.
    pub worker: Option<u32>,
    /// A stable machine-readable kind: `stage_failed`, `worker_crashed`,
    /// `worker_exited`, `connect_timeout`, `stage_timeout`,
    /// `protocol_violation`, `handshake_refused`, `artifact_mismatch`, `caches_differ`,
    /// `interrupted`, `internal`.
    pub reason: String,
    /// One line for a person.
    pub message: String,
    pub declaration_sha256: Option<String>,
    pub environment_sha256: Option<String>,
}
