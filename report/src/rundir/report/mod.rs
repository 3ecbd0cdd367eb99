//! report.json's records: stages, processes, artifacts, and the parts a
//! mode's section is made of (counts, preparation sides, trial sets), with
//! the seal that binds a report's body to its own digest. The report itself,
//! common part and mode section, is [`crate::modes::Report`].

use evidence::canonical;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

mod eviction;
mod process;
mod runtime;
mod stage;

pub use eviction::{Eviction, RESIDENT_AFTER_LIMIT};
pub use process::{ArtifactRecord, JobSlice, ProcessRecord, TimedSlice};
pub use runtime::RuntimeRecord;
pub use stage::{Faults, IO_COUNTERS, Leaked, StageIo, StageRecord, TOP_LEVEL_FIGURES};

pub const SCHEMA: &str = "stagebench.report";
pub const SCHEMA_VERSION: u32 = 1;
/// Reads a `schema_version` of `schema`, refusing any but `version` in
/// one line that names both: a report of another version is another
/// format, read by the stagebench that wrote it.
pub fn expect_version<'de, D: serde::Deserializer<'de>>(
    d: D,
    schema: &str,
    version: u32,
) -> Result<u32, D::Error> {
    use serde::de::Error;
    let found = u32::deserialize(d)?;
    match found == version {
        true => Ok(found),
        false => Err(D::Error::custom(format!(
            "{schema} schema_version {found} cannot be read: this stagebench reads schema_version {version}"
        ))),
    }
}

/// report.json's `schema_version`: this one's only (see [`expect_version`]).
pub fn this_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    expect_version(d, SCHEMA, SCHEMA_VERSION)
}

/// The key holding the digest of the report's own canonical body.
pub const BODY_DIGEST_KEY: &str = "body_sha256";

/// The trials of one stage.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// How far `per_series_s`'s median and p95 may be from a series' wall
    /// that occurred, relative to it: they are read off a log-bucket
    /// histogram that holds any count of items in fixed memory (min and
    /// max are exact). None in a report from before the histogram (exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_series_resolution: Option<f64>,
    /// Where per-series time went: summed over series, seconds.
    pub components_s: BTreeMap<String, f64>,
    /// Relative path of this cache's manifest.
    pub manifest: String,
    /// The key of this side's phase: its jobs in jobs.jsonl.gz (those of
    /// `workers[]` of this phase) are its timeline. Absent in reports from
    /// before that file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// When the phase began (its dispatch), in seconds from the run's
    /// start: the zero of its timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_s: Option<f64>,
    /// Which worker prepared a series when, in start order (series are not
    /// named), in seconds from `started_s`. Never written: read back from
    /// jobs.jsonl.gz ([`crate::modes::Report::read_jobs`]), or from
    /// report.json as reports from before that file held it.
    #[serde(default, skip_serializing)]
    pub timeline: Vec<Span>,
    /// A user's preparation (`--prepare`): its slowest items by their line
    /// in the items file, against the median, and its tail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stragglers: Option<crate::rundir::stragglers::Stragglers>,
}

/// How busy a side's workers were: the busiest's busy seconds and the
/// mean, the two figures its load imbalance is the ratio of.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Busy {
    pub busiest_s: f64,
    pub mean_s: f64,
}

impl Busy {
    /// The busiest worker's busy time over the mean: 1.00 is even. Workers
    /// busy for no time at all are even (0/0 is no figure).
    pub fn imbalance(self) -> f64 {
        match self.mean_s > 0.0 {
            true => self.busiest_s / self.mean_s,
            false => 1.0,
        }
    }
}

impl PrepSide {
    /// Its workers' busy time: the busiest and the mean.
    pub fn busy(&self) -> Busy {
        let busy = self.workers.iter().map(|w| w.busy_s);
        Busy {
            busiest_s: busy.clone().fold(0.0, f64::max),
            mean_s: busy.sum::<f64>() / self.workers.len().max(1) as f64,
        }
    }
}

/// A phase's timeline gathered job by job, from (rank, start, end) in
/// seconds from the run's start. A block narrower than [`RESOLUTION`] of the
/// phase's wall is merged with the one before it on its worker when the gap
/// between them is that narrow too (the plot draws such blocks merged
/// anyway), so a phase of any count of jobs holds at most about
/// 2 / [`RESOLUTION`] blocks a worker, and one of few jobs holds each.
pub struct Timeline {
    started_s: f64,
    resolution: f64,
    rows: BTreeMap<u32, Vec<Span>>,
}

/// The narrowest block a timeline keeps apart, as a share of its phase's wall.
pub const RESOLUTION: f64 = 1.0 / 8192.0;

impl Timeline {
    /// The timeline of a phase started at `started_s` that lasted `wall_s`.
    pub fn new(started_s: f64, wall_s: f64) -> Timeline {
        Timeline { started_s, resolution: wall_s * RESOLUTION, rows: BTreeMap::new() }
    }

    /// A job of worker `rank`, run from `start_s` to `end_s`.
    pub fn push(&mut self, rank: u32, start_s: f64, end_s: f64) {
        let span = Span {
            rank,
            start_s: (start_s - self.started_s).max(0.0),
            end_s: (end_s - self.started_s).max(0.0),
        };
        let row = self.rows.entry(rank).or_default();
        let narrow = |s: &Span| s.end_s - s.start_s < self.resolution;
        match row.last_mut() {
            Some(last)
                if span.start_s >= last.start_s
                    && span.start_s - last.end_s < self.resolution
                    && (narrow(last) || narrow(&span)) =>
            {
                last.end_s = last.end_s.max(span.end_s);
            }
            _ => row.push(span),
        }
    }

    /// Its blocks in start order.
    pub fn spans(self) -> Vec<Span> {
        let mut spans: Vec<Span> = self.rows.into_values().flatten().collect();
        spans.sort_by(|a, b| {
            a.start_s
                .total_cmp(&b.start_s)
                .then(a.rank.cmp(&b.rank))
                .then(a.end_s.total_cmp(&b.end_s))
        });
        spans
    }
}

/// One job on a worker: seconds from its phase's start. The end is when the
/// coordinator received the measurement; the start is that minus the
/// worker's own wall time for the job.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Span {
    pub rank: u32,
    pub start_s: f64,
    pub end_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PrepWorker {
    pub rank: u32,
    pub series: u64,
    /// Sum of this worker's per-series wall times.
    pub busy_s: f64,
    /// Spawn to reap.
    pub wall_s: f64,
    pub cpu_s: f64,
    /// The worker's own lifetime peak RSS (VmHWM), as it measured after its
    /// last series; null for a worker that found the queue empty and so
    /// measured nothing (wait4's peak would be the coordinator's, carried
    /// across exec).
    pub peak_rss_bytes: Option<u64>,
    /// A user's preparation (`--prepare`): seconds from starting the
    /// program to its `{"ready": true}` (for Python, its imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_s: Option<f64>,
}

/// SHA-256 of the canonical bytes of `value` without its body digest.
pub fn body_digest(value: &Value) -> String {
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
pub fn seal(report: &impl Serialize) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A phase of few jobs keeps each; one of 10⁶ jobs of 1 µs on two
    /// workers keeps a bounded count, covering the same time.
    #[test]
    fn a_timeline_of_any_count_of_jobs_is_bounded() {
        let mut few = Timeline::new(10.0, 2.0);
        for (rank, start, end) in
            [(1, 10.0, 11.0), (2, 10.0, 10.5), (2, 10.5, 12.0), (1, 11.0, 12.0)]
        {
            few.push(rank, start, end);
        }
        let few = few.spans();
        let shown: Vec<(u32, f64, f64)> =
            few.iter().map(|s| (s.rank, s.start_s, s.end_s)).collect();
        assert_eq!(shown, [(1, 0.0, 1.0), (2, 0.0, 0.5), (2, 0.5, 2.0), (1, 1.0, 2.0)]);

        let jobs = 1_000_000;
        let wall = jobs as f64 * 1e-6;
        let mut many = Timeline::new(0.0, wall);
        for i in 0..jobs {
            let start = (i / 2) as f64 * 2e-6;
            many.push((i % 2) as u32, start, start + 1e-6);
        }
        let many = many.spans();
        assert!(many.len() <= 2 * (2.0 / RESOLUTION) as usize + 2, "{} blocks", many.len());
        for rank in 0..2 {
            let row: Vec<&Span> = many.iter().filter(|s| s.rank == rank).collect();
            assert!((row[0].start_s, row.last().unwrap().end_s) == (0.0, wall - 1e-6));
        }
        // A long job beside narrow ones stays apart from the gaps around it.
        let mut mixed = Timeline::new(0.0, 1.0);
        mixed.push(0, 0.0, 1e-6);
        mixed.push(0, 0.1, 0.6);
        mixed.push(0, 0.6, 0.6 + 1e-6);
        let mixed = mixed.spans();
        assert_eq!(mixed.len(), 2, "the first apart (a gap), the last merged: {mixed:?}");
        assert_eq!((mixed[1].start_s, mixed[1].end_s), (0.1, 0.6 + 1e-6));
    }
}
