//! `--mode cold-prep`: verify the dataset, prepare every training series'
//! features into a new cache with one worker process, again with N worker
//! processes (the coordinator hands the next-largest series to whichever
//! worker is free), verify again, and prove both caches identical.
//!
//! Each cache gets a `manifest.json` (written here, by the coordinator, after
//! re-hashing every file the workers reported). The report binds the two
//! manifests rather than listing per-series files, so it names no series.

use super::{JobNumbers, Phase, PhaseOutcome, Prepared, Records, checked_artifact, stage_from_job};
use crate::error::{RunError, fail};
use crate::plan::Settings;
use crate::rundir::report::{
    ArtifactRecord, Counts, Leaked, PrepSide, PrepWorker, Span, StageRecord,
};
use crate::stats::distribution;
use protocol::Stage;
use rayon::prelude::*;
use recipe::frozen::Frozen;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) const VERIFY_BEFORE: &str = "verify_before";
pub(crate) const SERIAL: &str = "cold_feature_cache_prepare";
pub(crate) const PARALLEL: &str = "cold_feature_cache_prepare_parallel";
pub(crate) const VERIFY_AFTER: &str = "verify_after";
pub(crate) const SERIAL_CACHE: &str = "private-feature-cache";
pub(crate) const PARALLEL_CACHE: &str = "private-feature-cache-parallel";
pub(crate) const MANIFEST: &str = "manifest.json";
pub(crate) const MANIFEST_SCHEMA: &str = "stagebench.cache-manifest";
/// Per-series time components the workers report.
const COMPONENTS: [&str; 5] = ["read_s", "hash_s", "decode_s", "extract_s", "write_s"];

/// What cold-prep adds to the report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Section {
    /// Aggregate counts of the training partition.
    pub(crate) counts: Counts,
    /// The one-process preparation.
    pub(crate) serial: PrepSide,
    /// The N-process preparation.
    pub(crate) parallel: PrepSide,
    /// Serial wall / parallel wall.
    pub(crate) speedup: f64,
    /// Speedup / workers.
    pub(crate) parallel_efficiency: f64,
    /// The busiest parallel worker's busy time over the mean.
    pub(crate) load_imbalance: f64,
    /// Whether the serial and parallel cache manifests are byte-identical.
    pub(crate) caches_identical: bool,
    /// Reasons to read `speedup` with care, for a person (see [`warnings`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) warnings: Vec<String>,
}

/// When the N-process preparation needs more than this many times the
/// serial CPU for the same series, its processes paid for more than the work.
const CPU_RATIO_WARNING: f64 = 2.0;

/// What makes a cold-prep speedup misleading, found in its own figures:
/// - the parallel processes' CPU far above the serial process's for the same
///   series (on this project's machines: fresh memory faulted in as huge
///   pages the kernel had to zero, with fault counts unchanged);
/// - start-up dominating: most parallel workers spent more than a quarter of
///   their life before their first series.
fn warnings(serial: &PrepSide, parallel: &PrepSide) -> Vec<String> {
    let mut out = Vec::new();
    let ratio = parallel.cpu_s / serial.cpu_s.max(1e-9);
    if ratio > CPU_RATIO_WARNING {
        out.push(format!(
            "the {}-process preparation used {ratio:.1}x the serial preparation's CPU for the same series: its processes paid for more than the work (fresh memory the kernel had to fault in and zero, often as huge pages; see environment.json transparent_hugepages and the workers' fault counts), so this speedup understates what the processes can do; run it again, or compare runs with --mode trials",
            parallel.workers.len()
        ));
    }
    let first: std::collections::BTreeMap<u32, f64> =
        parallel.timeline.iter().fold(Default::default(), |mut m, t| {
            let e = m.entry(t.rank).or_insert(f64::INFINITY);
            *e = e.min(t.start_s);
            m
        });
    let slow_starts = parallel
        .workers
        .iter()
        .filter(|w| first.get(&w.rank).is_some_and(|s| *s > 0.25 * w.wall_s))
        .count();
    if slow_starts * 2 > parallel.workers.len() {
        out.push(format!(
            "start-up dominated the parallel phase: {slow_starts} of {} workers spent more than a quarter of their life before their first series",
            parallel.workers.len()
        ));
    }
    out
}

pub(crate) fn prepare(settings: &Settings) -> Result<Prepared, String> {
    let (dataset, frozen) = crate::dataset::resolve(settings.data.as_deref(), settings.quiet)?;
    let dataset = dataset.as_path();
    let mut numbers = JobNumbers::default();
    let phases = vec![
        verify_phase(&mut numbers, VERIFY_BEFORE, dataset),
        prepare_phase(&mut numbers, SERIAL, SERIAL_CACHE, 1, dataset, &frozen),
        prepare_phase(&mut numbers, PARALLEL, PARALLEL_CACHE, settings.workers, dataset, &frozen),
        verify_phase(&mut numbers, VERIFY_AFTER, dataset),
    ];
    Ok(Prepared {
        // A cache preparation is one entry, however many series it has.
        stages: super::declared(&phases, false),
        phases,
        dataset_fingerprint: Some(frozen.fingerprint),
        parameters: BTreeMap::new(),
        locks: Vec::new(),
    })
}

/// One worker re-hashing every source file against frozen.json.
pub(crate) fn verify_phase(numbers: &mut JobNumbers, key: &str, dataset: &Path) -> Phase {
    let data = dataset.to_string_lossy().into_owned();
    Phase::in_turn(
        key.into(),
        vec![numbers.job(key.into(), Stage::VerifySources { dataset: data })],
        1,
    )
}

/// Every training series prepared into `cache` by `workers` processes (no
/// more processes than series: one without a series would only start and
/// stop), the largest series first, so the last to start is a short one.
pub(crate) fn prepare_phase(
    numbers: &mut JobNumbers,
    key: &str,
    cache: &str,
    workers: u32,
    dataset: &Path,
    frozen: &Frozen,
) -> Phase {
    let data = dataset.to_string_lossy().into_owned();
    let mut train: Vec<_> = frozen.train().collect();
    train.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.id.cmp(&b.id)));
    Phase {
        key: key.into(),
        jobs: train
            .iter()
            .map(|s| {
                let stage = Stage::PrepareSeries {
                    dataset: data.clone(),
                    id: s.id.clone(),
                    file: s.file.clone(),
                    sha256: s.sha256.clone(),
                    cache: cache.into(),
                };
                numbers.job(key.into(), stage)
            })
            .collect(),
        workers: workers.min(train.len().max(1) as u32),
        jobs_per_process: usize::MAX,
        cache: Some(cache.into()),
        progress: crate::events::Style::Counter,
        after: None,
        after_job: None,
    }
}

pub(crate) fn find<'a>(
    outcomes: &'a [PhaseOutcome],
    key: &str,
) -> Result<&'a PhaseOutcome, RunError> {
    outcomes
        .iter()
        .find(|p| p.phase.key == key)
        .ok_or_else(|| fail(None, None, "internal", format!("phase {key} did not run")))
}

pub(crate) fn assemble(
    dir: &Path,
    outcomes: &[PhaseOutcome],
    records: &mut Records,
) -> Result<Section, RunError> {
    for (order, key) in [(0, VERIFY_BEFORE), (3, VERIFY_AFTER)] {
        let p = find(outcomes, key)?;
        let r = p.results().next().ok_or_else(|| {
            fail(Some(key.into()), None, "internal", format!("{key} reported nothing"))
        })?;
        records.stages.insert(key.into(), stage_from_job(r, order));
    }
    let (serial_stage, serial, serial_manifest, serial_art, counts) =
        side(dir, find(outcomes, SERIAL)?, 1)?;
    let (par_stage, parallel, par_manifest, par_art, _) = side(dir, find(outcomes, PARALLEL)?, 2)?;
    let identical = serial_manifest == par_manifest;
    if !identical {
        return Err(fail(
            Some(PARALLEL.into()),
            None,
            "caches_differ",
            format!(
                "the serial and parallel caches differ: {SERIAL_CACHE}/{MANIFEST} and {PARALLEL_CACHE}/{MANIFEST} are not byte-identical"
            ),
        ));
    }
    let workers = find(outcomes, PARALLEL)?.phase.workers.max(1) as f64;
    let speedup = serial.wall_s / parallel.wall_s;
    let busy: Vec<f64> = parallel.workers.iter().map(|w| w.busy_s).collect();
    let mean_busy = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
    let warnings = warnings(&serial, &parallel);
    records.stages.insert(SERIAL.into(), serial_stage);
    records.stages.insert(PARALLEL.into(), par_stage);
    records.artifacts.push(serial_art);
    records.artifacts.push(par_art);
    Ok(Section {
        counts,
        serial,
        parallel,
        speedup,
        parallel_efficiency: speedup / workers,
        load_imbalance: busy.iter().cloned().fold(0.0, f64::max) / mean_busy,
        caches_identical: identical,
        warnings,
    })
}

pub(crate) type Side = (StageRecord, PrepSide, Vec<u8>, ArtifactRecord, Counts);

/// Checks one preparation phase's cache, writes its manifest, and sums it up.
pub(crate) fn side(dir: &Path, p: &PhaseOutcome, order: usize) -> Result<Side, RunError> {
    let cache = p.phase.cache.clone().expect("preparation phases have a cache");
    let results: Vec<_> = p.results().collect();
    if results.len() != p.phase.jobs.len() {
        return Err(fail(
            Some(p.phase.key.clone()),
            None,
            "internal",
            format!("{} of {} series reported", results.len(), p.phase.jobs.len()),
        ));
    }
    // Re-hash every reported file (trust, but verify), in parallel.
    let checked: Vec<ArtifactRecord> = results
        .par_iter()
        .flat_map_iter(|r| {
            r.artifacts.iter().map(move |(path, sha)| checked_artifact(dir, r, path, sha, "file"))
        })
        .collect::<Result<_, _>>()?;
    let prefix = format!("{cache}/");
    let files: BTreeMap<String, serde_json::Value> = checked
        .iter()
        .map(|a| {
            let rel = a.path.strip_prefix(&prefix).unwrap_or(&a.path).to_string();
            (rel, serde_json::json!({ "sha256": a.sha256, "bytes": a.bytes }))
        })
        .collect();
    let manifest = evidence::to_bytes(&serde_json::json!({
        "schema": MANIFEST_SCHEMA,
        "schema_version": 1,
        "contract": recipe::contract::VERSION,
        "files": files,
    }));
    let manifest_path = format!("{cache}/{MANIFEST}");
    evidence::write_atomic(&dir.join(&manifest_path), &manifest).map_err(|e| {
        fail(Some(p.phase.key.clone()), None, "internal", format!("writing {manifest_path}: {e}"))
    })?;
    let artifact = ArtifactRecord {
        path: manifest_path.clone(),
        sha256: evidence::sha256_hex(&manifest),
        bytes: manifest.len() as u64,
        stage: p.phase.key.clone(),
        kind: "manifest".into(),
    };

    let fig = |r: &crate::supervisor::JobResult, name: &str| {
        r.measurement.figures.iter().find(|f| f.name == name).map(|f| f.value).unwrap_or(0.0)
    };
    let sum = |name: &str| results.iter().map(|r| fig(r, name)).sum::<f64>();
    let walls: Vec<f64> = results.iter().map(|r| r.measurement.wall_ns as f64 / 1e9).collect();
    let workers: Vec<PrepWorker> = p
        .dispatch
        .outcomes
        .iter()
        .map(|o| PrepWorker {
            rank: o.rank.0,
            series: o.jobs.len() as u64,
            // Folded from +0.0: an empty sum of f64 is -0.0.
            busy_s: o
                .jobs
                .iter()
                .map(|j| j.measurement.wall_ns as f64 / 1e9)
                .fold(0.0, |a, b| a + b),
            wall_s: o.exit.wall.as_secs_f64(),
            cpu_s: (o.exit.user_ns + o.exit.sys_ns) as f64 / 1e9,
            // The worker's own lifetime peak (VmHWM) after its last series;
            // wait4's figure carries the coordinator's RSS across exec.
            peak_rss_bytes: o.jobs.iter().map(|j| j.measurement.peak_rss_bytes).max(),
        })
        .collect();
    let cpu_s: f64 = workers.iter().map(|w| w.cpu_s).sum();
    let peak = workers.iter().filter_map(|w| w.peak_rss_bytes).max().unwrap_or(0);
    let user_s: f64 = p.dispatch.outcomes.iter().map(|o| o.exit.user_ns as f64 / 1e9).sum();
    let sys_s: f64 = p.dispatch.outcomes.iter().map(|o| o.exit.sys_ns as f64 / 1e9).sum();
    let components: BTreeMap<String, f64> =
        COMPONENTS.iter().map(|c| (c.to_string(), sum(c))).collect();
    let mut figures = components.clone();
    for name in ["samples", "frames", "valid_frames"] {
        figures.insert(name.into(), sum(name));
    }
    figures.insert("series".into(), results.len() as f64);
    let wall_s = p.dispatch.wall.as_secs_f64();
    let stage = StageRecord {
        stage: "prepare_series".into(),
        order,
        worker: None,
        processes: workers.len() as u32,
        wall_s,
        cpu_s,
        user_s,
        sys_s,
        peak_rss_bytes: peak,
        figures,
        // Lower bound: the largest tree any one process saw; upper bound:
        // each process's own largest sum, added over the processes.
        tree_peak_bytes: results.iter().map(|r| r.measurement.tree.peak_bytes).max().unwrap_or(0),
        tree_peak_method: "sampled".into(),
        tree_peak_anon_bytes: None,
        tree_peak_file_bytes: None,
        sum_of_peaks_bytes: p
            .dispatch
            .outcomes
            .iter()
            .map(|o| {
                o.jobs.iter().map(|j| j.measurement.tree.sum_of_peaks_bytes).max().unwrap_or(0)
            })
            .sum(),
        leaked_processes: Leaked::from_names(
            results.iter().flat_map(|r| r.measurement.tree.leaked.iter().cloned()).collect(),
        ),
    };
    let counts = Counts {
        train_series: results.len() as u64,
        samples: sum("samples") as u64,
        frames: sum("frames") as u64,
        valid_frames: sum("valid_frames") as u64,
        eligible_contexts: None,
        batches: None,
        final_batch: None,
        invalid_event_series: None,
    };
    let side = PrepSide {
        wall_s,
        cpu_s,
        peak_rss_bytes: peak,
        workers,
        per_series_s: distribution(&walls),
        components_s: components,
        manifest: manifest_path,
        timeline: timeline(p),
    };
    Ok((stage, side, manifest, artifact, counts))
}

/// Every job of the phase as a span on its worker, in start order.
fn timeline(p: &PhaseOutcome) -> Vec<Span> {
    let t0 = p.dispatch.started;
    let mut spans: Vec<Span> = p
        .results()
        .map(|r| {
            let end_s = r.received.saturating_duration_since(t0).as_secs_f64();
            let start_s = (end_s - r.measurement.wall_ns as f64 / 1e9).max(0.0);
            Span { rank: r.worker.0, start_s, end_s }
        })
        .collect();
    spans.sort_by(|a, b| a.start_s.total_cmp(&b.start_s).then(a.rank.cmp(&b.rank)));
    spans
}

#[cfg(test)]
mod tests {
    use super::{PrepSide, warnings};

    /// The two sides of the recorded cold-prep fixture (a fast run).
    fn sides() -> (PrepSide, PrepSide) {
        let r: serde_json::Value =
            serde_json::from_str(include_str!("../render/fixtures/cold-prep-report.json")).unwrap();
        let side = |k: &str| serde_json::from_value(r[k].clone()).unwrap();
        (side("serial"), side("parallel"))
    }

    #[test]
    fn a_parallel_phase_that_paid_for_more_than_the_work_is_flagged() {
        let (serial, mut parallel) = sides();
        assert!(warnings(&serial, &parallel).is_empty(), "the fixture is a plain run");
        parallel.cpu_s = 2.5 * serial.cpu_s;
        let w = warnings(&serial, &parallel);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("used 2.5x the serial preparation's CPU"), "{}", w[0]);
    }

    #[test]
    fn start_up_dominating_the_parallel_phase_is_flagged() {
        let (serial, mut parallel) = sides();
        for t in &mut parallel.timeline {
            t.start_s += 10.0;
        }
        let w = warnings(&serial, &parallel);
        assert!(w.iter().any(|w| w.starts_with("start-up dominated the parallel phase")), "{w:?}");
    }
}
