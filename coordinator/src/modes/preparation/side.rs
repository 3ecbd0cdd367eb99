//! One preparation phase summed up: its cache checked and sealed by a
//! manifest, and its walls, workers and per-series figures.

use super::{COMPONENTS, MANIFEST, MANIFEST_SCHEMA};
use crate::error::{RunError, fail};
use crate::modes::{Context, PhaseOutcome, Records, checked_artifact, sampled_stacks};
use crate::supervisor::{Tally, tally};
use protocol::Faults;
use rayon::prelude::*;
use report::manifest::{Listed, Manifest};
use report::rundir::report::{
    ArtifactRecord, Counts, Leaked, PrepSide, PrepWorker, RuntimeRecord, StageIo, StageRecord,
};
use report::rundir::spans::Pooled;
use report::rundir::stragglers::Fold;
use std::collections::BTreeMap;
use std::path::Path;

/// One preparation phase summed up, its manifest sealed: its stage record,
/// the manifest's artifact record and the partition's counts.
pub(crate) struct Side {
    pub(crate) stage: StageRecord,
    pub(crate) artifact: ArtifactRecord,
    pub(crate) counts: Counts,
}

/// A preparation phase's outcome with the cache it wrote: only a
/// preparation phase has one, and asking any other for it is an internal
/// error, never a panic.
pub(crate) struct Preparation<'a> {
    /// The cache's directory, relative to the run directory.
    pub(crate) cache: &'a str,
}

impl<'a> Preparation<'a> {
    pub(crate) fn of(p: &'a PhaseOutcome) -> Result<Self, RunError> {
        match p.phase.cache.as_deref() {
            Some(cache) => Ok(Preparation { cache }),
            None => Err(fail(
                Some(p.phase.key.clone()),
                None,
                "internal",
                format!("{} is not a preparation phase: it wrote no cache", p.phase.key),
            )),
        }
    }

    /// Where its manifest is, relative to the run directory.
    fn manifest_path(&self) -> String {
        format!("{}/{MANIFEST}", self.cache)
    }
}

/// Checks one preparation phase's cache, writes its manifest, and sums it up.
pub(crate) fn side(dir: &Path, p: &PhaseOutcome, order: usize) -> Result<Side, RunError> {
    let manifest = seal(dir, p)?;
    let artifact = manifest_artifact(p, &manifest)?;
    let (stage, _, counts) = summarise(p, order)?;
    Ok(Side { stage, artifact, counts })
}

/// The manifest of a phase's cache, after re-hashing every file its workers
/// reported (trust, but verify), in parallel.
pub(crate) fn manifest(dir: &Path, p: &PhaseOutcome) -> Result<Vec<u8>, RunError> {
    let cache = Preparation::of(p)?.cache;
    if p.done() != p.planned as u64 {
        return Err(fail(
            Some(p.phase.key.clone()),
            None,
            "internal",
            format!("{} of {} series reported", p.done(), p.planned),
        ));
    }
    // A user's program reports no files: its output directory is walked.
    if super::names_of(&p.phase).items {
        return super::outputs::manifest(dir, cache, &p.phase.key);
    }
    let results: Vec<_> = p.results().collect();
    let checked: Vec<ArtifactRecord> = results
        .par_iter()
        .flat_map_iter(|r| {
            r.artifacts.iter().map(move |(path, sha)| checked_artifact(dir, r, path, sha, "file"))
        })
        .collect::<Result<_, _>>()?;
    let prefix = format!("{cache}/");
    let files = checked
        .iter()
        .map(|a| {
            let rel = a.path.strip_prefix(&prefix).unwrap_or(&a.path).to_string();
            (rel, Listed { sha256: a.sha256.clone(), bytes: a.bytes })
        })
        .collect();
    Ok(Manifest {
        schema: MANIFEST_SCHEMA.into(),
        schema_version: 1,
        contract: Some(recipe::contract::VERSION.into()),
        files,
    }
    .bytes())
}

/// [`manifest`], written into the cache as `manifest.json`.
pub(crate) fn seal(dir: &Path, p: &PhaseOutcome) -> Result<Vec<u8>, RunError> {
    let manifest = manifest(dir, p)?;
    let path = Preparation::of(p)?.manifest_path();
    evidence::write_atomic(&dir.join(&path), &manifest)
        .map_err(crate::error::internal(Some(p.phase.key.clone()), format!("writing {path}")))?;
    Ok(manifest)
}

/// The manifest a phase sealed as it ended, read back, and its artifact
/// record.
pub(crate) fn sealed(dir: &Path, p: &PhaseOutcome) -> Result<(Vec<u8>, ArtifactRecord), RunError> {
    let path = Preparation::of(p)?.manifest_path();
    let bytes = std::fs::read(dir.join(&path))
        .map_err(crate::error::internal(Some(p.phase.key.clone()), format!("reading {path}")))?;
    let artifact = manifest_artifact(p, &bytes)?;
    Ok((bytes, artifact))
}

/// The artifact record of a phase's sealed manifest.
fn manifest_artifact(p: &PhaseOutcome, manifest: &[u8]) -> Result<ArtifactRecord, RunError> {
    Ok(ArtifactRecord {
        path: Preparation::of(p)?.manifest_path(),
        sha256: evidence::sha256_hex(manifest),
        bytes: manifest.len() as u64,
        stage: p.phase.key.clone(),
        kind: "manifest".into(),
    })
}

/// A phase's stage record, its side of the comparison and the partition's
/// counts, from what its workers reported and `wait4` measured (no file is
/// read): each worker's jobs as it folded them ([`Tally`]: a user's items
/// were folded as they arrived), the recipe's series folded here.
pub(crate) fn summarise(
    p: &PhaseOutcome,
    order: usize,
) -> Result<(StageRecord, PrepSide, Counts), RunError> {
    let manifest = Preparation::of(p)?.manifest_path();
    let items = super::names_of(&p.phase).items;
    let outcomes = &p.dispatch.outcomes;
    let tallies: Vec<Tally> = outcomes
        .iter()
        .map(|o| o.tally.clone().unwrap_or_else(|| Tally::of(&o.jobs, p.dispatch.started)))
        .collect();
    let done: u64 = tallies.iter().map(Tally::jobs).sum();
    let sum = |name: &str| tallies.iter().map(|t| t.sum(name)).sum::<f64>();
    let workers: Vec<PrepWorker> = outcomes
        .iter()
        .zip(&tallies)
        .map(|(o, t)| PrepWorker {
            rank: o.rank.0,
            series: t.jobs(),
            busy_s: t.busy_s,
            wall_s: o.exit.wall.as_secs_f64(),
            cpu_s: {
                let (user, sys, _) = o.stages_exit();
                (user + sys) as f64 / 1e9
            },
            // The worker's own lifetime peak (VmHWM) after its last series;
            // wait4's figure carries the coordinator's RSS across exec.
            peak_rss_bytes: t.peak_rss_bytes.max(o.finished.as_ref().map(|m| m.peak_rss_bytes)),
            // A preparation program's start-up is its first item's setup.
            startup_s: (o.finished.is_some() && t.jobs() > 0).then(|| t.first_figure("setup_s")),
        })
        .collect();
    let cpu_s: f64 = workers.iter().map(|w| w.cpu_s).sum();
    let peak = workers.iter().filter_map(|w| w.peak_rss_bytes).max().unwrap_or(0);
    // What ran beside the program (py-spy, `--sample`) is no part of it.
    let user_s: f64 = outcomes.iter().map(|o| o.stages_exit().0 as f64 / 1e9).sum();
    let sys_s: f64 = outcomes.iter().map(|o| o.stages_exit().1 as f64 / 1e9).sum();
    let mut pooled = Pooled::default();
    let mut runs = Fold::default();
    for t in &tallies {
        pooled.merge(&t.spans);
        runs.merge(&t.runs);
    }
    // Where per-series time went: the recipe's components, or a user's own
    // spans (`span:NAME_s`: their self time on the main thread) over its
    // items.
    let components: BTreeMap<String, f64> = match items {
        // Main-thread self time: nested spans never count a second twice.
        true => pooled.spans().iter().map(|s| (format!("span:{}_s", s.name), s.main_s())).collect(),
        false => COMPONENTS.iter().map(|c| (c.to_string(), sum(c))).collect(),
    };
    let mut figures = components.clone();
    if items {
        figures.insert("items".into(), done as f64);
    } else {
        for name in ["samples", "frames", "valid_frames"] {
            figures.insert(name.into(), sum(name));
        }
        figures.insert("series".into(), done as f64);
    }
    let wall_s = p.dispatch.wall.as_secs_f64();
    // A preparation program's close holds its tree's lifetime peak.
    let trees: Vec<Vec<(u64, u64)>> = outcomes
        .iter()
        .zip(&tallies)
        .map(|(o, t)| {
            let closed = o.finished.iter().map(|m| (m.tree.peak_bytes, m.tree.sum_of_peaks_bytes));
            std::iter::once((t.tree_peak_bytes, t.sum_of_peaks_bytes)).chain(closed).collect()
        })
        .collect();
    let (tree_peak_bytes, sum_of_peaks_bytes) = tree_bounds(&trees);
    // The kernel's peak only when every process's tree had a cgroup (a
    // preparation program's); the recipe's workers start no process.
    let cgroup = outcomes.iter().zip(&tallies).all(|(o, t)| match &o.finished {
        Some(closed) => closed.tree.method == "cgroup",
        None => t.jobs() == 0 || t.cgroup,
    });
    let method = match cgroup && done > 0 {
        true => "cgroup",
        false => "sampled",
    };
    let finished = || outcomes.iter().filter_map(|o| o.finished.as_ref());
    let leaked = {
        let closes: Vec<&String> = finished().flat_map(|m| &m.tree.leaked).collect();
        let counted: u64 = tallies.iter().map(|t| t.leaked).sum::<u64>() + closes.len() as u64;
        let names: Vec<String> = tallies
            .iter()
            .flat_map(|t| t.leaked_names.iter())
            .chain(closes)
            .take(tally::LEAKED_NAMES)
            .cloned()
            .collect();
        Leaked { count: counted.min(u32::MAX as u64) as u32, names }
    };
    // Per job for the recipe's series; a preparation program's items are
    // timed by the clock alone, so its processes' faults come from wait4.
    let faults = match items {
        false => tallies.iter().map(|t| t.faults).fold(Faults::default(), tally::add),
        true => {
            outcomes.iter().filter_map(|o| o.stages_exit().2).fold(Faults::default(), tally::add)
        }
    };
    // Each process's tree, whole: a preparation program's over its life
    // (its items are timed by the clock alone), else every series'.
    let trees_measured: Vec<&protocol::Measurement> = outcomes
        .iter()
        .flat_map(|o| match &o.finished {
            Some(closed) => vec![closed],
            None => o.jobs.iter().map(|j| &j.measurement).collect(),
        })
        .collect();
    let io = StageIo::sum(trees_measured.iter().map(|m| m.io.as_ref()));
    let runtime = trees_measured.iter().find_map(|m| RuntimeRecord::measured(&m.runtime));
    // Every item's spans pooled, against the items' own wall times.
    let spans = pooled.records();
    let first = tallies.iter().find_map(|t| t.last.as_ref());
    let stage = StageRecord {
        stage: first.map_or("prepare_series", |r| r.job.stage.name()).into(),
        order,
        worker: None,
        processes: workers.len() as u32,
        wall_s,
        cpu_s,
        user_s,
        sys_s,
        peak_rss_bytes: peak,
        figures,
        tree_peak_bytes,
        tree_peak_method: method.into(),
        tree_peak_anon_bytes: None,
        tree_peak_file_bytes: None,
        sum_of_peaks_bytes,
        leaked_processes: leaked,
        spans_not_found: {
            let jobs = tallies.iter().flat_map(|t| t.spans_not_found.iter().cloned());
            let closes = finished().flat_map(|m| m.spans_not_found.iter().cloned());
            let names: std::collections::BTreeSet<String> = jobs.chain(closes).collect();
            names.into_iter().collect()
        },
        spans: spans.as_ref().map(|s| s.0.clone()).unwrap_or_default(),
        span_totals: spans.map(|s| s.1),
        span_warnings: {
            let mut all: Vec<String> = finished().flat_map(|m| m.span_warnings.clone()).collect();
            all.sort();
            all.dedup();
            all
        },
        // A preparation program's items are its stages.
        command_stages: Vec::new(),
        faults: faults.into(),
        io,
        runtime,
        samples: None,
    };
    let counts = Counts {
        train_series: done,
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
        per_series_s: runs.distribution(),
        per_series_resolution: Some(protocol::spans::RESOLUTION),
        components_s: components,
        manifest,
        // Placed on the run's clock by a mode that draws it (cold-prep's
        // round 1): every round's would hold every item again.
        phase: None,
        started_s: None,
        timeline: Vec::new(),
        // A user's items, slowest first by their line in the items file.
        stragglers: items.then(|| runs.finish(outcomes.len() as u32)).flatten(),
    };
    Ok((stage, side, counts))
}

/// Each preparation program's sampled stacks (`--sample`), as its stage's
/// `samples`: a program is sampled for its whole life, so each worker's is
/// one sample of the shares (the serial side's single worker gives a share
/// and no interval). Its artifacts are re-hashed and bound.
pub(crate) fn programs_sampled(
    cx: &Context<'_>,
    outcomes: &[PhaseOutcome],
    records: &mut Records,
) -> Result<(), RunError> {
    for p in outcomes.iter().filter(|p| super::names_of(&p.phase).items) {
        let sources: Vec<_> = p
            .dispatch
            .outcomes
            .iter()
            .filter(|o| !o.finished_artifacts.is_empty())
            .filter_map(|o| {
                let last = o.tally.as_ref().and_then(|t| t.last.as_ref()).or(o.jobs.last());
                Some((last?, &o.finished_artifacts[..]))
            })
            .collect();
        if sources.is_empty() {
            continue;
        }
        let order = records.stages.get(&p.phase.key).map_or(0, |s| s.order);
        let (record, artifacts) = sampled_stacks(cx, &sources, order as u64)?;
        if let Some(stage) = records.stages.get_mut(&p.phase.key) {
            stage.samples =
                record.map(|r| report::rundir::samples::SampledRecord { programs: true, ..r });
            let first = sources.first().map(|(r, _)| *r);
            let why =
                crate::modes::records::not_sampled(cx, stage, first, sources.len(), "program");
            stage.span_warnings.extend(why);
        }
        records.artifacts.extend(artifacts);
    }
    Ok(())
}

/// A phase's tree peak and sum of peaks from each worker's jobs' (tree
/// peak, sum of peaks). The phase's processes ran at once, but each one
/// only saw its own tree: the lower bound is the largest tree any one
/// process saw, the upper bound each process's own largest sum, added
/// over the processes.
fn tree_bounds(workers: &[Vec<(u64, u64)>]) -> (u64, u64) {
    let peak = workers.iter().flatten().map(|(peak, _)| *peak).max().unwrap_or(0);
    let sum = workers.iter().map(|jobs| jobs.iter().map(|(_, s)| *s).max().unwrap_or(0)).sum();
    (peak, sum)
}

#[cfg(test)]
mod tests {
    use super::tree_bounds;

    /// Two workers, three and two jobs: the peak is the largest any job's
    /// tree reached (not the first, nor the smallest), the sum each
    /// worker's largest sum, added.
    #[test]
    fn a_phases_tree_peak_is_its_largest_tree_and_its_sum_adds_workers() {
        let workers = vec![vec![(30, 40), (70, 90), (50, 60)], vec![(20, 25), (10, 35)]];
        assert_eq!(tree_bounds(&workers), (70, 90 + 35));
        assert_eq!(tree_bounds(&[]), (0, 0));
        assert_eq!(tree_bounds(&[vec![]]), (0, 0));
    }
}
