//! failure.json: why a run produced no report.

use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "stagebench.failure";
pub const SCHEMA_VERSION: u32 = 1;

/// failure.json's `schema_version`: this one's only (see
/// [`super::report::expect_version`]).
fn this_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    super::report::expect_version(d, SCHEMA, SCHEMA_VERSION)
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Failure {
    pub schema: String,
    #[serde(deserialize_with = "this_version")]
    pub schema_version: u32,
    pub mode: String,
    /// Key of the stage that failed, when one did.
    pub stage: Option<String>,
    /// Rank of the worker involved, when one was.
    pub worker: Option<u32>,
    /// A stable machine-readable kind: `stage_failed`, `worker_crashed`,
    /// `worker_exited`, `connect_timeout`, `stage_timeout`,
    /// `protocol_violation`, `handshake_refused`, `artifact_mismatch`, `caches_differ`,
    /// `outputs_differ`, `inputs_changed`, `items_changed`, `output_refused`, `leaked_processes`,
    /// `unaccounted_output`, `item_timeout`,
    /// `interrupted`, `internal`.
    pub reason: String,
    /// One line for a person.
    pub message: String,
    pub declaration_sha256: Option<String>,
    pub environment_sha256: Option<String>,
    /// Entries of the run directory the run did not write (a program wrote
    /// them there), relative to it: kept through the failure, never
    /// deleted, and the only entries besides the evidence `verify` accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
}

impl Failure {
    /// A failure of a `mode` run (or a campaign), bound to the declaration
    /// and environment written so far.
    pub fn new(
        mode: &str,
        (stage, worker, reason): (Option<String>, Option<u32>, &str),
        message: String,
        declaration_sha256: Option<String>,
        environment_sha256: Option<String>,
    ) -> Failure {
        Failure {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            mode: mode.into(),
            stage,
            worker,
            reason: reason.into(),
            message,
            declaration_sha256,
            environment_sha256,
            kept: Vec::new(),
        }
    }
}
