//! report.json's records: stages, processes, artifacts, and the parts a
//! mode's section is made of (counts, preparation sides, trial sets), with
//! the seal that binds a report's body to its own digest. The report itself,
//! common part and mode section, is [`crate::modes::Report`].

use evidence::canonical;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

pub const SCHEMA: &str = "stagebench.report";
pub const SCHEMA_VERSION: u32 = 1;
/// The key holding the digest of the report's own canonical body.
pub const BODY_DIGEST_KEY: &str = "body_sha256";

/// The trials of one stage.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrialSet {
    /// Warm-up trials (recorded in `warmup_samples`, not counted).
    pub warmup: u32,
    /// Counted trials.
    pub n: u32,
    /// Per figure (`wall_s`, `cpu_s`, `peak_rss_bytes`, and the stage's own),
    /// the counted trials' values in trial order.
    pub samples: BTreeMap<String, Vec<f64>>,
    pub warmup_samples: BTreeMap<String, Vec<f64>>,
    /// Per figure, statistics over the counted trials.
    pub summary: BTreeMap<String, crate::stats::Summary>,
    /// Trials per side needed to resolve a 1% difference in median wall time
    /// at the observed noise (two-sided α 0.05, power 0.8).
    pub trials_for_1pct: Option<u64>,
    /// Reasons to distrust these numbers, for a person.
    pub warnings: Vec<String>,
}

/// Warnings every stage's trials share (machine load), said once by
/// whoever prints them, in the order the first stage lists them.
pub fn shared_warnings(trials: &BTreeMap<String, TrialSet>) -> Vec<&String> {
    let Some(first) = trials.values().next() else { return Vec::new() };
    first.warnings.iter().filter(|w| trials.values().all(|o| o.warnings.contains(w))).collect()
}

/// Aggregate counts of the training partition (no identifiers).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Counts {
    pub train_series: u64,
    pub samples: u64,
    pub frames: u64,
    pub valid_frames: u64,
    /// Profile: eligible 240-frame contexts of the training series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible_contexts: Option<u64>,
    /// Profile: batches of 32 in one epoch, and contexts in the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_batch: Option<u64>,
    /// Profile: training series whose events break the target contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_event_series: Option<u64>,
}

/// One side of a cold-prep comparison.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PrepSide {
    /// Coordinator-measured: first spawn to last reap of this phase.
    pub wall_s: f64,
    /// Sum over this phase's processes (wait4).
    pub cpu_s: f64,
    /// Largest peak RSS among this phase's processes (wait4).
    pub peak_rss_bytes: u64,
    pub workers: Vec<PrepWorker>,
    /// Distribution of per-series preparation wall time, seconds.
    pub per_series_s: crate::stats::Distribution,
    /// Where per-series time went: summed over series, seconds.
    pub components_s: BTreeMap<String, f64>,
    /// Relative path of this cache's manifest.
    pub manifest: String,
    /// Which worker prepared a series when, in start order (series are not named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<Span>,
}

/// One job on a worker: seconds from its phase's start. The end is when the
/// coordinator received the measurement; the start is that minus the
/// worker's own wall time for the job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Span {
    pub rank: u32,
    pub start_s: f64,
    pub end_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PrepWorker {
    pub rank: u32,
    pub series: u64,
    /// Sum of this worker's per-series wall times.
    pub busy_s: f64,
    /// Spawn to reap.
    pub wall_s: f64,
    pub cpu_s: f64,
    /// The worker's own lifetime peak RSS (VmHWM), as it measured after its last series.
    pub peak_rss_bytes: u64,
}

/// A stage as its worker measured it (monotonic wall clock, getrusage deltas).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageRecord {
    pub stage: String,
    /// Position in the plan, from 0.
    pub order: usize,
    /// Rank of the worker that ran it; null when several processes did.
    pub worker: Option<u32>,
    /// How many worker processes this stage used.
    pub processes: u32,
    pub wall_s: f64,
    /// user_s + sys_s.
    pub cpu_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// The worker process's lifetime peak RSS at the end of the stage
    /// (`VmHWM`: its own address space, nothing inherited). With
    /// `--isolation stage` the process ran only this stage.
    pub peak_rss_bytes: u64,
    pub figures: BTreeMap<String, f64>,
}

/// A worker process as the coordinator saw it: spawn to reap, with the
/// rusage wait4 returned, so it holds even if the worker misreported.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProcessRecord {
    pub rank: u32,
    /// Key of the stage (phase) the process served.
    pub phase: String,
    /// Keys of the stages this process ran.
    pub stages: Vec<String>,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// wait4's `ru_maxrss`. Linux carries `ru_maxrss` across `execve`, so
    /// this is never below `peak_rss_floor_bytes`; a value equal to the floor
    /// says only that the process stayed at or under it.
    pub peak_rss_bytes: u64,
    /// The coordinator's own peak RSS when it spawned this process.
    pub peak_rss_floor_bytes: u64,
    /// How the process ended, e.g. `exited 0`.
    pub exit: String,
    /// A task of a Slurm job step: not the coordinator's child and perhaps
    /// on another host, so `wait4` cannot see it; `cpu_s`, `user_s`,
    /// `sys_s` and `peak_rss_bytes` are then the worker's own figures (CPU
    /// summed over its stages, its largest VmHWM), `wall_s` is launch to the
    /// end of its connection, and `peak_rss_floor_bytes` is 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task_of_step: bool,
    /// The worker's host, as SHA-256 of the run token and the host name
    /// (never the name): equal digests mean the same host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_sha256: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArtifactRecord {
    /// Relative to the run directory.
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    /// Key of the stage that wrote it.
    pub stage: String,
    /// `file`, or `manifest`: a JSON list of files below the manifest's own
    /// directory with their SHA-256, each of which `verify` checks too.
    pub kind: String,
}

/// SHA-256 of the canonical bytes of `value` without its body digest.
pub fn body_digest(value: &Value) -> String {
    let mut body = value.clone();
    if let Value::Object(m) = &mut body {
        m.remove(BODY_DIGEST_KEY);
    }
    canonical::sha256_hex(&canonical::to_bytes(&body))
}

/// The final bytes of report.json: the body plus the digest of the body.
pub fn seal(report: &impl Serialize) -> Vec<u8> {
    let mut value = serde_json::to_value(report).expect("report serialises");
    let digest = body_digest(&value);
    if let Value::Object(m) = &mut value {
        m.insert(BODY_DIGEST_KEY.into(), Value::String(digest));
    }
    canonical::to_bytes(&value)
}
