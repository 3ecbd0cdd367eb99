//! report.json's records: stages, processes, artifacts, and the parts a
//! mode's section is made of (counts, preparation sides, trial sets), with
//! the seal that binds a report's body to its own digest. The report itself,
//! common part and mode section, is [`crate::modes::Report`].

use evidence::canonical;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

mod process;
mod runtime;
mod stage;

pub(crate) use process::{ArtifactRecord, JobSlice, ProcessRecord, TimedSlice};
pub(crate) use runtime::RuntimeRecord;
pub(crate) use stage::{IO_COUNTERS, Leaked, StageIo, StageRecord};

pub(crate) const SCHEMA: &str = "stagebench.report";
pub(crate) const SCHEMA_VERSION: u32 = 1;
/// The key holding the digest of the report's own canonical body.
pub(crate) const BODY_DIGEST_KEY: &str = "body_sha256";

/// The trials of one stage.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TrialSet {
    /// Warm-up trials (recorded in `warmup_samples`, not counted).
    pub(crate) warmup: u32,
    /// Counted trials.
    pub(crate) n: u32,
    /// Per figure (`wall_s`, `cpu_s`, `peak_rss_bytes`, and the stage's own),
    /// the counted trials' values in trial order.
    pub(crate) samples: BTreeMap<String, Vec<f64>>,
    pub(crate) warmup_samples: BTreeMap<String, Vec<f64>>,
    /// Per figure, statistics over the counted trials.
    pub(crate) summary: BTreeMap<String, crate::stats::Summary>,
    /// Trials per side needed to resolve a 1% difference in median wall time
    /// at the observed noise (two-sided α 0.05, power 0.8).
    pub(crate) trials_for_1pct: Option<u64>,
    /// Reasons to distrust these numbers, for a person.
    pub(crate) warnings: Vec<String>,
}

/// Warnings every stage's trials share (machine load), said once by
/// whoever prints them, in the order the first stage lists them.
pub(crate) fn shared_warnings(trials: &BTreeMap<String, TrialSet>) -> Vec<&String> {
    let Some(first) = trials.values().next() else { return Vec::new() };
    first.warnings.iter().filter(|w| trials.values().all(|o| o.warnings.contains(w))).collect()
}

/// Aggregate counts of the training partition (no identifiers).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub(crate) train_series: u64,
    pub(crate) samples: u64,
    pub(crate) frames: u64,
    pub(crate) valid_frames: u64,
    /// Profile: eligible 240-frame contexts of the training series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) eligible_contexts: Option<u64>,
    /// Profile: batches of 32 in one epoch, and contexts in the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) batches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) final_batch: Option<u64>,
    /// Profile: training series whose events break the target contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) invalid_event_series: Option<u64>,
}

/// One side of a cold-prep comparison.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PrepSide {
    /// Coordinator-measured: first spawn to last reap of this phase.
    pub(crate) wall_s: f64,
    /// Sum over this phase's processes (wait4).
    pub(crate) cpu_s: f64,
    /// Largest peak RSS among this phase's processes (wait4).
    pub(crate) peak_rss_bytes: u64,
    pub(crate) workers: Vec<PrepWorker>,
    /// Distribution of per-series preparation wall time, seconds.
    pub(crate) per_series_s: crate::stats::Distribution,
    /// Where per-series time went: summed over series, seconds.
    pub(crate) components_s: BTreeMap<String, f64>,
    /// Relative path of this cache's manifest.
    pub(crate) manifest: String,
    /// The key of this side's phase: its jobs in jobs.jsonl.gz (those of
    /// `workers[]` of this phase) are its timeline. Absent in reports from
    /// before that file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) phase: Option<String>,
    /// When the phase began (its dispatch), in seconds from the run's
    /// start: the zero of its timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) started_s: Option<f64>,
    /// Which worker prepared a series when, in start order (series are not
    /// named), in seconds from `started_s`. Never written: read back from
    /// jobs.jsonl.gz ([`crate::modes::Report::read_jobs`]), or from
    /// report.json as reports from before that file held it.
    #[serde(default, skip_serializing)]
    pub(crate) timeline: Vec<Span>,
}

/// A phase's jobs as (rank, start, end) in seconds from the run's start,
/// as spans from the phase's start `started_s`, in start order.
pub(crate) fn timeline(jobs: impl Iterator<Item = (u32, f64, f64)>, started_s: f64) -> Vec<Span> {
    let mut spans: Vec<Span> = jobs
        .map(|(rank, start_s, end_s)| Span {
            rank,
            start_s: (start_s - started_s).max(0.0),
            end_s: (end_s - started_s).max(0.0),
        })
        .collect();
    spans.sort_by(|a, b| {
        a.start_s.total_cmp(&b.start_s).then(a.rank.cmp(&b.rank)).then(a.end_s.total_cmp(&b.end_s))
    });
    spans
}

/// One job on a worker: seconds from its phase's start. The end is when the
/// coordinator received the measurement; the start is that minus the
/// worker's own wall time for the job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Span {
    pub(crate) rank: u32,
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PrepWorker {
    pub(crate) rank: u32,
    pub(crate) series: u64,
    /// Sum of this worker's per-series wall times.
    pub(crate) busy_s: f64,
    /// Spawn to reap.
    pub(crate) wall_s: f64,
    pub(crate) cpu_s: f64,
    /// The worker's own lifetime peak RSS (VmHWM), as it measured after its
    /// last series; null for a worker that found the queue empty and so
    /// measured nothing (wait4's peak would be the coordinator's, carried
    /// across exec).
    pub(crate) peak_rss_bytes: Option<u64>,
    /// A user's preparation (`--prepare`): seconds from starting the
    /// program to its `{"ready": true}` (for Python, its imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) startup_s: Option<f64>,
}

/// SHA-256 of the canonical bytes of `value` without its body digest.
pub(crate) fn body_digest(value: &Value) -> String {
    match value {
        Value::Object(m) if m.contains_key(BODY_DIGEST_KEY) => {
            let mut body = m.clone();
            body.remove(BODY_DIGEST_KEY);
            canonical::sha256_hex(&canonical::value_bytes(&Value::Object(body)))
        }
        body => canonical::sha256_hex(&canonical::value_bytes(body)),
    }
}

/// The final bytes of report.json: the body plus the digest of the body
/// (one copy of the report as a value, however large).
pub(crate) fn seal(report: &impl Serialize) -> Vec<u8> {
    let mut value = serde_json::to_value(report).expect("report serialises");
    if let Value::Object(m) = &mut value {
        m.remove(BODY_DIGEST_KEY);
    }
    let digest = canonical::sha256_hex(&canonical::value_bytes(&value));
    if let Value::Object(m) = &mut value {
        m.insert(BODY_DIGEST_KEY.into(), Value::String(digest));
    }
    canonical::value_bytes(&value)
}
