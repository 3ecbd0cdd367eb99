//! What the phases returned, as the report's records: a job's stage
//! record, every worker process's record (wait4's rusage, launch,
//! handshake and jobs), and an artifact a worker reported, re-hashed.

use super::PhaseOutcome;
use crate::error::RunError;
use crate::supervisor::JobResult;
use report::rundir::report::{
    ArtifactRecord, Leaked, ProcessRecord, RuntimeRecord, StageIo, StageRecord,
};
use std::path::Path;

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A stage record from one job's own measurement.
pub(crate) fn stage_from_job(r: &JobResult, order: usize) -> StageRecord {
    let m = &r.measurement;
    let spans = report::rundir::spans::records([(secs(m.wall_ns), &m.spans[..])]);
    StageRecord {
        stage: r.job.stage.to_string(),
        order,
        worker: Some(r.worker.0),
        processes: 1,
        wall_s: secs(m.wall_ns),
        cpu_s: secs(m.user_ns + m.sys_ns),
        user_s: secs(m.user_ns),
        sys_s: secs(m.sys_ns),
        peak_rss_bytes: m.peak_rss_bytes,
        figures: m.figures.iter().map(|f| (f.name.clone(), f.value)).collect(),
        tree_peak_bytes: m.tree.peak_bytes,
        tree_peak_method: m.tree.method.clone(),
        tree_peak_anon_bytes: m.tree.anon_bytes,
        tree_peak_file_bytes: m.tree.file_bytes,
        sum_of_peaks_bytes: m.tree.sum_of_peaks_bytes,
        leaked_processes: Leaked::from_names(m.tree.leaked.clone()),
        spans_not_found: m.spans_not_found.clone(),
        spans: spans.as_ref().map(|s| s.0.clone()).unwrap_or_default(),
        span_totals: spans.map(|s| s.1),
        span_warnings: m.span_warnings.clone(),
        command_stages: m.command_stages.clone(),
        faults: m.faults.into(),
        io: m.io.as_ref().map(StageIo::measured),
        runtime: RuntimeRecord::measured(&m.runtime),
        samples: None,
    }
}

/// Every worker process of every phase, as wait4 reported it, with its
/// launch, handshake and jobs in seconds from `t0`, the run's start.
pub(crate) fn process_records(
    outcomes: &[PhaseOutcome],
    t0: std::time::Instant,
    jobs_apart: bool,
) -> Vec<ProcessRecord> {
    let since = |t: std::time::Instant| t.saturating_duration_since(t0).as_secs_f64();
    let mut out: Vec<ProcessRecord> = outcomes
        .iter()
        .flat_map(|p| {
            p.dispatch.outcomes.iter().map(|o| ProcessRecord {
                rank: o.rank.0,
                phase: p.phase.key.clone(),
                stages: {
                    let folded = o.tally.as_ref().and_then(|t| t.last.as_ref());
                    let mut keys: Vec<String> =
                        o.jobs.iter().chain(folded).map(|j| j.job.key.clone()).collect();
                    keys.dedup();
                    keys
                },
                wall_s: o.exit.wall.as_secs_f64(),
                cpu_s: secs(o.exit.user_ns + o.exit.sys_ns),
                user_s: secs(o.exit.user_ns),
                sys_s: secs(o.exit.sys_ns),
                peak_rss_bytes: o.exit.peak_rss_bytes,
                peak_rss_floor_bytes: o.rss_floor_bytes,
                exit: o.exit.kind.to_string(),
                task_of_step: o.task_of_step,
                host_sha256: o.host_sha256.clone(),
                faults: o.exit.faults.map(Into::into).unwrap_or_default(),
                start_s: Some(since(o.launched)),
                connected_s: o.connected.map(since),
                // Where a mode's jobs go to jobs.jsonl.gz, they went as they arrived.
                jobs: match jobs_apart {
                    true => Vec::new(),
                    false => o.jobs.iter().map(|j| j.slice(t0)).collect(),
                },
            })
        })
        .collect();
    out.sort_by_key(|p| p.rank);
    out
}

/// Re-hashes a file a worker reported and checks it against the claim.
pub(crate) fn checked_artifact(
    dir: &Path,
    r: &JobResult,
    path: &str,
    claimed: &[u8; 32],
    kind: &str,
) -> Result<ArtifactRecord, RunError> {
    let mismatch = |why: String| {
        crate::error::fail(
            Some(r.job.key.clone()),
            Some(r.worker.0),
            "artifact_mismatch",
            format!("artifact {path} of stage {} from {}: {why}", r.job.key, r.worker),
        )
    };
    let (sha, bytes) = evidence::file_sha256(&dir.join(path))
        .map_err(|e| mismatch(format!("cannot be read: {e}")))?;
    if sha != hex::encode(claimed) {
        return Err(mismatch("its SHA-256 differs from what the worker reported".into()));
    }
    // Sampled stacks are their own kind, whatever the mode calls its files.
    let kind = match path.starts_with(report::rundir::samples::DIR) {
        true => "samples",
        false => kind,
    };
    Ok(ArtifactRecord {
        path: path.into(),
        sha256: sha,
        bytes,
        stage: r.job.key.clone(),
        kind: kind.into(),
    })
}

/// A stage's sampled stacks (`--sample`) over `trials`, from the artifacts
/// they reported (re-hashed first), into `record`; a stage that was to be
/// sampled and got no running sample says so and why among its warnings,
/// never as a silent absence.
pub(crate) fn sampled(
    cx: &super::Context<'_>,
    record: &mut StageRecord,
    trials: &[&JobResult],
    seed: u64,
) -> Result<(), RunError> {
    let sources: Vec<_> = trials.iter().map(|r| (*r, &r.artifacts[..])).collect();
    record.samples = sampled_stacks(cx, &sources, seed)?.0;
    if let Some(why) = not_sampled(cx, record, trials.first().copied(), trials.len(), "trial") {
        record.span_warnings.push(why);
    }
    Ok(())
}

/// Why a stage that was to be sampled has no samples: its processes ended
/// before py-spy found them, or ran too briefly for a sample at the rate
/// asked (none at all, or a median of none). None when it has samples or
/// was not to be sampled.
pub(crate) fn not_sampled(
    cx: &super::Context<'_>,
    record: &StageRecord,
    first: Option<&JobResult>,
    count: usize,
    per: &str,
) -> Option<String> {
    let rate = first?.job.sample.as_ref()?.rate_hz;
    let some = match &record.samples {
        None => false,
        Some(s) if s.samples == 0.0 => true,
        Some(_) => return None,
    };
    cx.sampler
        .is_some()
        .then(|| report::rundir::samples::none_sentence(count, per, rate, record.wall_s, some))
}

/// A worker's result and files it reported beside it: relative path and
/// claimed SHA-256.
pub(crate) type Reported<'a> = (&'a JobResult, &'a [(String, [u8; 32])]);

/// Sampled stacks over samples of one stage, each the stacks a worker
/// reported beside one of its results (a trial's own, or a preparation
/// program's, reported at its close beside its last item): the record,
/// and the artifacts re-hashed. None when none was sampled.
pub(crate) fn sampled_stacks(
    cx: &super::Context<'_>,
    sources: &[Reported<'_>],
    seed: u64,
) -> Result<(Option<report::rundir::samples::SampledRecord>, Vec<ArtifactRecord>), RunError> {
    let first = sources.first().map(|(r, _)| *r);
    let (Some(sampler), Some(rate)) =
        (cx.sampler, first.and_then(|r| r.job.sample.as_ref()).map(|s| s.rate_hz))
    else {
        return Ok((None, Vec::new()));
    };
    let mut stacks = Vec::new();
    let mut checked = Vec::new();
    for (r, artifacts) in sources {
        for (path, sha) in
            artifacts.iter().filter(|(p, _)| p.starts_with(report::rundir::samples::DIR))
        {
            checked.push(checked_artifact(cx.dir, r, path, sha, "samples")?);
            let text = std::fs::read_to_string(cx.dir.join(path)).unwrap_or_default();
            let parsed = report::rundir::samples::parse(&text).map_err(|e| {
                crate::error::fail(
                    Some(r.job.key.clone()),
                    Some(r.worker.0),
                    "artifact_mismatch",
                    format!("artifact {path} of stage {}: {e}", r.job.key),
                )
            })?;
            stacks.push(parsed);
        }
    }
    // A span's function is matched on the stacks by its qualname.
    let targets: Vec<(String, String)> = first
        .map(|r| &r.job.spans[..])
        .unwrap_or_default()
        .iter()
        .filter_map(|t| match t {
            protocol::SpanTarget::Function { qualname, name, .. }
            | protocol::SpanTarget::Stage { qualname, name, .. } => {
                Some((name.clone(), qualname.clone()))
            }
            protocol::SpanTarget::Preset(_) => None,
        })
        .collect();
    let record = report::rundir::samples::record(sampler, rate, &stacks, &targets, seed);
    Ok((record, checked))
}
