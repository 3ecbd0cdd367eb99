//! `--mode cold-prep`: verify the dataset, prepare every training series'
//! features into a new cache with one worker process, again with N worker
//! processes (the coordinator hands the next-largest series to whichever
//! worker is free), verify again, and prove both caches identical.
//!
//! Each cache gets a `manifest.json` (written by the coordinator as soon as
//! the phase ends, after re-hashing every file the workers reported). The
//! report binds the two manifests rather than listing per-series files, so
//! it names no series. With `--rounds R` the comparison runs R times in
//! alternating order ([`rounds`]).
//!
//! With `--prepare CMD --items FILE` ([`items`]) the phases hand a team's
//! own items to its own program instead, with the same dispatcher, rounds,
//! sweep and figures; their output directories are sealed by manifests
//! the coordinator makes by walking them, and must be identical.

pub(crate) mod items;
mod phases;
mod plots;
mod render;
pub(crate) mod rounds;
pub(crate) mod storage;
pub(crate) mod sweep;

pub(crate) use phases::{Plan, prepare};

use super::preparation::{
    ITEMS, MANIFEST, Names, RECIPE, VERIFY_AFTER, VERIFY_BEFORE, find, outputs, side,
};
use super::{Context, PhaseOutcome, Planned, Prepared, Records, stage_from_job};
use crate::error::{RunError, fail};
use crate::rundir::report::{Counts, PrepSide};
use serde::{Deserialize, Serialize};

/// The mode's name.
pub(crate) const NAME: &str = "cold-prep";

/// The mode, as the registry lists it.
pub(crate) struct ColdPrep;
pub(crate) const MODE: ColdPrep = ColdPrep;

// The flags only cold-prep reads. (A doc comment here would be the
// whole command's about: clap takes a flattened group's.)
#[derive(clap::Args, Debug)]
#[group(skip)]
#[command(next_help_heading = "Cold-prep mode")]
pub(crate) struct Args {
    /// Serial-against-parallel comparisons, serial first in odd rounds and
    /// parallel first in even ones; the speedup is the median over rounds
    /// with its interval (1 to 1000). [default: 3]
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: Option<u32>,
    /// Your own per-item preparation program, instead of the recipe's:
    /// started with `sh -c` once per worker process, it is handed the items
    /// of --items one at a time (see docs/item-protocol.md; in Python,
    /// `stagebench.serve`).
    #[arg(long, value_name = "CMD ARGS")]
    prepare: Option<String>,
    /// With --prepare: the items, one per line, `ID` or `ID<TAB>WEIGHT`
    /// (largest weight first). Ids never enter the evidence.
    #[arg(long, value_name = "FILE")]
    items: Option<std::path::PathBuf>,
    /// With --prepare: fail the run when one item takes longer than this
    /// many seconds from its hand-over to its answer (a program that hangs,
    /// or closes its answers but stays alive, would wait forever).
    /// [default: off]
    #[arg(long, value_name = "SECS", value_parser = crate::plan::positive_secs)]
    item_timeout: Option<std::time::Duration>,
    /// `cold` drops the preparation's inputs (the training series' files,
    /// or --inputs) from the page cache before each preparation phase and
    /// round (posix_fadvise, no root needed) and warns when a phase was
    /// still served from it; `as-is` leaves the page cache alone.
    /// [default: as-is]
    #[arg(long, value_name = "MODE", value_enum)]
    os_cache: Option<storage::OsCache>,
}

impl super::Mode for ColdPrep {
    mode_basics!(NAME, Section);
    fn about(&self) -> &'static str {
        "Cold feature-cache preparation (or your own, with --prepare), serial and N-process side by side"
    }
    fn uses(&self) -> &'static [super::Shared] {
        &[super::Shared::Data, super::Shared::Sweep, super::Shared::Spans, super::Shared::Inputs]
    }
    fn args(&self, cmd: clap::Command) -> clap::Command {
        <Args as clap::Args>::augment_args(cmd)
    }
    fn resolve(
        &self,
        own: &clap::ArgMatches,
        shared: &super::SharedArgs,
    ) -> Result<Box<dyn Planned>, crate::error::Refusal> {
        let own = <Args as clap::FromArgMatches>::from_arg_matches(own)
            .map_err(|e| crate::error::Refusal(e.to_string()))?;
        Ok(Box::new(Plan {
            os_cache: own.os_cache.unwrap_or_default(),
            rounds: own.rounds.unwrap_or(DEFAULT_ROUNDS),
            counts: shared.workers.clone(),
            items: items::resolve(&own, shared)?,
        }))
    }
}

impl Planned for Plan {
    plan_basics!(NAME);

    fn takes_spans(&self) -> bool {
        self.items.is_some()
    }

    fn jobs_apart(&self) -> bool {
        true
    }

    fn prepare(&self, settings: &crate::plan::Settings) -> Result<Prepared, RunError> {
        prepare(settings, self)
    }

    fn assemble(
        &self,
        cx: &Context<'_>,
        outcomes: &[PhaseOutcome],
        records: &mut Records,
    ) -> Result<super::Section, RunError> {
        assemble(cx, self, outcomes, records).map(super::Section::new)
    }
}

/// Rounds when `--rounds` is not given: enough for a median and an
/// interval, and both orders, in a few seconds on the built-in cohort.
pub(crate) const DEFAULT_ROUNDS: u32 = 3;

/// What cold-prep adds to the report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Section {
    /// Aggregate counts of the training partition (the recipe's preparation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) counts: Option<Counts>,
    /// A user's own preparation (`--prepare`): its items and inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) items: Option<items::Summary>,
    /// The one-process preparation (round 1's, with rounds).
    pub(crate) serial: PrepSide,
    /// The N-process preparation.
    pub(crate) parallel: PrepSide,
    /// Serial wall / parallel wall; with rounds, the median over rounds.
    pub(crate) speedup: f64,
    /// With 6 rounds or more: the percentile bootstrap 95% interval of that
    /// median (fewer rounds have no 95% interval; see `speedup_interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) speedup_ci95: Option<[f64; 2]>,
    /// With rounds: the median's interval with its coverage, the bootstrap
    /// one from 6 rounds, the range of the rounds below that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) speedup_interval: Option<crate::stats::Interval>,
    /// With rounds: every round, in the order run. `serial` and `parallel`
    /// above are round 1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) rounds: Vec<rounds::Round>,
    /// With `--workers` as a list: every count's speedup and the Amdahl
    /// fit. `parallel` and `speedup` above are the largest count's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sweep: Option<sweep::Sweep>,
    /// Speedup / workers.
    pub(crate) parallel_efficiency: f64,
    /// The busiest parallel worker's busy time over the mean.
    pub(crate) load_imbalance: f64,
    /// The recipe's preparation: whether the serial and parallel cache
    /// manifests are byte-identical (always true in a report: a difference
    /// fails the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) caches_identical: Option<bool>,
    /// A user's preparation: whether the serial and parallel output
    /// manifests are byte-identical (likewise always true in a report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) outputs_identical: Option<bool>,
    /// What the preparation phases read from storage, and `--os-cache`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) storage: Option<storage::Storage>,
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
fn warnings(
    serial: &PrepSide,
    parallel: &PrepSide,
    rounds: &[rounds::Round],
    unit: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let ratio = rounds
        .iter()
        .map(|r| r.parallel_cpu_s / r.serial_cpu_s.max(1e-9))
        .fold(parallel.cpu_s / serial.cpu_s.max(1e-9), f64::max);
    if ratio > CPU_RATIO_WARNING {
        out.push(format!(
            "the {}-process preparation used {ratio:.1}x the serial preparation's CPU for the same {}: its processes paid for more than the work (fresh memory the kernel had to fault in and zero, often as huge pages; see environment.json transparent_hugepages and the workers' fault counts), so this speedup understates what the processes can do; run it again with more --rounds, or compare two runs with `coordinator compare`",
            parallel.workers.len(),
            match unit {
                "series" => "series".to_string(),
                other => format!("{other}s"),
            }
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
            "start-up dominated the parallel phase: {slow_starts} of {} workers spent more than a quarter of their life before their first {unit}",
            parallel.workers.len()
        ));
    }
    out
}
fn assemble(
    cx: &Context<'_>,
    plan: &Plan,
    outcomes: &[PhaseOutcome],
    records: &mut Records,
) -> Result<Section, RunError> {
    let dir = cx.dir;
    let n = plan.names();
    // Stage records are ordered as the phases ran.
    let order = |key: &str| outcomes.iter().position(|p| p.phase.key == key).unwrap_or(0);
    if plan.items.is_none() {
        for key in [VERIFY_BEFORE, VERIFY_AFTER] {
            let p = find(outcomes, key)?;
            let r = p.results().next().ok_or_else(|| {
                fail(Some(key.into()), None, "internal", format!("{key} reported nothing"))
            })?;
            records.stages.insert(key.into(), stage_from_job(r, order(key)));
        }
    }
    // Round 1's caches were sealed as their phases ended.
    let sealed = |key: &str| -> Result<(Vec<u8>, crate::rundir::report::ArtifactRecord), RunError> {
        let p = find(outcomes, key)?;
        let path = format!("{}/{MANIFEST}", p.phase.cache.as_deref().unwrap_or_default());
        let bytes = std::fs::read(dir.join(&path)).map_err(|e| {
            fail(Some(key.into()), None, "internal", format!("reading {path}: {e}"))
        })?;
        let artifact = side::manifest_artifact(p, &bytes);
        Ok((bytes, artifact))
    };
    let (serial_manifest, serial_art) = sealed(n.serial)?;
    let (par_manifest, par_art) = sealed(n.parallel)?;
    let identical = serial_manifest == par_manifest;
    if !identical {
        let workers = find(outcomes, n.parallel)?.phase.workers;
        let (serial_out, parallel_out) = (n.serial_out, n.parallel_out);
        if n.items {
            let what = format!(
                "the 1-process and {workers}-process outputs differ ({serial_out} and {parallel_out})"
            );
            return Err(outputs::outputs_differ(n.parallel, what, &serial_manifest, &par_manifest));
        }
        return Err(fail(
            Some(n.parallel.into()),
            None,
            "caches_differ",
            format!(
                "the 1-process and {workers}-process caches differ: {serial_out}/{MANIFEST} and {parallel_out}/{MANIFEST} are not byte-identical"
            ),
        ));
    }
    let main = plan.counts.iter().copied().max().unwrap_or(1);
    let mut sides = Vec::new();
    let mut all = Vec::new();
    let mut measured: Vec<sweep::Measured> = Vec::new();
    for round in 1..=plan.rounds {
        let (serial_key, parallel_key) = rounds::keys(&n, round);
        let (serial_stage, serial, counts) =
            side::summarise(find(outcomes, &serial_key)?, order(&serial_key));
        records.stages.insert(serial_key, serial_stage);
        let mut main_side = None;
        for (i, &count) in plan.counts.iter().enumerate() {
            let key = rounds::parallel_key(&n, count, main, round);
            let p = find(outcomes, &key)?;
            let (stage, side, _) = side::summarise(p, order(&key));
            records.stages.insert(key, stage);
            if measured.len() <= i {
                measured.push(sweep::Measured { workers: p.phase.workers, walls: Vec::new() });
            }
            measured[i].walls.push((serial.wall_s, side.wall_s));
            if count == main {
                main_side = Some(side);
            }
        }
        let parallel = main_side.ok_or_else(|| {
            fail(
                Some(parallel_key.clone()),
                None,
                "internal",
                format!("{parallel_key} did not run"),
            )
        })?;
        all.push(rounds::Round {
            round,
            first: rounds::First::of(round),
            serial_wall_s: serial.wall_s,
            parallel_wall_s: parallel.wall_s,
            serial_cpu_s: serial.cpu_s,
            parallel_cpu_s: parallel.cpu_s,
            speedup: serial.wall_s / parallel.wall_s,
        });
        if round == 1 {
            sides.push((serial, parallel, counts));
        }
    }
    let (mut serial, mut parallel, counts) = sides.pop().ok_or_else(|| {
        fail(Some(n.serial.into()), None, "internal", "no round of cold-prep ran".to_string())
    })?;
    placed(&mut serial, find(outcomes, n.serial)?, cx.started);
    placed(&mut parallel, find(outcomes, n.parallel)?, cx.started);
    records.artifacts.push(serial_art);
    records.artifacts.push(par_art);
    let (speedup, speedup_interval, all) = if all.len() > 1 {
        let s = crate::stats::summarize(&all.iter().map(|r| r.speedup).collect::<Vec<_>>(), 0);
        (s.median, Some(s.median_interval), all)
    } else {
        (serial.wall_s / parallel.wall_s, None, Vec::new())
    };
    let workers = find(outcomes, n.parallel)?.phase.workers.max(1) as f64;
    let busy: Vec<f64> = parallel.workers.iter().map(|w| w.busy_s).collect();
    let mean_busy = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
    let unit = if n.items { "item" } else { "series" };
    let mut warnings = warnings(&serial, &parallel, &all, unit);
    if (workers as u32) < main {
        // No more processes start than there are items or series.
        warnings.push(format!(
            "the parallel phase had {workers} process(es), not the {main} asked for: there was no more work to hand out; its speedup and efficiency ({:.0}%) are over {workers}{}",
            100.0 * speedup / workers,
            if workers == 1.0 { ", so the speedup compares two 1-process runs (a control: about 1)" } else { "" }
        ));
    }
    let inputs_bytes = outcomes.iter().find_map(|p| p.phase.inputs.as_ref()).map(|i| i.bytes());
    let storage = storage::storage(plan.os_cache, inputs_bytes, outcomes, &records.stages);
    warnings.extend(storage.iter().flat_map(|s| s.warnings()));
    let sweep = (measured.len() > 1).then(|| sweep::sweep(&measured, cx.cores));
    let items = plan.items.as_ref().map(|i| items::Summary {
        count: i.list.len() as u64,
        items_sha256: i.sha256.clone(),
        weighted: i.list.iter().any(|i| i.weight.is_some()),
        inputs: crate::inputs::combined(cx.inputs),
    });
    Ok(Section {
        counts: items.is_none().then_some(counts),
        items,
        serial,
        parallel,
        speedup,
        speedup_ci95: speedup_interval.and_then(|i| i.ci95()),
        speedup_interval,
        rounds: all,
        sweep,
        parallel_efficiency: speedup / workers,
        load_imbalance: busy.iter().cloned().fold(0.0, f64::max) / mean_busy,
        caches_identical: (!n.items).then_some(identical),
        outputs_identical: n.items.then_some(identical),
        storage,
        warnings,
    })
}

/// A side's phase and timeline on the run's clock (`t0`): its jobs' times
/// as workers[] holds them, which is how jobs.jsonl.gz gives them back
/// ([`crate::modes::Report::read_jobs`]), so the plot drawn now is the
/// plot `verify` draws.
fn placed(side: &mut PrepSide, p: &PhaseOutcome, t0: std::time::Instant) {
    let started_s = p.dispatch.started.saturating_duration_since(t0).as_secs_f64();
    let jobs = p.results().map(|r| {
        let (start_s, end_s) = r.interval_since(t0);
        (r.worker.0, start_s, end_s)
    });
    side.timeline = crate::rundir::report::timeline(jobs, started_s);
    side.phase = Some(p.phase.key.clone());
    side.started_s = Some(started_s);
}

#[cfg(test)]
mod tests {
    use super::{PrepSide, warnings};

    /// The two sides of the recorded cold-prep fixture (a fast run).
    fn sides() -> (PrepSide, PrepSide) {
        let r: serde_json::Value =
            serde_json::from_str(include_str!("../../render/fixtures/cold-prep-report.json"))
                .unwrap();
        let side = |k: &str| serde_json::from_value(r[k].clone()).unwrap();
        (side("serial"), side("parallel"))
    }

    /// The walls the console states: round 1's for one round, each
    /// side's median over rounds with rounds.
    #[test]
    fn the_walls_are_round_ones_or_the_medians_over_rounds() {
        let r: serde_json::Value =
            serde_json::from_str(include_str!("../../render/fixtures/cold-prep-report.json"))
                .unwrap();
        let mut section: super::Section = serde_json::from_value(r).unwrap();
        assert!(section.rounds.is_empty());
        assert_eq!(section.walls(), (section.serial.wall_s, section.parallel.wall_s));
        let round = |n: u32, serial_wall_s: f64, parallel_wall_s: f64| super::rounds::Round {
            round: n,
            first: super::rounds::First::of(n),
            serial_wall_s,
            parallel_wall_s,
            serial_cpu_s: 1.0,
            parallel_cpu_s: 1.0,
            speedup: serial_wall_s / parallel_wall_s,
        };
        section.rounds = vec![round(1, 4.0, 2.0), round(2, 6.0, 3.0), round(3, 5.0, 2.2)];
        assert_eq!(section.walls(), (5.0, 2.2));
    }

    #[test]
    fn a_parallel_phase_that_paid_for_more_than_the_work_is_flagged() {
        let (serial, mut parallel) = sides();
        assert!(
            warnings(&serial, &parallel, &[], "series").is_empty(),
            "the fixture is a plain run"
        );
        parallel.cpu_s = 2.5 * serial.cpu_s;
        let w = warnings(&serial, &parallel, &[], "series");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("used 2.5x the serial preparation's CPU for the same series"),
            "{}",
            w[0]
        );
        let w = warnings(&serial, &parallel, &[], "item");
        assert!(w[0].contains("CPU for the same items:"), "{}", w[0]);
        // Any round's ratio counts: round 1 plain, a later round at 3x.
        let (serial, parallel) = sides();
        let round = |serial_cpu_s: f64, parallel_cpu_s: f64| super::rounds::Round {
            round: 2,
            first: super::rounds::First::Parallel,
            serial_wall_s: 1.0,
            parallel_wall_s: 1.0,
            serial_cpu_s,
            parallel_cpu_s,
            speedup: 1.0,
        };
        assert!(warnings(&serial, &parallel, &[round(2.0, 3.0)], "series").is_empty());
        assert!(
            warnings(&serial, &parallel, &[round(2.0, 4.0)], "series").is_empty(),
            "2x is the edge"
        );
        let w = warnings(&serial, &parallel, &[round(2.0, 6.0)], "series");
        assert!(w[0].contains("used 3.0x the serial preparation's CPU"), "{w:?}");
    }

    #[test]
    fn start_up_dominating_the_parallel_phase_is_flagged() {
        let (serial, mut parallel) = sides();
        for t in &mut parallel.timeline {
            t.start_s += 10.0;
        }
        let w = warnings(&serial, &parallel, &[], "series");
        assert!(w.iter().any(|w| w.starts_with("start-up dominated the parallel phase")), "{w:?}");
        // At the edge: a first series at a quarter of the worker's life is
        // not slow, at half of it is.
        let at = |fraction: f64| {
            let (serial, mut parallel) = sides();
            let walls: std::collections::BTreeMap<u32, f64> =
                parallel.workers.iter().map(|w| (w.rank, w.wall_s)).collect();
            for t in &mut parallel.timeline {
                t.start_s = fraction * walls[&t.rank];
            }
            warnings(&serial, &parallel, &[], "series")
                .iter()
                .any(|w| w.starts_with("start-up dominated"))
        };
        assert!(!at(0.25) && at(0.5));
        // Two of the fixture's four workers slow is half, not most.
        let (serial, mut parallel) = sides();
        let slow: Vec<u32> = parallel.workers.iter().take(2).map(|w| w.rank).collect();
        assert_eq!(parallel.workers.len(), 4);
        for t in &mut parallel.timeline {
            t.start_s = if slow.contains(&t.rank) { 1e3 } else { 0.0 };
        }
        assert!(warnings(&serial, &parallel, &[], "series").is_empty(), "2 of 4 slow is not most");
        // And one of two: half again.
        parallel.workers.drain(1..3);
        assert_eq!(parallel.workers.len(), 2);
        assert!(warnings(&serial, &parallel, &[], "series").is_empty(), "1 of 2 slow is not most");
    }
}
